"""CenterFace quantised to 8-bit integers, for the privacy stage's tiles and follows.

  quantize_face_model.py FLOAT_MODEL OUT_MODEL IMAGE [IMAGE ...]

FLOAT_MODEL is centerface-dynamic.onnx (scripts/fetch-face-model writes it). It is brought to
opset 13 (per-channel weights need it) and quantised statically with ONNX Runtime's quantiser:
QDQ, weights per channel as int8, activations as uint8, their ranges the minimum and maximum
seen on the IMAGEs cut as the stage cuts its searches (luma only, repeated into three channels):
a whole frame 640 wide, a tile 736 x 608, follow squares of 96 x 96.

Then the quantised network is checked against the float one on the same searches: every heatmap
cell the float network scores 0.5 or more must score at least 0.3 (the stage's threshold) in
8 bits, and no cell the float network scores below 0.3 may score 0.5 or more. When the 8-bit
network disagrees, OUT_MODEL is not written and the exit status is 3 (the stage then runs in
floating point); any other failure exits 1. The check runs on this machine's CPU because the
8-bit kernels differ by CPU: on x86 without VNNI, uint8 x int8 products saturate, and the same
model that passes on a VNNI machine loses faces there.

The result depends on the inputs (the float model, the images, the pinned package versions that
scripts/fetch-face-model installs) and, in the last bits of the ranges, on the CPU's float
kernels; so its sha256 is printed, not required.

Run by scripts/fetch-face-model with onnx, onnxruntime and numpy on PYTHONPATH; images are
decoded by GStreamer (gst-launch-1.0, gst-discoverer-1.0).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# ONNX Runtime's official builds collect telemetry unless this is set before it loads.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

import numpy as np
import onnx
import onnxruntime as ort

# The quantiser's graph passes warn about every unused initializer of the exported model.
ort.set_default_logger_severity(3)
from onnx import version_converter
from onnxruntime.quantization import CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

THRESHOLD = 0.3  # the stage's default CenterFace threshold
SURE = 0.5
REJECTED = 3  # exit status: the 8-bit network is not accepted on this CPU


def gray(path):
    """The image's luma plane at its own size, decoded by GStreamer."""
    info = subprocess.run(["gst-discoverer-1.0", path], capture_output=True, text=True, check=True).stdout
    width = int(re.search(r"Width: (\d+)", info).group(1))
    height = int(re.search(r"Height: (\d+)", info).group(1))
    with tempfile.NamedTemporaryFile(suffix=".gray") as raw:
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", "decodebin", "!", "videoconvert", "!",
                        f"video/x-raw,format=GRAY8,width={width},height={height}", "!",
                        "filesink", f"location={raw.name}"], check=True)
        data = np.fromfile(raw.name, np.uint8)
    # GStreamer pads GRAY8 rows to 4 bytes.
    stride = (width + 3) // 4 * 4
    return data[:stride * height].reshape(height, stride)[:, :width]


def resize(plane, width, height):
    """Each output pixel the mean of the source pixels it covers (at least one), like an area resize."""
    def spans(source, target):
        edges = np.floor(np.arange(target + 1) * source / target).astype(int)
        starts = np.minimum(edges[:-1], source - 1)
        return starts, np.maximum(edges[1:], starts + 1)
    sums = np.pad(plane.astype(np.float64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    (y0, y1), (x0, x1) = spans(plane.shape[0], height), spans(plane.shape[1], width)
    total = sums[y1][:, x1] - sums[y0][:, x1] - sums[y1][:, x0] + sums[y0][:, x0]
    return (total / np.outer(y1 - y0, x1 - x0)).astype(np.float32)


def searches(plane):
    """A whole-frame search, a tile and three follow squares, cut from one picture."""
    h, w = plane.shape
    side = min(w, h)
    whole_height = max(32, round(640 * h / w / 32) * 32)
    tile = plane[h // 5:h - h // 5, w // 5:w - w // 5]
    follows = [plane[(h - s) // 2:(h + s) // 2, (w - s) // 2:(w + s) // 2] for s in (side // 2, side // 3)]
    follows.append(plane[h // 3 - side // 6:h // 3 + side // 6, w // 3 - side // 6:w // 3 + side // 6])
    cuts = [resize(plane, 640, whole_height), resize(tile, 736, 608)] + [resize(f, 96, 96) for f in follows]
    return [np.repeat(cut[None, None], 3, axis=1) for cut in cuts]


def check(float_model, quantized_model, inputs):
    """Heatmap cells the two networks disagree on: (missed by 8 bits, added by 8 bits)."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    float_net, int8_net = (ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
                           for path in (float_model, quantized_model))
    missed = added = 0
    for x in inputs:
        reference = float_net.run(None, {"input.1": x})[0]
        quantized = int8_net.run(None, {"input.1": x})[0]
        missed += int(((reference >= SURE) & (quantized < THRESHOLD)).sum())
        added += int(((quantized >= SURE) & (reference < THRESHOLD)).sum())
    return missed, added


def main(float_model, out_model, images):
    inputs = [x for image in images for x in searches(gray(image))]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.left = iter(inputs)

        def get_next(self):
            x = next(self.left, None)
            return None if x is None else {"input.1": x}

    with tempfile.TemporaryDirectory() as work:
        at13 = os.path.join(work, "opset13.onnx")
        onnx.save(version_converter.convert_version(onnx.load(float_model), 13), at13)
        prepared = os.path.join(work, "prepared.onnx")
        quant_pre_process(at13, prepared, skip_symbolic_shape=True)
        quantized = os.path.join(work, "int8.onnx")
        quantize_static(prepared, quantized, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax)
        missed, added = check(float_model, quantized, inputs)
        print(f"quantize_face_model: calibrated on {len(inputs)} searches from {len(images)} images; "
              f"heatmap cells missed {missed}, added {added}", file=sys.stderr)
        if missed or added:
            print(f"quantize_face_model: the 8-bit network disagrees with the float one on this CPU "
                  f"({missed} cells missed, {added} added): {out_model} not written", file=sys.stderr)
            sys.exit(REJECTED)
        shutil.copyfile(quantized, out_model)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
