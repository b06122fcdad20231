#!/usr/bin/python3
"""How far the default model's encoder goes on CoNLL-2003 NER: a PyTorch
probe run before the C trainer gets its token-classification task (issue 21),
to choose the recipe (learning rate, epochs, first sub-token labels) and to
know whether 0.70 test F1 is in reach from models/default (4 layers, hidden
128, uncased).

BERT post-LN encoder in float32 torch modules, initialised from
models/default/model.safetensors, a fresh Linear(128, 9) on every token;
labels on each word's first sub-token (others -100); AdamW with linear
decay; entity F1 with conlleval's rules on each word's first sub-token.
Tokens from the official tokenizer (tests/extraction/node/encode.js, the
bert-base-uncased tokenizer.json of tests/data/tokenizer/minilm).

    nice -n 10 /usr/bin/python3 experiments/ner_torch_probe.py --epochs 3

Measured (4 December 2026, one thread, a shared 2-core machine at load 5-6;
lr 1e-3, batch 32, 10% warm-up then linear decay, dropout 0.1, seed 1):

| epochs | steps | dev F1 | test F1 (P / R) | time |
|---|---|---|---|---|
| 3 | 1,317 | 0.7821 | 0.7153 (0.7016 / 0.7296) | 334 s |
| 8 | 3,512 | 0.8071 | **0.7372** (0.7293 / 0.7454) | 993 s |

Per type on test after 8 epochs: LOC 0.813, PER 0.738, MISC 0.703, ORG 0.673.
The default model's uncased 4-layer encoder clears the issue's 0.70 but not
its 0.80 aim; the most-frequent-tag baseline is 0.549 (ner_baseline.py).
"""

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "extraction"))
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))

import conlleval  # noqa: E402
import reference  # noqa: E402

LABELS = ["O", "B-MISC", "I-MISC", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]


def encode(sentences, tokenizer_json, max_len):
    """Per sentence: ids, and for each token the index of the word whose
    first sub-token it is (or -1)."""
    texts, spans = [], []
    for words, _ in sentences:
        text, s = "", []
        for w in words:
            if text:
                text += " "
            s.append(len(text))
            text += w
        texts.append(text)
        spans.append(s)
    req = json.dumps({"tokenizer": tokenizer_json, "inputs": [[t, None] for t in texts]})
    res = subprocess.run(["node", os.path.join(ROOT, "tests", "extraction", "node", "encode.js")],
                         input=req.encode(), capture_output=True, check=True)
    out = []
    for enc, starts in zip(json.loads(res.stdout)["encodings"], spans):
        first = {s: i for i, s in enumerate(starts)}
        word_of = []
        seen = set()
        for (a, _), special in zip(enc["offsets"], enc["special"]):
            w = first.get(a, -1) if not special else -1
            word_of.append(w if w not in seen else -1)
            if w >= 0:
                seen.add(w)
        ids = enc["ids"][:max_len - 1] + [enc["ids"][-1]] if len(enc["ids"]) > max_len else enc["ids"]
        word_of = word_of[:len(ids) - 1] + [-1]
        out.append((ids, word_of))
    return out


class Encoder(torch.nn.Module):
    def __init__(self, w, cfg, n_labels):
        super().__init__()
        self.p = torch.nn.ParameterDict()
        for name, t in w.items():
            if name.startswith("bert.") and "pooler" not in name:
                self.p[name.replace(".", "__")] = torch.nn.Parameter(t.float())
        self.H, self.A, self.L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
        self.cls = torch.nn.Linear(self.H, n_labels)
        torch.nn.init.normal_(self.cls.weight, std=0.02)
        torch.nn.init.zeros_(self.cls.bias)

    def g(self, name):
        return self.p["bert__" + name.replace(".", "__")]

    def forward(self, ids, mask, dropout):
        B, T = ids.shape
        x = (self.g("embeddings.word_embeddings.weight")[ids]
             + self.g("embeddings.position_embeddings.weight")[:T][None]
             + self.g("embeddings.token_type_embeddings.weight")[0])
        x = F.layer_norm(x, (self.H,), self.g("embeddings.LayerNorm.weight"),
                         self.g("embeddings.LayerNorm.bias"), 1e-12)
        x = F.dropout(x, dropout, self.training)
        D = self.H // self.A
        bias = (1.0 - mask[:, None, None, :].float()) * -1e9
        for i in range(self.L):
            p = f"encoder.layer.{i}."

            def lin(n, v):
                return F.linear(v, self.g(p + n + ".weight"), self.g(p + n + ".bias"))
            q = lin("attention.self.query", x).view(B, T, self.A, D).transpose(1, 2)
            k = lin("attention.self.key", x).view(B, T, self.A, D).transpose(1, 2)
            v = lin("attention.self.value", x).view(B, T, self.A, D).transpose(1, 2)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, dim=-1)
            ctx = (F.dropout(att, dropout, self.training) @ v).transpose(1, 2).reshape(B, T, self.H)
            x = F.layer_norm(F.dropout(lin("attention.output.dense", ctx), dropout, self.training) + x,
                             (self.H,), self.g(p + "attention.output.LayerNorm.weight"),
                             self.g(p + "attention.output.LayerNorm.bias"), 1e-12)
            h = F.gelu(lin("intermediate.dense", x))
            x = F.layer_norm(F.dropout(lin("output.dense", h), dropout, self.training) + x, (self.H,),
                             self.g(p + "output.LayerNorm.weight"), self.g(p + "output.LayerNorm.bias"),
                             1e-12)
        return self.cls(F.dropout(x, dropout, self.training))


def batches(data, size, shuffle, rng):
    order = list(range(len(data)))
    if shuffle:
        rng.shuffle(order)
    for i in range(0, len(order), size):
        chunk = [data[j] for j in order[i:i + size]]
        T = max(len(c[0]) for c in chunk)
        ids = torch.zeros(len(chunk), T, dtype=torch.long)
        mask = torch.zeros(len(chunk), T, dtype=torch.long)
        lab = torch.full((len(chunk), T), -100, dtype=torch.long)
        for r, c in enumerate(chunk):
            ids[r, :len(c[0])] = torch.tensor(c[0])
            mask[r, :len(c[0])] = 1
            lab[r, :len(c[2])] = torch.tensor(c[2])
        yield ids, mask, lab, [order[j] for j in range(i, min(i + size, len(order)))]


def with_labels(sentences, encoded):
    out = []
    for (words, tags), (ids, word_of) in zip(sentences, encoded):
        out.append((ids, word_of, [LABELS.index(tags[w]) if w >= 0 else -100 for w in word_of]))
    return out


def evaluate(model, sentences, data):
    model.eval()
    preds = [["O"] * len(w) for w, _ in sentences]
    with torch.no_grad():
        for ids, mask, _, rows in batches(data, 64, False, None):
            logits = model(ids, mask, 0.0).argmax(-1)
            for r, i in enumerate(rows):
                for t, w in enumerate(data[i][1]):
                    if w >= 0:
                        preds[i][w] = LABELS[int(logits[r, t])]
    model.train()
    return conlleval.evaluate([t for _, t in sentences], preds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(ROOT, "..", "shared", "data", "conll2003"))
    ap.add_argument("--model", default=os.path.join(ROOT, "models", "default"))
    ap.add_argument("--epochs", type=float, default=3)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    tj = os.path.join(ROOT, "tests", "data", "tokenizer", "minilm", "tokenizer.json")
    splits = {s: conlleval.read_conll(os.path.join(args.data, f"{s}.txt"))
              for s in ("train", "valid", "test")}
    data = {s: with_labels(v, encode(v, tj, args.max_len)) for s, v in splits.items()}
    with open(os.path.join(args.model, "config.json")) as f:
        cfg = json.load(f)
    raw = reference.read_safetensors(os.path.join(args.model, "model.safetensors"))
    w = {n: reference.to_tensor(*v) for n, v in raw.items()}
    model = Encoder(w, cfg, len(LABELS))
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    steps = int(args.epochs * math.ceil(len(data["train"]) / args.batch))
    warm = steps // 10
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / (steps - warm))))
    step, t0 = 0, time.time()
    while step < steps:
        for ids, mask, lab, _ in batches(data["train"], args.batch, True, rng):
            loss = F.cross_entropy(model(ids, mask, args.dropout).view(-1, len(LABELS)),
                                   lab.view(-1), ignore_index=-100)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 200 == 0 or step == steps:
                dev = evaluate(model, splits["valid"], data["valid"])["overall"]["f1"]
                print(f"step {step}/{steps} loss {loss.item():.4f} dev F1 {dev:.4f} "
                      f"({time.time() - t0:.0f} s)", flush=True)
            if step == steps:
                break
    for s in ("valid", "test"):
        print(s, conlleval.report(evaluate(model, splits[s], data[s])))


if __name__ == "__main__":
    main()
