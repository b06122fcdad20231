"""Reference values for the fine-tuning metrics (train/data.c:
train_score_multi, train_score_regression), computed here with numpy in
float64 by independent formulas: F1 from per-label confusion counts,
Pearson with numpy.corrcoef, Spearman as the Pearson of mid-ranks counted
directly (rank = #smaller + (#equal + 1) / 2, as scipy.stats.rankdata's
"average"). Inputs are float32 values (exact in JSON as doubles) with ties
on both sides. Writes tests/data/golden/train-metrics.json.

    /usr/bin/python3 tests/golden/metrics_reference.py
"""

import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "golden", "train-metrics.json")


def f1(tp, fp, fn):
    return 2.0 * tp / (2 * tp + fp + fn) if tp else 0.0


def multi_scores(logits, targets):
    pred, gold = logits > 0, targets > 0.5
    tp = (pred & gold).sum(axis=0)
    fp = (pred & ~gold).sum(axis=0)
    fn = (~pred & gold).sum(axis=0)
    return {"micro_f1": f1(tp.sum(), fp.sum(), fn.sum()),
            "macro_f1": float(np.mean([f1(a, b, c) for a, b, c in zip(tp, fp, fn)])),
            "exact_match": float((pred == gold).all(axis=1).mean())}


def midranks(v):
    return np.array([(v < x).sum() + ((v == x).sum() + 1) / 2.0 for x in v])


def corr(x, y):
    if x.std() == 0 or y.std() == 0:
        return 0.0
    return float(np.corrcoef(x, y)[0, 1])


def regression_scores(pred, gold):
    p, g = pred.astype(np.float64), gold.astype(np.float64)
    return {"pearson": corr(p, g), "spearman": corr(midranks(p), midranks(g)),
            "mse": float(np.mean((p - g) ** 2))}


def main():
    rng = np.random.default_rng(5)
    cases = []
    # 40 texts x 4 labels; label 3 is never gold nor predicted (F1 0 in the
    # macro mean); some rows have the empty set.
    logits = rng.normal(0, 1.5, (40, 4)).astype(np.float32)
    targets = (rng.random((40, 4)) < 0.35).astype(np.float32)
    logits[:, 3] = -np.abs(logits[:, 3]) - 0.1
    targets[:, 3] = 0
    targets[:6] = 0
    cases.append({"kind": "multi", "labels": 4, "logits": logits.ravel().tolist(),
                  "targets": targets.ravel().tolist(), "want": multi_scores(logits, targets)})
    # Regression: STS-like gold on a 0.2 grid (ties), noisy predictions with
    # some repeated values; then a constant prediction (correlations 0).
    gold = (np.round(rng.random(60) * 25) / 5).astype(np.float32)
    pred = (gold + rng.normal(0, 1.2, 60)).astype(np.float32)
    pred[10:14] = pred[3]
    cases.append({"kind": "regression", "pred": pred.tolist(), "gold": gold.tolist(),
                  "want": regression_scores(pred, gold)})
    const = np.full(60, 2.5, dtype=np.float32)
    cases.append({"kind": "regression", "pred": const.tolist(), "gold": gold.tolist(),
                  "want": regression_scores(const, gold)})
    with open(OUT, "w") as f:
        json.dump({"about": "tests/golden/metrics_reference.py", "cases": cases}, f)
    for c in cases:
        print(c["kind"], c["want"])


if __name__ == "__main__":
    main()
