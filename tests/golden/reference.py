"""An independent BERT-family reference in float64, written from torch primitives.

It follows the published architecture (Devlin et al. 2018, "BERT", sec. 3;
the post-LN Transformer encoder of Vaswani et al. 2017) and the Hugging Face
checkpoint layout (tensor names, config.json keys, sentence-transformers
pooling files) of each family: BERT, DistilBERT (Sanh et al. 2019;
modeling_distilbert.py), RoBERTa / XLM-R / CamemBERT (Liu et al. 2019;
modeling_roberta.py: positions from padding_idx + 1, RobertaLMHead,
RobertaClassificationHead) and ELECTRA (Clark et al. 2020;
modeling_electra.py: embedding_size projected to hidden_size, gelu heads)
and ModernBERT (Warner et al. 2024; modeling_modernbert.py: pre-norm,
RoPE, GeGLU, local / global attention), MPNet (Song et al. 2020;
modeling_mpnet.py: BERT layers plus a bucketed relative position bias) and
NomicBERT (Nussbaum et al. 2024; modeling_hf_nomic_bert.py: post-LN, RoPE,
SwiGLU), JinaBERT v2 (ALiBi, GLU) and GTE "new" (Alibaba-NLP new-impl's
modeling.py: post-LN, NTK-scaled RoPE, GLU). It reads checkpoints with its own minimal safetensors reader
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
    if name == "tanh":
        return torch.tanh(x)
    raise ValueError(f"hidden_act {name!r}")


def softmax(x):
    e = torch.exp(x - x.max(dim=-1, keepdim=True).values)
    return e / e.sum(dim=-1, keepdim=True)


def linear(x, w, b):
    """torch.nn.Linear: x W^T + b, W stored (out, in)."""
    return x @ w.T + b


def quantize_rows(m):
    """Symmetric int8 per row: q = round(m / s) with s = max |row| / 127
    (round half to even); returns q (as float64 integers) and s (rows, 1).
    An all-zero row has s = 0 and q = 0."""
    s = m.abs().amax(dim=-1, keepdim=True) / 127.0
    q = torch.where(s > 0, torch.round(m / torch.where(s > 0, s, 1.0)), torch.zeros_like(m))
    return q.clamp(-127, 127), s


def linear_int8(x, w, b):
    """bertserve's int8 dense layer (dtype = "int8", issue 23): W quantized
    per output channel, x per row, the integer product exact (float64 holds
    it), scaled back by both scales, plus the bias."""
    qw, sw = quantize_rows(w)
    qx, sx = quantize_rows(x)
    return (qx @ qw.T) * sx * sw.T + b


FAMILIES = {"bert": "bert", "distilbert": "distilbert", "roberta": "roberta",
            "xlm-roberta": "roberta", "camembert": "roberta", "electra": "electra"}

# Per family: the encoder prefix of task models, the layer prefix, and the
# names of each layer's parameters.
BERT_LAYER = {"q": "attention.self.query", "k": "attention.self.key",
              "v": "attention.self.value", "o": "attention.output.dense",
              "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
              "ff2": "output.dense", "ln2": "output.LayerNorm"}
DISTIL_LAYER = {"q": "attention.q_lin", "k": "attention.k_lin", "v": "attention.v_lin",
                "o": "attention.out_lin", "ln1": "sa_layer_norm", "ff1": "ffn.lin1",
                "ff2": "ffn.lin2", "ln2": "output_layer_norm"}
LAYOUT = {
    "bert": ("bert.", "encoder.layer.", BERT_LAYER),
    "distilbert": ("distilbert.", "transformer.layer.", DISTIL_LAYER),
    "roberta": ("roberta.", "encoder.layer.", BERT_LAYER),
    "electra": ("electra.", "encoder.layer.", BERT_LAYER),
}
# The dense layer the classifier reads, its activation, the classifier, and
# the MLM head's (transform, norm, decoder, bias) names.
HEADS = {
    "bert": ("pooler.dense", "tanh", "classifier",
             ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
              "cls.predictions.decoder.weight", "cls.predictions.bias")),
    "distilbert": ("pre_classifier", "relu", "classifier",
                   ("vocab_transform", "vocab_layer_norm", "vocab_projector.weight",
                    "vocab_projector.bias")),
    "roberta": ("classifier.dense", "tanh", "classifier.out_proj",
                ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight",
                 "lm_head.bias")),
    "electra": ("classifier.dense", "gelu", "classifier.out_proj",
                ("generator_predictions.dense", "generator_predictions.LayerNorm",
                 "generator_lm_head.weight", "generator_lm_head.bias")),
}


class Bert:
    """A loaded checkpoint folder of any supported family."""

    attn_bias = None  # (A, n, n) added to every layer's scores (MPNet sets it)

    def __init__(self, folder):
        with open(os.path.join(folder, "config.json")) as f:
            self.config = json.load(f)
        c = self.config
        self.family = FAMILIES[c.get("model_type", "bert")]
        if self.family == "distilbert":
            self.H, self.A, self.L = c["dim"], c["n_heads"], c["n_layers"]
            self.eps = 1e-12  # DistilBERT's LayerNorms all use 1e-12
            self.act = c.get("activation", "gelu")
        else:
            self.H = c["hidden_size"]
            self.A = c["num_attention_heads"]
            self.L = c["num_hidden_layers"]
            self.eps = c.get("layer_norm_eps", 1e-12)
            self.act = c.get("hidden_act", "gelu")
        # RoBERTa numbers positions from padding_idx + 1 (pad_token_id 1 -> 2).
        self.position_offset = 2 if self.family == "roberta" else 0
        # RobertaLMHead and ElectraGeneratorPredictions apply gelu whatever hidden_act is.
        self.mlm_act = "gelu" if self.family in ("roberta", "electra") else self.act
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        base, self.layer_prefix, self.layer_names = LAYOUT[self.family]
        self.prefix = base if base + "embeddings.word_embeddings.weight" in self.w else ""
        self.pooler_name, self.pooler_act, self.classifier_name, self.mlm_names = \
            HEADS[self.family]
        if self.family == "bert":
            self.pooler_name = self.prefix + self.pooler_name
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
        pos = torch.arange(len(ids)) + self.position_offset
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[pos])
        if self.family != "distilbert":  # DistilBERT has no token types
            x = x + self.p("embeddings.token_type_embeddings.weight")[types]
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        if self.has(self.prefix + "embeddings_project.weight"):  # ELECTRA, E != H
            x = linear(x, self.p("embeddings_project.weight"), self.p("embeddings_project.bias"))
        for i in range(self.L):
            x = self.layer(x, f"{self.layer_prefix}{i}.")
        return x

    def layer(self, x, lp):
        n, H, A = x.shape[0], self.H, self.A
        D = H // A
        names = self.layer_names

        def proj(key, inp):
            return linear(inp, self.p(lp + names[key] + ".weight"),
                          self.p(lp + names[key] + ".bias"))

        def norm(key, inp):
            return layer_norm(inp, self.p(lp + names[key] + ".weight"),
                              self.p(lp + names[key] + ".bias"), self.eps)

        # (A, n, D) per head.
        q = proj("q", x).reshape(n, A, D).transpose(0, 1)
        k = proj("k", x).reshape(n, A, D).transpose(0, 1)
        v = proj("v", x).reshape(n, A, D).transpose(0, 1)
        probs = softmax(self.attention_scores(q, k, proj))
        ctx = (probs @ v).transpose(0, 1).reshape(n, H)
        # Post-LN residual blocks.
        x = norm("ln1", proj("o", ctx) + x)
        return self.feed_forward(x, lp)

    def attention_scores(self, q, k, proj):
        """(A, n, n) scaled scores of per-head q, k (A, n, D), plus the
        family's relative bias; `proj` runs one of the layer's Linears."""
        del proj  # DeBERTa's projects its relative embeddings
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])
        if self.attn_bias is not None:  # MPNet's relative position bias
            scores = scores + self.attn_bias
        return scores

    def feed_forward(self, x, lp):
        """BertIntermediate + BertOutput (post-LN)."""
        names = self.layer_names

        def proj(key, inp):
            return linear(inp, self.p(lp + names[key] + ".weight"),
                          self.p(lp + names[key] + ".bias"))
        h = activation(self.act, proj("ff1", x))
        return layer_norm(proj("ff2", h) + x, self.p(lp + names["ln2"] + ".weight"),
                          self.p(lp + names["ln2"] + ".bias"), self.eps)

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

    def has_pooler(self):
        return self.has(self.pooler_name + ".weight")

    def has_classifier(self):
        return self.has(self.classifier_name + ".weight")

    def has_mlm(self):
        return self.has(self.mlm_names[0] + ".weight")

    def pooler(self, hidden):
        """The dense layer on the first token that the classifier reads:
        BertPooler tanh, DistilBERT pre_classifier + ReLU,
        RobertaClassificationHead dense + tanh, ElectraClassificationHead
        dense + gelu."""
        return activation(self.pooler_act, linear(hidden[0], self.w[self.pooler_name + ".weight"],
                                                  self.w[self.pooler_name + ".bias"]))

    def classifier_logits(self, hidden):
        return linear(self.pooler(hidden), self.w[self.classifier_name + ".weight"],
                      self.w[self.classifier_name + ".bias"])

    def has_discriminator(self):
        return self.has("discriminator_predictions.dense.weight")

    def replaced_probabilities(self, hidden):
        """ElectraDiscriminatorPredictions: dense, hidden_act, dense_prediction
        to one logit per token; sigmoid gives P(token was replaced)."""
        d = "discriminator_predictions."
        h = activation(self.act, linear(hidden, self.w[d + "dense.weight"], self.w[d + "dense.bias"]))
        logits = linear(h, self.w[d + "dense_prediction.weight"],
                        self.w[d + "dense_prediction.bias"]).squeeze(-1)
        return torch.sigmoid(logits)

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
        """The family's MLM head on hidden rows (m, H) -> (m, V) logits:
        dense (to E), activation, LayerNorm, decoder (tied: the word
        embeddings) plus bias."""
        dense, norm, decoder_name, bias_name = self.mlm_names
        t = linear(rows, self.w[dense + ".weight"], self.w[dense + ".bias"])
        t = layer_norm(activation(self.mlm_act, t), self.w[norm + ".weight"],
                       self.w[norm + ".bias"], self.eps)
        decoder = self.w.get(decoder_name)
        if decoder is None:  # tied to the word embeddings
            decoder = self.p("embeddings.word_embeddings.weight")
        bias = self.w.get(bias_name, self.w.get("cls.predictions.decoder.bias"))
        return t @ decoder.T + bias


def rotate_half(x):
    """RoPE's partner of each element: (-second half, first half)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class ModernBert(Bert):
    """ModernBERT (Warner et al. 2024, modeling_modernbert.py) in float64:
    token embeddings + LayerNorm (no positions), pre-norm layers (layer 0
    without attn_norm) with a fused Wqkv, rotary positions on the query and
    key halves (theta per layer kind), attention that is global when
    layer % global_attn_every_n_layers == 0 and otherwise limited by a
    full n x n mask to |i - j| <= local_attention // 2, a GeGLU MLP
    (act(input) * gate, input and gate the two halves of Wi), final_norm,
    and ModernBertPredictionHead (dense, classifier_activation, norm) under
    the MLM decoder and the classifier (pooled by classifier_pooling).
    Absent biases (attention_bias / mlp_bias / norm_bias / classifier_bias
    false) are zeros."""

    def __init__(self, folder):  # pylint: disable=super-init-not-called
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = "modernbert"
        self.H, self.A, self.L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
        self.eps = c.get("norm_eps", 1e-5)
        self.act = c.get("hidden_activation", "gelu")
        self.head_act = c.get("classifier_activation", "gelu")
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "model." if "model.embeddings.tok_embeddings.weight" in self.w else ""
        self.pooling, self.normalize = self._sentence_transformers(folder)

    def get(self, name, shape_of):
        """A tensor, or zeros shaped like `shape_of` when the config left it out."""
        t = self.w.get(name)
        return t if t is not None else torch.zeros(shape_of.shape[0], dtype=torch.float64)

    def norm(self, name, x):
        g = self.w[name + ".weight"]
        return layer_norm(x, g, self.get(name + ".bias", g), self.eps)

    def lin(self, name, x):
        wt = self.w[name + ".weight"]
        return linear(x, wt, self.get(name + ".bias", wt))

    def rope(self, n, theta):
        D = self.H // self.A
        inv_freq = theta ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)  # (n, D)
        return emb.cos(), emb.sin()

    def encode(self, ids, type_ids):
        del type_ids  # ModernBERT has no token types
        c, p = self.config, self.prefix
        ids = torch.tensor(ids, dtype=torch.long)
        n, H, A = len(ids), self.H, self.A
        D = H // A
        x = self.norm(p + "embeddings.norm", self.w[p + "embeddings.tok_embeddings.weight"][ids])
        idx = torch.arange(n)
        window = (idx[:, None] - idx[None, :]).abs() <= c["local_attention"] // 2
        for i in range(self.L):
            lp = f"{p}layers.{i}."
            h = x if i == 0 else self.norm(lp + "attn_norm", x)
            qkv = self.lin(lp + "attn.Wqkv", h).reshape(n, 3, A, D)
            q, k, v = (qkv[:, j].transpose(0, 1) for j in range(3))  # (A, n, D)
            is_global = i % c["global_attn_every_n_layers"] == 0
            cos, sin = self.rope(n, c["global_rope_theta"] if is_global else c["local_rope_theta"])
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            scores = q @ k.transpose(1, 2) / math.sqrt(D)
            if not is_global:
                scores = scores.masked_fill(~window, float("-inf"))
            ctx = (softmax(scores) @ v).transpose(0, 1).reshape(n, H)
            x = x + self.lin(lp + "attn.Wo", ctx)
            wi = self.lin(lp + "mlp.Wi", self.norm(lp + "mlp_norm", x))
            inp, gate = wi.chunk(2, dim=-1)
            x = x + self.lin(lp + "mlp.Wo", activation(self.act, inp) * gate)
        return self.norm(p + "final_norm", x)

    def head(self, rows):
        return self.norm("head.norm", activation(self.head_act, self.lin("head.dense", rows)))

    def has_pooler(self):
        return False  # the head is checked through the classifier and the MLM

    def has_classifier(self):
        return self.has("classifier.weight")

    def has_mlm(self):
        return self.has("decoder.bias") or self.has("decoder.weight")

    def classifier_logits(self, hidden):
        pooled = self.pool(hidden, self.config.get("classifier_pooling", "cls"))
        return self.lin("classifier", self.head(pooled))

    def mlm_logits(self, rows):
        decoder = self.w.get("decoder.weight")
        if decoder is None:  # tied to the token embeddings
            decoder = self.w[self.prefix + "embeddings.tok_embeddings.weight"]
        return self.head(rows) @ decoder.T + self.get("decoder.bias", decoder)


def mpnet_bucket(relative, num_buckets=32, max_distance=128):
    """T5's relative position bucket of key - query distances (an integer
    tensor), as modeling_mpnet.py's relative_position_bucket: half the
    buckets for keys before the query, half for keys after; distances below
    a quarter of the buckets exactly, then logarithmic up to max_distance.
    (In float64 here; for every distance below 20000 that gives the buckets
    transformers' float32 arithmetic gives, which self_check confirms.)"""
    half = num_buckets // 2
    exact = half // 2
    n = -relative
    bucket = (n < 0).long() * half
    n = n.abs()
    far = n.double().clamp(min=1) / exact
    large = exact + (torch.log(far) / math.log(max_distance / exact) * (half - exact)).floor().long()
    large = large.clamp(max=half - 1)
    return bucket + torch.where(n < exact, n, large)


class MPNet(Bert):
    """MPNet (Song et al. 2020; modeling_mpnet.py) in float64: RoBERTa-style
    embeddings without token types (positions from 2),
    post-LN layers whose attention scores get a relative position bias
    (MPNetEncoder.relative_attention_bias[bucket(key - query)], one scalar
    per head, the same for every layer, positions counted from 0), the
    lm_head as RoBERTa's and MPNetClassificationHead (dense + tanh +
    out_proj on the first token)."""

    LAYER = {"q": "attention.attn.q", "k": "attention.attn.k", "v": "attention.attn.v",
             "o": "attention.attn.o", "ln1": "attention.LayerNorm", "ff1": "intermediate.dense",
             "ff2": "output.dense", "ln2": "output.LayerNorm"}

    def __init__(self, folder):  # pylint: disable=super-init-not-called
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = "mpnet"
        self.H, self.A, self.L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
        self.eps = c.get("layer_norm_eps", 1e-12)
        self.act = c.get("hidden_act", "gelu")
        self.position_offset = 2  # MPNetEmbeddings' padding_idx is 1, whatever pad_token_id says
        self.mlm_act = "gelu"  # MPNetLMHead calls gelu whatever hidden_act is
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "mpnet." if "mpnet.embeddings.word_embeddings.weight" in self.w else ""
        self.layer_prefix, self.layer_names = "encoder.layer.", self.LAYER
        self.pooler_name, self.pooler_act, self.classifier_name = \
            "classifier.dense", "tanh", "classifier.out_proj"
        self.mlm_names = ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight",
                          "lm_head.bias")
        self.pooling, self.normalize = self._sentence_transformers(folder)

    def encode(self, ids, type_ids):
        del type_ids  # MPNet has no token types
        ids = torch.tensor(ids, dtype=torch.long)
        n = len(ids)
        pos = torch.arange(n) + self.position_offset
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.position_embeddings.weight")[pos])
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        idx = torch.arange(n)
        buckets = mpnet_bucket(idx[None, :] - idx[:, None])  # (query, key)
        table = self.p("encoder.relative_attention_bias.weight")  # (buckets, A)
        self.attn_bias = table[buckets].permute(2, 0, 1)  # (A, query, key)
        for i in range(self.L):
            x = self.layer(x, f"{self.layer_prefix}{i}.")
        return x


def rotary_attention(qkv, cos, sin, A):
    """Softmax attention of a fused (n, 3H) query | key | value product, split
    as (three, head, dim), with RoPE (rotate_half layout) on queries and
    keys: the (n, H) context. NomicBERT's Wqkv and GTE's qkv_proj."""
    n, H = qkv.shape[0], qkv.shape[1] // 3
    D = H // A
    qkv = qkv.reshape(n, 3, A, D)
    q, k, v = (qkv[:, j].transpose(0, 1) for j in range(3))  # (A, n, D)
    q = q * cos + rotate_half(q) * sin
    k = k * cos + rotate_half(k) * sin
    probs = softmax(q @ k.transpose(1, 2) / math.sqrt(D))
    return (probs @ v).transpose(0, 1).reshape(n, H)


class NomicBert(Bert):
    """NomicBERT (Nussbaum et al. 2024; the remote code
    modeling_hf_nomic_bert.py) in float64: word + token type embeddings and
    emb_ln, post-LN blocks (a fused Wqkv split as (three, head, dim), RoPE
    over the whole head with rotary_emb_base, non-interleaved, out_proj,
    norm1; fc2(fc11(x) * act(fc12(x))) with silu for swiglu and gelu for
    geglu, norm2), NomicBertPooler (tanh) under the classifier, and
    cls.predictions (dense, the same activation, layer_norm, tied decoder).
    Biases the config leaves out are zeros."""

    def __init__(self, folder):  # pylint: disable=super-init-not-called
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = "nomic_bert"
        self.H, self.A, self.L = c["n_embd"], c["n_head"], c["n_layer"]
        self.eps = c.get("layer_norm_epsilon", 1e-5)
        self.act = {"swiglu": "silu", "geglu": "gelu"}[c["activation_function"]]
        self.mlm_act = self.act
        self.base = c["rotary_emb_base"]
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        self.pooler_name, self.pooler_act = self.prefix + "pooler.dense", "tanh"
        self.classifier_name = "classifier"
        self.mlm_names = ("cls.predictions.transform.dense", "cls.predictions.transform.layer_norm",
                          "cls.predictions.decoder.weight", "cls.predictions.decoder.bias")
        self.pooling, self.normalize = self._sentence_transformers(folder)

    def lin(self, name, x):
        """A Linear whose bias the config may have left out."""
        wt = self.w[name + ".weight"]
        b = self.w.get(name + ".bias")
        return linear(x, wt, b if b is not None else torch.zeros(wt.shape[0], dtype=torch.float64))

    def norm(self, name, x):
        return layer_norm(x, self.w[name + ".weight"], self.w[name + ".bias"], self.eps)

    def encode(self, ids, type_ids):
        p = self.prefix
        n, A = len(ids), self.A
        ids, types = torch.tensor(ids, dtype=torch.long), torch.tensor(type_ids, dtype=torch.long)
        x = (self.w[p + "embeddings.word_embeddings.weight"][ids]
             + self.w[p + "embeddings.token_type_embeddings.weight"][types])
        x = self.norm(p + "emb_ln", x)
        cos, sin = ModernBert.rope(self, n, self.base)
        for i in range(self.L):
            lp = f"{p}encoder.layers.{i}."
            ctx = rotary_attention(self.lin(lp + "attn.Wqkv", x), cos, sin, A)
            x = self.norm(lp + "norm1", self.lin(lp + "attn.out_proj", ctx) + x)
            h = self.lin(lp + "mlp.fc11", x) * activation(self.act, self.lin(lp + "mlp.fc12", x))
            x = self.norm(lp + "norm2", self.lin(lp + "mlp.fc2", h) + x)
        return x

    def mlm_logits(self, rows):
        dense, norm, decoder_name, bias_name = self.mlm_names
        t = self.norm(norm, activation(self.mlm_act, self.lin(dense, rows)))
        decoder = self.w.get(decoder_name, self.w[self.prefix + "embeddings.word_embeddings.weight"])
        bias = self.w.get(bias_name)
        return t @ decoder.T + (bias if bias is not None else 0.0)


def alibi_slopes(heads):
    """ALiBi's head slopes (Press et al. 2022, and its reference code for
    head counts that are not powers of two): a geometric sequence from
    2^(-8 / n) for n = 2^k heads; otherwise the closest lower power's slopes
    followed by every other slope of the next power's."""
    def power_of_2(n):
        first = 2.0 ** (-8.0 / n)
        return [first ** (i + 1) for i in range(n)]
    if math.log2(heads).is_integer():
        return power_of_2(heads)
    lower = 2 ** math.floor(math.log2(heads))
    return power_of_2(lower) + alibi_slopes(2 * lower)[0::2][:heads - lower]


class JinaBert(Bert):
    """JinaBERT v2 (Günther et al. 2023; jina-bert-implementation's
    modeling_bert.py, remote code) in float64: word + token type embeddings
    and LayerNorm (no positions), BERT's post-LN attention with the scores
    of head h biased by -slope_h * |i - j| (the slopes as float32, as the
    remote code's torch.Tensor keeps them), and JinaBertGLUMLP:
    LayerNorm(wo(act(g) * u) + x) with [g | u] = gated_layers(x), act exact
    GELU (geglu) or ReLU (reglu); BERT's pooler, classifier and MLM head
    (hidden_act)."""

    def __init__(self, folder):
        super().__init__(folder)
        self.family = "jina_bert"
        self.glu_act = {"geglu": "gelu", "reglu": "relu"}[self.config["feed_forward_type"]]
        self.prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        self.pooler_name = self.prefix + "pooler.dense"
        self.I = self.config["intermediate_size"]

    def encode(self, ids, type_ids):
        n = len(ids)
        ids, types = torch.tensor(ids, dtype=torch.long), torch.tensor(type_ids, dtype=torch.long)
        x = (self.p("embeddings.word_embeddings.weight")[ids]
             + self.p("embeddings.token_type_embeddings.weight")[types])
        x = layer_norm(x, self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        slopes = torch.tensor(alibi_slopes(self.A), dtype=torch.float32).double()
        idx = torch.arange(n)
        distance = (idx[None, :] - idx[:, None]).abs().double()
        self.attn_bias = -slopes[:, None, None] * distance[None]  # (A, n, n)
        for i in range(self.L):
            x = self.layer(x, f"encoder.layer.{i}.")
        return x

    def feed_forward(self, x, lp):
        h = linear(x, self.p(lp + "mlp.gated_layers.weight"), 0.0)
        h = activation(self.glu_act, h[:, :self.I]) * h[:, self.I:]
        h = linear(h, self.p(lp + "mlp.wo.weight"), self.p(lp + "mlp.wo.bias"))
        return layer_norm(h + x, self.p(lp + "mlp.layernorm.weight"),
                          self.p(lp + "mlp.layernorm.bias"), self.eps)


def deberta_log_bucket(relative, buckets, max_position):
    """DeBERTa's make_log_bucket_position on an integer tensor of query -
    key distances: exact below buckets // 2, then ceil of a logarithmic
    scale that puts max_position - 1 on the last bucket, sign kept. In
    float64 here (self_check: equal to transformers' float32 arithmetic for
    every distance below 20000)."""
    mid = buckets // 2
    mag = relative.abs()
    scale = math.log((max_position - 1) / mid)
    far = torch.ceil(torch.log(mag.double().clamp(min=mid) / mid) / scale * (mid - 1)).long() + mid
    return torch.where(mag <= mid, relative, far * torch.sign(relative))


class DebertaV2(Bert):
    """DeBERTa-v2/v3 (He et al. 2021, "DeBERTa", sec. 3; modeling_deberta_v2.py)
    in float64: word embeddings + LayerNorm (no positions, no token types),
    post-LN layers whose attention adds to content-to-content q_i . k_j the
    content-to-position q_i . Kr[r(i, j)] and position-to-content
    k_j . Qr[r(j, i)] terms, where Kr / Qr are key_proj / query_proj (with
    bias, share_att_key) of LayerNorm(rel_embeddings) and r(i, j) =
    clamp(bucket(i - j) + span, 0, 2 span - 1) indexes them (the p2c index
    is taken from the transposed distance, as transformers gathers and
    transposes); all three divided by sqrt(d * 3). Then BERT's output,
    intermediate and output blocks; ContextPooler (dense + gelu on the
    first token) under the classifier. Built as full (A, n, n) matrices."""

    LAYER = {"q": "attention.self.query_proj", "k": "attention.self.key_proj",
             "v": "attention.self.value_proj", "o": "attention.output.dense",
             "ln1": "attention.output.LayerNorm", "ff1": "intermediate.dense",
             "ff2": "output.dense", "ln2": "output.LayerNorm"}

    def __init__(self, folder):  # pylint: disable=super-init-not-called
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = "deberta-v2"
        self.H, self.A, self.L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
        self.eps = c.get("layer_norm_eps", 1e-7)
        self.act = c.get("hidden_act", "gelu")
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "deberta." if "deberta.embeddings.word_embeddings.weight" in self.w else ""
        self.layer_prefix, self.layer_names = "encoder.layer.", self.LAYER
        self.pooler_name, self.pooler_act = "pooler.dense", c.get("pooler_hidden_act", "gelu")
        self.classifier_name = "classifier"
        self.mlm_names = ("(none)",)
        max_rel = c.get("max_relative_positions", -1)
        self.max_rel = max_rel if max_rel >= 1 else c.get("max_position_embeddings", 512)
        self.buckets = c.get("position_buckets", -1)
        self.span = self.buckets if self.buckets > 0 else self.max_rel
        self.terms = c.get("pos_att_type") or []
        self.pooling, self.normalize = self._sentence_transformers(folder)

    def relative_positions(self, n):
        """(n, n) bucketed query - key distances (build_relative_position)."""
        idx = torch.arange(n)
        rel = idx[:, None] - idx[None, :]
        return deberta_log_bucket(rel, self.buckets, self.max_rel) if self.buckets > 0 else rel

    def encode(self, ids, type_ids):
        del type_ids  # DeBERTa-v3 has no token types
        ids = torch.tensor(ids, dtype=torch.long)
        x = layer_norm(self.p("embeddings.word_embeddings.weight")[ids],
                       self.p("embeddings.LayerNorm.weight"),
                       self.p("embeddings.LayerNorm.bias"), self.eps)
        rel = self.p("encoder.rel_embeddings.weight")[:2 * self.span]
        if "layer_norm" in self.config.get("norm_rel_ebd", "none"):
            rel = layer_norm(rel, self.p("encoder.LayerNorm.weight"),
                             self.p("encoder.LayerNorm.bias"), self.eps)
        self.rel, self.rel_pos = rel, self.relative_positions(len(ids))
        for i in range(self.L):
            x = self.layer(x, f"{self.layer_prefix}{i}.")
        return x

    def attention_scores(self, q, k, proj):
        A, n, D = q.shape

        def heads(t):
            return t.reshape(t.shape[0], A, D).transpose(0, 1)  # (A, rows, D)
        scores = q @ k.transpose(1, 2)
        last = 2 * self.span - 1
        if "c2p" in self.terms:  # [i][j]: q_i . Kr[clamp(rel(i, j) + span)]
            c2p = q @ heads(proj("k", self.rel)).transpose(1, 2)  # (A, n, 2 span)
            index = (self.rel_pos + self.span).clamp(0, last)
            scores = scores + torch.gather(c2p, 2, index.expand(A, n, n))
        if "p2c" in self.terms:  # gathered [j][i]: k_j . Qr[clamp(-rel(j, i) + span)], transposed
            p2c = k @ heads(proj("q", self.rel)).transpose(1, 2)  # (A, n keys, 2 span)
            index = (-self.rel_pos + self.span).clamp(0, last)
            scores = scores + torch.gather(p2c, 2, index.expand(A, n, n)).transpose(1, 2)
        return scores / math.sqrt(D * (1 + len(self.terms)))


class Gte(Bert):
    """GTE "new" (Zhang et al. 2024, mGTE; the remote code Alibaba-NLP
    new-impl modeling.py) in float64: word + token type embeddings and
    LayerNorm (no positions), post-LN NewLayers: qkv_proj split into q, k, v
    of (head, dim), RoPE on q and k (rotate_half layout) whose frequencies
    NTKScalingRotaryEmbedding scales when rope_scaling is {type: ntk,
    factor > 1}: base rope_theta * factor and every frequency divided by
    factor^(2 / head size); scores / sqrt(head size); o_proj, attn_ln(x +
    .); then NewGatedMLP: [up | gate] = up_gate_proj(x) (no bias),
    down_proj(act(gate) * up), mlp_ln(x + .). NewPooler (tanh) under the
    sequence classifier; NewLMPredictionHead (dense, hidden_act, norm,
    decoder tied to the word embeddings unless stored)."""

    def __init__(self, folder):  # pylint: disable=super-init-not-called
        with open(os.path.join(folder, "config.json")) as f:
            self.config = c = json.load(f)
        self.family = "gte"
        self.H, self.A, self.L = c["hidden_size"], c["num_attention_heads"], c["num_hidden_layers"]
        self.I = c["intermediate_size"]
        self.eps = c.get("layer_norm_eps", 1e-12)
        self.act = self.mlm_act = c.get("hidden_act", "gelu")
        self.theta = c.get("rope_theta", 10000.0)
        scaling = c.get("rope_scaling") or {}
        assert scaling.get("type", "ntk") == "ntk" and "mixed_b" not in scaling
        self.factor = max(1.0, scaling.get("factor", 1.0))
        raw = read_safetensors(os.path.join(folder, "model.safetensors"))
        self.w = {name: to_tensor(*v) for name, v in raw.items()}
        self.prefix = "new." if "new.embeddings.word_embeddings.weight" in self.w else ""
        self.pooler_name, self.pooler_act = self.prefix + "pooler.dense", "tanh"
        self.classifier_name = "classifier"
        self.mlm_names = ("lm_head.dense", "lm_head.norm", "lm_head.decoder.weight",
                          "lm_head.decoder.bias")
        self.pooling, self.normalize = self._sentence_transformers(folder)

    def rope(self, n):
        """cos and sin (n, D) of the NTK-scaled frequencies (factor 1: plain RoPE)."""
        D = self.H // self.A
        base = self.theta * self.factor
        inv_freq = base ** (-torch.arange(0, D, 2, dtype=torch.float64) / D)
        inv_freq = inv_freq / self.factor ** (2.0 / D)
        angles = torch.arange(n, dtype=torch.float64)[:, None] * inv_freq[None, :]
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos(), emb.sin()

    def lin(self, name, x):
        return linear(x, self.p(name + ".weight"), self.p(name + ".bias"))

    def norm(self, name, x):
        return layer_norm(x, self.p(name + ".weight"), self.p(name + ".bias"), self.eps)

    def encode(self, ids, type_ids):
        n, A, I = len(ids), self.A, self.I
        ids, types = torch.tensor(ids, dtype=torch.long), torch.tensor(type_ids, dtype=torch.long)
        x = self.p("embeddings.word_embeddings.weight")[ids]
        if self.config.get("type_vocab_size", 1) > 0:
            x = x + self.p("embeddings.token_type_embeddings.weight")[types]
        x = self.norm("embeddings.LayerNorm", x)
        cos, sin = self.rope(n)
        for i in range(self.L):
            lp = f"encoder.layer.{i}."
            ctx = rotary_attention(self.lin(lp + "attention.qkv_proj", x), cos, sin, A)
            x = self.norm(lp + "attn_ln", x + self.lin(lp + "attention.o_proj", ctx))
            up_gate = linear(x, self.p(lp + "mlp.up_gate_proj.weight"), 0.0)
            h = activation(self.act, up_gate[:, I:]) * up_gate[:, :I]
            x = self.norm(lp + "mlp_ln", x + self.lin(lp + "mlp.down_proj", h))
        return x


def load(folder):
    """The reference model for a checkpoint folder of any supported family."""
    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    model_type = config.get("model_type", "bert")
    if model_type == "modernbert":
        return ModernBert(folder)
    if model_type == "nomic_bert":
        return NomicBert(folder)
    if model_type == "new":
        return Gte(folder)
    if model_type == "bert" and config.get("position_embedding_type") == "alibi":
        return JinaBert(folder)
    if model_type == "deberta-v2":
        return DebertaV2(folder)
    return MPNet(folder) if model_type == "mpnet" else Bert(folder)


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
    # RoPE: a query-key product depends only on the distance between the
    # positions (RoFormer sec. 3.4), which a wrong rotation layout breaks.
    m = ModernBert.__new__(ModernBert)
    m.H, m.A = 32, 1
    cos, sin = m.rope(40, 10000.0)
    q, k = x[0, :32], x[1, :32]

    def score(i, j):
        return float((q * cos[i] + rotate_half(q) * sin[i]) @ (k * cos[j] + rotate_half(k) * sin[j]))
    pairs["rope_relative"] = (torch.tensor(score(3, 10)), torch.tensor(score(30, 37)))
    # int8: exact integers on a hand-worked row (-63.5 rounds to even, -64),
    # and the quantized product within its rounding bound of the exact one.
    q, s = quantize_rows(torch.tensor([[1.0, -0.5, 0.25], [0.0, 0.0, 0.0]], dtype=torch.float64))
    pairs["quantize_rows"] = (torch.cat([q.flatten(), s.flatten()]),
                              torch.tensor([127.0, -64.0, 32.0, 0, 0, 0, 1 / 127.0, 0.0],
                                           dtype=torch.float64))
    w = torch.randn(5, 33, generator=g, dtype=torch.float64)
    err8 = float((linear_int8(x, w, beta[:5]) - linear(x, w, beta[:5])).abs().max())
    bound8 = float((x.abs().amax(1, keepdim=True) * w.abs().amax(1)).max()) * 33 / 127.0
    if not 0 < err8 < bound8:
        raise AssertionError(f"linear_int8 differs from linear by {err8} (bound {bound8})")
    # MPNet's buckets: float64 here, float32 in transformers; the same for
    # every distance an 8K context has (and well past it).
    rel = torch.arange(-20000, 20000)
    n = (-rel).abs()
    large = 8 + (torch.log(n.float() / 8) / math.log(128 / 8) * 8).long()
    f32 = (rel > 0).long() * 16 + torch.where(n < 8, n, large.clamp(max=15))
    pairs["mpnet_bucket"] = (mpnet_bucket(rel).double(), f32.double())
    # DeBERTa's log buckets: float64 here, float32 in transformers
    # (make_log_bucket_position), for v3's 256 buckets over 512 positions.
    mid = 128
    abs_pos = torch.where((rel < mid) & (rel > -mid), torch.tensor(mid - 1), rel.abs())
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((512 - 1) / mid))
                         * (mid - 1)) + mid
    f32 = torch.where(abs_pos <= mid, rel.float(), log_pos * torch.sign(rel))
    pairs["deberta_bucket"] = (deberta_log_bucket(rel, 256, 512).double(), f32.double())
    # ALiBi slopes: the paper's values for 8 heads, and its 12-head workaround.
    pairs["alibi_8"] = (torch.tensor(alibi_slopes(8)), 2.0 ** -torch.arange(1.0, 9.0))
    pairs["alibi_12"] = (torch.tensor(alibi_slopes(12)), torch.tensor(
        [2.0 ** -k for k in range(1, 9)] + [2.0 ** -(k + 0.5) for k in range(0, 4)]))
    for name, (ours, theirs) in pairs.items():
        err = float((ours - theirs).abs().max())
        if err > 1e-12:
            raise AssertionError(f"reference {name} differs from torch by {err}")


if __name__ == "__main__":
    self_check()
    print("reference primitives agree with torch.nn.functional")
