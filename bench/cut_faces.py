#!/usr/bin/env python3
"""Faces cut by the frame's edge: how often CenterFace finds them with each kind of margin.

  .build-bench/venv/bin/python bench/cut_faces.py KEPT_DIR

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

Numbers in docs/privacy.md ("The stage's own hiding beyond faces"; the
32 px edge-tile margin in "Edge tiles with a mirrored margin").
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
    return [b for b in boxes if b and b[3] >= 24 and 0.3 <= lf.cover(b, (0, 0, W, H)) < 0.7]


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


if __name__ == "__main__":
    kept = sys.argv[1]
    truth = json.load(open(f"{kept}/truth.json"))
    frames = lf.frames(f"{kept}/in.raw", W, H)
    n = min(len(frames), len(truth["faces"]))
    faces, partial = truth["faces"][:n], truth.get("partial", [[] for _ in range(n)])[:n]
    cf = lf.centerface((W, H))
    margins(cf, frames[:n], faces, partial)
    edge_tiles(cf, frames[:n], faces)
