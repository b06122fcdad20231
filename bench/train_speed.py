"""Training speed: `bert pretrain` against PyTorch (Debian's torch) on the same
geometry, batch, sequence length and thread count, in the same run.

The PyTorch side is a BERT MLM step written with torch.nn (post-LN encoder,
tied decoder, loss only at the 15% picked positions, AdamW + clipping), on
full-length sequences so no padding is wasted. Both report tokens/s over the
steps after a warm-up.

    /usr/bin/python3 bench/train_speed.py --bert build/bin/bert \
        --corpus tests/data/train/corpus.txt --tokenizer tests/data/tokenizer/bert-base-uncased
"""

import argparse
import math
import re
import subprocess
import tempfile
import time

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    def __init__(self, h, a, ff):
        super().__init__()
        self.a = a
        self.qkv = torch.nn.Linear(h, 3 * h)
        self.out = torch.nn.Linear(h, h)
        self.ln1 = torch.nn.LayerNorm(h, eps=1e-12)
        self.ff1 = torch.nn.Linear(h, ff)
        self.ff2 = torch.nn.Linear(ff, h)
        self.ln2 = torch.nn.LayerNorm(h, eps=1e-12)

    def forward(self, x):
        b, n, h = x.shape
        d = h // self.a
        q, k, v = self.qkv(x).view(b, n, 3, self.a, d).permute(2, 0, 3, 1, 4)
        p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
        ctx = (p @ v).transpose(1, 2).reshape(b, n, h)
        x = self.ln1(x + self.out(ctx))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))


class Bert(torch.nn.Module):
    def __init__(self, v, h, layers, a, ff, n):
        super().__init__()
        self.word = torch.nn.Embedding(v, h)
        self.pos = torch.nn.Embedding(n, h)
        self.ln = torch.nn.LayerNorm(h, eps=1e-12)
        self.layers = torch.nn.ModuleList(Layer(h, a, ff) for _ in range(layers))
        self.dense = torch.nn.Linear(h, h)
        self.mlm_ln = torch.nn.LayerNorm(h, eps=1e-12)
        self.bias = torch.nn.Parameter(torch.zeros(v))

    def forward(self, ids, picked, labels):
        x = self.ln(self.word(ids) + self.pos.weight[: ids.shape[1]])
        for layer in self.layers:
            x = layer(x)
        t = self.mlm_ln(F.gelu(self.dense(x[picked])))
        return F.cross_entropy(t @ self.word.weight.T + self.bias, labels)


def torch_speed(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    m = Bert(30522, a.hidden, a.layers, a.heads, a.intermediate, a.max_len)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-4, weight_decay=0.01)
    tokens, t0 = 0, None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            t0 = time.perf_counter()
        ids = torch.randint(1000, 30000, (a.batch, a.max_len))
        picked = torch.rand(a.batch, a.max_len) < 0.15
        loss = m(ids, picked, ids[picked])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        if step >= a.warmup:
            tokens += ids.numel()
    return tokens / (time.perf_counter() - t0)


def bert_speed(a):
    with tempfile.TemporaryDirectory() as out:
        cmd = [a.bert, "pretrain", "--corpus", a.corpus, "--tokenizer", a.tokenizer, "--out", out,
               "--layers", str(a.layers), "--hidden", str(a.hidden), "--heads", str(a.heads),
               "--intermediate", str(a.intermediate), "--max-len", str(a.max_len),
               "--batch", str(a.batch), "--steps", str(a.warmup + a.steps),
               "--log-every", str(a.warmup), "--threads", str(a.threads), "--heldout", "0"]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [l for l in text.splitlines() if l.startswith("step ")]
    # The last progress line's tok/s is the whole run's rate, warm-up included
    # (slightly unfavourable to bert).
    return float(re.search(r"tok/s (\d+)", lines[-1]).group(1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bert", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--tokenizer", required=True)
    for name, default in (("layers", 4), ("hidden", 128), ("heads", 2), ("intermediate", 512),
                          ("max-len", 64), ("batch", 32), ("steps", 10), ("warmup", 2),
                          ("threads", 2)):
        p.add_argument("--" + name, type=int, default=default)
    a = p.parse_args()
    ours, theirs = bert_speed(a), torch_speed(a)
    print(f"geometry L{a.layers} H{a.hidden} A{a.heads} I{a.intermediate}, batch {a.batch} x "
          f"{a.max_len} tokens, {a.threads} threads")
    print(f"bert pretrain: {ours:.0f} tokens/s; torch {torch.__version__}: {theirs:.0f} tokens/s; "
          f"ratio {ours / theirs:.2f}x")


if __name__ == "__main__":
    main()
