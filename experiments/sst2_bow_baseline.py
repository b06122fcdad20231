"""Bag-of-words baseline for SST-2: logistic regression on unigram + bigram
counts (lower-cased, whitespace tokens; features seen at least twice in
train), L2-regularised, trained with full-batch L-BFGS in torch (Debian's
python3-torch; no scikit-learn here). Prints dev accuracy.

    /usr/bin/python3 experiments/sst2_bow_baseline.py ../shared/data/sst2
"""

import collections
import sys

import torch


def read(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            text, label = line.rstrip("\n").rsplit("\t", 1)
            rows.append((text.lower().split(), int(label)))
    return rows


def grams(words):
    return words + [a + " " + b for a, b in zip(words, words[1:])]


def features(rows, index):
    idx, vals, labels = [[], []], [], []
    for i, (words, label) in enumerate(rows):
        for g, c in collections.Counter(grams(words)).items():
            if g in index:
                idx[0].append(i)
                idx[1].append(index[g])
                vals.append(float(c))
        labels.append(label)
    x = torch.sparse_coo_tensor(idx, vals, (len(rows), len(index)), dtype=torch.float64)
    return x.coalesce(), torch.tensor(labels, dtype=torch.float64)


def main():
    data = sys.argv[1]
    train, dev = read(f"{data}/train.tsv"), read(f"{data}/dev.tsv")
    counts = collections.Counter(g for words, _ in train for g in grams(words))
    index = {g: i for i, g in enumerate(sorted(g for g, c in counts.items() if c >= 2))}
    xt, yt = features(train, index)
    xd, yd = features(dev, index)
    w = torch.zeros(len(index), dtype=torch.float64, requires_grad=True)
    b = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w, b], max_iter=300, history_size=20, line_search_fn="strong_wolfe")
    l2 = 1.0 / len(train)

    def closure():
        opt.zero_grad()
        z = torch.sparse.mm(xt, w.unsqueeze(1)).squeeze(1) + b
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z, yt) + l2 * (w * w).sum()
        loss.backward()
        return loss

    opt.step(closure)
    with torch.no_grad():
        acc = ((torch.sparse.mm(xd, w.unsqueeze(1)).squeeze(1) + b > 0).double() == yd)
    print(f"features {len(index)}, train {len(train)}, dev {len(dev)}: "
          f"dev accuracy {acc.double().mean().item():.4f}")


if __name__ == "__main__":
    main()
