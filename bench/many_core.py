#!/usr/bin/env python3
"""The checks issue 23 leaves to a many-core machine, in one bounded run.

usage: bench/many_core.py [--out DIR] [--rounds 3] [--repeat 3] [--http-seconds 8]
                          [--no-http]

On every CPU of the machine: BERT-base 32x128 (`bert init` weights, SST-2
token ids) through `bert bench` in f32, bf16 and int8, the dtypes taking
turns each round (median of round medians), and the ratios bf16/f32 and
int8/f32 (issue 23: bf16 >= 2.5x f32 on AMX). Then one thread, each dtype
with --profile: the pass's time and its share outside the GEMMs. Then
bench/http_bench.py on the default model, short /embed requests at
concurrency 256, with the server's default loop threads and with one: the
loop CPU per request and the requests/s (issue 23: <= 15 us, >= 40k/s);
then /tokenize, which parses and tokenizes like /embed but never reaches the
engine: the rate the front end (loops and prepare threads) carries alone.

Prints the CPU, its AMX/VNNI flags and OpenBLAS's kernel first; needs
build/bin (bert, bertserve) and wrk; nothing from ../shared. About a
minute and a half on 16 cores (a lent Xeon); under a minute on 2 cores with
--rounds 1 --repeat 1 --http-seconds 2.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import engine_bench as eb  # noqa: E402

DTYPES = ("f32", "bf16", "int8")


def log(msg):
    print(msg, flush=True)


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = line.split(":", 1)[1].split()
                return [x for x in flags if x.startswith("amx") or "vnni" in x or x == "avx512_bf16"]
    return []


def workload_32x128(out, ckpt):
    """32 sequences of 128 ids cut from the tokenized SST-2 sentences."""
    path = os.path.join(out, "32x128.json")
    stream = [i for ids in eb.tokenize(ckpt, eb.sst2_sentences()) for i in ids[1:-1]]
    random.Random(0).shuffle(stream)
    seqs = [[eb.CLS] + stream[k * 126:(k + 1) * 126] + [eb.SEP] for k in range(32)]
    with open(path, "w") as f:
        json.dump({"batches": [seqs]}, f)
    return path


def engine_rows(args, env, ckpt, load):
    threads = len(os.sched_getaffinity(0))
    engines = [eb.Ours(ckpt, threads, env, None if d == "f32" else d) for d in DTYPES]
    med, every, _ = eb.measure(engines, "embed", load, args.rounds, args.repeat, 1)
    f32 = med["bertserve"]
    log(f"\nBERT-base 32x128 on {threads} threads, {args.rounds} rounds of {args.repeat} passes "
        "(median of round medians):")
    for name, ms in med.items():
        log(f"  {name:16s} {ms:9.1f} ms  {f32 / ms:5.2f}x f32   rounds {[round(t, 1) for t in every[name]]}")
    return {"threads": threads, "median_ms": med, "round_ms": every}


def profile_rows(args, env, ckpt, load):
    log("\nBERT-base 32x128 on 1 thread, --profile (thread CPU time per pass):")
    rows = {}
    for dtype in DTYPES:
        cmd = [eb.BERT, "bench", "--model", ckpt, "--workload", load, "--task", "encode", "--repeat", "2",
               "--warmup", "1", "--threads", "1", "--dtype", dtype, "--profile"]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode:
            log(f"  {dtype}: refused: {p.stderr.strip().splitlines()[-1:]}")
            continue
        line = json.loads(p.stdout.strip().splitlines()[-1])
        rows[dtype] = line
        prof = line["profile"]
        log(f"  {dtype:5s} median {line['median_ms']:8.1f} ms  outside GEMMs {prof['outside_gemm_pct']:.1f}%  "
            f"outside dense {prof['outside_dense_pct']:.1f}%")
        log("\n".join("        " + s for s in p.stderr.strip().splitlines()))
    if "f32" in rows:
        for dtype in ("bf16", "int8"):
            if dtype in rows:
                log(f"  {dtype}/f32 on 1 thread: {rows['f32']['median_ms'] / rows[dtype]['median_ms']:.2f}x")
    return rows


def http_rows(args, env):
    runs = {}
    for label, flags in (("/embed, default loop threads", []),
                         ("/embed, 1 loop thread", ["--server-flag=--loop-threads=1"]),
                         ("/tokenize (no engine), default loop threads", ["--route", "tokenize"])):
        cmd = [sys.executable, os.path.join(HERE, "http_bench.py"), "--no-engine", "--concurrency", "256",
               "--seconds", str(args.http_seconds), "--wrk-threads", "4"] + flags
        log(f"\nHTTP, {label}: {' '.join(cmd[1:])}")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        log(p.stdout.strip() + ("\n" + p.stderr.strip() if p.returncode else ""))
        runs[label] = p.stdout
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "out", "many_core"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--http-seconds", type=int, default=8)
    ap.add_argument("--no-http", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    env, pinned = eb.openblas_env("auto")
    _, core = eb.openblas_core([eb.SGEMM, "--size", "64", "--seconds", "0.01"], env)
    log(f"CPU {eb.cpu_model()}, {len(os.sched_getaffinity(0))} CPUs, flags {' '.join(cpu_flags())}; "
        f"OpenBLAS core {pinned or core}")
    started = time.time()
    ckpt = eb.checkpoint(args.out, "base")
    load = workload_32x128(args.out, ckpt)
    result = {"cpu": eb.cpu_model(), "flags": cpu_flags(), "openblas_core": pinned or core,
              "engine": engine_rows(args, env, ckpt, load), "profile": profile_rows(args, env, ckpt, load)}
    if not args.no_http:
        result["http"] = http_rows(args, env)
    with open(os.path.join(args.out, "many_core.json"), "w") as f:
        json.dump(result, f, indent=1)
    log(f"\ndone in {time.time() - started:.0f} s; {os.path.join(args.out, 'many_core.json')}")


if __name__ == "__main__":
    main()
