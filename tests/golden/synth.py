"""numpy twin of model/synth.c: the deterministic synthetic checkpoints.

Builds the same tensors, bit for bit, as `bert init` / bert_synth_write, and
writes them as a Hugging Face folder (config.json, model.safetensors,
tokenizer and sentence-transformers files) so that the PyTorch reference can
load them without our C code.

Generator (model/synth.h): for tensor `name` and element i,
    z = splitmix64_mix((seed ^ fnv1a64(name)) + (i + 1) * 0x9E3779B97F4A7C15)
    u = (z >> 11) * 2^-53
    value = float32(center + (2u - 1) * range)      (float64 arithmetic)
Options use the `bert init` flag names, so a spec is also a command line.
"""

import json
import os
import shutil
import struct

import numpy as np

U64 = np.uint64
MASK64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15

WEIGHT, BIAS, LN_GAMMA, LN_BETA = "weight", "bias", "ln_gamma", "ln_beta"

# `bert init` defaults (cli/init.c).
INIT_DEFAULTS = {
    "layers": 2, "hidden": 128, "heads": 2, "intermediate": 512, "max-position": 512,
    "type-vocab": 2, "eps": 1e-12, "act": "gelu", "seed": 0, "weight-std": 0.02,
    "bias-range": 0.0, "ln-range": 0.0, "dtype": "f32", "prefix": False, "mlm": False,
    "untied-decoder": False, "pooler": False, "labels": None, "problem-type": None,
    "sentence-transformers": False, "pooling": "mean", "normalize": False,
    "max-seq-length": 0,
}

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json",
                   "special_tokens_map.json")


def fnv1a64(name):
    h = 0xCBF29CE484222325
    for byte in name.encode():
        h = ((h ^ byte) * 0x100000001B3) & MASK64
    return h


def _mix64(z):
    """The splitmix64 finaliser on a uint64 array (wrapping arithmetic)."""
    z = (z ^ (z >> U64(30))) * U64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> U64(27))) * U64(0x94D049BB133111EB)
    return z ^ (z >> U64(31))


def synth_values(seed, name, count, center, rng):
    """Elements 0..count-1 of tensor `name` as float32."""
    h = U64((seed ^ fnv1a64(name)) & MASK64)
    with np.errstate(over="ignore"):
        i = np.arange(1, count + 1, dtype=U64)
        z = _mix64(h + i * U64(GOLDEN_GAMMA))
    u = (z >> U64(11)).astype(np.float64) * 2.0 ** -53
    return (center + (2.0 * u - 1.0) * rng).astype(np.float32)


def vocab_size(tokenizer_dir):
    """What bert_tokenizer_vocab_size reports: largest id + 1, added tokens included."""
    path = os.path.join(tokenizer_dir, "tokenizer.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            tok = json.load(f)
        ids = list(tok["model"]["vocab"].values()) + [t["id"] for t in tok["added_tokens"]]
        return max(ids) + 1
    with open(os.path.join(tokenizer_dir, "vocab.txt"), encoding="utf-8") as f:
        return sum(1 for _ in f)


def options(init):
    """Fill a spec's `bert init` options with the defaults."""
    unknown = set(init) - set(INIT_DEFAULTS) - {"tokenizer"}
    if unknown:
        raise ValueError(f"unknown init options {sorted(unknown)}")
    o = dict(INIT_DEFAULTS)
    o.update(init)
    return o


def tensor_specs(o, vocab):
    """(name, kind, shape) in the order model/synth.c builds them."""
    p = "bert." if o["prefix"] else ""
    H, FF = o["hidden"], o["intermediate"]
    specs = [
        (f"{p}embeddings.word_embeddings.weight", WEIGHT, (vocab, H)),
        (f"{p}embeddings.position_embeddings.weight", WEIGHT, (o["max-position"], H)),
        (f"{p}embeddings.token_type_embeddings.weight", WEIGHT, (o["type-vocab"], H)),
        (f"{p}embeddings.LayerNorm.weight", LN_GAMMA, (H,)),
        (f"{p}embeddings.LayerNorm.bias", LN_BETA, (H,)),
    ]
    for i in range(o["layers"]):
        lp = f"{p}encoder.layer.{i}."
        for k in ("query", "key", "value"):
            specs += [(f"{lp}attention.self.{k}.weight", WEIGHT, (H, H)),
                      (f"{lp}attention.self.{k}.bias", BIAS, (H,))]
        specs += [
            (f"{lp}attention.output.dense.weight", WEIGHT, (H, H)),
            (f"{lp}attention.output.dense.bias", BIAS, (H,)),
            (f"{lp}attention.output.LayerNorm.weight", LN_GAMMA, (H,)),
            (f"{lp}attention.output.LayerNorm.bias", LN_BETA, (H,)),
            (f"{lp}intermediate.dense.weight", WEIGHT, (FF, H)),
            (f"{lp}intermediate.dense.bias", BIAS, (FF,)),
            (f"{lp}output.dense.weight", WEIGHT, (H, FF)),
            (f"{lp}output.dense.bias", BIAS, (H,)),
            (f"{lp}output.LayerNorm.weight", LN_GAMMA, (H,)),
            (f"{lp}output.LayerNorm.bias", LN_BETA, (H,)),
        ]
    classifier = o["labels"] is not None
    if o["pooler"] or classifier:
        specs += [(f"{p}pooler.dense.weight", WEIGHT, (H, H)),
                  (f"{p}pooler.dense.bias", BIAS, (H,))]
    if o["mlm"]:
        specs += [
            ("cls.predictions.transform.dense.weight", WEIGHT, (H, H)),
            ("cls.predictions.transform.dense.bias", BIAS, (H,)),
            ("cls.predictions.transform.LayerNorm.weight", LN_GAMMA, (H,)),
            ("cls.predictions.transform.LayerNorm.bias", LN_BETA, (H,)),
            ("cls.predictions.bias", BIAS, (vocab,)),
        ]
        if o["untied-decoder"]:
            specs.append(("cls.predictions.decoder.weight", WEIGHT, (vocab, H)))
    if classifier:
        n = len(o["labels"].split(","))
        specs += [("classifier.weight", WEIGHT, (n, H)), ("classifier.bias", BIAS, (n,))]
    return specs


def f32_to_bf16_bits(x):
    """model/safetensors.c bert_f32_to_bf16: round to nearest even (no NaNs here)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = bits + U64(0x7FFF) + ((bits >> U64(16)) & U64(1))
    return (bits >> U64(16)).astype(np.uint16)


def encode(x, dtype):
    """float32 array -> the bytes safetensors stores for `dtype`."""
    if dtype == "f32":
        return x.astype("<f4").tobytes()
    if dtype == "f16":
        return x.astype("<f2").tobytes()  # IEEE round to nearest even, as the C writer
    if dtype == "bf16":
        return f32_to_bf16_bits(x).astype("<u2").tobytes()
    raise ValueError(dtype)


def generate(o, vocab):
    """[(name, shape, float32 values as generated, before dtype rounding)]."""
    out = []
    for name, kind, shape in tensor_specs(o, vocab):
        center = 1.0 if kind == LN_GAMMA else 0.0
        rng = {WEIGHT: o["weight-std"] * np.sqrt(3.0), BIAS: o["bias-range"]}.get(
            kind, o["ln-range"])
        out.append((name, shape, synth_values(o["seed"], name, int(np.prod(shape)), center, rng)))
    return out


def config_json(o, vocab):
    """The config.json bert_config_write produces (the keys that matter)."""
    labels = o["labels"].split(",") if o["labels"] is not None else []
    arch = ("BertForSequenceClassification" if labels else
            "BertForMaskedLM" if o["mlm"] else "BertModel")
    act = {"gelu": "gelu", "gelu_new": "gelu_new", "relu": "relu", "silu": "silu"}[o["act"]]
    cfg = {
        "architectures": [arch], "model_type": "bert", "vocab_size": vocab,
        "hidden_size": o["hidden"], "num_hidden_layers": o["layers"],
        "num_attention_heads": o["heads"], "intermediate_size": o["intermediate"],
        "max_position_embeddings": o["max-position"], "type_vocab_size": o["type-vocab"],
        # The C side stores eps as a float32.
        "layer_norm_eps": float(np.float32(o["eps"])), "hidden_act": act,
        "pad_token_id": 0, "position_embedding_type": "absolute",
        "tie_word_embeddings": not o["untied-decoder"],
        "id2label": {str(i): l for i, l in enumerate(labels)},
        "label2id": {l: i for i, l in enumerate(labels)},
    }
    if o["problem-type"]:
        cfg["problem_type"] = {"single_label": "single_label_classification",
                               "multi_label": "multi_label_classification",
                               "regression": "regression"}[o["problem-type"]]
    return cfg


def write_safetensors(path, tensors, dtype):
    """Minimal writer: all tensors share one dtype, so plain order is aligned."""
    tag = {"f32": "F32", "f16": "F16", "bf16": "BF16"}[dtype]
    header, blobs, offset = {}, [], 0
    for name, shape, values in tensors:
        data = encode(values, dtype)
        header[name] = {"dtype": tag, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def write_sentence_transformers(o, out_dir):
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
    ]
    if o["normalize"]:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize",
                        "type": "sentence_transformers.models.Normalize"})
        os.makedirs(os.path.join(out_dir, "2_Normalize"), exist_ok=True)
    with open(os.path.join(out_dir, "modules.json"), "w") as f:
        json.dump(modules, f, indent=2)
    os.makedirs(os.path.join(out_dir, "1_Pooling"), exist_ok=True)
    pool = {"word_embedding_dimension": o["hidden"],
            "pooling_mode_cls_token": o["pooling"] == "cls",
            "pooling_mode_mean_tokens": o["pooling"] == "mean",
            "pooling_mode_max_tokens": o["pooling"] == "max",
            "pooling_mode_mean_sqrt_len_tokens": False}
    with open(os.path.join(out_dir, "1_Pooling", "config.json"), "w") as f:
        json.dump(pool, f, indent=2)
    if o["max-seq-length"]:
        with open(os.path.join(out_dir, "sentence_bert_config.json"), "w") as f:
            json.dump({"max_seq_length": o["max-seq-length"], "do_lower_case": False}, f)


def write_checkpoint(o, tokenizer_dir, out_dir):
    """Write the folder; returns [(name, shape, stored bytes)] for checksums."""
    vocab = vocab_size(tokenizer_dir)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config_json(o, vocab), f, indent=2)
    for name in TOKENIZER_FILES:
        src = os.path.join(tokenizer_dir, name)
        if os.path.exists(src):
            shutil.copyfile(src, os.path.join(out_dir, name))
    if o["sentence-transformers"]:
        write_sentence_transformers(o, out_dir)
    tensors = generate(o, vocab)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, o["dtype"])
    return [(name, shape, encode(values, o["dtype"])) for name, shape, values in tensors]


def init_command(o, tokenizer_dir, out_dir, bert="build/bin/bert"):
    """The `bert init` command line that builds the same checkpoint."""
    cmd = [bert, "init", "--out", out_dir, "--tokenizer", tokenizer_dir]
    for key, default in INIT_DEFAULTS.items():
        value = o[key]
        if value == default:
            continue
        if isinstance(value, bool):
            cmd.append(f"--{key}")
        else:
            cmd += [f"--{key}", repr(value) if isinstance(value, float) else str(value)]
    return cmd
