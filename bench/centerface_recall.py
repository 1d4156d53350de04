"""CenterFace in 8 bits against the float network, on both halves of the corpus: how many of the
faces the float network is sure of each 8-bit variant still finds, by kind of search, and what
each costs on this CPU.

  .build-bench/venv/bin/python bench/centerface_recall.py [CORPUS_DIR [TEST_ASSETS_DIR]]
  (bench/centerface-recall sets it up and runs it)

Variants, each calibrated on the tuning half only (bench/corpus/README.md), except the first:
  bench-photos       uint8 x int8, calibrated on the eight bench photos (what fetch-face-model made before)
  int8               uint8 x int8, calibrated on the tuning half, lit and blurred variants included
  int8-reduce-range  the same with 7-bit weights (no uint8 x int8 saturation on x86 without VNNI):
                     what fetch-face-model makes, chosen on the tuning half (fewest faces lost there
                     of the variants faster than float)
  uint8              uint8 x uint8 weights (no saturation either; other kernels)
Recall is scripts/quantize_face_model.py's: on the whole frame (640 wide), four tiles (736 x 608) and
a follow square (96 x 96) on each face, every heatmap peak of 0.5 or more in float ("sure") must score
0.3 or more in 8 bits within a cell; "added" counts 8-bit peaks of 0.5 or more where float has
under 0.3. Speed: milliseconds per search on one core (median of repeats), float alongside.
"""
import os
import statistics
import sys
import time

os.environ["ORT_DISABLE_TELEMETRY"] = "1"   # ONNX Runtime's official builds collect telemetry unless this is set

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import numpy as np  # noqa: E402
import quantize_face_model as q  # noqa: E402

BENCH_PHOTOS = ["astronaut.png", "camera.png", "coffee.png", "chelsea.png", "t1.jpg", "obama.jpg", "obama2.jpg", "obama3.jpg"]


def corpus(corpus_dir, half):
    rows = [line.rstrip("\n").split("\t") for line in open(os.path.join(ROOT, "bench/corpus/corpus.tsv"))
            if line.strip() and not line.startswith(("#", "name\t"))]
    return [os.path.join(corpus_dir, r[0]) for r in rows if r[1] == half]


def speed(net):
    shapes = {"whole": (352, 640), "tile": (608, 736), "follow": (96, 96)}
    out = {}
    for kind, (h, w) in shapes.items():
        x = (np.random.default_rng(1).random((h, w)) * 255).astype(np.float32)
        q.heat(net, x)
        times = []
        for _ in range(15 if kind == "follow" else 5):
            t = time.perf_counter(); q.heat(net, x); times.append((time.perf_counter() - t) * 1000)
        out[kind] = statistics.median(times)
    return out


def main(corpus_dir, assets_dir):
    models = os.path.join(ROOT, "models")
    float_model = os.path.join(models, "centerface-dynamic.onnx")
    work = os.path.join(ROOT, ".build-bench", "centerface-int8")
    os.makedirs(work, exist_ok=True)
    tuning_files = [os.path.join(assets_dir, p) for p in BENCH_PHOTOS] + corpus(corpus_dir, "tuning")
    validation_files = corpus(corpus_dir, "validation")
    named = lambda files: [(os.path.basename(f), p) for f in files for p in q.frames(f)]
    tuning, validation = named(tuning_files), named(validation_files)
    print(f"tuning half: {len(tuning)} frames from {len(tuning_files)} files; validation half: {len(validation)} frames "
          f"from {len(validation_files)} files", file=sys.stderr)
    variants = {
        "bench-photos": (lambda: q.calibration_inputs([q.gray(os.path.join(assets_dir, p)) for p in BENCH_PHOTOS]), "int8", False),
        "int8": (lambda: q.calibration_inputs([p for _, p in tuning]), "int8", False),
        "int8-reduce-range": (lambda: q.calibration_inputs([p for _, p in tuning]), "int8", True),
        "uint8": (lambda: q.calibration_inputs([p for _, p in tuning]), "uint8", False),
    }
    float_net = q.session(float_model)
    rows = [("float", None, speed(float_net))]
    for name, (inputs, weights, reduce_range) in variants.items():
        path = os.path.join(work, name + ".onnx")
        if not os.path.exists(path):
            print(f"quantising {name}", file=sys.stderr)
            q.quantize(float_model, path, inputs(), weights, reduce_range)
        net = q.session(path)
        halves = {half: q.recall(float_net, net, planes) for half, planes in (("tuning", tuning), ("validation", validation))}
        rows.append((name, halves, speed(net)))
        for miss in halves["validation"].misses[:8]:
            print(f"  {name} missed on validation: {miss}", file=sys.stderr)

    print("| network | tuning half: missed / sure (whole, tile, follow), added | validation half: missed / sure (whole, tile, follow), added | ms whole 640x352 | ms tile 736x608 | ms follow 96x96 |")
    print("|---|---|---|---|---|---|")
    for name, halves, ms in rows:
        cells = []
        for half in ("tuning", "validation"):
            if halves is None:
                cells.append("(reference)")
                continue
            r = halves[half]
            kinds = ", ".join(f"{r.missed.get(k, 0)}/{r.sure.get(k, 0)}" for k in ("whole", "tile", "follow"))
            cells.append(f"{r.total(r.missed)}/{r.total(r.sure)} ({kinds}), {r.total(r.added)}")
        print(f"| {name} | {cells[0]} | {cells[1]} | {ms['whole']:.1f} | {ms['tile']:.1f} | {ms['follow']:.2f} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "corpus"),
         sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "test-assets"))
