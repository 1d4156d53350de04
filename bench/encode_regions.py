#!/usr/bin/env python3
"""The encoder's share of the stage's own hiding beyond faces, apart from the stage's.

  encode_regions.py WORK_DIR STAGE_LOG [ENCODER]

WORK_DIR is a clip's folder that `KEEP=1 bench/live-faces --attribute` kept
(in.raw, truth.json); STAGE_LOG one of its trace logs (CLIP-current.log).
The regions the stage hid on each of the clip's first 300 frames, as the
log names them, are pixelated on the source the way the stage does (cells
of a third of the region's smaller side, at least 8 px, from the region's
corner); the source and that picture are encoded alike with ENCODER
(default: the recorder's x264 chain at the bench's bitrate), frames at a
steady 30 fps, and judged like bench/live-faces judges the stage's own
hiding (live_faces.own_hidden_blocks against the plain encode). Frames
it lists are lost by the encoder of that picture, with the same regions and
no live timing: how a change of encoder or of mosaic would show, without a
live run's spread.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

import live_faces as lf

RECORDER_X264 = "x264enc tune=zerolatency speed-preset=veryfast key-int-max=30 option-string=scenecut=0 bitrate=4000"
FRAMES = 300


def pixelate(plane, x0, y0, x1, y1, cell):
    h, w = plane.shape
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
    for cy in range(y0, y1, cell):
        for cx in range(x0, x1, cell):
            block = plane[cy:min(cy + cell, y1), cx:min(cx + cell, x1)]
            block[...] = int(round(block.mean()))


def hide(frame, rects, W, H):
    y = frame[:W * H].reshape(H, W)
    u = frame[W * H:W * H * 5 // 4].reshape(H // 2, W // 2)
    v = frame[W * H * 5 // 4:].reshape(H // 2, W // 2)
    for _, _, x, top, w, h in rects:
        cell = max(8, int(min(w, h)) // 3)
        x0, y0 = int(np.floor(x)), int(np.floor(top))
        x1, y1 = x0 + int(np.ceil(w)), y0 + int(np.ceil(h))
        pixelate(y, x0, y0, x1, y1, cell)
        for plane in (u, v):
            pixelate(plane, x0 // 2, y0 // 2, x1 // 2, y1 // 2, max(2, cell // 2))


def encoded(raw, W, H, encoder, folder, name):
    mp4, out = os.path.join(folder, name + ".mp4"), os.path.join(folder, name + ".raw")
    subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={raw}", "!", "rawvideoparse", f"width={W}", f"height={H}",
                    "format=i420", "framerate=30/1", "!", *encoder.split(), "!", "h264parse", "!", "mp4mux", "!",
                    "filesink", f"location={mp4}"], check=True)
    subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={mp4}", "!", "qtdemux", "!", "h264parse", "!", "avdec_h264",
                    "!", "video/x-raw,format=I420", "!", "filesink", f"location={out}"], check=True)
    return out, os.path.getsize(mp4)


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    work, log = sys.argv[1], sys.argv[2]
    encoder = sys.argv[3] if len(sys.argv) == 4 else RECORDER_X264
    truth = json.load(open(os.path.join(work, "truth.json")))
    W, H = truth["width"], truth["height"]
    partial = truth.get("partial", [[] for _ in truth["faces"]])
    size = W * H * 3 // 2
    source_path = os.path.join(work, "in.raw")
    source = np.memmap(source_path, dtype=np.uint8, mode="r")[:FRAMES * size].reshape(FRAMES, size)
    traced = lf.traced_frames(log)
    with tempfile.TemporaryDirectory() as folder:
        hidden_path = os.path.join(folder, "hidden.i420")
        with open(hidden_path, "wb") as f:
            for i in range(FRAMES):
                frame = np.array(source[i])
                hide(frame, traced.get(i, ([], 0))[0], W, H)
                f.write(frame.tobytes())
        plain, plain_bytes = encoded(source_path, W, H, encoder, folder, "plain")
        stage, stage_bytes = encoded(hidden_path, W, H, encoder, folder, "stage")
        a, p, b = lf.frames(source_path, W, H), lf.frames(plain, W, H), lf.frames(stage, W, H)
        own = []
        for i in range(FRAMES):
            mask = lf.outside_faces(truth["faces"][i], partial[i], W, H)
            _, blocks = lf.hidden_blocks(a[i], b[i], mask)
            lost = lf.own_hidden_blocks(a[i], b[i], p[i], mask)
            if lost >= lf.HIDING_SHARE * max(1, blocks):
                own.append(f"{i} ({100 * lost / max(1, blocks):.1f} %)")
    print(f"encoder: {encoder}")
    print(f"plain {plain_bytes // 1000} kB, the stage's regions pixelated {stage_bytes // 1000} kB")
    print(f"frames where the picture with the stage's regions lost more outside faces than the plain encode: {len(own)} of {FRAMES}")
    print("  " + ", ".join(own))


if __name__ == "__main__":
    main()
