#!/usr/bin/python3
"""Per-family encoder speed at the same geometry (issue 22's speed check).

usage: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \\
           /usr/bin/python3 bench/family_bench.py [--layers 2] [--rounds 3] [--repeat 1]
           [--families bert,mpnet,nomic_bert,jina_bert,gte] [--out DIR]

For each family `bert init` writes a checkpoint of one geometry (hidden 768,
12 heads, intermediate 3072: BERT-base's, `--layers` of them) on the minilm
tokenizer, and `bert bench` runs the same workload through it: 32 sequences
of 128 token ids in one batch, on ONE compute thread. Time is the process's
CPU time per pass (`median_cpu_ms`, CLOCK_PROCESS_CPUTIME_ID), not wall
time: on a machine other processes share, CPU time is what the pass cost.
Families take turns within every round (a rotating order), so drifting load
hits them alike; the figure per family is the median over rounds.

FLOPs count every product a family really computes (a multiply-add is 2),
per layer and token of a sequence of n:
  Q, K, V and output projections      8 H^2
  feed-forward                        4 H I (BERT, MPNet), 6 H I with a GLU
                                      (NomicBERT fc11 / fc12 / fc2, JinaBERT
                                      gated_layers + wo, GTE up_gate + down)
  attention scores and context        4 n H
  relative bias added to each score   A n (MPNet's buckets, JinaBERT's ALiBi)
  RoPE on queries and keys            6 H (NomicBERT, GTE: 3 flops an element)
so a family is not credited for work it skips, nor charged for work it does
not do. Embeddings, LayerNorm, softmax and activations are left out for
every family alike. DeBERTa-v2 (disentangled attention: content-to-position
and position-to-content terms) has a row waiting in FAMILIES.

Output: a Markdown table (family, GFLOP per pass, CPU ms, GFLOP/s, ratio to
BERT) on stdout and OUT/family_bench.json. Never run by CI.
"""

import argparse
import json
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from engine_bench import BERT, TOKENIZER, log, openblas_core, run  # noqa: E402

H, A, I = 768, 12, 3072
SEQS, SEQ_LEN = 32, 128

# name -> (`bert init` flags, GLU feed-forward, relative bias, RoPE)
FAMILIES = {
    "bert": (["--model-type", "bert"], False, False, False),
    "mpnet": (["--model-type", "mpnet", "--max-position", "514"], False, True, False),
    "nomic_bert": (["--model-type", "nomic_bert", "--act", "silu"], True, False, True),
    "jina_bert": (["--model-type", "jina_bert"], True, True, False),
    "gte": (["--model-type", "new", "--type-vocab", "1"], True, False, True),
    # "deberta": flags and its c2p / p2c FLOPs once the family is merged.
}


def layer_flops(family, n):
    """FLOPs of one layer for one token of a sequence of n tokens."""
    _, glu, rel_bias, rope = FAMILIES[family]
    f = 8 * H * H + (6 if glu else 4) * H * I + 4 * n * H
    return f + (A * n if rel_bias else 0) + (6 * H if rope else 0)


def checkpoint(out, family, layers):
    folder = os.path.join(out, "ckpt-" + family)
    if not os.path.exists(os.path.join(folder, "model.safetensors")):
        run([BERT, "init", "--out", folder, "--tokenizer", TOKENIZER, "--layers", str(layers),
             "--hidden", str(H), "--heads", str(A), "--intermediate", str(I)]
            + FAMILIES[family][0])
    return folder


def workload(out):
    """One batch of 32 x 128 ids: [CLS], 126 ids from the vocabulary, [SEP]."""
    rng = random.Random(0)
    seqs = [[101] + [rng.randrange(1000, 30000) for _ in range(SEQ_LEN - 2)] + [102]
            for _ in range(SEQS)]
    path = os.path.join(out, "32x128.json")
    with open(path, "w") as f:
        json.dump({"batches": [seqs]}, f)
    return path


def bench_once(ckpt, load, repeat, env):
    out = run([BERT, "bench", "--model", ckpt, "--workload", load, "--task", "embed",
               "--threads", "1", "--warmup", "1", "--repeat", str(repeat)], env=env)
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="timed passes per run")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--out", default=os.path.join(HERE, "out", "family"))
    args = ap.parse_args()
    families = args.families.split(",")
    if families[0] != "bert":
        raise SystemExit("--families must start with bert (the ratios' base)")
    os.makedirs(args.out, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    ckpts = {f: checkpoint(args.out, f, args.layers) for f in families}
    load = workload(args.out)
    _, core = openblas_core([BERT, "version"], env)
    cpu_ms = {f: [] for f in families}
    for r in range(args.rounds):
        order = families[r % len(families):] + families[:r % len(families)]
        for f in order:
            ms = bench_once(ckpts[f], load, args.repeat, env)["median_cpu_ms"]
            cpu_ms[f].append(ms)
            log(f"round {r + 1}/{args.rounds} {f}: {ms:.0f} ms CPU")
    rows = []
    for f in families:
        gflop = args.layers * SEQS * SEQ_LEN * layer_flops(f, SEQ_LEN) / 1e9
        ms = statistics.median(cpu_ms[f])
        rows.append({"family": f, "gflop": gflop, "cpu_ms": ms, "runs_ms": cpu_ms[f],
                     "gflops": gflop / (ms / 1e3)})
    base = rows[0]["gflops"]
    print(f"OpenBLAS core {core}; {args.layers} layers of H={H} A={A} I={I}; "
          f"{SEQS}x{SEQ_LEN}, 1 thread, CPU time, median of {args.rounds} rounds")
    print("| family | GFLOP / pass | CPU ms / pass (median) | GFLOP/s | vs BERT |")
    print("|---|---|---|---|---|")
    for row in rows:
        row["ratio"] = row["gflops"] / base
        print(f"| {row['family']} | {row['gflop']:.1f} | {row['cpu_ms']:.0f} "
              f"({min(row['runs_ms']):.0f}-{max(row['runs_ms']):.0f}) | {row['gflops']:.1f} | "
              f"{row['ratio']:.2f} |")
    with open(os.path.join(args.out, "family_bench.json"), "w") as f:
        json.dump({"openblas_core": core, "layers": args.layers, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
