"""Is a flat MLM loss the trainer's bug or the optimisation's plateau?

Writes a corpus in which every word is fixed by its neighbour (a cycle of 20
words), then trains the same 2-layer BERT (hidden 64) with PyTorch (the
torch.nn model of bench/train_speed.py: post-LN, tied decoder, 15% picked,
80/10/10) for --steps steps and prints the accuracy at [MASK]. Run
`bert pretrain` on the same corpus (command printed) and compare its
`bert mlm-eval` accuracy at [MASK]: both sit at the uniform loss ln(21)
until they learn to attend by position.

    /usr/bin/python3 experiments/mlm_plateau.py --out /tmp/plateau --steps 300
"""
import argparse
import os
import random
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from train_speed import Bert  # noqa: E402

WORDS = ("apple river mountain green quickly seven table window garden silver happy orange "
         "music forest yellow bridge candle thunder pencil ocean").split()


def write_corpus(path):
    rng = random.Random(1)
    with open(path, "w") as f:
        for _ in range(6000):
            s, n = rng.randrange(20), rng.randrange(8, 40)
            f.write(" ".join(WORDS[(s + k) % 20] for k in range(n)) + ".\n")


def masked(batch, rng_ids):
    x = torch.tensor(batch)
    picked = torch.rand(x.shape) < 0.15
    picked[:, 0] = picked[:, -1] = False
    labels, r = x[picked].clone(), torch.rand(x.shape)
    x[picked & (r < 0.8)] = 103
    rnd = picked & (r >= 0.8) & (r < 0.9)
    x[rnd] = torch.randint(1000, 30000, (int(rnd.sum()),), generator=rng_ids)
    return x, picked, labels, (picked & (r < 0.8))[picked]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--vocab", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared",
                                            "data", "bert-base-uncased", "vocab.txt"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    corpus = os.path.join(a.out, "cycle.txt")
    write_corpus(corpus)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    random.seed(0)
    vocab = {w.strip(): i for i, w in enumerate(open(a.vocab))}
    ids = [vocab[w] for line in open(corpus) for w in line.replace(".", " .").split()]
    seqs = [[101] + ids[i:i + 62] + [102] for i in range(0, len(ids) - 62, 62)]
    held, train = seqs[-100:], seqs[:-100]
    m = Bert(len(vocab), 64, 2, 2, 256, 64)
    for p in m.parameters():
        if p.dim() > 1:
            torch.nn.init.normal_(p, std=0.02)
    opt = torch.optim.AdamW(m.parameters(), lr=2e-3, weight_decay=0.01)
    warm = 30
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: s / warm if s < warm else max(0.0, (a.steps - s) / (a.steps - warm)))
    gen = torch.Generator().manual_seed(0)
    for step in range(a.steps):
        x, picked, labels, _ = masked(random.sample(train, 32), gen)
        loss = m(x, picked, labels)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 50 == 0 or step == a.steps - 1:
            print("torch step %d loss %.4f" % (step + 1, float(loss)))
    with torch.no_grad():
        x, picked, labels, at_mask = masked(held, gen)
        h = m.ln(m.word(x) + m.pos.weight[: x.shape[1]])
        for layer in m.layers:
            h = layer(h)
        t = m.mlm_ln(F.gelu(m.dense(h[picked])))
        pred = (t @ m.word.weight.T + m.bias).argmax(-1)
    print("torch: accuracy at [MASK] %.4f over %d positions (uniform over 21 tokens: 0.048)"
          % (float((pred == labels)[at_mask].float().mean()), int(at_mask.sum())))
    print("compare: bert pretrain --corpus %s --tokenizer DIR --out M --layers 2 --hidden 64 "
          "--heads 2 --intermediate 256 --max-len 64 --steps %d --batch 32 --lr 2e-3 "
          "--warmup 30 --threads 1 --seed 2 && bert mlm-eval --model M --corpus %s "
          "--max-len 64 --seed 2" % (corpus, a.steps, corpus))


if __name__ == "__main__":
    main()
