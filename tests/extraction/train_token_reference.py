#!/usr/bin/python3
"""PyTorch autograd reference for one token-classification training step
(issue 21: `bert finetune --task token-classification`).

The tiny BERT of tests/golden/train_reference.py (same geometry, generator,
sequences and optimiser settings), without the pooler and the MLM head, with
`classifier` Linear(H, labels) on every token, as BertForTokenClassification
has it. The forward pass is tests/golden/reference.py's encoder run with
autograd on the parameters; the loss is transformers' token-classification
loss: cross-entropy over every token whose label is not -100, averaged over
those tokens of the whole packed batch. Writes the loss, every gradient and
every parameter after clip (1.0) + AdamW, like train_reference.py:
  tests/data/extraction/train-step-token.json

    /usr/bin/python3 tests/extraction/train_token_reference.py
"""

import json
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))

import reference  # noqa: E402
import train_reference as tr  # noqa: E402

OUT = os.path.join(HERE, "..", "data", "extraction", "train-step-token.json")
LABELS = 5  # O, B-X, I-X, B-Y, I-Y
# Per sequence of tr.SEQS: one label per token, -100 on [CLS] / [SEP] and on
# the tokens that continue a word (labels on first sub-tokens only).
TOKEN_LABELS = [
    [-100, 1, 2, 0, 3, -100],
    [-100, 0, 0, -100, 1, 2, 2, -100],
    [-100, 4, -100],
]


def specs(g):
    """train_reference's tensors less the pooler and the MLM head, with a
    per-token classifier."""
    drop = ("bert.pooler.", "cls.predictions.", "classifier.")
    s = [x for x in tr.specs(g) if not x[0].startswith(drop)]
    return s + [("classifier.weight", "weight", (g["labels"], g["hidden"])),
                ("classifier.bias", "bias", (g["labels"],))]


def model_with(P, g):
    """reference.Bert over the autograd parameters (no file)."""
    m = reference.Bert.__new__(reference.Bert)
    m.family, m.H, m.A, m.L = "bert", g["hidden"], g["heads"], g["layers"]
    m.eps, m.act, m.position_offset = g["eps"], g["act"], 0
    m.w, m.prefix = P, "bert."
    m.layer_prefix, m.layer_names = "encoder.layer.", reference.BERT_LAYER
    return m


def main():
    torch.manual_seed(0)
    g = dict(tr.GEOMETRY, labels=LABELS)
    names = {n for n, _, _ in specs(g)}
    # The generator is keyed by name: the same values as train_reference's.
    P = {n: t for n, t in tr.init_params(g, tr.INIT).items() if n in names}
    model = model_with(P, g)
    logits, labels = [], []
    for (ids, types, _, _), lab in zip(tr.SEQS, TOKEN_LABELS):
        h = model.encode(ids, types)
        logits.append(reference.linear(h, P["classifier.weight"], P["classifier.bias"]))
        labels += lab
    loss = F.cross_entropy(torch.cat(logits), torch.tensor(labels), ignore_index=-100)
    loss.backward()
    order = [n for n, _, _ in specs(g)]
    grads = {n: P[n].grad.detach().clone() for n in order}
    norm = torch.nn.utils.clip_grad_norm_([P[n] for n in order], tr.OPTIM["max_norm"])
    decay = [P[n] for n, kind, _ in specs(g) if kind == "weight"]
    rest = [P[n] for n, kind, _ in specs(g) if kind != "weight"]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": tr.OPTIM["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=tr.OPTIM["lr"], betas=(0.9, 0.999), eps=1e-8)
    opt.step()
    flat = lambda t: [float(x) for x in t.detach().reshape(-1)]  # noqa: E731
    doc = {"about": "one token-classification training step of a tiny BERT; "
                    "tests/extraction/train_token_reference.py",
           "task": "token-classification", "geometry": g, "init": tr.INIT, "optim": tr.OPTIM,
           "sequences": [{"ids": s[0], "types": s[1], "token_labels": lab}
                         for s, lab in zip(tr.SEQS, TOKEN_LABELS)],
           "loss": float(loss), "grad_norm": float(norm),
           "tensors": [{"name": n, "grad": flat(grads[n]), "after": flat(P[n])} for n in order]}
    with open(OUT, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {OUT}: loss {float(loss):.6f}, grad norm {float(norm):.6f}")


if __name__ == "__main__":
    main()
