#!/usr/bin/env python3
"""How much video SIGKILL (or power loss) costs: records with the real
executable, kills it with SIGKILL at a random point of a chunk, and measures
the unfinished chunk as the next start's repair would (gst-discoverer-1.0):
loss = kill time - (the chunk's first frame + its playable duration).

    bench/kill-loss/measure.py [--blur] [--trials N] [-- --set key=value ...]

Run from the repository root after `swift build`. Prints one line per trial
and the mean and worst loss.
"""
import os, random, re, signal, subprocess, sys, tempfile, time

args = sys.argv[1:]
extra = []
if "--" in args:
    i = args.index("--")
    args, extra = args[:i], args[i + 1:]
blur = "--blur" in args
trials = int(args[args.index("--trials") + 1]) if "--trials" in args else 5
exe = os.environ.get("ALLSPARK_RECORDER", ".build/debug/allspark-recorder")
model = os.path.abspath("models/centerface.onnx")

def duration(path):
    out = subprocess.run(["gst-discoverer-1.0", path], capture_output=True, text=True).stdout
    m = re.search(r"Duration: (\d+):(\d+):([\d.]+)", out)
    return int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3]) if m else None

losses = []
for trial in range(trials):
    storage = tempfile.mkdtemp(prefix="allspark-kill-")
    cmd = [exe, "run", "--config", "config/demo.toml", "--set", f"recording.storage_dir={storage}",
           "--set", "recording.chunk_duration_ms=10000", "--set", f"privacy.face_blur={'true' if blur else 'false'}",
           "--set", f"privacy.model={model}"] + extra
    log = open(os.path.join(storage, "..", os.path.basename(storage) + ".log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    # Wait for the first finished chunk, then kill somewhere inside the next one.
    deadline = time.time() + 60
    while time.time() < deadline and not any(n.startswith("chunk_") for n in os.listdir(storage)):
        time.sleep(0.1)
    time.sleep(random.uniform(2, 8))
    killed_at = time.time()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    partials = sorted(n for n in os.listdir(storage) if n.endswith(".partial"))
    if not partials:
        print(f"trial {trial + 1}: no unfinished chunk"); continue
    name = partials[-1]
    start = int(re.search(r"chunk_(\d+)", name)[1]) / 1000
    playable = duration(os.path.join(storage, name)) or 0.0
    loss = killed_at - (start + playable)
    losses.append(loss)
    print(f"trial {trial + 1}: killed {killed_at - start:.2f} s into {name}; playable {playable:.2f} s; lost {loss:.2f} s")
    subprocess.run(["rm", "-rf", storage])
if losses:
    print(f"loss over {len(losses)} trials ({'blur on' if blur else 'blur off'}): mean {sum(losses) / len(losses):.2f} s, worst {max(losses):.2f} s")
