#!/usr/bin/python3
"""Export a project checkpoint to ONNX for the engine benchmark's ONNX Runtime peer.

usage: /usr/bin/python3 bench/export_onnx.py --model DIR --out DIR
           [--heads embed,fill-mask,classify] [--bert build/bin/bert]

Writes OUT/<head>.onnx for each head of bench/torch_bert.py (TorchBert, or
TorchModernBert for a ModernBERT folder, which has embed only) (inputs
input_ids and attention_mask, int64, dynamic batch and sequence axes). With
--bert, first checks that the PyTorch model agrees with the engine on a few
texts (token ids from `bert tokenize`): embeddings and class probabilities
within 1e-4, fill-mask top-5 log-probabilities within 1e-4. torch.onnx.export
needs the `onnx` package (Debian python3-onnx).
"""

import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_bert import load_model, pad_batch  # noqa: E402

TOLERANCE = 1e-4
CHECK_TEXTS = ["hello world",
               "a gorgeous, witty, seductive movie [MASK] the end.",
               "The capital of France is [MASK].",
               "it 's a charming and often affecting journey , and an unflinching look at the "
               "[MASK] of a family that has lost its way in a world of noise ."]


def bert_json(bert, command, model, texts):
    out = subprocess.run([bert, command, "--model", model], input=json.dumps({"inputs": texts}),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def token_ids(bert, model, texts):
    return [[t["id"] for t in seq] for seq in bert_json(bert, "tokenize", model, texts)]


def check_against_engine(bert, model, heads):
    """Largest deviation per head; raises when one exceeds TOLERANCE."""
    ids = token_ids(bert, model, CHECK_TEXTS)
    input_ids, mask = pad_batch(ids)
    report = {}
    for head in heads:
        with torch.no_grad():
            out = load_model(model, head)(input_ids, mask).double()
        if head == "embed":
            ours = torch.tensor(bert_json(bert, "embed", model, CHECK_TEXTS), dtype=torch.float64)
            err = float((ours - out).abs().max())
        elif head == "classify":
            answer = bert_json(bert, "classify", model, CHECK_TEXTS)
            with open(os.path.join(model, "config.json")) as f:
                label2id = json.load(f)["label2id"]
            err = max(abs(entry["score"] - float(out[i, label2id[entry["label"]]]))
                      for i, seq in enumerate(answer) for entry in seq)
        elif head == "fill-mask":
            masked = [t for t in CHECK_TEXTS if "[MASK]" in t]
            answer = bert_json(bert, "fill-mask", model, masked)
            err = 0.0
            for text, top in zip(masked, answer):
                i = CHECK_TEXTS.index(text)
                pos = ids[i].index(103) if 103 in ids[i] else None
                if pos is None:
                    raise SystemExit(f"export_onnx: no [MASK] id 103 in {text!r}")
                logp = torch.log_softmax(out[i, pos], dim=-1)
                best = logp.topk(len(top)).values
                for k, entry in enumerate(top):
                    # The engine's k-th answer has torch's log-probability, and
                    # the same rank value (ties may swap ids, not values).
                    err = max(err, abs(float(logp[entry["token"]]) - float(torch.log(torch.tensor(entry["score"], dtype=torch.float64)))),
                              abs(float(best[k]) - float(logp[entry["token"]])))
        else:
            continue
        report[head] = err
        if err > TOLERANCE:
            raise SystemExit(f"export_onnx: {head}: PyTorch and bert differ by {err:.3g} > {TOLERANCE}")
    return report


def export(model, out_dir, head):
    net = load_model(model, head).eval()
    path = os.path.join(out_dir, f"{head}.onnx")
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    axes["output"] = {0: "batch", 1: "seq"} if head in ("encode", "fill-mask") else {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(net, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                          output_names=["output"], dynamic_axes=axes, opset_version=14,
                          do_constant_folding=True)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--heads", default="embed,fill-mask,classify")
    ap.add_argument("--bert", help="check PyTorch against this bert binary first")
    args = ap.parse_args()
    heads = args.heads.split(",")
    if args.bert:
        for head, err in check_against_engine(args.bert, args.model, heads).items():
            print(f"export_onnx: {head}: PyTorch vs bert max deviation {err:.2e} (<= {TOLERANCE})")
    os.makedirs(args.out, exist_ok=True)
    for head in heads:
        print(f"export_onnx: wrote {export(args.model, args.out, head)}")


if __name__ == "__main__":
    main()
