#!/usr/bin/env python3
"""Faces cut by the frame's edge: how often CenterFace finds them with each kind of margin.

  .build-bench/venv/bin/python bench/cut_faces.py KEPT_DIR [--follows]

KEPT_DIR: a folder `KEEP=1 bench/live-faces … crowd` kept (its in.raw, the
clip as the camera sent it, decoded, and truth.json). A cut face-frame is a
face at least 24 px high with 30–70 % of its box in the picture (the judge
counts those with 30 % or more). Two checks, on the source frames:

- margin: the whole-frame pass (640 px wide for 1280, what the stage
  searches) with the frame extended beyond its edges: mirrored (what the
  stage does, `DetectionPlanner.wholeFramePad`), none, grey or the edge
  repeated, 48 or 96 px; every 2nd frame. Also the detections centred off
  any face (mirror images, false finds).
- edge tile: a full-resolution 480×416 tile around each cut face (live's
  regular tile), with no margin or a mirrored one beyond the frame edges
  it touches, and how many of its finds the whole-frame pass misses; every
  3rd frame.
- follows (`--follows`, instead of the edge tiles; any clip): the 96 px
  search around each cut face (`DetectionPlanner.followSquare`), reaching
  beyond the edge by half its square or by a share of the face's size;
  every 2nd frame.

Numbers in docs/privacy.md ("The stage's own hiding beyond faces"; the
32 px edge-tile margin in "Edge tiles with a mirrored margin"; follows in
"Follows at an edge reach half a face beyond it").
"""
import json
import sys

import cv2
import numpy as np

import live_faces as lf

W, H = 1280, 720
BORDERS = {"mirrored": cv2.BORDER_REFLECT_101, "grey": cv2.BORDER_CONSTANT, "edge repeated": cv2.BORDER_REPLICATE}


def cut_faces(boxes):
    """The faces of one frame that are cut by its edge: 24 px or taller, 30–70 % in the picture."""
    return [b for b in boxes if b and b[3] >= 24 and 0.3 <= lf.cover(b, (0, 0, W, H)) < lf.CUT_BY_THE_EDGE]


def detect(cf, img, scale):
    h, w = img.shape
    cf.in_shape = (int(round(w * scale)), int(round(h * scale)))
    dets, _ = cf(np.repeat(img[:, :, None], 3, axis=2), threshold=0.3)   # the stage's search threshold
    return [(d[0], d[1], d[2] - d[0], d[3] - d[1]) for d in dets]


def near(box, dets, ox, oy, slack):
    """Whether a detection (offset by ox, oy into frame pixels) is centred on box, grown by slack of its size."""
    x, y, w, h = box
    return any(x - slack * w <= dx + ox + dw / 2 <= x + (1 + slack) * w and y - slack * h <= dy + oy + dh / 2 <= y + (1 + slack) * h
               for dx, dy, dw, dh in dets)


def extended(img, pad, border, sides=(True, True, True, True)):
    top, bottom, left, right = (pad if s else 0 for s in sides)
    return cv2.copyMakeBorder(img, top, bottom, left, right, border, value=128) if pad else img


def margins(cf, frames, faces, partial):
    kinds = [(48, "mirrored"), (0, "none"), (48, "grey"), (96, "grey"), (96, "mirrored"), (48, "edge repeated")]
    found, off, total = {k: 0 for k in kinds}, {k: 0 for k in kinds}, 0
    for i in range(0, len(frames), 2):
        cut = cut_faces(faces[i])
        everyone = [b for b in faces[i] if b] + partial[i]
        total += len(cut)
        for pad, kind in kinds:
            img = extended(frames[i], pad, BORDERS.get(kind, 0))
            dets = detect(cf, img, 640 / W)
            found[(pad, kind)] += sum(near(b, dets, -pad, -pad, 0.25) for b in cut)
            off[(pad, kind)] += sum(not any(near(b, [d], -pad, -pad, 0.5) for b in everyone) for d in dets)
    print(f"whole-frame pass, {total} cut face-frames (every 2nd frame):")
    for pad, kind in kinds:
        print(f"  {kind if pad else 'no'} margin{f' {pad} px' if pad else ''}: finds {found[(pad, kind)]}, "
              f"detections off any face {off[(pad, kind)]}")


def edge_tiles(cf, frames, faces):
    pads = [0, 32, 48, 64, 96]
    found, only, in_margin = {p: 0 for p in pads}, {p: 0 for p in pads}, {p: 0 for p in pads}
    whole = total = 0
    for i in range(0, len(frames), 3):
        cut = cut_faces(faces[i])
        if not cut:
            continue
        whole_dets = detect(cf, extended(frames[i], 48, BORDERS["mirrored"]), 640 / W)
        for b in cut:
            total += 1
            by_whole = near(b, whole_dets, -48, -48, 0.25)
            whole += by_whole
            cx, cy = b[0] + b[2] / 2, b[1] + b[3] / 2
            x0, y0 = int(min(max(0, cx - 240), W - 480)), int(min(max(0, cy - 208), H - 416))
            sides = (y0 == 0, y0 + 416 == H, x0 == 0, x0 + 480 == W)
            for pad in pads:
                tile = extended(frames[i][y0:y0 + 416, x0:x0 + 480], pad, BORDERS["mirrored"], sides)
                top, left = (pad if sides[0] else 0), (pad if sides[2] else 0)
                dets = detect(cf, tile, 1.0)
                hit = near(b, dets, x0 - left, y0 - top, 0.25)
                found[pad] += hit
                only[pad] += hit and not by_whole
                in_margin[pad] += sum(1 for x, y, w, h in dets
                                      if not (left <= x + w / 2 <= left + 480 and top <= y + h / 2 <= top + 416))
    print(f"edge tiles, {total} cut face-frames (every 3rd frame): the whole-frame pass finds {whole}")
    for pad in pads:
        print(f"  {'mirrored ' + str(pad) + ' px' if pad else 'no'} margin: finds {found[pad]}, {only[pad]} of them "
              f"not found by the whole frame; detections centred in the margin {in_margin[pad]}")


# The follow check: squares of 2.5 face sizes (the stage's `followScale`) and as after one and two
# misses; reaching beyond the edge by half the square (None) or by these shares of the face's size.
SQUARES = [2.5, 3.75, 5]
REACHES = [None, 0.375, 0.5, 0.625, 0.75]


def follow_square(box, side, reach):
    """DetectionPlanner.followSquare around box, reaching beyond an edge by at most reach (pixels)."""
    cx, cy = box[0] + box[2] / 2, box[1] + box[3] / 2
    rx, ry = min(side / 2, reach, W / 2), min(side / 2, reach, H / 2)
    x0, y0 = max(-rx, cx - side / 2), max(-ry, cy - side / 2)
    x1, y1 = min(W + rx, cx + side / 2), min(H + ry, cy + side / 2)
    return int(np.floor(x0)), int(np.floor(y0)), int(np.ceil(x1)), int(np.ceil(y1))


def letterboxed(cf, region, size=96):
    """The stage's follow search: region scaled uniformly into a size x size input's corner, the rest its mean."""
    h, w = region.shape
    scale = min(size / w, size / h)
    cw, ch = max(1, min(size, round(w * scale))), max(1, min(size, round(h * scale)))
    canvas = np.full((size, size), region.mean(), np.float32)
    canvas[:ch, :cw] = cv2.resize(region.astype(np.float32), (cw, ch), interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    dets = detect(cf, np.clip(canvas, 0, 255).astype(np.uint8), 1.0)
    return [(x / scale, y / scale, w / scale, h / scale) for x, y, w, h in dets if x + w / 2 < cw and y + h / 2 < ch]


def follows(cf, frames, faces):
    """A follow (the 96 px search around a known face) on each cut face, its square SQUARES face sizes,
    reaching beyond the edge (mirrored) by REACHES; the face's size known (its whole box) or taken from a
    box that held its mirror image too (the cut axis as long as twice the part in the picture)."""
    def with_mirror(box, inside):
        """The larger side of a box found with the face's mirror image: twice its part in the picture across the edge."""
        cut_at_top_or_bottom = inside[2] >= box[2] - 1
        return max(box[2], 2 * inside[3]) if cut_at_top_or_bottom else max(2 * inside[2], inside[3])

    sizes = {"whole box": lambda b, i: max(b[2], b[3]), "box with its mirror image": with_mirror}
    found = {(s, m, r): 0 for s in sizes for m in SQUARES for r in REACHES}
    total = 0
    for i in range(0, len(frames), 2):
        for b in cut_faces(faces[i]):
            total += 1
            x0, y0 = max(0, b[0]), max(0, b[1])
            inside = (x0, y0, min(W, b[0] + b[2]) - x0, min(H, b[1] + b[3]) - y0)
            for (s, m, r) in found:
                size = sizes[s](b, inside)
                sx0, sy0, sx1, sy1 = follow_square(b, m * size, m * size / 2 if r is None else r * size)
                pad = max(0, -sx0, -sy0, sx1 - W, sy1 - H)
                img = extended(frames[i], pad, BORDERS["mirrored"])
                region = img[sy0 + pad:sy1 + pad, sx0 + pad:sx1 + pad]
                found[(s, m, r)] += near(b, letterboxed(cf, region), sx0, sy0, 0.25)
    print(f"follows, {total} cut face-frames (every 2nd frame):")
    for (s, m, r), n in found.items():
        reach = "half the square" if r is None else f"{r} of a face"
        print(f"  size from the {s}, square {m} face sizes, reaching beyond the edge by {reach}: finds {n}")


if __name__ == "__main__":
    kept = sys.argv[1]
    truth = json.load(open(f"{kept}/truth.json"))
    frames = lf.frames(f"{kept}/in.raw", W, H)
    n = min(len(frames), len(truth["faces"]))
    faces, partial = truth["faces"][:n], truth.get("partial", [[] for _ in range(n)])[:n]
    cf = lf.centerface((W, H))
    margins(cf, frames[:n], faces, partial)
    if "--follows" in sys.argv:
        follows(cf, frames[:n], faces)
    else:
        edge_tiles(cf, frames[:n], faces)
