"""BERT as a plain torch.nn.Module, batched and padded the way Hugging Face
runs it: the peer the engine benchmark exports to ONNX and times in PyTorch.

Loads a project checkpoint folder (config.json + model.safetensors, F32,
F16 or BF16; read with the golden reference's minimal safetensors reader).
Inputs are input_ids and attention_mask (batch, seq), padded on the right;
token types are all 0, as in the engine's single-segment requests.

Heads (`head`):
  encode     last hidden states (batch, seq, H)
  embed      masked mean pooling (batch, H)
  fill-mask  MLM logits at every position (batch, seq, vocab), as the
             Hugging Face fill-mask pipeline computes them
  classify   class probabilities (batch, labels): pooler, classifier, softmax
"""

import json
import math
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "golden"))
from reference import DTYPES, read_safetensors  # noqa: E402

HEADS = ("encode", "embed", "fill-mask", "classify")
ACTIVATIONS = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu, "swish": F.silu,
               "gelu_new": lambda x: F.gelu(x, approximate="tanh")}


def load_tensors(folder):
    """{name: float32 tensor} from folder/model.safetensors."""
    out = {}
    for name, (dtype, shape, raw) in read_safetensors(os.path.join(folder, "model.safetensors")).items():
        t = torch.frombuffer(bytearray(raw), dtype=DTYPES[dtype]) if raw else torch.empty(0)
        out[name] = t.to(torch.float32).reshape(shape)
    return out


class TorchBert(torch.nn.Module):
    def __init__(self, folder, head="embed"):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}")
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        self.head, self.H, self.A = head, c["hidden_size"], c["num_attention_heads"]
        self.L, self.eps = c["num_hidden_layers"], c.get("layer_norm_eps", 1e-12)
        self.act = ACTIVATIONS[c.get("hidden_act", "gelu")]
        w = load_tensors(folder)
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in w else ""
        # Parameters under flat names ("." is not allowed in module attributes).
        self.w = torch.nn.ParameterDict()
        for name, t in w.items():
            enc = name[len(prefix):] if name.startswith(prefix) else name
            self.w[enc.replace(".", "__")] = torch.nn.Parameter(t, requires_grad=False)
        if head == "fill-mask" and not self.has("cls.predictions.decoder.weight"):
            self.w["cls__predictions__decoder__weight"] = self.w["embeddings__word_embeddings__weight"]

    def p(self, name):
        return self.w[name.replace(".", "__")]

    def has(self, name):
        return name.replace(".", "__") in self.w

    def dense(self, x, name):
        return F.linear(x, self.p(name + ".weight"), self.p(name + ".bias"))

    def norm(self, x, name):
        return F.layer_norm(x, (self.H,), self.p(name + ".weight"), self.p(name + ".bias"), self.eps)

    def layer(self, x, bias, lp):
        B, S, H, A = x.shape[0], x.shape[1], self.H, self.A
        D = H // A

        def heads(name):
            return self.dense(x, lp + name).view(B, S, A, D).transpose(1, 2)

        q, k, v = heads("attention.self.query"), heads("attention.self.key"), heads("attention.self.value")
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, dim=-1)
        ctx = (probs @ v).transpose(1, 2).reshape(B, S, H)
        x = self.norm(self.dense(ctx, lp + "attention.output.dense") + x, lp + "attention.output.LayerNorm")
        h = self.act(self.dense(x, lp + "intermediate.dense"))
        return self.norm(self.dense(h, lp + "output.dense") + x, lp + "output.LayerNorm")

    def forward(self, input_ids, attention_mask):
        S = input_ids.shape[1]
        pos = torch.arange(S, device=input_ids.device)
        x = (F.embedding(input_ids, self.p("embeddings.word_embeddings.weight"))
             + F.embedding(pos, self.p("embeddings.position_embeddings.weight")).unsqueeze(0)
             + self.p("embeddings.token_type_embeddings.weight")[0])
        x = self.norm(x, "embeddings.LayerNorm")
        mask = attention_mask.to(x.dtype)
        # Padded keys get a large negative score (Hugging Face's extended mask).
        bias = (1.0 - mask)[:, None, None, :] * -1e9
        for i in range(self.L):
            x = self.layer(x, bias, f"encoder.layer.{i}.")
        if self.head == "encode":
            return x
        if self.head == "embed":
            m = mask.unsqueeze(-1)
            return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)
        if self.head == "classify":
            pooled = torch.tanh(self.dense(x[:, 0], "pooler.dense"))
            return torch.softmax(F.linear(pooled, self.w["classifier__weight"], self.w["classifier__bias"]), dim=-1)
        t = self.act(self.dense(x, "cls.predictions.transform.dense"))
        t = self.norm(t, "cls.predictions.transform.LayerNorm")
        bias_name = "cls.predictions.bias" if self.has("cls.predictions.bias") else "cls.predictions.decoder.bias"
        return F.linear(t, self.p("cls.predictions.decoder.weight"), self.p(bias_name))


def pad_batch(seqs, pad_id=0):
    """Right-pad a list of id lists to the longest: (input_ids, attention_mask) int64."""
    S = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), S), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), S), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s, dtype=torch.long)
        mask[i, :len(s)] = 1
    return ids, mask


class TorchModernBert(torch.nn.Module):
    """ModernBERT padded and batched as Hugging Face's eager / sdpa path runs
    it (modeling_modernbert.py): RoPE on query and key halves, a sliding
    window mask |i - j| <= local_attention // 2 on local layers (every
    layer but each global_attn_every_n_layers-th), GeGLU, pre-norm, final
    norm. Heads: encode and embed (masked mean pooling) only."""

    def __init__(self, folder, head="embed"):
        super().__init__()
        if head not in ("encode", "embed"):
            raise ValueError("TorchModernBert heads: encode, embed")
        with open(os.path.join(folder, "config.json")) as f:
            self.c = c = json.load(f)
        self.head, self.H, self.A = head, c["hidden_size"], c["num_attention_heads"]
        self.L, self.eps = c["num_hidden_layers"], c.get("norm_eps", 1e-5)
        self.act = ACTIVATIONS[c.get("hidden_activation", "gelu")]
        w = load_tensors(folder)
        prefix = "model." if "model.embeddings.tok_embeddings.weight" in w else ""
        self.w = torch.nn.ParameterDict()
        for name, t in w.items():
            if name.startswith(prefix):
                self.w[name[len(prefix):].replace(".", "__")] = torch.nn.Parameter(t, requires_grad=False)

    def p(self, name):
        key = name.replace(".", "__")
        return self.w[key] if key in self.w else None

    def dense(self, x, name):
        return F.linear(x, self.p(name + ".weight"), self.p(name + ".bias"))

    def norm(self, x, name):
        return F.layer_norm(x, (self.H,), self.p(name + ".weight"), self.p(name + ".bias"), self.eps)

    def rope(self, S, theta):
        D = self.H // self.A
        inv_freq = 1.0 / (theta ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
        angles = torch.arange(S, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()

    @staticmethod
    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    def forward(self, input_ids, attention_mask):
        c = self.c
        B, S = input_ids.shape
        A, D = self.A, self.H // self.A
        x = self.norm(F.embedding(input_ids, self.p("embeddings.tok_embeddings.weight")), "embeddings.norm")
        mask = attention_mask.to(x.dtype)
        pad = (1.0 - mask)[:, None, None, :] * -1e9
        idx = torch.arange(S)
        far = ((idx[:, None] - idx[None, :]).abs() > c["local_attention"] // 2).to(x.dtype) * -1e9
        ropes = {"global": self.rope(S, c["global_rope_theta"]), "local": self.rope(S, c["local_rope_theta"])}
        for i in range(self.L):
            lp = f"layers.{i}."
            kind = "global" if i % c["global_attn_every_n_layers"] == 0 else "local"
            h = x if i == 0 else self.norm(x, lp + "attn_norm")
            qkv = self.dense(h, lp + "attn.Wqkv").view(B, S, 3, A, D)
            q, k, v = (qkv[:, :, j].transpose(1, 2) for j in range(3))
            cos, sin = ropes[kind]
            q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
            bias = pad if kind == "global" else pad + far
            probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + bias, dim=-1)
            x = x + self.dense((probs @ v).transpose(1, 2).reshape(B, S, self.H), lp + "attn.Wo")
            inp, gate = self.dense(self.norm(x, lp + "mlp_norm"), lp + "mlp.Wi").chunk(2, dim=-1)
            x = x + self.dense(self.act(inp) * gate, lp + "mlp.Wo")
        x = self.norm(x, "final_norm")
        if self.head == "encode":
            return x
        m = mask.unsqueeze(-1)
        return (x * m).sum(dim=1) / m.sum(dim=1).clamp(min=1e-9)


def load_model(folder, head="embed"):
    """TorchBert or TorchModernBert, by the folder's model_type."""
    with open(os.path.join(folder, "config.json")) as f:
        modern = json.load(f).get("model_type") == "modernbert"
    return (TorchModernBert if modern else TorchBert)(folder, head)
