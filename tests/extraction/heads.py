"""Token-classification and question-answering checkpoints: the synthetic
generator's extension (the twin of `bert init --token-classification` /
`--question-answering`) and the heads' float64 reference forward.

Tensor names and config.json keys are Hugging Face's, written here by hand
per family (modeling_bert.py BertForTokenClassification /
BertForQuestionAnswering and their DistilBERT, RoBERTa / XLM-R, ELECTRA and
ModernBERT counterparts):

| family | token classification | question answering |
|---|---|---|
| BERT, DistilBERT, RoBERTa, XLM-R, ELECTRA, DeBERTa-v2, GTE | encoder (no pooler) + `classifier` Linear(H, labels) on every token | encoder + `qa_outputs` Linear(H, 2): column 0 start logits, column 1 end logits |
| ModernBERT | `head` (dense, classifier_activation, norm) + `classifier` Linear(H, labels) | `head` + `classifier` Linear(H, 2) |

Everything else (the encoder tensors, the value generator, the file
writers, the encoder forward) comes from tests/golden/synth.py and
reference.py, unchanged.
"""

import json
import os
import shutil
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "golden"))

import reference  # noqa: E402
import synth  # noqa: E402

# The options this extension adds to `bert init`'s; bool flags.
HEAD_OPTIONS = ("token-classification", "question-answering")


def options(init):
    """synth.options plus the head flags (default off)."""
    base = {k: v for k, v in init.items() if k not in HEAD_OPTIONS}
    o = synth.options(base)
    for k in HEAD_OPTIONS:
        o[k] = bool(init.get(k, False))
    if o["token-classification"] and o["question-answering"]:
        raise ValueError("a checkpoint has one task head")
    if o["token-classification"] and not o["labels"]:
        raise ValueError("token-classification needs labels")
    return o


def task(o):
    if o["token-classification"]:
        return "token-classification"
    if o["question-answering"]:
        return "question-answering"
    return "sequence-classification" if o["labels"] is not None else None


def _encoder_options(o):
    """The options synth.py builds the encoder from: no sequence
    classifier or pooler under a per-token head."""
    e = {k: v for k, v in o.items() if k not in HEAD_OPTIONS}
    if task(o) in ("token-classification", "question-answering"):
        e["labels"] = None
        e["pooler"] = False
    return e


def tensor_specs(o, vocab):
    """(name, kind, shape) of every tensor of the task model."""
    specs = synth.tensor_specs(_encoder_options(o), vocab)
    t = task(o)
    if t not in ("token-classification", "question-answering"):
        return specs
    H = o["hidden"]
    n = len(o["labels"].split(",")) if t == "token-classification" else 2
    if synth.family(o) == "modernbert":
        b = o["biases"]
        specs.append(("head.dense.weight", synth.WEIGHT, (H, H)))
        if b:
            specs.append(("head.dense.bias", synth.BIAS, (H,)))
        specs.append(("head.norm.weight", synth.LN_GAMMA, (H,)))
        if b:
            specs.append(("head.norm.bias", synth.LN_BETA, (H,)))
        out = "classifier"
    else:
        out = "classifier" if t == "token-classification" else "qa_outputs"
    return specs + [(f"{out}.weight", synth.WEIGHT, (n, H)), (f"{out}.bias", synth.BIAS, (n,))]


def generate(o, vocab):
    """[(name, shape, float32 values)]: synth.py's tensors for the encoder,
    its generator (same ranges) for the head."""
    out = synth.generate(_encoder_options(o), vocab)
    have = {name for name, _, _ in out}
    for name, kind, shape in tensor_specs(o, vocab):
        if name in have:
            continue
        center = 1.0 if kind == synth.LN_GAMMA else 0.0
        rng = {synth.WEIGHT: o["weight-std"] * np.sqrt(3.0), synth.BIAS: o["bias-range"]}.get(
            kind, o["ln-range"])
        out.append((name, shape, synth.synth_values(o["seed"], name, int(np.prod(shape)),
                                                    center, rng)))
    return out


def config_json(o, vocab):
    cfg = synth.config_json(_encoder_options(o), vocab)
    t = task(o)
    if t in ("token-classification", "question-answering"):
        suffix = "ForTokenClassification" if t == "token-classification" else \
            "ForQuestionAnswering"
        cfg["architectures"] = [synth.CLASS_PREFIX[o["model-type"]] + suffix]
    if t == "token-classification":
        labels = o["labels"].split(",")
        cfg["id2label"] = {str(i): x for i, x in enumerate(labels)}
        cfg["label2id"] = {x: i for i, x in enumerate(labels)}
    return cfg


def write_checkpoint(o, tokenizer_dir, out_dir, tokenizer_files=None):
    """Write the folder; returns [(name, shape, stored bytes)] for checksums.
    tokenizer_files: the names to copy from tokenizer_dir (default synth's)."""
    vocab = synth.vocab_size(tokenizer_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json(o, vocab), f, indent=2)
    for name in tokenizer_files or synth.TOKENIZER_FILES:
        src = os.path.join(tokenizer_dir, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out_dir, name))
    tensors = generate(o, vocab)
    synth.write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, o["dtype"])
    return [(name, shape, synth.encode(values, o["dtype"])) for name, shape, values in tensors]


def init_command(o, tokenizer_dir, out_dir, bert="build/bin/bert"):
    """The `bert init` command line (the head flags are planned for issue 21)."""
    cmd = synth.init_command({k: v for k, v in o.items() if k not in HEAD_OPTIONS},
                             tokenizer_dir, out_dir, bert)
    return cmd + [f"--{k}" for k in HEAD_OPTIONS if o[k]]


# ------------------------------------------------------------ forward (float64)


def _linear(model, name, x):
    return reference.linear(x, model.w[name + ".weight"], model.w[name + ".bias"])


def token_logits(model, hidden):
    """(n, labels): the classifier on every token's final hidden state
    (ModernBERT: after its prediction head)."""
    if isinstance(model, reference.ModernBert):
        return model.lin("classifier", model.head(hidden))
    return _linear(model, "classifier", hidden)


def qa_logits(model, hidden):
    """(n, 2): start logits in column 0, end logits in column 1."""
    if isinstance(model, reference.ModernBert):
        return model.lin("classifier", model.head(hidden))
    return _linear(model, "qa_outputs", hidden)


def nli_logits(model, hidden):
    """(classes,): the sequence classifier (reference.py's)."""
    return model.classifier_logits(hidden)
