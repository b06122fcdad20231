#!/usr/bin/env python3
"""HTTP benchmark: bertserve under wrk at several concurrencies, next to the
engine's own offline throughput on the same texts, measured in the same run.

usage: bench/http_bench.py [--model DIR] [--texts FILE] [--seconds 10]
       [--concurrency 1,8,64] [--rounds 3] [--route embed|classify|tokenize] [--server-flag ...]
       [--wrk-threads 1] [--no-engine] [--floor]

Prints requests/s, tokens/s, p50/p99 latency per concurrency and the ratios the
service issue sets targets for: server tokens/s at the highest concurrency over
the engine's packed offline tokens/s (target >= 0.9), and server p50 at
concurrency 1 minus the engine's single-request forward time (target <= 1 ms).
The packed offline figure is `bert bench`'s default arrangement (every CPU on
one pass of up to --max-batch-tokens); the ratio to the engine's fastest
arrangement here, one single-thread process per CPU, is printed beside it.

The highest concurrency runs --rounds times, each run between two offline
measurements, and its ratio is to the mean of those two: a shared VM's speed
drifts by tens of percent within a minute, and a baseline taken a minute
away from the run it is compared to measures the drift. The median round is
the figure. Loopback only; every run is bounded by --seconds.

Each run also reports the event-loop threads' CPU time per request, from the
server's bertserve_loop_cpu_seconds_total counter (every loop thread's, summed)
and, as a check, from /proc/<pid>/task/<tid>/stat (the first loop runs on the
main thread, the others on threads named bertserve-loop; that clock ticks in
10 ms steps), and of that /proc figure the part spent in the kernel
("kernel": system calls, and on loopback the TCP work of delivering each
answer to wrk, which runs in the sender's system call). One loop thread can carry at most 1 / (that time) requests per
second, N loops (--server-flag=--loop-threads=N) N times that. --no-engine
skips the offline engine runs and prints only the server's rows: enough for
the loops' CPU accounting.

--floor then runs bench/loop_floor.c, one bare libuv loop that answers each
request with a fixed body as long as the server's answer, under the same
connections paced to the server's rate, and prints its CPU per request: what
the system calls and TCP cost on this machine, under any HTTP layer.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "http"))
from harness import Server, free_port  # noqa: E402


def run_json(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def token_counts(bert, model, texts):
    body = "\n".join(json.dumps({"inputs": t}) for t in texts) + "\n"
    out = subprocess.run([bert, "tokenize", "--model", model, "--jsonl", "--truncate"],
                         input=body, check=True, capture_output=True, text=True).stdout
    return [len(json.loads(line)[0]) for line in out.splitlines()]


def parse_wrk(text):
    def ms(value, unit):
        return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4}[unit]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    lat = {p: ms(v, u) for p, v, u in re.findall(r"\s+(50|90|99)%\s+([\d.]+)(us|ms|s|m)\b", text)}
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    socket_errors = re.search(r"Socket errors: (.*)", text)
    return rps, lat, int(errors.group(1)) if errors else 0, socket_errors.group(1) if socket_errors else ""


def cpu_seconds(pid):
    """User + system CPU time of a live process (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu_seconds(pid, tid):
    """(user, system) CPU time of one thread of a live process."""
    with open("/proc/%d/task/%d/stat" % (pid, tid)) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def loop_tids(pid):
    """The loop threads: the main thread, and those named bertserve-loop."""
    tids = [pid]
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == "bertserve-loop":
                tids.append(int(tid))
    return tids


def loops_cpu_seconds(pid):
    """(user, system) CPU time of the loop threads together."""
    times = [thread_cpu_seconds(pid, tid) for tid in loop_tids(pid)]
    return sum(t[0] for t in times), sum(t[1] for t in times)


def wrk(port, c, route, seconds, bodies, delay_ms=None, threads=1):
    """wrk's report of `seconds` at concurrency c over `threads` client
    threads, POSTing the bodies in turn; with delay_ms, each connection waits
    that long before each request."""
    env = dict(os.environ, BODIES=bodies)
    if delay_ms is not None:
        env["DELAY_MS"] = str(delay_ms)
    return subprocess.run(["wrk", "-t%d" % threads, "-c", str(c), "-d", "%ds" % seconds, "--latency", "-s",
                           os.path.join(HERE, "wrk_bodies.lua"),
                           "http://127.0.0.1:%d/%s" % (port, route)],
                          check=True, capture_output=True, text=True, env=env).stdout


def floor_run(args, bodies, answer_bytes, c, rps):
    """bench/loop_floor.c under the same load as the server, c connections
    paced to about the server's `rps` (a loop woken for fewer requests at a
    time pays more per request): (requests/s, its CPU per request in us, of
    it in the kernel)."""
    port = free_port()
    proc = subprocess.Popen([os.path.join(args.bin, "loop_floor"), "--port", str(port),
                             "--answer-bytes", str(answer_bytes)],
                            stderr=subprocess.PIPE, text=True)
    try:
        if "listening" not in proc.stderr.readline():
            sys.exit("loop_floor did not start (build it: cmake --build build)")
        before = thread_cpu_seconds(proc.pid, proc.pid)
        out = wrk(port, c, args.route, args.seconds, bodies, max(1, round(c * 1000 / rps)))
        after = thread_cpu_seconds(proc.pid, proc.pid)
    finally:
        proc.terminate()
        proc.wait()
    answered = int(re.search(r"(\d+) requests in", out).group(1))
    cpu = (after[0] - before[0]) + (after[1] - before[1])
    return parse_wrk(out)[0], cpu / answered * 1e6, (after[1] - before[1]) / answered * 1e6


def print_floor(floor, answer_bytes, c, loop_us):
    rps, us, kernel_us = floor
    print("floor at c=%d: a bare libuv loop (bench/loop_floor.c) answering the same requests "
          "with %d-byte bodies, paced to the server's rate: %.0f requests/s, %.1f us of CPU per "
          "request (kernel %.1f); the server's loop %.1f us, %.2fx the floor"
          % (c, answer_bytes, rps, us, kernel_us, loop_us,
             loop_us / us if us > 0 else float("nan")))


def cpu_counters(server, route):
    """(loop CPU seconds, prepare threads' CPU seconds, requests answered on
    `route`) from /metrics; the CPU figures are NaN for a server from before
    the counters (the loop's /proc figure still compares)."""
    m = server.metrics()
    prefix = 'bertserve_requests_total{route="%s",' % route
    return (m.get("bertserve_loop_cpu_seconds_total", float("nan")),
            m.get("bertserve_prepare_cpu_seconds_total", float("nan")),
            sum(v for k, v in m.items() if k.startswith(prefix)))


def print_rows(args, n_texts, mean_tokens, rows, loops):
    """The server's rows; with n_texts, the header the engine's lines give otherwise."""
    if n_texts is not None:
        print("model %s, route /%s, %d texts (mean %.1f tokens), %ds per run"
              % (args.model, args.route, n_texts, mean_tokens, args.seconds))
    print("%6s %10s %10s %9s %9s %6s %10s %10s %12s %8s %8s %12s"
          % ("conc", "req/s", "tokens/s", "p50 ms", "p99 ms", "non2xx", "server CPU", "wrk CPU",
             "loop us/req", "(/proc)", "kernel", "prep us/req"))
    for (c, rps, tps, p50, p99, non2xx, sock, scpu, ccpu, loop_us, loop_proc_us, prep_us,
         loop_sys_us) in rows:
        print("%6d %10.1f %10.0f %9.3f %9.3f %6d %10.2f %10.2f %12.1f %8.1f %8.1f %12.1f %s"
              % (c, rps, tps, p50, p99, non2xx, scpu, ccpu, loop_us, loop_proc_us, loop_sys_us,
                 prep_us, sock))
    top = rows[-1]
    loop_us = top[9] if top[9] == top[9] else top[10]  # the /proc figure without the counter
    print("loop CPU per request at c=%d: %.1f us over %d loop thread(s), so one loop thread "
          "carries at most %.0f requests/s and %d of them %.0f (target: <= 15 us, >= 40k "
          "requests/s)" % (top[0], loop_us, loops, 1e6 / loop_us if loop_us > 0 else float("inf"),
                           loops, loops * 1e6 / loop_us if loop_us > 0 else float("inf")))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "default"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--texts", default=os.path.join(HERE, "data", "sst2-dev.txt"))
    ap.add_argument("--route", default="embed", choices=["embed", "classify", "tokenize"])
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--concurrency", default="1,8,64")
    ap.add_argument("--rounds", type=int, default=3,
                    help="runs at the highest concurrency, each between offline runs")
    ap.add_argument("--max-batch-tokens", type=int, default=4096)
    ap.add_argument("--server-flag", action="append", default=[])
    ap.add_argument("--floor", action="store_true",
                    help="also run bench/loop_floor.c, a bare libuv loop, under the same load "
                         "at the highest concurrency: the loop CPU no HTTP layer gets under")
    ap.add_argument("--wrk-threads", type=int, default=1,
                    help="wrk's client threads (on many cores one can be what limits the rate)")
    ap.add_argument("--no-engine", action="store_true",
                    help="no offline engine runs: the server's rows and loop CPU only")
    args = ap.parse_args()
    if args.route == "tokenize" and not args.no_engine:
        sys.exit("--route tokenize never reaches the engine: give --no-engine")
    if shutil.which("wrk") is None:
        sys.exit("wrk is needed: apt-get install wrk")
    bert = os.path.join(args.bin, "bert")
    texts = [t for t in open(args.texts).read().splitlines() if t.strip()]
    counts = token_counts(bert, args.model, texts)
    mean_tokens = sum(counts) / len(counts)

    work = tempfile.mkdtemp(prefix="http-bench-")
    bodies = os.path.join(work, "bodies.jsonl")
    with open(bodies, "w") as f:
        for t in texts:
            f.write(json.dumps({"inputs": t}) + "\n")
    single = os.path.join(work, "single.json")
    # The engine on the same texts: packed as a full queue packs them, and one
    # request at a time (each text its own forward pass).
    def offline_packed():
        return run_json([bert, "bench", "--model", args.model, "--texts", args.texts,
                         "--batch-tokens", str(args.max_batch_tokens), "--repeat", "9",
                         "--task", args.route, "--name", "engine-packed"])["tokens_per_s"]
    # The engine's fastest arrangement here, for comparison (no target): one
    # single-thread process per CPU, each packing a few hundred tokens a
    # pass, where one thread is fastest per token. `bert bench`'s own
    # default shares every CPU in one pass and loses to barrier waits.
    def offline_per_cpu():
        cmd = [bert, "bench", "--model", args.model, "--texts", args.texts, "--threads", "1",
               "--batch-tokens", "512", "--repeat", "9", "--task", args.route,
               "--name", "engine-per-cpu"]
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
                 for _ in range(len(os.sched_getaffinity(0)))]
        outs = [p.communicate()[0] for p in procs]
        if any(p.returncode for p in procs):
            sys.exit("bert bench failed: %s" % " ".join(cmd))
        return sum(json.loads(o.strip().splitlines()[-1])["tokens_per_s"] for o in outs)
    # Every text the server gets, one per forward pass: the median text's
    # forward time is what the server's p50 at concurrency 1 is compared to.
    def offline_single():
        ids = subprocess.run([bert, "tokenize", "--model", args.model, "--jsonl", "--truncate"],
                             input="".join(json.dumps({"inputs": t}) + "\n" for t in texts),
                             check=True, capture_output=True, text=True).stdout
        batches = [[[tok["id"] for tok in json.loads(line)[0]]] for line in ids.splitlines()]
        with open(single, "w") as f:
            json.dump({"batches": batches}, f)
        one = run_json([bert, "bench", "--model", args.model, "--workload", single,
                        "--repeat", "3", "--task", args.route, "--name", "engine-single"])
        return one["batch_p50_ms"], one["median_ms"] / one["batches"]
    if not args.no_engine:
        single_ms, single_mean_ms = offline_single()

    server = Server(args.bin, args.model,
                    ["--max-batch-tokens", str(args.max_batch_tokens), "--log-level", "warn",
                     "--max-concurrent-requests", "4096"] + args.server_flag)

    def wrk_run(c):
        # CPU time of the server and of wrk (a child) over the run: on a
        # small machine the load generator's share is CPU the server lacks.
        pid = server.proc.pid
        loop_before, prep_before, requests_before = cpu_counters(server, args.route)
        server_cpu, loop_proc = cpu_seconds(pid), loops_cpu_seconds(pid)
        client_cpu = os.times().children_user + os.times().children_system
        out = wrk(server.port, c, args.route, args.seconds, bodies, threads=args.wrk_threads)
        server_cpu = cpu_seconds(pid) - server_cpu
        loop_after_proc = loops_cpu_seconds(pid)
        loop_sys = loop_after_proc[1] - loop_proc[1]
        loop_proc = sum(loop_after_proc) - sum(loop_proc)
        client_cpu = os.times().children_user + os.times().children_system - client_cpu
        loop_after, prep_after, requests_after = cpu_counters(server, args.route)
        answered = max(1.0, requests_after - requests_before)
        rps, lat, non2xx, sock = parse_wrk(out)
        return (c, rps, rps * mean_tokens, lat.get("50"), lat.get("99"), non2xx, sock,
                server_cpu / args.seconds, client_cpu / args.seconds,
                (loop_after - loop_before) / answered * 1e6, loop_proc / answered * 1e6,
                (prep_after - prep_before) / answered * 1e6, loop_sys / answered * 1e6)

    levels = [int(x) for x in args.concurrency.split(",")]
    loops = len(loop_tids(server.proc.pid))
    rows, rounds = [], []
    try:
        for c in levels[:-1]:
            rows.append(wrk_run(c))
        if args.no_engine:
            rows.append(wrk_run(levels[-1]))
        else:
            packed, per_cpu = [offline_packed()], [offline_per_cpu()]
            for _ in range(max(1, args.rounds)):
                rounds.append(wrk_run(levels[-1]))
                packed.append(offline_packed())
                per_cpu.append(offline_per_cpu())
        # The floor answers with a body as long as the server's answer to a
        # typical request: the first text's.
        answer_bytes = len(server.request("POST", "/" + args.route, {"inputs": texts[0]})[2])
    finally:
        server.stop()

    def show_floor(top):
        if args.floor:
            floor = floor_run(args, bodies, answer_bytes, top[0], top[1])
            print_floor(floor, answer_bytes, top[0], top[9] if top[9] == top[9] else top[10])
    if args.no_engine:
        print_rows(args, len(texts), mean_tokens, rows, loops)
        show_floor(rows[-1])
        shutil.rmtree(work)
        return
    ratios = [r[2] / ((packed[i] + packed[i + 1]) / 2) for i, r in enumerate(rounds)]
    median = sorted(range(len(ratios)), key=lambda i: ratios[i])[len(ratios) // 2]
    rows.append(rounds[median])
    packed_tps = (packed[median] + packed[median + 1]) / 2
    per_cpu_tps = (per_cpu[median] + per_cpu[median + 1]) / 2

    print("model %s, route /%s, %d texts (mean %.1f tokens), %ds per run"
          % (args.model, args.route, len(texts), mean_tokens, args.seconds))
    print("engine offline, packed (%d-token batches), between the c=%d rounds: %s tokens/s"
          % (args.max_batch_tokens, levels[-1], ", ".join("%.0f" % p for p in packed)))
    print("engine offline, one 1-thread process per CPU (512-token batches), same times: %s "
          "tokens/s" % ", ".join("%.0f" % p for p in per_cpu))
    print("engine offline, one text per forward pass: p50 %.3f ms, mean %.3f ms"
          % (single_ms, single_mean_ms))
    print_rows(args, None, None, rows, loops)
    top = rows[-1]
    show_floor(top)
    print("c=%d rounds, tokens/s over the mean of the offline runs either side: %s"
          % (top[0], ", ".join("%.0f/%.0f = %.2f" % (r[2], (packed[i] + packed[i + 1]) / 2,
                                                      ratios[i])
                               for i, r in enumerate(rounds))))
    print("server tokens/s at c=%d / engine packed tokens/s, median round: %.2f (target >= 0.90)"
          % (top[0], top[2] / packed_tps))
    print("server tokens/s at c=%d / engine one process per CPU, same round: %.2f (no target)"
          % (top[0], top[2] / per_cpu_tps))
    print("  (on %d CPUs; the server used %.2f of them, wrk %.2f)" % (os.cpu_count(), top[7],
                                                                     top[8]))
    if rows[0][0] == 1:
        print("server p50 at c=1 - engine p50 single forward: %+.3f ms (target <= 1 ms)"
              % (rows[0][3] - single_ms))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
