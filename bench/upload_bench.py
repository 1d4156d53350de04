"""Runs the upload benchmark (see bench/upload-vs-python): one server, the
same 200 MB chunk sent by allspark-recorder and by a Python websockets
client, one after the other, each measured the same way:

- throughput: bytes / (end of the binary message - arrival of the metadata), at the server;
- RSS growth: peak RSS of the client process while uploading minus its RSS
  just before the metadata arrived (sampled from /proc every 5 ms).

    python bench/upload_bench.py RECORDER_BIN CHUNK_FILE WORK_DIR ROUNDS
"""
import json
import os
import socket
import subprocess
import sys
import threading
import time

recorder, chunk, work, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
python = sys.executable
here = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None


def run_sampled(command):
    """Runs a command, sampling its RSS; returns [(time, kB)] and the exit status."""
    samples = []
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "client.log"), "ab"))
    while process.poll() is None:
        kb = rss_kb(process.pid)
        if kb is not None:
            samples.append((time.time(), kb))
        time.sleep(0.005)
    return samples, process.returncode


uploads_dir = os.path.join(work, "received")
os.makedirs(uploads_dir, exist_ok=True)
port = free_port()
server_log = open(os.path.join(work, "server.jsonl"), "w+")
server = subprocess.Popen([python, os.path.join(here, "upload_server.py"), str(port), uploads_dir], stdout=server_log)
time.sleep(1.5)

storage = os.path.dirname(chunk)
clients = {
    "allspark-recorder": [recorder, "upload", "--config", os.path.join(here, "..", "config", "demo.toml"),
                          "--set", f"server.host=ws://127.0.0.1:{port}", "--set", f"recording.storage_dir={storage}",
                          "--set", "device.name=allspark-recorder", "--from", "0", "--log-level", "warning"],
    "python-websockets": [python, os.path.join(here, "upload_client.py"), f"ws://127.0.0.1:{port}/", chunk],
}
size = os.path.getsize(chunk)
results = {name: [] for name in clients}
try:
    for _ in range(rounds):
        for name, command in clients.items():
            before = sum(1 for _ in open(server_log.name))
            samples, status = run_sampled(command)
            time.sleep(0.3)
            lines = [json.loads(l) for l in open(server_log.name).read().splitlines()[before:]]
            if status != 0 or len(lines) != 1 or lines[0]["bytes"] != size:
                sys.exit(f"{name}: upload failed (exit {status}, server saw {lines}); see {work}/client.log")
            with open(os.path.join(uploads_dir, os.path.basename(chunk)), "rb") as a, open(chunk, "rb") as b:
                if a.read() != b.read():
                    sys.exit(f"{name}: the server's copy differs from the chunk")
            line = lines[0]
            start, end = line["metadata_at"], line["metadata_at"] + line["seconds"]
            baseline = [kb for t, kb in samples if t <= start] or [samples[0][1]]
            during = [kb for t, kb in samples if start <= t <= end + 0.5] or [max(kb for _, kb in samples)]
            results[name].append({"mib_s": size / 1048576 / line["seconds"], "seconds": line["seconds"],
                                  "baseline_mb": baseline[-1] / 1024, "growth_mb": (max(during) - baseline[-1]) / 1024,
                                  "peak_mb": max(kb for _, kb in samples) / 1024})
finally:
    server.terminate()

print(f"upload of one {size / 1048576:.1f} MiB chunk over loopback, {rounds} round(s), same server, best round shown")
print(f"{'client':<20} {'MiB/s':>8} {'seconds':>8} {'RSS before':>11} {'RSS growth':>11} {'peak RSS':>9}")
for name, runs in results.items():
    best = max(runs, key=lambda r: r["mib_s"])
    growth = max(r["growth_mb"] for r in runs)
    print(f"{name:<20} {best['mib_s']:8.1f} {best['seconds']:8.2f} {best['baseline_mb']:9.1f} MB {growth:9.1f} MB {best['peak_mb']:6.1f} MB")
print("(RSS growth: the largest over all rounds)")
