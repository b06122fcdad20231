#!/usr/bin/python3
"""Engine benchmark: `bert` against ONNX Runtime and PyTorch, side by side.

usage: /usr/bin/python3 bench/engine_bench.py [--quick] [--threads N]
           [--geometries minilm,base | --geometries modernbert] [--rounds R] [--repeat K] [--dtype bf16|int8]
           [--no-ort] [--no-torch] [--no-sweep] [--http]
           [--openblas-coretype auto|none|NAME] [--out DIR]
       /usr/bin/python3 bench/engine_bench.py --profile [--latency] [...]
       /usr/bin/python3 bench/engine_bench.py --latency [--profile] [...]

One command: builds nothing (run CMake first: it needs build/bin/bert and
build/bin/sgemm_peak), generates the checkpoints with `bert init`, exports
them to ONNX (bench/export_onnx.py, checked against `bert` within 1e-4),
installs onnxruntime-node into bench/peers/ on first use, writes the
workloads (the same token ids for every engine), then for each workload runs
the engines in rotating order for R rounds of K passes and reports medians,
ratios, GFLOP/s against the measured sgemm and FMA peaks, padding waste and memory.
Results: OUT/engine_bench.json and .md, plots OUT/tokens_vs_seqlen_*.png.

--profile runs only `bert bench --profile` at 32x128 on one thread for f32,
bf16 and int8 (where the CPU has them): the encoder's thread CPU time per op
class, and the shares outside the dense layers and outside all the GEMMs
(the dense layers and attention's two products) (OUT/profile.json, .md).
--latency runs only the lone-sequence rows (1x16, 1x128, 1x512) against
ONNX Runtime (OUT/latency.json, .md). Both run before anything else and
end the run; --threads applies to the latency rows.

--quick keeps the run under about 5 minutes on 2 cores once the checkpoints,
exports and peers exist: fewer rounds, BERT-base on three workloads only, a
MiniLM-only sequence-length sweep. Never run by CI.
"""

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BERT = os.path.join(ROOT, "build", "bin", "bert")
SGEMM = os.path.join(ROOT, "build", "bin", "sgemm_peak")
PEERS = os.path.join(HERE, "peers")
ORT_VERSION = "1.30.0"
TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "minilm")  # bert-base-uncased vocab, 30522
SST2 = os.path.join(HERE, "data", "sst2-dev.txt")
WIKITEXT = os.path.join(ROOT, "..", "shared", "data", "wikitext-2-raw", "wiki.test.raw")
CLS, SEP, MASK = 101, 102, 103

GEOMETRIES = {
    "minilm": {"label": "MiniLM-L6", "layers": 6, "hidden": 384, "heads": 12, "intermediate": 1536},
    "base": {"label": "BERT-base", "layers": 12, "hidden": 768, "heads": 12, "intermediate": 3072},
}
# (name, task, shape): shape (batch, seq) or "mixed" (32 real sentences).
# Embedding workloads come first so the peers' peak RSS read after them is
# the encoder's, not the fill-mask graph's.
WORKLOADS = [("1x16", "embed", (1, 16)), ("1x128", "embed", (1, 128)),
             ("1x512", "embed", (1, 512)), ("32x128", "embed", (32, 128)), ("8x512", "embed", (8, 512)),
             ("mixed32", "embed", "mixed"), ("fill-mask", "fill-mask", "mixed"),
             ("classify", "classify", "mixed")]
QUICK_BASE = ("1x16", "32x128", "mixed32")
LATENCY = ("1x16", "1x128", "1x512")
# Untimed passes before each round of a lone-sequence row, for every engine:
# a fresh `bert bench` process ran its first few short passes at up to 3x its
# steady time here (MiniLM 1x16: 5 ms, then 1.8), where the ONNX Runtime
# session, alive since the first round, had long settled. A server is warm.
LATENCY_WARMUP = 5
PROFILE_DTYPES = ("f32", "bf16", "int8")
SWEEP_LENGTHS = (16, 32, 64, 128, 256, 512)
SWEEP_TOKENS = 2048
MIXED_SEQS, MIXED_MAX = 32, 128


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout


def openblas_core(cmd, env):
    """The kernel set OpenBLAS picks (it says so on stderr with OPENBLAS_VERBOSE=2)."""
    p = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(env, OPENBLAS_VERBOSE="2"))
    core = re.search(r"Core: (\S+)", p.stderr + p.stdout)
    return p.stdout, core.group(1) if core else "?"


# ---- set-up: checkpoints, ONNX exports, peers ------------------------------

def checkpoint(out, geom):
    g = GEOMETRIES[geom]
    folder = os.path.join(out, "ckpt", geom)
    if not os.path.exists(os.path.join(folder, "config.json")):
        log(f"[setup] bert init {g['label']} -> {folder}")
        run([BERT, "init", "--out", folder, "--tokenizer", TOKENIZER, "--layers", str(g["layers"]),
             "--hidden", str(g["hidden"]), "--heads", str(g["heads"]),
             "--intermediate", str(g["intermediate"]), "--mlm", "--labels", "negative,positive",
             "--bias-range", "0.1", "--ln-range", "0.1"])
    return folder


def ensure_export_packages():
    """torch.onnx.export needs Debian's python3-torch and python3-onnx (a
    fresh machine has neither; without them export_onnx.py dies on its import)."""
    missing = [pkg for module, pkg in (("torch", "python3-torch"), ("onnx", "python3-onnx"))
               if subprocess.run([sys.executable, "-c", f"import {module}"],
                                 capture_output=True).returncode]
    if missing:
        log(f"[setup] torch.onnx.export needs {' and '.join(missing)}: "
            f"apt-get install -y {' '.join(missing)}")
        subprocess.run(["apt-get", "install", "-y", *missing], check=True,
                       stdout=subprocess.DEVNULL)


def onnx_exports(out, geom, ckpt):
    folder = os.path.join(out, "onnx", geom)
    if not all(os.path.exists(os.path.join(folder, f"{t}.onnx")) for t in ("embed", "fill-mask", "classify")):
        ensure_export_packages()
        log(f"[setup] exporting {geom} to ONNX (checked against bert within 1e-4)")
        log(run([sys.executable, os.path.join(HERE, "export_onnx.py"), "--model", ckpt,
                 "--out", folder, "--bert", BERT], stderr=subprocess.DEVNULL).strip())
    return folder


def ensure_ort():
    if os.path.isdir(os.path.join(PEERS, "node_modules", "onnxruntime-node")):
        return
    log(f"[setup] npm install onnxruntime-node@{ORT_VERSION} into {PEERS}")
    os.makedirs(PEERS, exist_ok=True)
    with open(os.path.join(PEERS, "package.json"), "w") as f:
        json.dump({"private": True, "dependencies": {"onnxruntime-node": ORT_VERSION}}, f)
    # The CPU build is in the package; its install script only fetches CUDA.
    env = dict(os.environ, ONNXRUNTIME_NODE_INSTALL_CUDA="skip", ONNXRUNTIME_NODE_INSTALL="skip")
    subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=PEERS, env=env, check=True,
                   stdout=subprocess.DEVNULL)


# ---- workloads: the same token ids for every engine ------------------------

def tokenize(ckpt, texts):
    body = "".join(json.dumps({"inputs": t}) + "\n" for t in texts)
    out = run([BERT, "tokenize", "--model", ckpt, "--jsonl", "--truncate"], input=body)
    return [[tok["id"] for tok in json.loads(line)[0]] for line in out.splitlines()]


def wiki_sentences():
    with open(WIKITEXT, encoding="utf-8") as f:
        paragraphs = [ln.strip() for ln in f if ln.strip() and not ln.strip().startswith("=")]
    return [s for p in paragraphs for s in re.split(r"(?<=[.!?])\s+", p) if len(s.split()) >= 4]


def sst2_sentences():
    with open(SST2, encoding="utf-8") as f:
        return [ln.strip() for ln in f if ln.strip()]


def build_workloads(out, ckpt):
    """{name: (task, path)} plus the sweep, written under OUT/workloads."""
    folder = os.path.join(out, "workloads")
    os.makedirs(folder, exist_ok=True)
    rng = random.Random(0)
    wiki = wiki_sentences()
    stream = [i for ids in tokenize(ckpt, wiki[:1500]) for i in ids[1:-1]]
    pos = 0

    def fixed(batch, seq):
        nonlocal pos
        seqs = []
        for _ in range(batch):
            if pos + seq - 2 > len(stream):
                pos = 0
            seqs.append([CLS] + stream[pos:pos + seq - 2] + [SEP])
            pos += seq - 2
        return seqs

    picked = rng.sample(sst2_sentences(), MIXED_SEQS // 2) + rng.sample(wiki, MIXED_SEQS // 2)
    rng.shuffle(picked)
    mixed = [ids[:MIXED_MAX - 1] + [SEP] if len(ids) > MIXED_MAX else ids for ids in tokenize(ckpt, picked)]
    masked = []
    for ids in mixed:
        ids = list(ids)
        ids[rng.randrange(1, len(ids) - 1)] = MASK
        masked.append(ids)

    def write(name, seqs, batch_size=None):
        batches = [seqs[i:i + batch_size] for i in range(0, len(seqs), batch_size)] if batch_size else [seqs]
        path = os.path.join(folder, f"{name}.json")
        with open(path, "w") as f:
            json.dump({"batches": batches}, f)
        return path

    loads = {}
    for name, task, shape in WORKLOADS:
        seqs = (masked if task == "fill-mask" else mixed) if shape == "mixed" else fixed(*shape)
        loads[name] = (task, write(name, seqs))
    sweep = {s: write(f"sweep{s}", fixed(SWEEP_TOKENS // s, s)) for s in SWEEP_LENGTHS}
    return loads, sweep


def workload_stats(path):
    with open(path) as f:
        batches = json.load(f)["batches"]
    lens = [len(s) for b in batches for s in b]
    padded = sum(len(b) * max(len(s) for s in b) for b in batches)
    return {"sequences": len(lens), "tokens": sum(lens), "padded_tokens": padded,
            "min_len": min(lens), "max_len": max(lens), "lengths": lens}


def encoder_flops(geom, lengths):
    """As `bert bench` counts them: per layer and token 8H^2 + 4HI, plus 4nH attention."""
    g = GEOMETRIES[geom]
    H, FF = g["hidden"], g["intermediate"]
    return g["layers"] * sum(n * (8 * H * H + 4 * H * FF) + 4 * n * n * H for n in lengths)


# ---- engines ---------------------------------------------------------------

class Ours:
    name = "bertserve"

    def __init__(self, ckpt, threads, env, dtype=None):
        self.ckpt, self.threads, self.env, self.dtype = ckpt, threads, env, dtype
        if dtype:
            self.name = f"bertserve-{dtype}"

    def command(self, task, workload, repeat, warmup):
        cmd = [BERT, "bench", "--model", self.ckpt, "--workload", workload, "--task", task,
               "--repeat", str(repeat), "--warmup", str(warmup), "--threads", str(self.threads)]
        return cmd + (["--dtype", self.dtype] if self.dtype else [])

    def time(self, task, workload, repeat, warmup):
        out = run(self.command(task, workload, repeat, max(warmup, 1)), env=self.env)
        return json.loads(out.strip().splitlines()[-1])["median_ms"], None

    def close(self):
        pass


class Peer:
    """A runner process (peer_ort.js or peer_torch.py) over stdin/stdout."""

    def __init__(self, name, cmd, model_for_task, env):
        self.name, self.model_for_task = name, model_for_task
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.rss_peak_kb = None

    def time(self, task, workload, repeat, warmup):
        cmd = {"model": self.model_for_task(task), "task": task, "workload": workload,
               "repeat": repeat, "warmup": warmup}
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name}: runner exited")
        answer = json.loads(line)
        if "error" in answer:
            raise SystemExit(f"{self.name}: {answer['error']}")
        self.rss_peak_kb = answer["rss_peak_kb"]
        return statistics.median(answer["times_ms"]), answer["probe"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def compare_probes(name, task, probes):
    """ORT and PyTorch must compute the same thing (a guard on the export)."""
    if len(probes) < 2:
        return None
    (a_name, a), (b_name, b) = list(probes.items())[:2]
    what = "top-1 probabilities" if task == "fill-mask" else "first outputs"
    diff = max(abs(x - y) for x, y in zip(a, b))
    flag = "" if diff <= 1e-3 else "  <-- WARNING: over 1e-3"
    return f"{name}: {a_name} vs {b_name} {what} max |diff| {diff:.2e}{flag}"


def measure(engines, task, workload, rounds, repeat, warmup=0):
    """Rotate the engines' order each round; median of round medians per engine.
    Each engine's first round has one untimed pass first, every round `warmup`
    (ours is a fresh process each round, the peers long-lived)."""
    times = {e.name: [] for e in engines}
    probes = {}
    for r in range(rounds):
        for k in range(len(engines)):
            e = engines[(r + k) % len(engines)]
            ms, probe = e.time(task, workload, repeat, max(warmup, 1 if r == 0 else 0))
            times[e.name].append(ms)
            if probe is not None and e.name not in probes:
                probes[e.name] = probe
    return {n: statistics.median(t) for n, t in times.items()}, times, probes


# ---- memory: /proc/PID/smaps while `bert bench` runs ------------------------

MAPPING_HEADER = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")


def smaps(pid, weights_path):
    """{rss, weights_rss, weights_shared, anon} in kB for one process."""
    out = {"rss": 0, "weights_rss": 0, "weights_shared": 0, "anon": 0}
    in_weights = False
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                field = line.split()
                if MAPPING_HEADER.match(line):
                    in_weights = field[-1] == weights_path
                elif field[0] == "Rss:":
                    out["rss"] += int(field[1])
                    out["weights_rss"] += int(field[1]) if in_weights else 0
                elif field[0] in ("Shared_Clean:", "Shared_Dirty:") and in_weights:
                    out["weights_shared"] += int(field[1])
                elif field[0] == "Anonymous:":
                    out["anon"] += int(field[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return out


def memory(ours, workload, weights_path, copies):
    """Peak smaps figures (each field's own peak, and the mapped weights' last sample) of `copies`
    concurrent `bert bench` processes, and the scratch size the first one reports."""
    procs = [subprocess.Popen(ours.command("embed", workload, 1, 1), stdout=subprocess.PIPE,
                              text=True, env=ours.env) for _ in range(copies)]
    peak = [dict.fromkeys(("rss", "weights_rss", "weights_shared", "anon"), 0) for _ in procs]
    while any(p.poll() is None for p in procs):
        for i, p in enumerate(procs):
            sample = smaps(p.pid, weights_path) or {}
            for key, kb in sample.items():
                peak[i][key] = max(peak[i][key], kb)
            if sample:  # int8 drops the mapped weights after reading them once
                peak[i]["weights_rss_last"] = sample["weights_rss"]
        time.sleep(0.05)
    outputs = [p.communicate()[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("bert bench failed during the memory run")
    return peak, json.loads(outputs[0].strip().splitlines()[-1]).get("scratch_bytes", 0)


# ---- sgemm peak, machine -----------------------------------------------------

def sgemm_peak(threads, quick, env):
    sizes = ["--size", "2048"] + ([] if quick else ["--size", "4096"])
    rows = []
    for t in sorted({1, threads}):
        out, core = openblas_core([SGEMM, "--threads", str(t), "--seconds", "1" if quick else "3"] + sizes, env)
        rows += [dict(json.loads(line), core=core) for line in out.splitlines() if line.startswith("{")]
    return rows


def fma_peak(threads, env):
    """The vector FMA ceiling of `threads` threads (sgemm_peak --fma), GFLOP/s;
    None where the tool cannot measure it (no AVX2/FMA, not x86-64)."""
    p = subprocess.run([SGEMM, "--fma", "--threads", str(threads), "--seconds", "1"],
                       capture_output=True, text=True, env=env)
    return json.loads(p.stdout)["peak_gflops"] if p.returncode == 0 else None


def log_sgemm(rows):
    for r in rows:
        log(f"sgemm n={r['n']} threads={r['threads']} core={r['core']}: best {r['best_gflops']} GFLOP/s")


def openblas_env(choice):
    """OpenBLAS 0.3.21 does not know recent Xeons (Sapphire/Emerald Rapids) and
    falls back to its Prescott (SSE3) kernels, about 4x slower than SkylakeX.
    "auto" pins SkylakeX when that happens on an AVX-512 CPU; the same
    environment goes to `bert`, PyTorch (Debian's links OpenBLAS) and the
    sgemm peak, so every engine runs on the same BLAS."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if choice == "none":
        return env, None
    if choice != "auto":
        env["OPENBLAS_CORETYPE"] = choice
        return env, choice
    _, detected = openblas_core([SGEMM, "--size", "64", "--seconds", "0.01"], env)
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f " in f.read()
    if detected == "Prescott" and avx512:
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
        return env, "SkylakeX (auto: OpenBLAS detected Prescott on an AVX-512 CPU)"
    return env, None


def http_throughput(ckpt, quick, env):
    """bench/http_bench.py (the service issue's bench) at concurrency 64."""
    if not shutil.which("wrk"):
        log("[setup] apt-get install -y wrk (for the HTTP bench)")
        subprocess.run(["apt-get", "install", "-y", "wrk"], check=True, stdout=subprocess.DEVNULL)
    return run([sys.executable, os.path.join(HERE, "http_bench.py"), "--model", ckpt,
                "--concurrency", "64", "--seconds", "5" if quick else "10"], env=env).strip()


# ---- report ----------------------------------------------------------------

def fmt_ms(ms):
    return f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def markdown(results):
    peers = results["peers"]
    peak = max((r["best_gflops"] for r in results["sgemm"] if r["threads"] == results["threads"]), default=None)
    head = ["geometry", "workload", "tokens (padded)", "bertserve ms"] + [f"{p} ms" for p in peers]
    head += ["bertserve tok/s"] + [f"{p} tok/s" for p in peers] + [f"ours/{p}" for p in peers]
    fma = results.get("fma_peak_gflops")
    head += ["GFLOP/s ours", "% sgemm peak", "% FMA peak"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in results["rows"]:
        ms = row["median_ms"]
        tps = {e: row["tokens"] / (ms[e] / 1e3) for e in ms}
        cells = [GEOMETRIES[row["geometry"]]["label"], row["workload"],
                 f"{row['tokens']} ({row['padded_tokens']}, {row['padding_waste']:.0%} pad)",
                 fmt_ms(ms["bertserve"])]
        cells += [fmt_ms(ms[p]) if p in ms else "-" for p in peers]
        cells += [f"{tps['bertserve']:,.0f}"] + [f"{tps[p]:,.0f}" if p in tps else "-" for p in peers]
        cells += [f"{ms[p] / ms['bertserve']:.2f}x" if p in ms else "-" for p in peers]
        gf = row["gflops"]["bertserve"]
        cells += [f"{gf:.0f}" if row["task"] == "embed" else "-",
                  f"{gf / peak:.0%}" if peak and row["task"] == "embed" else "-",
                  f"{gf / fma:.0%}" if fma and row["task"] == "embed" else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    for row in results["rows"]:
        for e, ms in row["median_ms"].items():
            if e.startswith("bertserve-"):
                ort = row["median_ms"].get("onnxruntime")
                lines.append(f"\n{e} {row['geometry']} {row['workload']}: {fmt_ms(ms)} ms, "
                             f"{row['median_ms']['bertserve'] / ms:.2f}x the F32 engine"
                             + (f", {ort / ms:.2f}x onnxruntime" if ort else ""))
    lines.append("")
    half = len(results["sgemm"]) // 2
    for before, after in zip(results["sgemm"][:half], results["sgemm"][half:]):
        lines.append(f"- sgemm n={before['n']}, {before['threads']} thread(s), OpenBLAS core {before['core']}: "
                     f"best {before['best_gflops']:.0f} GFLOP/s before the engines, {after['best_gflops']:.0f} after")
    if peak:
        lines.append(f"- % sgemm peak is against {peak:.0f} GFLOP/s, the best {results['threads']}-thread figure")
    if fma:
        lines.append(f"- % FMA peak is against {fma:.0f} GFLOP/s, {results['threads']} thread(s) doing nothing "
                     "but vector FMAs on registers (sgemm_peak --fma, the better of before and after "
                     "the engines): the ceiling above any GEMM")
    for geom, m in results["memory"].items():
        a = m["bertserve_smaps_kb"][0]
        budget = m["weights_file_kb"] + m["scratch_kb"]
        shared = min(p["weights_shared"] for p in m["bertserve_smaps_kb"])
        peers = ", ".join(f"{p} {kb / 1024:.0f} MB" for p, kb in m["peers_peak_rss_kb"].items() if kb)
        lines.append(f"- memory {GEOMETRIES[geom]['label']} (32x128): bertserve RSS {a['rss'] / 1024:.0f} MB "
                     f"= mapped weights {a['weights_rss'] / 1024:.0f} MB + anonymous {a['anon'] / 1024:.0f} MB; "
                     f"weights file {m['weights_file_kb'] / 1024:.0f} MB + scratch {m['scratch_kb'] / 1024:.0f} MB "
                     f"= {budget / 1024:.0f} MB, RSS / that = {a['rss'] / budget:.2f}; two processes share "
                     f"{shared / 1024:.0f} MB of weights; peers' peak RSS (embed graph): {peers or '-'}")
    for geom, m in results["memory"].items():
        for dtype, d in m.get("dtype_smaps_kb", {}).items():
            lines.append(f"- memory {GEOMETRIES[geom]['label']} (32x128), bertserve-{dtype}: peak RSS "
                         f"{d['rss'] / 1024:.0f} MB, anonymous {d['anon'] / 1024:.0f} MB; mapped weights "
                         f"{d['weights_rss'] / 1024:.0f} MB at most (while packing), "
                         f"{d.get('weights_rss_last', 0) / 1024:.0f} MB at the end")
    for geom, text in results["http"].items():
        lines.append(f"- HTTP, {GEOMETRIES[geom]['label']}:\n\n```\n{text}\n```")
    return "\n".join(lines)


def plot(out, geom, sweep_rows):
    if not shutil.which("gnuplot"):
        log("[setup] apt-get install -y gnuplot-nox (for the plot)")
        if subprocess.run(["apt-get", "install", "-y", "gnuplot-nox"], stdout=subprocess.DEVNULL).returncode:
            log("gnuplot unavailable: no plot")
            return None
    engines = list(sweep_rows[0]["tokens_per_s"])
    data = os.path.join(out, f"sweep_{geom}.dat")
    with open(data, "w") as f:
        f.write("# seq_len " + " ".join(engines) + "\n")
        for row in sweep_rows:
            f.write(f"{row['seq']} " + " ".join(f"{row['tokens_per_s'][e]:.1f}" for e in engines) + "\n")
    png = os.path.join(out, f"tokens_vs_seqlen_{geom}.png")
    series = ", ".join(f"'{data}' using 1:{i + 2} with linespoints lw 2 title '{e}'" for i, e in enumerate(engines))
    script = (f"set terminal png size 900,560; set output '{png}'; set logscale x 2; set grid;"
              f"set xlabel 'sequence length (tokens; batch = {SWEEP_TOKENS} / length)';"
              f"set ylabel 'tokens / s'; set yrange [0:*]; set key top right;"
              f"set title '{GEOMETRIES[geom]['label']} fp32, {sweep_rows[0]['threads']} threads';"
              f"plot {series}")
    subprocess.run(["gnuplot", "-e", script], check=True)
    return png


# ---- ModernBERT-base: long inputs against ONNX Runtime ----------------------

MODERN_TOKENIZER = os.path.join(ROOT, "tests", "data", "tokenizer", "modernbert")
# ModernBERT-base's geometry (its vocabulary is 50368; the test tokenizer's 50307).
MODERN = {"label": "ModernBERT-base", "layers": 22, "hidden": 768, "heads": 12,
          "intermediate": 1152, "local_window": 128, "global_every": 3}
MODERN_LENGTHS = (512, 4096)


def modernbert_flops(n):
    """Per layer and token: Wqkv 6H^2, Wo 2H^2, GeGLU Wi 4HI and Wo 2HI;
    attention 4nH on global layers, 4wH (w = window + 1) on local ones."""
    g = MODERN
    H, FF, L = g["hidden"], g["intermediate"], g["layers"]
    n_global = len(range(0, L, g["global_every"]))
    dense = L * n * (8 * H * H + 6 * H * FF)
    window = min(n, g["local_window"] + 1)
    return dense + 4 * n * H * (n_global * n + (L - n_global) * window)


def modernbert_bench(args, env):
    """`bert bench` against ONNX Runtime on one ModernBERT-base export, one
    sequence of 512 and one of 4,096 tokens (wiki text)."""
    g = MODERN
    ckpt = os.path.join(args.out, "ckpt", "modernbert")
    if not os.path.exists(os.path.join(ckpt, "config.json")):
        log(f"[setup] bert init {g['label']} -> {ckpt}")
        run([BERT, "init", "--out", ckpt, "--tokenizer", MODERN_TOKENIZER, "--model-type", "modernbert",
             "--layers", str(g["layers"]), "--hidden", str(g["hidden"]), "--heads", str(g["heads"]),
             "--intermediate", str(g["intermediate"]), "--max-position", "8192", "--eps", "1e-5",
             "--local-window", str(g["local_window"]), "--global-every", str(g["global_every"]),
             "--ln-range", "0.1"])
    onnx = os.path.join(args.out, "onnx", "modernbert")
    if not os.path.exists(os.path.join(onnx, "embed.onnx")):
        ensure_export_packages()
        log("[setup] exporting ModernBERT-base to ONNX (checked against bert within 1e-4)")
        log(run([sys.executable, os.path.join(HERE, "export_onnx.py"), "--model", ckpt, "--out", onnx,
                 "--heads", "embed", "--bert", BERT], stderr=subprocess.DEVNULL).strip())
    folder = os.path.join(args.out, "workloads")
    os.makedirs(folder, exist_ok=True)
    ids = tokenize(ckpt, wiki_sentences()[:3000])
    cls, sep = ids[0][0], ids[0][-1]
    stream = [i for seq in ids for i in seq[1:-1]]
    loads = {}
    for n in MODERN_LENGTHS:
        path = os.path.join(folder, f"modernbert-1x{n}.json")
        with open(path, "w") as f:
            json.dump({"batches": [[[cls] + stream[:n - 2] + [sep]]]}, f)
        loads[f"1x{n}"] = path
    engines = [Ours(ckpt, args.threads, env)]
    if not args.no_ort:
        engines.append(Peer("onnxruntime", ["node", os.path.join(HERE, "peer_ort.js"), str(args.threads)],
                            lambda task: os.path.join(onnx, "embed.onnx"), env))
    rows = []
    try:
        for name, path in loads.items():
            n = int(name.split("x")[1])
            med, all_times, _ = measure(engines, "embed", path, args.rounds or 2, args.repeat or 1)
            rows.append({"workload": name, "tokens": n, "median_ms": med, "round_ms": all_times,
                         "gflops": {e: modernbert_flops(n) / (ms / 1e3) / 1e9 for e, ms in med.items()}})
            log(f"[modernbert {name}] " + ", ".join(f"{e} {ms:.0f} ms" for e, ms in med.items()))
    finally:
        for e in engines:
            e.close()
    rss = {e.name: e.rss_peak_kb for e in engines if isinstance(e, Peer)}
    head = ["geometry", "workload", "bertserve ms"] + [f"{e.name} ms" for e in engines[1:]]
    head += ["bertserve tok/s", "GFLOP/s ours"] + [f"ours/{e.name}" for e in engines[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms = r["median_ms"]
        cells = [g["label"], r["workload"], fmt_ms(ms["bertserve"])]
        cells += [fmt_ms(ms[e.name]) for e in engines[1:]]
        cells += [f"{r['tokens'] / (ms['bertserve'] / 1e3):,.0f}", f"{r['gflops']['bertserve']:.0f}"]
        cells += [f"{ms[e.name] / ms['bertserve']:.2f}x" for e in engines[1:]]
        lines.append("| " + " | ".join(cells) + " |")
    if rss:
        lines.append("\n" + ", ".join(f"{e} peak RSS {kb / 1024:.0f} MB" for e, kb in rss.items() if kb))
    table = "\n".join(lines)
    with open(os.path.join(args.out, "modernbert_bench.json"), "w") as f:
        json.dump({"threads": args.threads, "rows": rows, "peer_rss_kb": rss}, f, indent=1)
    print(table)


# ---- --profile and --latency ---------------------------------------------------

def profile_split(args, env, cpu, core):
    """`bert bench --profile` at 32x128, one thread (on a shared machine the
    ratios of one thread's CPU time are what holds still), each dtype."""
    rows, lines = [], []
    for geom in args.geometries.split(","):
        ckpt = checkpoint(args.out, geom)
        loads, _ = build_workloads(args.out, ckpt)
        for dtype in PROFILE_DTYPES:
            cmd = [BERT, "bench", "--model", ckpt, "--workload", loads["32x128"][1], "--task", "encode",
                   "--repeat", str(args.repeat or 3), "--warmup", "1", "--threads", "1",
                   "--dtype", dtype, "--profile"]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode:
                log(f"[profile {geom} {dtype}] skipped: {p.stderr.strip().splitlines()[-1:]}")
                continue
            line = json.loads(p.stdout.strip().splitlines()[-1])
            rows.append({"geometry": geom, "dtype": dtype, **line})
            log(f"[profile {geom} {dtype}]\n{p.stderr.strip()}")
    classes = [k for k, v in rows[0]["profile"].items() if isinstance(v, dict)] if rows else []
    head = ["geometry", "dtype", "pass CPU ms"] + classes + ["outside dense", "outside GEMMs"]
    lines = [f"CPU {cpu}, OpenBLAS core {core}, 32x128, 1 thread, thread CPU time per pass (ms, % of pass)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        prof = r["profile"]
        cells = [GEOMETRIES[r["geometry"]]["label"], r["dtype"], f"{prof['pass_cpu_ms']:.0f}"]
        cells += [f"{prof[c]['ms']:.1f} ({prof[c]['pct']:.1f}%)" for c in classes]
        cells += [f"{prof['outside_dense_pct']:.1f}%", f"{prof['outside_gemm_pct']:.1f}%"]
        lines.append("| " + " | ".join(cells) + " |")
    return rows, "\n".join(lines)


def latency_rows(args, env, cpu, core):
    """Lone sequences of 16, 128 and 512 tokens against ONNX Runtime,
    engines alternating each round; medians of round medians."""
    rounds, repeat = args.rounds or 5, args.repeat or 3
    rows = []
    for geom in args.geometries.split(","):
        ckpt = checkpoint(args.out, geom)
        onnx = onnx_exports(args.out, geom, ckpt) if not args.no_ort else None
        loads, _ = build_workloads(args.out, ckpt)
        engines = [Ours(ckpt, args.threads, env)]
        if args.dtype:
            engines.append(Ours(ckpt, args.threads, env, args.dtype))
        if not args.no_ort:
            engines.append(Peer("onnxruntime", ["node", os.path.join(HERE, "peer_ort.js"), str(args.threads)],
                                lambda task, d=onnx: os.path.join(d, f"{task}.onnx"), env))
        try:
            for name in LATENCY:
                med, all_times, _ = measure(engines, "embed", loads[name][1], rounds, repeat,
                                            LATENCY_WARMUP)
                rows.append({"geometry": geom, "workload": name, "median_ms": med, "round_ms": all_times})
                log(f"[latency {geom} {name}] " + ", ".join(f"{e} {ms:.2f} ms" for e, ms in med.items()))
        finally:
            for e in engines:
                e.close()
    names = list(rows[0]["median_ms"]) if rows else []
    head = ["geometry", "workload"] + [f"{n} ms" for n in names]
    head += [f"ORT/{n}" for n in names if n != "onnxruntime" and "onnxruntime" in names]
    lines = [f"CPU {cpu}, OpenBLAS core {core}, {args.threads} threads, {rounds} alternating rounds of "
             f"{repeat} passes, medians", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ms = r["median_ms"]
        cells = [GEOMETRIES[r["geometry"]]["label"], r["workload"]] + [fmt_ms(ms[n]) for n in names]
        cells += [f"{ms['onnxruntime'] / ms[n]:.2f}x" for n in names if n != "onnxruntime" and "onnxruntime" in ms]
        lines.append("| " + " | ".join(cells) + " |")
    return rows, "\n".join(lines)


def cpu_model():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    found = re.search(r"Model name:\s*(.+)", out)
    return found.group(1).strip() if found else "?"


def focused_runs(args, env):
    """--profile and --latency: their tables, written under OUT."""
    _, core = openblas_core([SGEMM, "--size", "64", "--seconds", "0.01"], env)
    cpu = cpu_model()
    log(f"CPU {cpu}; OpenBLAS core {core}")
    for wanted, fn, stem in ((args.profile, profile_split, "profile"), (args.latency, latency_rows, "latency")):
        if not wanted:
            continue
        rows, table = fn(args, env, cpu, core)
        with open(os.path.join(args.out, f"{stem}.json"), "w") as f:
            json.dump({"cpu": cpu, "openblas_core": core, "threads": args.threads, "rows": rows}, f, indent=1)
        with open(os.path.join(args.out, f"{stem}.md"), "w") as f:
            f.write(table + "\n")
        print(table + "\n")


# ---- main --------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description="bert vs ONNX Runtime and PyTorch on the same token ids")
    ap.add_argument("--quick", action="store_true", help="bounded run (< 5 min once set up)")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--geometries", default="minilm,base",
                    help="minilm,base; or modernbert alone: ModernBERT-base at 1x512 and 1x4096 "
                         "tokens against ONNX Runtime (default 2 rounds of 1 pass)")
    ap.add_argument("--rounds", type=int, help="alternating rounds (quick 3, full 5)")
    ap.add_argument("--repeat", type=int, help="passes per round (quick 1, full 3)")
    ap.add_argument("--dtype", choices=["bf16", "int8"],
                    help="also time `bert bench --dtype bf16` or `--dtype int8` (embed workloads)")
    ap.add_argument("--no-ort", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--no-sweep", action="store_true", help="skip the sequence-length sweep and plot")
    ap.add_argument("--http", action="store_true", help="also bench/http_bench.py at concurrency 64")
    ap.add_argument("--profile", action="store_true",
                    help="only the op-class split of a 32x128 pass (bert bench --profile), each dtype")
    ap.add_argument("--latency", action="store_true",
                    help="only the lone-sequence rows (1x16, 1x128, 1x512) against ONNX Runtime")
    ap.add_argument("--openblas-coretype", default="auto", help="auto | none | an OpenBLAS core name")
    ap.add_argument("--out", default=os.path.join(HERE, "out"))
    args = ap.parse_args()
    rounds = args.rounds or (3 if args.quick else 5)
    repeat = args.repeat or (1 if args.quick else 3)
    for binary in (BERT, SGEMM):
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"{binary} missing: cmake -S . -B build -DCMAKE_BUILD_TYPE=Release && cmake --build build -j2")
    if args.dtype and "--dtype" not in subprocess.run([BERT, "bench", "--help"], capture_output=True, text=True).stderr:
        log(f"this `bert bench` has no --dtype option: no {args.dtype} rows")
        args.dtype = None
    os.makedirs(args.out, exist_ok=True)
    env, coretype = openblas_env(args.openblas_coretype)
    if coretype:
        log(f"OPENBLAS_CORETYPE={coretype}")
    if not args.no_ort and not (args.profile and not args.latency):
        ensure_ort()

    if args.profile or args.latency:
        focused_runs(args, env)
        return
    if args.geometries == "modernbert":
        modernbert_bench(args, env)
        return

    started = time.time()
    results = {"threads": args.threads, "quick": args.quick, "rounds": rounds, "repeat": repeat,
               "openblas_coretype": coretype, "rows": [], "sweeps": {}, "memory": {}, "checks": [], "http": {},
               "peers": (["onnxruntime"] if not args.no_ort else []) + (["pytorch"] if not args.no_torch else [])}
    # The peak is measured before and after the engines: on a shared machine
    # the better of the two is the closer to the physical limit.
    results["sgemm"] = sgemm_peak(args.threads, args.quick, env)
    log_sgemm(results["sgemm"])
    results["fma_peak_gflops"] = fma_peak(args.threads, env)
    log(f"FMA peak, {args.threads} thread(s): {results['fma_peak_gflops']} GFLOP/s")

    for geom in args.geometries.split(","):
        ckpt = checkpoint(args.out, geom)
        onnx = onnx_exports(args.out, geom, ckpt) if not args.no_ort else None
        loads, sweep = build_workloads(args.out, ckpt)
        ours = Ours(ckpt, args.threads, env)
        engines = [ours] + ([Ours(ckpt, args.threads, env, args.dtype)] if args.dtype else [])
        if not args.no_ort:
            engines.append(Peer("onnxruntime", ["node", os.path.join(HERE, "peer_ort.js"), str(args.threads)],
                                lambda task, d=onnx: os.path.join(d, f"{task}.onnx"), env))
        if not args.no_torch:
            engines.append(Peer("pytorch", [sys.executable, os.path.join(HERE, "peer_torch.py"), str(args.threads)],
                                lambda task, c=ckpt: c, env))
        peer_rss = {}
        try:
            for name, task, _ in WORKLOADS:
                if args.quick and geom == "base" and name not in QUICK_BASE:
                    continue
                _, path = loads[name]
                st = workload_stats(path)
                log(f"[{geom} {name}] {st['sequences']} seqs, {st['tokens']} tokens")
                run_engines = [e for e in engines if task == "embed" or not e.name.startswith("bertserve-")]
                # Lone sequences warm up as in --latency: one pass of a fresh
                # process says more about its start than about the engine.
                warm = LATENCY_WARMUP if st["sequences"] == 1 else 0
                med, all_times, probes = measure(run_engines, task, path, rounds, repeat, warm)
                check = compare_probes(f"{geom} {name}", task, probes)
                if check:
                    results["checks"].append(check)
                    log("  " + check)
                flops = encoder_flops(geom, st["lengths"])
                results["rows"].append({
                    "geometry": geom, "workload": name, "task": task, "sequences": st["sequences"],
                    "tokens": st["tokens"], "padded_tokens": st["padded_tokens"],
                    "padding_waste": 1 - st["tokens"] / st["padded_tokens"],
                    "lengths": [st["min_len"], st["max_len"]], "median_ms": med, "round_ms": all_times,
                    "gflops": {e: flops / (ms / 1e3) / 1e9 for e, ms in med.items()}})
                log("  " + ", ".join(f"{e} {ms:.1f} ms" for e, ms in med.items()))
                if task == "embed":
                    peer_rss = {e.name: e.rss_peak_kb for e in engines if isinstance(e, Peer)}
            if not args.no_sweep and (geom == "minilm" or not args.quick):
                rows = []
                for seq, path in sweep.items():
                    med, _, _ = measure(engines[:1] + [e for e in engines if isinstance(e, Peer)],
                                        "embed", path, 2 if args.quick else 3, 1)
                    rows.append({"seq": seq, "threads": args.threads,
                                 "tokens_per_s": {e: SWEEP_TOKENS // seq * seq / (ms / 1e3) for e, ms in med.items()}})
                    log(f"[{geom} sweep {seq}] " + ", ".join(f"{e} {v:,.0f} tok/s" for e, v in rows[-1]["tokens_per_s"].items()))
                results["sweeps"][geom] = {"rows": rows, "png": plot(args.out, geom, rows)}
        finally:
            for e in engines:
                e.close()
        weights = os.path.realpath(os.path.join(ckpt, "model.safetensors"))
        mem, scratch = memory(ours, loads["32x128"][1], weights, 2)
        results["memory"][geom] = {
            "weights_file_kb": os.path.getsize(weights) // 1024, "scratch_kb": scratch // 1024,
            "bertserve_smaps_kb": mem, "peers_peak_rss_kb": peer_rss}
        if args.dtype:
            # int8 releases the mapped f32 weights it quantized; bf16 keeps them.
            mem_dtype, _ = memory(Ours(ckpt, args.threads, env, args.dtype), loads["32x128"][1], weights, 1)
            results["memory"][geom]["dtype_smaps_kb"] = {args.dtype: mem_dtype[0]}
        log(f"[{geom} memory] {json.dumps(results['memory'][geom])}")
        if args.http:
            results["http"][geom] = http_throughput(ckpt, args.quick, env)
            log(f"[{geom} http]\n{results['http'][geom]}")

    results["sgemm"] += sgemm_peak(args.threads, args.quick, env)
    log_sgemm(results["sgemm"])
    after = fma_peak(args.threads, env)
    log(f"FMA peak, {args.threads} thread(s): {after} GFLOP/s")
    results["fma_peak_gflops"] = max(filter(None, (results["fma_peak_gflops"], after)), default=None)
    results["seconds"] = round(time.time() - started, 1)
    table = markdown(results)
    with open(os.path.join(args.out, "engine_bench.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "engine_bench.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    print(f"\n{results['seconds']} s; results in {args.out}/engine_bench.json")


if __name__ == "__main__":
    main()
