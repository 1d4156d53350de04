"""Pairs a recording that has fewer frames than its source (privacy.when_behind
= lower_fps leaves frames out) with the source frames it shows, so that
bench/live-faces judges each recorded frame against the frame it came from.

    python bench/align_frames.py SOURCE.raw RECORDED.raw TRUTH.json WIDTH HEIGHT OUT_SOURCE.raw OUT_RECORDED.raw OUT_TRUTH.json

Each recorded frame is matched to the source frame after the one matched
before it that it differs least from (mean absolute difference of 16x16
block means); a recorded frame that matches none well is left out. Writes
the matched source frames, the recorded frames matched and the truth of the
source frames, in the recording's order; prints the source frames not recorded."""
import json
import sys

import numpy as np


def main():
    src, rec, truth_path, W, H, out_src, out_rec, out_truth = sys.argv[1:9]
    W, H = int(W), int(H)
    size = W * H * 3 // 2
    a = np.memmap(src, dtype=np.uint8, mode="r")
    b = np.memmap(rec, dtype=np.uint8, mode="r")
    na, nb = len(a) // size, len(b) // size
    truth = json.load(open(truth_path))

    def small(data, i):
        y = np.asarray(data[i * size:i * size + W * H]).reshape(H, W)[:H // 16 * 16, :W // 16 * 16].astype(np.float32)
        return y.reshape(H // 16, 16, W // 16, 16).mean(axis=(1, 3))

    src_small = [small(a, i) for i in range(na)]
    matched, kept, prev = [], [], -1
    for j in range(nb):
        r = small(b, j)
        candidates = range(prev + 1, na)
        if not candidates:
            break
        i = min(candidates, key=lambda k: float(np.abs(src_small[k] - r).mean()))
        # A recorded frame that matches no later source frame well (the clip played
        # again after its end, as the live runs' file source does) is not judged.
        if float(np.abs(src_small[i] - r).mean()) > 4:
            continue
        matched.append(i)
        kept.append(j)
        prev = i
    with open(out_src, "wb") as f:
        for i in matched:
            f.write(a[i * size:(i + 1) * size].tobytes())
    with open(out_rec, "wb") as f:
        for j in kept:
            f.write(b[j * size:(j + 1) * size].tobytes())
    truth["faces"] = [truth["faces"][i] for i in matched if i < len(truth["faces"])]
    if "partial" in truth:
        truth["partial"] = [truth["partial"][i] for i in matched if i < len(truth["partial"])]
    json.dump(truth, open(out_truth, "w"))
    print(f"{len(matched)} recorded frames matched to source frames {matched[0] if matched else '-'}..{matched[-1] if matched else '-'}; "
          f"{(matched[-1] + 1 - len(matched)) if matched else 0} source frames between them not recorded; "
          f"{nb - len(kept)} recorded frames matched none (not judged)", file=sys.stderr)


if __name__ == "__main__":
    main()
