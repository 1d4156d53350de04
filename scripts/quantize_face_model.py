"""CenterFace quantised to 8-bit integers, for the privacy stage's follows.

  quantize_face_model.py FLOAT_MODEL OUT_MODEL --calibrate FILE... --validate FILE... [--weights int8|uint8] [--full-range]

FLOAT_MODEL is centerface-dynamic.onnx (scripts/fetch-face-model writes it). It is brought to
opset 13 (per-channel weights need it) and quantised statically with ONNX Runtime's quantiser:
QDQ, weights per channel as 7-bit values in int8 (reduced range: without it uint8 x int8 products
saturate on x86 without VNNI, which lost twice as many of the tuning half's faces; --full-range
uses all 8 bits, --weights uint8 unsigned weights), activations as uint8, their ranges the
minimum and maximum seen on the --calibrate files (photos, or frames of videos) cut
as the stage cuts its searches and varied as a camera varies them: a whole frame 640 wide, tiles
736 x 608, follow squares of 96 x 96, each also at half the light (dusk) and blurred (motion).
These are the tuning half of the corpus (bench/corpus/README.md) and the bench's own photos.

It is accepted only by its recall on the --validate files, a half it was not calibrated on,
against the float network, on this machine's CPU, on the searches the stage runs in 8 bits: in a
follow square on each face, each face the float network is sure of (a heatmap peak of 0.5 or
more) must score at least 0.3 (the stage's threshold) in 8 bits within a cell of it, and no peak
of 0.5 or more may appear in 8 bits where the float network has less than 0.3. (Whole frames and
tiles run in floating point: there 8 bits lost faces the float network was sure of on this half;
their counts are printed too.) When the 8-bit
network fails that, OUT_MODEL is not written and the exit status is 3 (the stage then runs in
floating point); any other failure exits 1. The check runs on this CPU because the 8-bit kernels
differ by CPU: on x86 without VNNI, uint8 x int8 products saturate, and a model that passes on a
VNNI machine loses faces there.

The result depends on the inputs (the float model, the files, the pinned package versions that
scripts/fetch-face-model installs) and, in the last bits of the ranges, on the CPU's float
kernels; so its sha256 is printed, not required. bench/centerface_recall.py uses the same
functions to compare variants on both halves.

Run by scripts/fetch-face-model with onnx, onnxruntime and numpy on PYTHONPATH; images and videos
are decoded by GStreamer (gst-launch-1.0, gst-discoverer-1.0).
"""
import argparse
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
    data = np.zeros(0, np.uint8)
    # GStreamer 1.22's jpegdec writes nothing for a one-component (grayscale) JPEG: libav's decoder then.
    for decoder in (["decodebin"], ["jpegparse", "!", "avdec_mjpeg"]):
        with tempfile.NamedTemporaryFile(suffix=".gray") as raw:
            subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", *decoder, "!", "videoconvert", "!",
                            f"video/x-raw,format=GRAY8,width={width},height={height}", "!",
                            "filesink", f"location={raw.name}"], check=True)
            data = np.fromfile(raw.name, np.uint8)
        if data.size:
            break
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


VIDEO_FRAMES = 6  # frames taken from each video, evenly spread


def frames(path):
    """The luma planes of a photo (one) or of a video (VIDEO_FRAMES, spread over its length)."""
    if path.lower().endswith((".jpg", ".jpeg", ".png")):
        return [gray(path)]
    info = subprocess.run(["gst-discoverer-1.0", path], capture_output=True, text=True, check=True).stdout
    h, m, sec = re.search(r"Duration: (\d+):(\d+):([\d.]+)", info).groups()
    return video_frames(path, info, int(h) * 3600 + int(m) * 60 + float(sec))


def video_frames(path, info, seconds):
    width = int(re.search(r"Width: (\d+)", info).group(1))
    height = int(re.search(r"Height: (\d+)", info).group(1))
    rate = f"{VIDEO_FRAMES * 1000}/{max(1, int(seconds * 1000))}"   # VIDEO_FRAMES over the whole video
    with tempfile.NamedTemporaryFile(suffix=".gray") as raw:
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", f"location={path}", "!", "decodebin", "!", "videoconvert", "!",
                        "videorate", "drop-only=true", "!", f"video/x-raw,format=GRAY8,width={width},height={height},framerate={rate}", "!",
                        "filesink", f"location={raw.name}"], check=True)
        data = np.fromfile(raw.name, np.uint8)
    stride = (width + 3) // 4 * 4
    count = len(data) // (stride * height)
    planes = [data[i * stride * height:(i + 1) * stride * height].reshape(height, stride)[:, :width] for i in range(count)]
    return planes[:VIDEO_FRAMES]


def whole(plane):
    h, w = plane.shape
    return resize(plane, 640, max(32, round(640 * h / w / 32) * 32))


def tiles(plane):
    """Four overlapping tiles, each 60 % of the picture each way, at the stage's tile input."""
    h, w = plane.shape
    th, tw = int(h * 0.6), int(w * 0.6)
    return [resize(plane[y:y + th, x:x + tw], 736, 608) for y in (0, h - th) for x in (0, w - tw)]


def squares(plane, centres, side):
    """Follow squares of `side` px around each centre (clamped to the picture), at the follow input."""
    h, w = plane.shape
    side = max(8, min(side, h, w))
    out = []
    for cx, cy in centres:
        x = int(min(max(cx - side / 2, 0), w - side))
        y = int(min(max(cy - side / 2, 0), h - side))
        out.append(resize(plane[y:y + side, x:x + side], 96, 96))
    return out


def as_input(cut):
    return np.repeat(cut[None, None], 3, axis=1).astype(np.float32)


def varied(plane):
    """The plane as a camera also gives it: at half the light (dusk) and blurred by motion."""
    dusk = plane.astype(np.float32) * 0.5
    moving = plane.astype(np.float32)
    moving = sum(np.roll(moving, k, axis=1) for k in range(-3, 4)) / 7   # 7 px horizontal smear
    return [plane.astype(np.float32), dusk, moving]


def calibration_inputs(planes):
    """Whole frames, tiles and follow squares (centre and thirds), each lit and blurred as `varied` says."""
    inputs = []
    for plane in planes:
        h, w = plane.shape
        side = min(w, h)
        centres = [(w / 2, h / 2), (w / 3, h / 3), (2 * w / 3, h / 2)]
        for p in varied(plane):
            cuts = [whole(p)] + tiles(p) + squares(p, centres[:1], side // 2) + squares(p, centres, side // 3)
            inputs += [as_input(c) for c in cuts]
    return inputs


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def heat(net, cut):
    return net.run(None, {"input.1": as_input(cut)})[0][0, 0]


def peaks(h, level):
    """Cells at `level` or more that are the largest of their 3 x 3 neighbourhood."""
    padded = np.pad(h, 1, constant_values=-1)
    neighbourhood = np.max([padded[dy:dy + h.shape[0], dx:dx + h.shape[1]] for dy in range(3) for dx in range(3)], axis=0)
    return np.argwhere((h >= level) & (h >= neighbourhood))


def near(h, y, x):
    return h[max(0, y - 1):y + 2, max(0, x - 1):x + 2].max()


class Recall:
    """Faces the float network is sure of, and how the other network did on them, by kind of search."""
    def __init__(self):
        self.sure, self.missed, self.added = {}, {}, {}
        self.misses = []

    def add(self, kind, reference, candidate, where):
        self.sure.setdefault(kind, 0); self.missed.setdefault(kind, 0); self.added.setdefault(kind, 0)
        for y, x in peaks(reference, SURE):
            self.sure[kind] += 1
            if near(candidate, y, x) < THRESHOLD:
                self.missed[kind] += 1
                self.misses.append(f"{where} {kind} cell ({x},{y}) float {reference[y, x]:.2f} vs {near(candidate, y, x):.2f}")
        for y, x in peaks(candidate, SURE):
            if near(reference, y, x) < THRESHOLD:
                self.added[kind] += 1

    def total(self, table):
        return sum(table.values())


def recall(float_net, candidate_net, named_planes):
    """`Recall` of `candidate_net` against `float_net` on the stage's searches of each plane."""
    result = Recall()
    for name, plane in named_planes:
        for kind, cuts in (("whole", [whole(plane)]), ("tile", tiles(plane))):
            for i, cut in enumerate(cuts):
                reference = heat(float_net, cut)
                result.add(kind, reference, heat(candidate_net, cut), f"{name}#{i}")
        # Follow squares on every face a whole-frame or tile search of the float network is sure of,
        # two and three times the size of a face found there (a heatmap cell is 4 input pixels).
        h, w = plane.shape
        found = []   # (x, y, face side) in the plane's pixels
        ref = whole(plane)
        scale = w / ref.shape[1]
        found += [((x + 0.5) * 4 * scale, (y + 0.5) * 4 * scale, 24 * scale) for y, x in peaks(heat(float_net, ref), SURE)]
        th, tw = int(h * 0.6), int(w * 0.6)
        for (oy, ox), cut in zip([(y, x) for y in (0, h - th) for x in (0, w - tw)], tiles(plane)):
            sx, sy = tw / 736, th / 608
            found += [(ox + (x + 0.5) * 4 * sx, oy + (y + 0.5) * 4 * sy, 24 * sx) for y, x in peaks(heat(float_net, cut), SURE)]
        centres = []
        for x, y, side in found:   # one square per face, however many searches and cells found it
            if all(abs(x - cx) > side or abs(y - cy) > side for cx, cy, _ in centres):
                centres.append((x, y, side))
        for i, (x, y, side) in enumerate(centres):
            for factor in (2, 3):
                (cut,) = squares(plane, [(x, y)], int(side * factor))
                result.add("follow", heat(float_net, cut), heat(candidate_net, cut), f"{name}#f{i}x{factor}")
    return result


def quantize(float_model, out_model, inputs, weights="int8", reduce_range=False):
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
        quantize_static(prepared, out_model, Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8,
                        weight_type=QuantType.QUInt8 if weights == "uint8" else QuantType.QInt8,
                        calibrate_method=CalibrationMethod.MinMax, reduce_range=reduce_range)


def main(argv):
    parser = argparse.ArgumentParser(description="CenterFace in 8-bit integers, calibrated on one half and accepted on the other.")
    parser.add_argument("float_model")
    parser.add_argument("out_model")
    parser.add_argument("--calibrate", nargs="+", required=True, help="tuning half: photos and videos")
    parser.add_argument("--validate", nargs="+", required=True, help="validation half: photos and videos")
    parser.add_argument("--weights", choices=["int8", "uint8"], default="int8")
    parser.add_argument("--full-range", action="store_true", help="8-bit weights (saturate on x86 without VNNI)")
    args = parser.parse_args(argv)
    tuning = [p for path in args.calibrate for p in frames(path)]
    inputs = calibration_inputs(tuning)
    with tempfile.TemporaryDirectory() as work:
        quantized = os.path.join(work, "int8.onnx")
        quantize(args.float_model, quantized, inputs, args.weights, reduce_range=not args.full_range)
        validation = [(os.path.basename(path), p) for path in args.validate for p in frames(path)]
        result = recall(session(args.float_model), session(quantized), validation)
        counts = ", ".join(f"{kind}: {result.missed.get(kind, 0)} of {result.sure.get(kind, 0)} missed, "
                           f"{result.added.get(kind, 0)} added" for kind in ("whole", "tile", "follow"))
        print(f"quantize_face_model: calibrated on {len(inputs)} searches from {len(tuning)} tuning frames; "
              f"on {len(validation)} validation frames, faces the float network is sure of: {counts}", file=sys.stderr)
        missed, added = result.missed.get("follow", 0), result.added.get("follow", 0)
        for miss in (m for m in result.misses if " follow " in m):
            print(f"quantize_face_model:   missed {miss}", file=sys.stderr)
        if not result.sure.get("follow"):
            print("quantize_face_model: no face to check follows on in the validation half", file=sys.stderr)
            sys.exit(1)
        if missed or added:
            print(f"quantize_face_model: the 8-bit network loses faces on this CPU: {args.out_model} not written", file=sys.stderr)
            sys.exit(REJECTED)
        shutil.copyfile(quantized, args.out_model)


if __name__ == "__main__":
    main(sys.argv[1:])
