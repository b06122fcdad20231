#!/usr/bin/python3
"""Regenerate tests/data/golden/clients.json: the float64 PyTorch reference's
answers for the client-facing numeric paths of issue 20, on the tiny-mlm
synthetic checkpoint (its spec and official token ids are read from
tests/data/golden/tiny-mlm.json, so nothing here tokenizes):

- /v1/embeddings "dimensions": the checkpoint's mean pooling cut to the first
  d components, then L2-normalised (sentence-transformers' truncate_dim, then
  Normalize), for several d;
- /similarity: the cosine of the source sentence's pooled embedding with each
  other sentence's (sentence-transformers' cos_sim);
- /embed_sparse: SPLADE, log(1 + relu(MLM logits)) max-pooled over every
  token, specials included: per text the number of entries above 0, their
  sum, and the 64 largest (index, value) pairs.

Run from the repository root with Debian's python (torch, numpy):
    /usr/bin/python3 tests/golden/make_client_goldens.py
tests/http/test_client_goldens.py compares the server with it.
"""
import json
import os
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import reference  # noqa: E402
import synth  # noqa: E402

SOURCE = os.path.join(ROOT, "tests", "data", "golden", "tiny-mlm.json")
OUT = os.path.join(ROOT, "tests", "data", "golden", "clients.json")
DIMENSIONS = [1, 16, 64, 127, 128]
N_INPUTS = 4  # single texts only: /v1/embeddings takes no pairs
SPARSE_TOP = 64


def rounded(t):
    return [round(float(x), 10) for x in t.flatten()]


def sparse_summary(v):
    top = torch.argsort(v, descending=True)[:SPARSE_TOP]
    return {"n_positive": int((v > 0).sum()), "sum": round(float(v.sum()), 8),
            "top": [[int(j), round(float(v[j]), 10)] for j in top]}


def main():
    src = json.load(open(SOURCE, encoding="utf-8"))
    inputs = [i for i in src["inputs"] if i["pair"] is None][:N_INPUTS]
    tok_dir = os.path.join(ROOT, "tests", "data", "tokenizer", src["tokenizer"])
    o = synth.options({**src["init"], "dtype": "f32"})
    with tempfile.TemporaryDirectory() as work:
        synth.write_checkpoint(o, tok_dir, work)
        model = reference.load(work)
        hidden = [model.encode(i["ids"], i["type_ids"]) for i in inputs]
        pooled = [model.pool(h, "mean") for h in hidden]
        sparse = [torch.log1p(torch.relu(model.mlm_logits(h))).max(dim=0).values
                  for h in hidden]
    dims = {str(d): [rounded(torch.nn.functional.normalize(p[:d], dim=0)) for p in pooled]
            for d in DIMENSIONS}
    source, others = pooled[0], pooled[1:]
    cosines = [float(torch.nn.functional.cosine_similarity(source, p, dim=0)) for p in others]
    golden = {
        "about": __doc__.splitlines()[0],
        "command": src["command"],
        "pooling": "mean",
        "texts": [i["text"] for i in inputs],
        "dimensions": dims,
        "similarity": {"source_sentence": inputs[0]["text"],
                       "sentences": [i["text"] for i in inputs[1:]],
                       "cosines": [round(c, 10) for c in cosines]},
        "sparse": [sparse_summary(v) for v in sparse],
    }
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(json.dumps(golden, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"{OUT}: {len(inputs)} texts, {os.path.getsize(OUT)} bytes; cosines {cosines}")


if __name__ == "__main__":
    main()
