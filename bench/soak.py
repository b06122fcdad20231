#!/usr/bin/python3
"""Bounded soak test of bertserve on loopback: CLIENTS keep-alive clients
send a mix of every route (a fraction of them invalid on purpose, and a
fraction as large as the limits allow: 32 inputs of 512 tokens, fill-mask
answers of megabytes, bodies parsed off the event loop) for DURATION
seconds. Every SAMPLE seconds it prints the server's RSS and open
file descriptors; at the end, requests by status, latency p50/p99, and RSS
and fds at start, after warm-up and at the end.

Fails (exit 1) on any 5xx, any transport error, a server crash, RSS growth
after warm-up over both --max-rss-growth (default 5%) and --rss-slack-mib
(default 4 MiB), or more open fds once the clients have left than before
they came. The slack is for malloc's per-thread arenas, which grow in steps
of 1-2 MiB while the mix of request sizes settles and then stay flat; a leak
keeps growing (at 2,500 requests/s, 40 bytes a request pass 4 MiB within
the run) and the LeakSanitizer and valgrind tests catch smaller ones.

usage: bench/soak.py BIN_DIR MODEL_DIR [--duration S] [--clients N]
       [--warmup S] [--invalid-fraction F] [--max-size-fraction F]
       [--sample S] [--json OUT]
The issue's full soak: --duration 600 --clients 64 --invalid-fraction 0.05.
"""
import argparse
import http.client
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "http"))
from harness import Server  # noqa: E402

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing "
         "matches in the old town square near a river").split()


def text(rng, lo, hi):
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(lo, hi)))


def valid_request(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return "POST", "/embed", {"inputs": [text(rng, 3, 60) for _ in range(rng.randint(1, 4))]}
    if kind == 1:
        return "POST", "/classify", {"inputs": text(rng, 3, 80)}
    if kind == 2:
        words = text(rng, 4, 40).split()
        words[rng.randrange(len(words))] = "[MASK]"
        return "POST", "/fill-mask", {"inputs": " ".join(words), "top_k": rng.randint(1, 8)}
    if kind == 3:
        return "POST", "/tokenize", {"inputs": [text(rng, 1, 30), [text(rng, 1, 9), "b"]]}
    if kind == 4:
        return "POST", "/v1/embeddings", {"input": text(rng, 2, 30),
                                          "encoding_format": rng.choice(["float", "base64"])}
    if kind == 5:
        return "GET", rng.choice(["/health", "/ready", "/info"]), None
    return "GET", "/metrics", None


def max_size_request(rng):
    """A request at the default limits: 32 inputs cut to 512 tokens (a body
    over offload_parse_bytes, parsed off the loop), or one fill-mask input of
    512 tokens with 60 masks (an answer of about 2 MB)."""
    kind = rng.randrange(3)
    if kind == 0:
        return "POST", "/embed", {"inputs": [text(rng, 520, 560) for _ in range(32)],
                                  "truncate": True}
    if kind == 1:
        return "POST", "/tokenize", {"inputs": [text(rng, 520, 560) for _ in range(32)],
                                     "truncate": True}
    words = text(rng, 520, 560).split()
    for i in rng.sample(range(500), 60):
        words[i] = "[MASK]"
    return "POST", "/fill-mask", {"inputs": " ".join(words), "top_k": 5, "truncate": True}


INVALID = [
    ("POST", "/embed", b"{not json"),
    ("POST", "/embed", b'{"inputs": 5}'),
    ("POST", "/embed", b'{"inputs": "\xff\xfe"}'),
    ("POST", "/fill-mask", b'{"inputs": "no mask"}'),
    ("POST", "/classify", b'{"inputs": "a", "function_to_apply": "relu"}'),
    ("POST", "/embed", json.dumps({"inputs": ["x"] * 100}).encode()),
    ("POST", "/embed", b"[" * 3000 + b"]" * 3000),
    ("GET", "/nope", None),
    ("GET", "/embed", None),
    ("POST", "/embed", b'{"inputs": "a", "inputs": "b"}'),
]


def proc_stats(pid):
    """(RSS in KiB, open fds) of a process."""
    rss = 0
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir("/proc/%d/fd" % pid))


class Load:
    def __init__(self, port, clients, invalid_fraction, max_size_fraction, seed):
        self.port = port
        self.invalid_fraction = invalid_fraction
        self.max_size_fraction = max_size_fraction
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.by_status = {}
        self.transport_errors = []
        self.latencies = []
        self.threads = [threading.Thread(target=self.client, args=(seed + i,))
                        for i in range(clients)]

    def client(self, seed):
        rng = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            draw = rng.random()
            if draw < self.invalid_fraction:
                method, path, body = rng.choice(INVALID)
            else:
                make = (max_size_request if draw < self.invalid_fraction + self.max_size_fraction
                        else valid_request)
                method, path, obj = make(rng)
                body = json.dumps(obj).encode() if obj is not None else None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                t0 = time.time()
                conn.request(method, path, body=body,
                             headers={"Content-Type": "application/json"} if body else {})
                resp = conn.getresponse()
                resp.read()
                elapsed = time.time() - t0
                with self.lock:
                    self.by_status[resp.status] = self.by_status.get(resp.status, 0) + 1
                    self.latencies.append(elapsed)
                if resp.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException) as e:
                with self.lock:
                    self.transport_errors.append("%s %s: %r" % (method, path, e))
                if conn is not None:
                    conn.close()
                conn = None
        if conn is not None:
            conn.close()

    def start(self):
        for t in self.threads:
            t.start()

    def finish(self):
        self.stop.set()
        for t in self.threads:
            t.join(120)


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin_dir")
    ap.add_argument("model_dir")
    ap.add_argument("--duration", type=float, default=60)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--warmup", type=float, default=None,
                    help="seconds before the RSS baseline (default: a third of the duration)")
    ap.add_argument("--invalid-fraction", type=float, default=0.05)
    ap.add_argument("--max-size-fraction", type=float, default=0.02)
    ap.add_argument("--sample", type=float, default=None, help="seconds between samples")
    ap.add_argument("--max-rss-growth", type=float, default=0.05)
    ap.add_argument("--rss-slack-mib", type=float, default=4.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", help="write the summary here too")
    args = ap.parse_args()
    warmup = args.warmup if args.warmup is not None else args.duration / 3
    sample = args.sample or max(1.0, args.duration / 20)

    server = Server(args.bin_dir, args.model_dir,
                    ["--max-concurrent-requests", str(4 * args.clients),
                     "--max-connections", str(2 * args.clients + 16)])
    pid = server.proc.pid
    failures = []
    try:
        rss_start, fd_start = proc_stats(pid)
        print("t(s)  rss(MiB)  fds  requests")
        print("%5.0f %8.1f %5d %9d" % (0, rss_start / 1024, fd_start, 0))
        load = Load(server.port, args.clients, args.invalid_fraction, args.max_size_fraction,
                    args.seed)
        t0 = time.time()
        load.start()
        rss_warm = fd_warm = None
        samples = []
        next_sample = t0 + sample
        while time.time() - t0 < args.duration:
            time.sleep(max(0.0, min(next_sample, t0 + args.duration) - time.time()))
            next_sample += sample
            if server.proc.poll() is not None:
                failures.append("the server exited with %s" % server.proc.returncode)
                break
            rss, fds = proc_stats(pid)
            elapsed = time.time() - t0
            with load.lock:
                n = sum(load.by_status.values())
            samples.append({"t": round(elapsed, 1), "rss_kib": rss, "fds": fds, "requests": n})
            print("%5.0f %8.1f %5d %9d" % (elapsed, rss / 1024, fds, n), flush=True)
            if rss_warm is None and elapsed >= warmup:
                rss_warm, fd_warm = rss, fds
        load.finish()
        if server.proc.poll() is not None:
            failures.append("the server exited with %s" % server.proc.returncode)
            rss_end = fd_end = 0
        else:
            # Connections close asynchronously: give the fds a moment to come back.
            deadline = time.time() + 5
            rss_end, fd_end = proc_stats(pid)
            while fd_end > fd_start and time.time() < deadline:
                time.sleep(0.1)
                rss_end, fd_end = proc_stats(pid)
        if rss_warm is None:
            rss_warm, fd_warm = ((samples[0]["rss_kib"], samples[0]["fds"]) if samples
                                 else (rss_start, fd_start))
        lat = sorted(load.latencies)
        served = sum(load.by_status.values())
        fivexx = sum(v for k, v in load.by_status.items() if k >= 500)
        summary = {
            "duration_s": args.duration, "clients": args.clients,
            "invalid_fraction": args.invalid_fraction,
            "max_size_fraction": args.max_size_fraction, "requests": served,
            "requests_per_s": round(served / args.duration, 1),
            "by_status": {str(k): v for k, v in sorted(load.by_status.items())},
            "status_5xx": fivexx, "transport_errors": len(load.transport_errors),
            "p50_ms": round(percentile(lat, 0.50) * 1e3, 2),
            "p99_ms": round(percentile(lat, 0.99) * 1e3, 2),
            "rss_mib": {"start": round(rss_start / 1024, 1), "warm": round(rss_warm / 1024, 1),
                        "end": round(rss_end / 1024, 1)},
            "fds": {"start": fd_start, "warm": fd_warm, "end_idle": fd_end},
            "samples": samples,
        }
        if fivexx:
            failures.append("%d responses were 5xx" % fivexx)
        if load.transport_errors:
            failures.append("%d transport errors, first: %s" % (len(load.transport_errors),
                                                               load.transport_errors[0]))
        if served == 0:
            failures.append("no request was served")
        allowed_kib = max(rss_warm * args.max_rss_growth, args.rss_slack_mib * 1024)
        if rss_end > rss_warm + allowed_kib:
            failures.append("RSS grew from %.1f MiB after warm-up to %.1f MiB (limit %.0f%% "
                            "or %.0f MiB)" % (rss_warm / 1024, rss_end / 1024,
                                             args.max_rss_growth * 100, args.rss_slack_mib))
        if fd_end > fd_start:
            failures.append("open fds grew from %d to %d" % (fd_start, fd_end))
        summary["failures"] = failures
        printable = dict(summary)
        del printable["samples"]
        print(json.dumps(printable, indent=1))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
    finally:
        code = server.stop()
        if code != 0 and not failures:
            failures.append("the server exited with %s on SIGTERM" % code)
    for f in failures:
        print("FAIL:", f)
    if failures:
        print("server log (last lines, full log in %s):" % server.log_path)
        print("\n".join(server.output().splitlines()[-15:]))
    print("soak: %s" % ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
