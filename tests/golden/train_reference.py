"""PyTorch autograd reference for the trainer (train/step.c, train/optim.c).

One training step of a tiny BERT with both heads (tied MLM decoder; pooler +
classifier) on a packed batch of three sequences, in float64 with
torch.nn.functional ops, autograd, torch.nn.utils.clip_grad_norm_ and
torch.optim.AdamW. Parameters come from the synthetic generator
(synth.py, the twin of train/synth.c) so the C test builds the same start
without a checkpoint file. Writes, with the inputs, the loss, every gradient
and every parameter after the update, one file per classification head
(transformers' BertForSequenceClassification losses by problem_type):
  tests/data/golden/train-step.json             single-label, cross-entropy
  tests/data/golden/train-step-multi.json       multi-label, BCEWithLogitsLoss
  tests/data/golden/train-step-regression.json  regression (1 label), MSELoss
and for the causal model (is_decoder: attention to earlier positions only,
next-token labels through the tied head, the classifier on each sequence's
last token):
  tests/data/golden/train-step-causal.json      single-label

    /usr/bin/python3 tests/golden/train_reference.py
"""

import json
import os

import numpy as np
import torch
import torch.nn.functional as F

from synth import synth_values

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "data", "golden")

GEOMETRY = {"vocab": 37, "hidden": 12, "heads": 3, "layers": 2, "intermediate": 20,
            "positions": 16, "types": 2, "labels": 3, "eps": 1e-12, "act": "gelu"}
INIT = {"seed": 7, "weight_std": 0.3, "bias_range": 0.1, "ln_range": 0.2}
OPTIM = {"lr": 1e-3, "weight_decay": 0.01, "max_norm": 1.0}

# Three packed sequences; labels -100 where not predicted.
SEQS = [
    ([2, 11, 5, 30, 7, 3], [0, 0, 0, 0, 1, 1], [-100, 11, -100, 30, -100, -100], 1),
    ([2, 20, 21, 22, 9, 33, 14, 3], [0] * 8, [-100, -100, 4, -100, -100, 33, 14, -100], 2),
    ([2, 36, 3], [0, 0, 0], [-100, 36, -100], 0),
]
# The other heads' targets for the same three sequences: label sets over 3
# names (the second is the empty set) and STS-B-like scores.
MULTI_TARGETS = [[1.0, 0.0, 1.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]]
REGRESSION_TARGETS = [3.2, 0.5, 4.75]


def specs(g):
    """(name, kind, shape) in train/model.c's order."""
    H, FF, V = g["hidden"], g["intermediate"], g["vocab"]
    s = [("bert.embeddings.word_embeddings.weight", "weight", (V, H)),
         ("bert.embeddings.position_embeddings.weight", "weight", (g["positions"], H)),
         ("bert.embeddings.token_type_embeddings.weight", "weight", (g["types"], H)),
         ("bert.embeddings.LayerNorm.weight", "ln_gamma", (H,)),
         ("bert.embeddings.LayerNorm.bias", "ln_beta", (H,))]
    for i in range(g["layers"]):
        p = f"bert.encoder.layer.{i}."
        for k in ("query", "key", "value"):
            s += [(f"{p}attention.self.{k}.weight", "weight", (H, H)),
                  (f"{p}attention.self.{k}.bias", "bias", (H,))]
        s += [(f"{p}attention.output.dense.weight", "weight", (H, H)),
              (f"{p}attention.output.dense.bias", "bias", (H,)),
              (f"{p}attention.output.LayerNorm.weight", "ln_gamma", (H,)),
              (f"{p}attention.output.LayerNorm.bias", "ln_beta", (H,)),
              (f"{p}intermediate.dense.weight", "weight", (FF, H)),
              (f"{p}intermediate.dense.bias", "bias", (FF,)),
              (f"{p}output.dense.weight", "weight", (H, FF)),
              (f"{p}output.dense.bias", "bias", (H,)),
              (f"{p}output.LayerNorm.weight", "ln_gamma", (H,)),
              (f"{p}output.LayerNorm.bias", "ln_beta", (H,))]
    s += [("bert.pooler.dense.weight", "weight", (H, H)),
          ("bert.pooler.dense.bias", "bias", (H,)),
          ("cls.predictions.transform.dense.weight", "weight", (H, H)),
          ("cls.predictions.transform.dense.bias", "bias", (H,)),
          ("cls.predictions.transform.LayerNorm.weight", "ln_gamma", (H,)),
          ("cls.predictions.transform.LayerNorm.bias", "ln_beta", (H,)),
          ("cls.predictions.bias", "bias", (V,)),
          ("classifier.weight", "weight", (g["labels"], H)),
          ("classifier.bias", "bias", (g["labels"],))]
    return s


def init_params(g, init):
    out = {}
    for name, kind, shape in specs(g):
        center = 1.0 if kind == "ln_gamma" else 0.0
        rng = {"weight": init["weight_std"] * np.sqrt(3.0), "bias": init["bias_range"]}.get(
            kind, init["ln_range"])
        v = synth_values(init["seed"], name, int(np.prod(shape)), center, rng)
        out[name] = torch.tensor(v.astype(np.float64).reshape(shape), requires_grad=True)
    return out


def next_token_labels(ids):
    """The causal objective: position t predicts ids[t + 1]; the last predicts nothing."""
    return ids[1:] + [-100]


def forward(P, g, seqs, problem, causal):
    """Summed (masked or next-token) LM + classification loss over the packed batch."""
    H, A = g["hidden"], g["heads"]
    D = H // A
    act = {"gelu": F.gelu}[g["act"]]
    ln = lambda x, n: F.layer_norm(x, (H,), P[n + ".weight"], P[n + ".bias"], g["eps"])
    lin = lambda x, n: F.linear(x, P[n + ".weight"], P[n + ".bias"])
    hidden = []
    for ids, types, _, _ in seqs:
        n = len(ids)
        x = (P["bert.embeddings.word_embeddings.weight"][ids]
             + P["bert.embeddings.position_embeddings.weight"][:n]
             + P["bert.embeddings.token_type_embeddings.weight"][types])
        x = ln(x, "bert.embeddings.LayerNorm")
        for i in range(g["layers"]):
            p = f"bert.encoder.layer.{i}."
            q, k, v = (lin(x, p + f"attention.self.{m}").view(n, A, D).transpose(0, 1)
                       for m in ("query", "key", "value"))
            scores = q @ k.transpose(1, 2) / np.sqrt(D)
            if causal:
                future = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
                scores = scores.masked_fill(future, float("-inf"))
            probs = F.softmax(scores, dim=-1)
            ctx = (probs @ v).transpose(0, 1).reshape(n, H)
            x = ln(lin(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            f = lin(act(lin(x, p + "intermediate.dense")), p + "output.dense")
            x = ln(f + x, p + "output.LayerNorm")
        hidden.append(x)
    h = torch.cat(hidden)
    labels = torch.tensor([l for s in seqs for l in s[2]])
    t = ln(act(lin(h, "cls.predictions.transform.dense")), "cls.predictions.transform.LayerNorm")
    logits = t @ P["bert.embeddings.word_embeddings.weight"].T + P["cls.predictions.bias"]
    mlm = F.cross_entropy(logits, labels, ignore_index=-100)
    cls = torch.stack([x[-1] if causal else x[0] for x in hidden])
    pooled = torch.tanh(lin(cls, "bert.pooler.dense"))
    cls_logits = lin(pooled, "classifier")
    if problem == "multi":
        ce = F.binary_cross_entropy_with_logits(cls_logits, torch.tensor(
            MULTI_TARGETS, dtype=torch.float64))
    elif problem == "regression":
        ce = F.mse_loss(cls_logits.squeeze(-1), torch.tensor(REGRESSION_TARGETS,
                                                             dtype=torch.float64))
    else:
        ce = F.cross_entropy(cls_logits, torch.tensor([s[3] for s in seqs]))
    return mlm + ce, mlm, ce


def write(problem, labels, name, causal=False):
    torch.manual_seed(0)
    g = dict(GEOMETRY, labels=labels)
    P = init_params(g, INIT)
    seqs = SEQS
    if causal:
        seqs = [(ids, types, next_token_labels(ids), label) for ids, types, _, label in SEQS]
    loss, mlm, ce = forward(P, g, seqs, problem, causal)
    loss.backward()
    grads = {n: P[n].grad.detach().clone() for n in P}
    norm = torch.nn.utils.clip_grad_norm_(list(P.values()), OPTIM["max_norm"])
    decay = [P[n] for n, kind, _ in specs(g) if kind == "weight"]
    rest = [P[n] for n, kind, _ in specs(g) if kind != "weight"]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": OPTIM["weight_decay"]},
                             {"params": rest, "weight_decay": 0.0}],
                            lr=OPTIM["lr"], betas=(0.9, 0.999), eps=1e-8)
    opt.step()
    flat = lambda t: [float(x) for x in t.detach().reshape(-1)]
    rows = []
    for i, s in enumerate(seqs):
        seq = {"ids": s[0], "types": s[1], "mlm_labels": s[2]}
        if problem == "multi":
            seq["targets"] = MULTI_TARGETS[i]
        elif problem == "regression":
            seq["target"] = REGRESSION_TARGETS[i]
        else:
            seq["label"] = s[3]
        rows.append(seq)
    doc = {"about": "one training step of a tiny BERT; tests/golden/train_reference.py"}
    if problem != "single":
        doc["problem"] = problem
    if causal:
        doc["is_decoder"] = True
    doc.update({
        "geometry": g, "init": INIT, "optim": OPTIM, "sequences": rows,
        "loss": float(loss), "mlm_loss": float(mlm), "cls_loss": float(ce),
        "grad_norm": float(norm),
        "tensors": [{"name": n, "grad": flat(grads[n]), "after": flat(P[n])}
                    for n, _, _ in specs(g)],
    })
    out = os.path.join(GOLDEN, name)
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    print(f"wrote {out}: loss {float(loss):.6f}, grad norm {float(norm):.6f}")


def main():
    write("single", GEOMETRY["labels"], "train-step.json")
    write("multi", 3, "train-step-multi.json")
    write("regression", 1, "train-step-regression.json")
    write("single", GEOMETRY["labels"], "train-step-causal.json", causal=True)


if __name__ == "__main__":
    main()
