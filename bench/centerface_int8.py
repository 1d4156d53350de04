"""CenterFace quantised to 8-bit integers, measured against the float model: how much faster each
of the stage's three kinds of search runs on one core, and how far the heatmap moves.

  bench/centerface_int8.py MODEL OUT_MODEL CLIP.mp4 [CLIP.mp4 ...]

MODEL is the float model ONNX Runtime runs (models/centerface-dynamic.onnx). It is brought to
opset 13 (per-channel weights need it), and quantised statically (QDQ, weights per channel as
int8, activations as uint8, MinMax ranges) with frames of the clips given, every 60th, cut as
the stage cuts them: a whole frame at 640 wide, a tile enlarged 1.5x to 736x608, a follow square
at 96x96 (the steps before quantising are left beside OUT_MODEL, as .opset13.onnx and
.prepared.onnx). Give it clips other than those it is judged on (bench/live-faces keeps the crowd
clip's held-out identity out of all tuning: calibrate on moving and fixed).

Not used by the stage yet: to try it, put OUT_MODEL in a copy of the models folder as
centerface-dynamic.onnx (copies, not links: the model's folder is resolved) and run
`allspark-recorder blur ... --set privacy.model=COPY/centerface.onnx`. Needs the bench venv
(onnx, onnxruntime, opencv-python): .build-bench/venv/bin/python.
"""
import os
import subprocess
import sys
import tempfile
import time

# ONNX Runtime's official builds collect telemetry (events under ~/.cache/Microsoft, uploaded to
# Microsoft) unless this is set before it loads.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

import cv2
import numpy as np
import onnx
import onnxruntime as ort
from onnx import version_converter
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process


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


def blob(gray, w, h):
    """The network's input as the stage builds it: luma, scaled, repeated into three channels, 0..255."""
    small = cv2.resize(gray, (w, h), interpolation=cv2.INTER_AREA).astype(np.float32)
    return np.repeat(small[None, None], 3, axis=1)


def searches(gray):
    """A whole-frame search, a tile and a follow square, cut from one frame (720p)."""
    return [(640, 352, gray), (736, 608, gray[0:405, 0:490]), (96, 96, gray[300:540, 500:740])]


def main(model, out_model, clips):
    frames = [g for clip in clips for g in gray_frames(clip, 60)]
    calibration = [blob(cut, w, h) for g in frames for w, h, cut in searches(g)]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = iter(calibration)

        def get_next(self):
            x = next(self.left, None)
            return None if x is None else {"input.1": x}

    at13 = out_model + ".opset13.onnx"
    onnx.save(version_converter.convert_version(onnx.load(model), 13), at13)
    prepared = out_model + ".prepared.onnx"
    quant_pre_process(at13, prepared, skip_symbolic_shape=True)
    quantize_static(prepared, out_model, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    calibrate_method=CalibrationMethod.MinMax)
    print(f"{out_model}: calibrated on {len(calibration)} searches from {len(frames)} frames")

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    sessions = {name: ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                for name, path in (("float", model), ("int8", out_model))}
    probe = frames[len(frames) // 2]
    for (w, h, cut), kind in zip(searches(probe), ("whole frame", "tile", "follow")):
        x = blob(cut, w, h)
        times, heat = {}, {}
        for name, session in sessions.items():
            heat[name] = session.run(None, {"input.1": x})[0]
            runs = 20 if w < 200 else 5
            start = time.perf_counter()
            for _ in range(runs):
                session.run(None, {"input.1": x})
            times[name] = (time.perf_counter() - start) / runs * 1000
        diff = np.abs(heat["float"] - heat["int8"])
        print(f"{kind:<12} {w}x{h}: float {times['float']:.1f} ms, int8 {times['int8']:.1f} ms "
              f"({times['float'] / times['int8']:.2f}x); heatmap difference max {diff.max():.3f}, mean {diff.mean():.4f}; "
              f"cells over 0.3: float {int((heat['float'] > 0.3).sum())}, int8 {int((heat['int8'] > 0.3).sum())}")


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
