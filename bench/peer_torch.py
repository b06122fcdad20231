#!/usr/bin/python3
"""PyTorch peer for bench/engine_bench.py, driven over stdin/stdout.

usage: /usr/bin/python3 bench/peer_torch.py THREADS
Each stdin line is a JSON command, answered by one JSON line:
  {"model": DIR, "task": "embed|fill-mask|classify", "workload": "w.json",
   "repeat": R, "warmup": W}
  -> {"times_ms": [...], "probe": [...], "rss_peak_kb": N}
The same protocol and timing as bench/peer_ort.js: eager bench/torch_bert.py
under torch.inference_mode with torch.set_num_threads(THREADS); inputs padded
to each batch's longest sequence before timing; fill-mask computes the
vocabulary projection at every position, then softmax + top-5 at each mask.
"""

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import TorchBert, pad_batch  # noqa: E402

MASK_ID = 103
TOPK = 5



def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return None


def run(cmd, models):
    key = (cmd["model"], cmd["task"])
    if key not in models:
        models[key] = TorchBert(cmd["model"], cmd["task"]).eval()
    net = models[key]
    with open(cmd["workload"]) as f:
        batches = [pad_batch(b) for b in json.load(f)["batches"]]
    times, probe = [], []
    with torch.inference_mode():
        for r in range(cmd["warmup"] + cmd["repeat"]):
            t0 = time.perf_counter()
            for b, (ids, mask) in enumerate(batches):
                out = net(ids, mask)
                if cmd["task"] == "fill-mask":
                    rows = out[ids == MASK_ID]
                    out = torch.softmax(rows, dim=-1).topk(TOPK, dim=-1).values[:, 0]
                if b == 0 and r == 0:
                    probe = out.flatten()[:16].tolist()
            if r >= cmd["warmup"]:
                times.append((time.perf_counter() - t0) * 1e3)
    return {"times_ms": times, "probe": probe, "rss_peak_kb": peak_rss_kb()}


def main():
    torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    models = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = run(json.loads(line), models)
        except Exception as e:  # reported to the driver, which stops
            answer = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
