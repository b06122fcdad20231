"""An independent BERT reference in float64, written from torch primitives.

It follows the published architecture (Devlin et al. 2018, "BERT", sec. 3;
the post-LN Transformer encoder of Vaswani et al. 2017) and the Hugging Face
checkpoint layout (tensor names, config.json keys, sentence-transformers
pooling files). It reads checkpoints with its own minimal safetensors reader
and shares no code with the C engine: do not import our C or call our
binaries from here.

Every computation runs one sequence at a time, without padding, in float64,
so its own rounding error is far below the tolerances the C tests apply.
"""

import json
import math
import os
import struct

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
          "F64": torch.float64}


def read_safetensors(path):
    """{name: (dtype string, shape list, raw bytes)}; checks the layout."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if not 0 <= begin <= end <= len(data):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets")
        out[name] = (entry["dtype"], entry["shape"], data[begin:end])
    return out


def to_tensor(dtype, shape, raw):
    """Raw little-endian bytes -> float64 tensor of `shape`."""
    t = torch.frombuffer(bytearray(raw), dtype=DTYPES[dtype])
    return t.to(torch.float64).reshape(shape)


def layer_norm(x, gamma, beta, eps):
    """Biased variance over the last dimension, as torch.nn.LayerNorm."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * gamma + beta


def activation(name, x):
    """transformers' ACT2FN for the hidden_act values bertserve accepts."""
    if name == "gelu":  # exact: x * Phi(x) (Hendrycks & Gimpel 2016)
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "relu":
        return torch.clamp(x, min=0.0)
    if name in ("silu", "swish"):
        return x / (1.0 + torch.exp(-x))
    raise ValueError(f"hidden_act {name!r}")


def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def linear(x, w, b):
    """torch.nn.Linear: x W^T + b, W stored (out, in)."""
    return x @ w.T + b


class Bert:
    """A loaded checkpoint folder."""

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        c = self.config
        if c.get("model_type", "bert") != "bert":
            raise ValueError("only BERT")
        self.H = c["hidden_size"]
        self.A = c["num_attention_heads"]
        self.L = c["num_hidden_layers"]
        self.eps = c.get("layer_norm_eps", 1e-12)
        self.act = c.get("hidden_act", "gelu")
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        self.pooling, self.normalize = self._sentence_transformers(folder)

    @staticmethod
    def _sentence_transformers(folder):
        """Pooling mode and Normalize from modules.json / 1_Pooling."""
        pooling, normalize = None, False
        modules = os.path.join(folder, "modules.json")
        if os.path.exists(modules):
            with open(modules) as f:
                normalize = any(m["type"].endswith("Normalize") for m in json.load(f))
        pool_cfg = os.path.join(folder, "1_Pooling", "config.json")
        if os.path.exists(pool_cfg):
            with open(pool_cfg) as f:
                p = json.load(f)
            for key, mode in (("pooling_mode_cls_token", "cls"),
                              ("pooling_mode_mean_tokens", "mean"),
                              ("pooling_mode_max_tokens", "max")):
                if p.get(key):
                    pooling = mode
        return pooling, normalize

    def p(self, name):
        """An encoder tensor (under the `bert.` prefix when the file has one)."""
        return self.w[self.prefix + name]

    def has(self, name):
        return name in self.w

    def encode(self, ids, type_ids):
        """Final hidden states (n, H) of one sequence."""
        ids = torch.tensor(ids, dtype=torch.long)
        types = torch.tensor(type_ids, dtype=torch.long)
        pos = torch.arange(len(ids))
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[pos]
             + self.p("embeddings.token_type_embeddings.weight")[types])
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        for i in range(self.L):
            x = self.layer(x, f"encoder.layer.{i}.")
        return x

    def layer(self, x, lp):
        n, H, A = x.shape[0], self.H, self.A
        D = H // A

        def proj(name):
            return linear(x, self.p(lp + name + ".weight"), self.p(lp + name + ".bias"))

        # (A, n, D) per head.
        q = proj("attention.self.query").reshape(n, A, D).transpose(0, 1)
        k = proj("attention.self.key").reshape(n, A, D).transpose(0, 1)
        v = proj("attention.self.value").reshape(n, A, D).transpose(0, 1)
        probs = softmax(q @ k.transpose(1, 2) / math.sqrt(D))
        ctx = (probs @ v).transpose(0, 1).reshape(n, H)
        # Post-LN residual blocks.
        attn = linear(ctx, self.p(lp + "attention.output.dense.weight"),
                      self.p(lp + "attention.output.dense.bias"))
        x = layer_norm(attn + x, self.p(lp + "attention.output.LayerNorm.weight"),
                       self.p(lp + "attention.output.LayerNorm.bias"), self.eps)
        h = activation(self.act, linear(x, self.p(lp + "intermediate.dense.weight"),
                                        self.p(lp + "intermediate.dense.bias")))
        out = linear(h, self.p(lp + "output.dense.weight"), self.p(lp + "output.dense.bias"))
        return layer_norm(out + x, self.p(lp + "output.LayerNorm.weight"),
                          self.p(lp + "output.LayerNorm.bias"), self.eps)

    @staticmethod
    def pool(hidden, mode):
        """sentence-transformers Pooling over all tokens (no padding here)."""
        if mode == "cls":
            return hidden[0]
        if mode == "mean":
            return hidden.mean(dim=0)
        if mode == "max":
            return hidden.max(dim=0).values
        raise ValueError(mode)

    @staticmethod
    def l2_normalize(v):
        """torch.nn.functional.normalize: v / max(||v||, 1e-12)."""
        return v / torch.clamp(torch.sqrt((v * v).sum()), min=1e-12)

    def pooler(self, hidden):
        """BertPooler: tanh(dense(h_[CLS]))."""
        return torch.tanh(linear(hidden[0], self.p("pooler.dense.weight"),
                                 self.p("pooler.dense.bias")))

    def classifier_logits(self, hidden):
        return linear(self.pooler(hidden), self.w["classifier.weight"], self.w["classifier.bias"])

    def class_probabilities(self, logits):
        """transformers' text-classification pipeline default function."""
        c = self.config
        problem = c.get("problem_type")
        if problem == "multi_label_classification" or logits.numel() == 1:
            return torch.sigmoid(logits)
        if problem == "regression":
            return logits
        return softmax(logits)

    def mlm_logits(self, rows):
        """BertLMPredictionHead on hidden rows (m, H) -> (m, V) logits."""
        t = linear(rows, self.w["cls.predictions.transform.dense.weight"],
                   self.w["cls.predictions.transform.dense.bias"])
        t = layer_norm(activation(self.act, t), self.w["cls.predictions.transform.LayerNorm.weight"],
                       self.w["cls.predictions.transform.LayerNorm.bias"], self.eps)
        decoder = self.w.get("cls.predictions.decoder.weight")
        if decoder is None:  # tied to the word embeddings
            decoder = self.p("embeddings.word_embeddings.weight")
        bias = self.w.get("cls.predictions.bias", self.w.get("cls.predictions.decoder.bias"))
        return t @ decoder.T + bias


def self_check():
    """The primitives above agree with torch.nn.functional's to float64
    rounding (a guard on this file, not a dependency of it)."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(7, 33, generator=g, dtype=torch.float64) * 3.0
    gamma = 1.0 + 0.2 * torch.randn(33, generator=g, dtype=torch.float64)
    beta = 0.2 * torch.randn(33, generator=g, dtype=torch.float64)
    pairs = {
        "layer_norm": (layer_norm(x, gamma, beta, 1e-7), F.layer_norm(x, (33,), gamma, beta, 1e-7)),
        "gelu": (activation("gelu", x), F.gelu(x)),
        "gelu_new": (activation("gelu_new", x), F.gelu(x, approximate="tanh")),
        "relu": (activation("relu", x), F.relu(x)),
        "silu": (activation("silu", x), F.silu(x)),
        "softmax": (softmax(x), torch.softmax(x, dim=-1)),
        "normalize": (Bert.l2_normalize(x[0]), F.normalize(x[0], dim=0)),
    }
    for name, (ours, theirs) in pairs.items():
        err = float((ours - theirs).abs().max())
        if err > 1e-12:
            raise AssertionError(f"reference {name} differs from torch by {err}")


if __name__ == "__main__":
    self_check()
    print("reference primitives agree with torch.nn.functional")
