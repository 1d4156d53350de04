"""CenterFace in 8-bit integers (models/centerface-int8.onnx, which scripts/fetch-face-model
writes) against the float network (models/centerface-dynamic.onnx), on frames of real clips:
how long each kind of search takes on one core, and where their heatmaps disagree.

  .build-bench/venv/bin/python bench/centerface_int8.py CLIP.mp4 [CLIP.mp4 ...]

Speed: a whole frame at 640x352, a tile at 736x608 and a follow square at 96x96, each run
20 times (5 for the large ones) on one frame of the first clip. Agreement: on every 15th frame
of each clip, its six tiles and follow squares of 120, 240 and 360 px at half-side steps, the
cells the float network scores 0.5 or more that score below 0.3 (the stage's threshold) in
8 bits ("missed"), and the reverse ("added"); the same measure scripts/fetch-face-model applies
to its calibration photos. Needs the bench venv (onnxruntime, numpy).
"""
import os
import subprocess
import sys
import tempfile
import time

# ONNX Runtime's official builds collect telemetry unless this is set before it loads.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from quantize_face_model import SURE, THRESHOLD, resize  # noqa: E402  (the stage's cuts, shared)

MODELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models")


def gray_frames(path, every):
    """Every `every`-th frame's luma, at 1280x720 (decoded by GStreamer, as the stage sees it)."""
    width, height = 1280, 720
    with tempfile.NamedTemporaryFile(suffix=".yuv") as raw:
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", "decodebin", "!", "videoconvert", "!",
                        "videoscale", "!", f"video/x-raw,format=I420,width={width},height={height}", "!",
                        "filesink", f"location={raw.name}"], check=True)
        data = np.fromfile(raw.name, np.uint8)
    size = width * height * 3 // 2
    return [data[i * size:i * size + width * height].reshape(height, width) for i in range(0, len(data) // size, every)]


def blob(plane):
    return np.repeat(plane[None, None], 3, axis=1)


def main(clips):
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    nets = {name: ort.InferenceSession(os.path.join(MODELS, file), options, providers=["CPUExecutionProvider"])
            for name, file in (("float", "centerface-dynamic.onnx"), ("int8", "centerface-int8.onnx"))}

    frames = gray_frames(clips[0], 15)
    g = frames[len(frames) // 2]
    for kind, x in (("whole frame", blob(resize(g, 640, 352))), ("tile", blob(resize(g[0:405, 0:490], 736, 608))),
                    ("follow", blob(resize(g[300:540, 500:740], 96, 96)))):
        times = {}
        for name, net in nets.items():
            net.run(None, {"input.1": x})
            runs = 20 if kind == "follow" else 5
            start = time.perf_counter()
            for _ in range(runs):
                net.run(None, {"input.1": x})
            times[name] = (time.perf_counter() - start) / runs * 1000
        print(f"{kind:<12} float {times['float']:.1f} ms, int8 {times['int8']:.1f} ms ({times['float'] / times['int8']:.2f}x)")

    for clip in clips:
        missed = added = cells = searches = 0
        for g in frames if clip == clips[0] else gray_frames(clip, 15):
            h, w = g.shape
            cuts = [resize(g[y:y + 405, x:x + 490], 736, 608) for y in (0, 315) for x in (0, 395, 790)]
            cuts += [resize(g[y:y + s, x:x + s], 96, 96) for s in (120, 240, 360)
                     for y in range(0, h - s + 1, s // 2) for x in range(0, w - s + 1, s // 2)]
            for cut in cuts:
                reference, quantized = (net.run(None, {"input.1": blob(cut)})[0] for net in nets.values())
                missed += int(((reference >= SURE) & (quantized < THRESHOLD)).sum())
                added += int(((quantized >= SURE) & (reference < THRESHOLD)).sum())
                cells += int((reference >= THRESHOLD).sum())
                searches += 1
        print(f"{clip}: {searches} tiles and follow squares, {cells} cells over {THRESHOLD} in float; "
              f"missed in 8 bits {missed}, added {added}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
