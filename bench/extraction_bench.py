#!/usr/bin/python3
"""What the extraction routes cost beyond the forward pass.

usage: /usr/bin/python3 bench/extraction_bench.py [--bin build/bin] [--quick]
           [--geometry small,distil] [--rounds R] [--out DIR]

For each geometry it makes checkpoints with `bert init` (a token classifier
over the 9 CoNLL-2003 labels, a question-answering head, and the same
encoder without a head) and times, through `bert <route> --jsonl` (parse,
tokenize, windows, forward, post-processing, rendering: what a server
worker runs), one compute thread, by the CPU time of the process, in
alternating rounds:
  - NER: CoNLL-2003 test sentences, 16 per request, against /embed of the
    same texts: tokens/s each, and the NER route's cost over embed;
  - QA: SQuAD v1.1 dev questions with their paragraphs (one chunk each at
    the default 384 tokens), 8 per request, against /embed of "question
    context" as one text (the same tokens less one [SEP]): questions/s each.
The issue's target: the post-processing costs under 10% of the route.

Geometries: small = models/default's (4 layers, hidden 128),
distil = DistilBERT-base's (6 layers, hidden 768, 12 heads). --quick: small
only, 2 rounds. Never run by CI. Prints the CPU and the BLAS kernel.
"""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
DATA = os.path.join(ROOT, "tests", "data")
GEOMETRIES = {
    "small": ["--layers", "4", "--hidden", "128", "--heads", "2", "--intermediate", "512"],
    "distil": ["--layers", "6", "--hidden", "768", "--heads", "12", "--intermediate", "3072"],
}
CONLL_LABELS = "O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC,B-MISC,I-MISC"


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def conll_sentences():
    out, words = [], []
    with open(os.path.join(DATA, "extraction", "conll2003", "test-head.txt")) as f:
        for line in f:
            parts = line.split()
            if not parts or parts[0] == "-DOCSTART-":
                if words:
                    out.append(" ".join(words))
                words = []
            else:
                words.append(parts[0])
    if words:
        out.append(" ".join(words))
    return out


def squad_pairs():
    with open(os.path.join(DATA, "extraction", "squad-v1.1-dev-sample.json")) as f:
        data = json.load(f)
    return [{"question": qa["question"], "context": p["context"]}
            for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]]


def chunks(items, n):
    return [items[i:i + n] for i in range(0, len(items), n)]


def write_jsonl(path, bodies):
    with open(path, "w") as f:
        for b in bodies:
            f.write(json.dumps(b) + "\n")
    return path


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(bin_dir, route, model, path):
    """CPU seconds (user + system) `bert ROUTE --jsonl --threads 1` takes on
    the file: one thread, so a machine shared with other work slows it less
    than it would a wall clock."""
    before = cpu_of_children()
    with open(path) as f:
        proc = subprocess.run([os.path.join(bin_dir, "bert"), route, "--model", model,
                               "--jsonl", "--threads", "1"],
                              stdin=f, capture_output=True, timeout=3600)
    seconds = cpu_of_children() - before
    if proc.returncode != 0:
        sys.exit("bert %s failed: %s" % (route, proc.stderr.decode()[-2000:]))
    for line in proc.stdout.decode().splitlines():
        if '"error"' in line[:10]:
            sys.exit("bert %s answered an error: %s" % (route, line[:300]))
    return seconds


def count_tokens(bin_dir, model, path):
    """Tokens the texts of an embed workload run (specials included)."""
    with open(path) as f:
        proc = subprocess.run([os.path.join(bin_dir, "bert"), "tokenize", "--model", model,
                               "--jsonl"], stdin=f, capture_output=True, timeout=600, check=True)
    return sum(len(seq) for line in proc.stdout.decode().splitlines()
               for seq in json.loads(line))


def init(bin_dir, out, geometry, *flags):
    subprocess.run([os.path.join(bin_dir, "bert"), "init", "--out", out, "--tokenizer",
                    os.path.join(DATA, "tokenizer", "minilm"), "--weight-std", "0.05",
                    "--seed", "3"] + GEOMETRIES[geometry] + list(flags),
                   check=True, capture_output=True, timeout=300)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--geometry", default=None)
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None,
                    help="times each workload file holds its requests (default 20, quick 8)")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "extraction"))
    args = ap.parse_args()
    geometries = (args.geometry or ("small" if args.quick else "small,distil")).split(",")
    rounds = args.rounds or (2 if args.quick else 5)
    # Enough requests per process that loading the model is noise.
    repeat = args.repeat or (8 if args.quick else 20)
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="extraction-bench-", dir=args.out)

    print("CPU: %s; OPENBLAS_CORETYPE=%s; %d CPUs" % (
        cpu_name(), os.environ.get("OPENBLAS_CORETYPE", "(unset: OpenBLAS picks)"),
        os.cpu_count()))
    sentences = conll_sentences() * repeat
    pairs = squad_pairs() * repeat
    ner = write_jsonl(os.path.join(work, "ner.jsonl"),
                      [{"inputs": c} for c in chunks(sentences, 16)])
    ner_embed = write_jsonl(os.path.join(work, "ner-embed.jsonl"),
                            [{"inputs": c} for c in chunks(sentences, 16)])
    qa = write_jsonl(os.path.join(work, "qa.jsonl"), [{"inputs": c} for c in chunks(pairs, 8)])
    qa_embed = write_jsonl(os.path.join(work, "qa-embed.jsonl"),
                           [{"inputs": [p["question"] + " " + p["context"] for p in c]}
                            for c in chunks(pairs, 8)])
    rows = []
    for g in geometries:
        base = init(args.bin, os.path.join(work, g + "-base"), g)
        tok = init(args.bin, os.path.join(work, g + "-ner"), g, "--token-classification",
                   "--labels", CONLL_LABELS)
        qam = init(args.bin, os.path.join(work, g + "-qa"), g, "--question-answering")
        ner_tokens = count_tokens(args.bin, base, ner_embed)
        qa_tokens = count_tokens(args.bin, base, qa_embed)
        times = {k: [] for k in ("ner", "ner-embed", "qa", "qa-embed")}
        for _ in range(rounds):
            times["ner"].append(run(args.bin, "token-classification", tok, ner))
            times["ner-embed"].append(run(args.bin, "embed", base, ner_embed))
            times["qa"].append(run(args.bin, "question-answering", qam, qa))
            times["qa-embed"].append(run(args.bin, "embed", base, qa_embed))
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append((g, "NER tokens/s", ner_tokens / med["ner"], ner_tokens / med["ner-embed"]))
        rows.append((g, "QA questions/s", len(pairs) / med["qa"], len(pairs) / med["qa-embed"]))
        print("%s: %d NER texts (%d tokens), %d QA questions (%d tokens), %d rounds"
              % (g, len(sentences), ner_tokens, len(pairs), qa_tokens, rounds))
    print("\nRates per CPU second, one compute thread (medians of %d rounds)" % rounds)
    print("\n| geometry | route | route rate | embed rate, same tokens | route / embed | cost |")
    print("|---|---|---|---|---|---|")
    for g, what, route_rate, embed_rate in rows:
        ratio = route_rate / embed_rate
        print("| %s | %s | %.1f | %.1f | %.3f | %+.1f%% |"
              % (g, what, route_rate, embed_rate, ratio, 100 * (1 / ratio - 1)))


if __name__ == "__main__":
    main()
