"""numpy twin of train/synth.c: the deterministic synthetic checkpoints.

Builds the same tensors, bit for bit, as `bert init` / bert_synth_write, and
writes them as a Hugging Face folder (config.json, model.safetensors,
tokenizer and sentence-transformers files) so that the PyTorch reference can
load them without our C code.

Generator (train/include/synth.h): for tensor `name` and element i,
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
    "model-type": "bert", "embedding-size": 0, "layers": 2, "hidden": 128, "heads": 2,
    "intermediate": 512, "max-position": 512,
    "type-vocab": 2, "eps": 1e-12, "act": "gelu", "seed": 0, "weight-std": 0.02,
    "bias-range": 0.0, "ln-range": 0.0, "dtype": "f32", "prefix": False, "mlm": False,
    "untied-decoder": False, "pooler": False, "labels": None, "problem-type": None,
    "sentence-transformers": False, "pooling": "mean", "normalize": False,
    "max-seq-length": 0,
}

# NomicBERT's extra `bert init` options (nomic-embed-text-v1.5's values,
# --biases shared with ModernBERT); only nomic_bert specs carry them.
NOMIC_DEFAULTS = {"rotary-base": 1000.0, "biases": False, "vocab-size": 0}

# GTE's extra `bert init` options (gte-multilingual-base's rope_theta and
# NTK factor); only "new" specs carry them.
GTE_DEFAULTS = {"rope-theta": 20000.0, "ntk-factor": 8.0}

# ModernBERT's extra `bert init` options (ModernBERT-base's values); only
# modernbert specs carry them.
MODERN_DEFAULTS = {
    "global-every": 3, "local-window": 128, "global-theta": 160000.0, "local-theta": 10000.0,
    "classifier-pooling": "cls", "biases": False,
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
        vocab = tok["model"]["vocab"]  # {token: id}, or Unigram's [[piece, score], ...]
        ids = (list(vocab.values()) if isinstance(vocab, dict) else [len(vocab) - 1]) + \
            [t["id"] for t in tok["added_tokens"]]
        return max(ids) + 1
    with open(os.path.join(tokenizer_dir, "vocab.txt"), encoding="utf-8") as f:
        return sum(1 for _ in f)


def defaults(init):
    """The `bert init` options (with defaults) a spec of this model type has."""
    d = dict(INIT_DEFAULTS)
    if init.get("model-type") == "modernbert":
        d.update(MODERN_DEFAULTS)
    if init.get("model-type") == "nomic_bert":
        d.update(NOMIC_DEFAULTS)
    if init.get("model-type") == "new":
        d.update(GTE_DEFAULTS)
    if "discriminator" in init:  # ELECTRA specs that ask for it
        d["discriminator"] = False
    return d


def options(init):
    """Fill a spec's `bert init` options with the defaults."""
    unknown = set(init) - set(defaults(init)) - {"tokenizer"}
    if unknown:
        raise ValueError(f"unknown init options {sorted(unknown)}")
    o = defaults(init)
    o.update(init)
    return o


FAMILIES = {"bert": "bert", "distilbert": "distilbert", "roberta": "roberta",
            "xlm-roberta": "roberta", "camembert": "roberta", "electra": "electra",
            "modernbert": "modernbert", "mpnet": "mpnet", "nomic_bert": "nomic_bert",
            "jina_bert": "jina_bert", "deberta-v2": "deberta-v2", "new": "gte"}
CLASS_PREFIX = {"bert": "Bert", "distilbert": "DistilBert", "roberta": "Roberta",
                "xlm-roberta": "XLMRoberta", "camembert": "Camembert", "electra": "Electra",
                "modernbert": "ModernBert", "mpnet": "MPNet", "nomic_bert": "NomicBert",
                "jina_bert": "JinaBert", "deberta-v2": "DebertaV2", "new": "New"}
# MPNet's relative position buckets (MPNetConfig relative_attention_num_buckets).
MPNET_BUCKETS = 32


def family(o):
    return FAMILIES[o["model-type"]]


def embedding_size(o):
    """ELECTRA's E (0: hidden); the other families embed at H."""
    return o["embedding-size"] or o["hidden"] if family(o) == "electra" else o["hidden"]


def bert_layer_specs(lp, H, FF):
    """modeling_bert.py BertLayer names (RoBERTa and ELECTRA reuse them)."""
    specs = []
    for k in ("query", "key", "value"):
        specs += [(f"{lp}attention.self.{k}.weight", WEIGHT, (H, H)),
                  (f"{lp}attention.self.{k}.bias", BIAS, (H,))]
    return specs + [
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


def mpnet_layer_specs(lp, H, FF):
    """modeling_mpnet.py MPNetLayer names: BertLayer's with the attention
    as attention.attn.{q,k,v,o} and its LayerNorm as attention.LayerNorm."""
    rename = (("attention.self.query", "attention.attn.q"),
              ("attention.self.key", "attention.attn.k"),
              ("attention.self.value", "attention.attn.v"),
              ("attention.output.dense", "attention.attn.o"),
              ("attention.output.LayerNorm", "attention.LayerNorm"))
    specs = []
    for name, kind, shape in bert_layer_specs(lp, H, FF):
        for old, new in rename:
            name = name.replace(old, new)
        specs.append((name, kind, shape))
    return specs


def jina_layer_specs(lp, H, FF):
    """JinaBERT v2 layer names (jina-bert-implementation): BertLayer's
    attention, then JinaBertGLUMLP: mlp.gated_layers (2 * FF, H) without a
    bias, mlp.wo and mlp.layernorm."""
    specs = bert_layer_specs(lp, H, FF)[:10]  # query, key, value, output.dense, LayerNorm
    return specs + [
        (f"{lp}mlp.gated_layers.weight", WEIGHT, (2 * FF, H)),
        (f"{lp}mlp.wo.weight", WEIGHT, (H, FF)),
        (f"{lp}mlp.wo.bias", BIAS, (H,)),
        (f"{lp}mlp.layernorm.weight", LN_GAMMA, (H,)),
        (f"{lp}mlp.layernorm.bias", LN_BETA, (H,)),
    ]


# DeBERTa-v3's relative positions (deberta-v3-base's config.json):
# rel_embeddings has 2 * position_buckets rows.
DEBERTA_BUCKETS = 256


def deberta_specs(o, vocab):
    """DebertaV2Model / ForSequenceClassification names
    (modeling_deberta_v2.py): word embeddings and LayerNorm (no positions,
    no token types), BertLayer's names with the attention's Linear layers
    called query_proj / key_proj / value_proj, the encoder's rel_embeddings
    and LayerNorm, then ContextPooler's pooler.dense and the classifier
    outside the encoder."""
    p = "deberta." if o["prefix"] else ""
    H, FF = o["hidden"], o["intermediate"]
    specs = [(f"{p}embeddings.word_embeddings.weight", WEIGHT, (vocab, H)),
             (f"{p}embeddings.LayerNorm.weight", LN_GAMMA, (H,)),
             (f"{p}embeddings.LayerNorm.bias", LN_BETA, (H,))]
    for i in range(o["layers"]):
        for name, kind, shape in bert_layer_specs(f"{p}encoder.layer.{i}.", H, FF):
            for k in ("query", "key", "value"):
                name = name.replace(f"attention.self.{k}.", f"attention.self.{k}_proj.")
            specs.append((name, kind, shape))
    specs += [(f"{p}encoder.rel_embeddings.weight", WEIGHT, (2 * DEBERTA_BUCKETS, H)),
              (f"{p}encoder.LayerNorm.weight", LN_GAMMA, (H,)),
              (f"{p}encoder.LayerNorm.bias", LN_BETA, (H,))]
    if o["labels"] is not None:
        n = len(o["labels"].split(","))
        specs += [("pooler.dense.weight", WEIGHT, (H, H)), ("pooler.dense.bias", BIAS, (H,)),
                  ("classifier.weight", WEIGHT, (n, H)), ("classifier.bias", BIAS, (n,))]
    return specs


def distilbert_layer_specs(lp, H, FF):
    """modeling_distilbert.py TransformerBlock names."""
    specs = []
    for k in ("q_lin", "k_lin", "v_lin", "out_lin"):
        specs += [(f"{lp}attention.{k}.weight", WEIGHT, (H, H)),
                  (f"{lp}attention.{k}.bias", BIAS, (H,))]
    return specs + [
        (f"{lp}sa_layer_norm.weight", LN_GAMMA, (H,)),
        (f"{lp}sa_layer_norm.bias", LN_BETA, (H,)),
        (f"{lp}ffn.lin1.weight", WEIGHT, (FF, H)),
        (f"{lp}ffn.lin1.bias", BIAS, (FF,)),
        (f"{lp}ffn.lin2.weight", WEIGHT, (H, FF)),
        (f"{lp}ffn.lin2.bias", BIAS, (H,)),
        (f"{lp}output_layer_norm.weight", LN_GAMMA, (H,)),
        (f"{lp}output_layer_norm.bias", LN_BETA, (H,)),
    ]


def modernbert_specs(o, vocab):
    """ModernBertForMaskedLM / ForSequenceClassification / Model names
    (modeling_modernbert.py): no position or token-type embeddings, fused
    Wqkv, GeGLU Wi of 2 * intermediate rows, layer 0 without attn_norm,
    biases only with --biases, one `head` for the MLM decoder and the
    classifier."""
    p = "model." if o["prefix"] else ""
    H, FF, b = o["hidden"], o["intermediate"], o["biases"]
    specs = [(f"{p}embeddings.tok_embeddings.weight", WEIGHT, (vocab, H)),
             (f"{p}embeddings.norm.weight", LN_GAMMA, (H,))]
    if b:
        specs.append((f"{p}embeddings.norm.bias", LN_BETA, (H,)))
    for i in range(o["layers"]):
        lp = f"{p}layers.{i}."
        if i > 0:
            specs.append((f"{lp}attn_norm.weight", LN_GAMMA, (H,)))
            if b:
                specs.append((f"{lp}attn_norm.bias", LN_BETA, (H,)))
        for name, kind, shape in (
                ("attn.Wqkv.weight", WEIGHT, (3 * H, H)), ("attn.Wqkv.bias", BIAS, (3 * H,)),
                ("attn.Wo.weight", WEIGHT, (H, H)), ("attn.Wo.bias", BIAS, (H,)),
                ("mlp_norm.weight", LN_GAMMA, (H,)), ("mlp_norm.bias", LN_BETA, (H,)),
                ("mlp.Wi.weight", WEIGHT, (2 * FF, H)), ("mlp.Wi.bias", BIAS, (2 * FF,)),
                ("mlp.Wo.weight", WEIGHT, (H, FF)), ("mlp.Wo.bias", BIAS, (H,))):
            if name.endswith(".weight") or b:
                specs.append((lp + name, kind, shape))
    specs.append((f"{p}final_norm.weight", LN_GAMMA, (H,)))
    if b:
        specs.append((f"{p}final_norm.bias", LN_BETA, (H,)))
    classifier = o["labels"] is not None
    if o["mlm"] or classifier:
        specs.append(("head.dense.weight", WEIGHT, (H, H)))
        if b:
            specs.append(("head.dense.bias", BIAS, (H,)))
        specs.append(("head.norm.weight", LN_GAMMA, (H,)))
        if b:
            specs.append(("head.norm.bias", LN_BETA, (H,)))
    if o["mlm"]:
        if o["untied-decoder"]:
            specs.append(("decoder.weight", WEIGHT, (vocab, H)))
        specs.append(("decoder.bias", BIAS, (vocab,)))
    if classifier:
        n = len(o["labels"].split(","))
        specs += [("classifier.weight", WEIGHT, (n, H)), ("classifier.bias", BIAS, (n,))]
    return specs


def nomic_specs(o, vocab):
    """NomicBertModel / ForPreTraining / ForSequenceClassification names
    (modeling_hf_nomic_bert.py): word and token type embeddings, emb_ln,
    encoder.layers.N.{attn.Wqkv, attn.out_proj, norm1, mlp.fc11, mlp.fc12,
    mlp.fc2, norm2}, the pooler under the encoder, classifier, and
    cls.predictions; biases only with --biases (qkv_proj_bias for Wqkv and
    out_proj, mlp_fc1_bias for fc11 / fc12 and the MLM transform and
    decoder, mlp_fc2_bias for fc2)."""
    p = "bert." if o["prefix"] else ""
    H, FF, b = o["hidden"], o["intermediate"], o["biases"]
    specs = [(f"{p}embeddings.word_embeddings.weight", WEIGHT, (vocab, H)),
             (f"{p}embeddings.token_type_embeddings.weight", WEIGHT, (o["type-vocab"], H)),
             (f"{p}emb_ln.weight", LN_GAMMA, (H,)), (f"{p}emb_ln.bias", LN_BETA, (H,))]
    for i in range(o["layers"]):
        lp = f"{p}encoder.layers.{i}."
        for name, kind, shape, on in (
                ("attn.Wqkv.weight", WEIGHT, (3 * H, H), True), ("attn.Wqkv.bias", BIAS, (3 * H,), b),
                ("attn.out_proj.weight", WEIGHT, (H, H), True), ("attn.out_proj.bias", BIAS, (H,), b),
                ("norm1.weight", LN_GAMMA, (H,), True), ("norm1.bias", LN_BETA, (H,), True),
                ("mlp.fc11.weight", WEIGHT, (FF, H), True), ("mlp.fc11.bias", BIAS, (FF,), b),
                ("mlp.fc12.weight", WEIGHT, (FF, H), True), ("mlp.fc12.bias", BIAS, (FF,), b),
                ("mlp.fc2.weight", WEIGHT, (H, FF), True), ("mlp.fc2.bias", BIAS, (H,), b),
                ("norm2.weight", LN_GAMMA, (H,), True), ("norm2.bias", LN_BETA, (H,), True)):
            if on:
                specs.append((lp + name, kind, shape))
    classifier = o["labels"] is not None
    if o["pooler"] or classifier:
        specs += [(f"{p}pooler.dense.weight", WEIGHT, (H, H)), (f"{p}pooler.dense.bias", BIAS, (H,))]
    if classifier:
        n = len(o["labels"].split(","))
        specs += [("classifier.weight", WEIGHT, (n, H)), ("classifier.bias", BIAS, (n,))]
    if o["mlm"]:
        t = "cls.predictions."
        specs.append((t + "transform.dense.weight", WEIGHT, (H, H)))
        if b:
            specs.append((t + "transform.dense.bias", BIAS, (H,)))
        specs += [(t + "transform.layer_norm.weight", LN_GAMMA, (H,)),
                  (t + "transform.layer_norm.bias", LN_BETA, (H,))]
        if o["untied-decoder"]:
            specs.append((t + "decoder.weight", WEIGHT, (vocab, H)))
        if b:
            specs.append((t + "decoder.bias", BIAS, (vocab,)))
    return specs


def gte_specs(o, vocab):
    """NewModel / NewForMaskedLM / NewFor*Classification / ForQuestionAnswering
    names (Alibaba-NLP new-impl modeling.py): word and token type embeddings,
    embeddings.LayerNorm, encoder.layer.N.{attention.qkv_proj,
    attention.o_proj, attn_ln, mlp.up_gate_proj (no bias), mlp.down_proj,
    mlp_ln}, the pooler under the encoder, lm_head (dense, norm, decoder)
    and the sequence classifier (tests/extraction adds the per-token heads)."""
    p = "new." if o["prefix"] else ""
    H, FF = o["hidden"], o["intermediate"]
    specs = [(f"{p}embeddings.word_embeddings.weight", WEIGHT, (vocab, H)),
             (f"{p}embeddings.token_type_embeddings.weight", WEIGHT, (o["type-vocab"], H)),
             (f"{p}embeddings.LayerNorm.weight", LN_GAMMA, (H,)),
             (f"{p}embeddings.LayerNorm.bias", LN_BETA, (H,))]
    for i in range(o["layers"]):
        lp = f"{p}encoder.layer.{i}."
        specs += [(lp + "attention.qkv_proj.weight", WEIGHT, (3 * H, H)),
                  (lp + "attention.qkv_proj.bias", BIAS, (3 * H,)),
                  (lp + "attention.o_proj.weight", WEIGHT, (H, H)),
                  (lp + "attention.o_proj.bias", BIAS, (H,)),
                  (lp + "attn_ln.weight", LN_GAMMA, (H,)), (lp + "attn_ln.bias", LN_BETA, (H,)),
                  (lp + "mlp.up_gate_proj.weight", WEIGHT, (2 * FF, H)),
                  (lp + "mlp.down_proj.weight", WEIGHT, (H, FF)),
                  (lp + "mlp.down_proj.bias", BIAS, (H,)),
                  (lp + "mlp_ln.weight", LN_GAMMA, (H,)), (lp + "mlp_ln.bias", LN_BETA, (H,))]
    classifier = o["labels"] is not None
    if o["pooler"] or classifier:
        specs += [(f"{p}pooler.dense.weight", WEIGHT, (H, H)), (f"{p}pooler.dense.bias", BIAS, (H,))]
    if o["mlm"]:
        specs += [("lm_head.dense.weight", WEIGHT, (H, H)), ("lm_head.dense.bias", BIAS, (H,)),
                  ("lm_head.norm.weight", LN_GAMMA, (H,)), ("lm_head.norm.bias", LN_BETA, (H,))]
        if o["untied-decoder"]:
            specs.append(("lm_head.decoder.weight", WEIGHT, (vocab, H)))
        specs.append(("lm_head.decoder.bias", BIAS, (vocab,)))
    if classifier:
        n = len(o["labels"].split(","))
        specs += [("classifier.weight", WEIGHT, (n, H)), ("classifier.bias", BIAS, (n,))]
    return specs


def tensor_specs(o, vocab):
    """(name, kind, shape) of every tensor, as Hugging Face names them for
    the family (BertForMaskedLM, DistilBertForSequenceClassification,
    RobertaForMaskedLM, ElectraForMaskedLM, ...)."""
    fam = family(o)
    if fam == "modernbert":
        return modernbert_specs(o, vocab)
    if fam == "nomic_bert":
        return nomic_specs(o, vocab)
    if fam == "deberta-v2":
        return deberta_specs(o, vocab)
    if fam == "gte":
        return gte_specs(o, vocab)
    p = {"bert": "bert.", "distilbert": "distilbert.", "roberta": "roberta.",
         "electra": "electra.", "mpnet": "mpnet.", "jina_bert": "bert."}[fam] if o["prefix"] else ""
    H, FF, E = o["hidden"], o["intermediate"], embedding_size(o)
    specs = [(f"{p}embeddings.word_embeddings.weight", WEIGHT, (vocab, E))]
    if fam != "jina_bert":  # JinaBERT's positions are ALiBi
        specs.append((f"{p}embeddings.position_embeddings.weight", WEIGHT,
                      (o["max-position"], E)))
    if fam not in ("distilbert", "mpnet"):
        specs.append((f"{p}embeddings.token_type_embeddings.weight", WEIGHT,
                      (o["type-vocab"], E)))
    specs += [(f"{p}embeddings.LayerNorm.weight", LN_GAMMA, (E,)),
              (f"{p}embeddings.LayerNorm.bias", LN_BETA, (E,))]
    if E != H:
        specs += [(f"{p}embeddings_project.weight", WEIGHT, (H, E)),
                  (f"{p}embeddings_project.bias", BIAS, (H,))]
    for i in range(o["layers"]):
        if fam == "distilbert":
            specs += distilbert_layer_specs(f"{p}transformer.layer.{i}.", H, FF)
        elif fam == "mpnet":
            specs += mpnet_layer_specs(f"{p}encoder.layer.{i}.", H, FF)
        elif fam == "jina_bert":
            specs += jina_layer_specs(f"{p}encoder.layer.{i}.", H, FF)
        else:
            specs += bert_layer_specs(f"{p}encoder.layer.{i}.", H, FF)
    if fam == "mpnet":  # MPNetEncoder.relative_attention_bias, one scalar per bucket and head
        specs.append((f"{p}encoder.relative_attention_bias.weight", WEIGHT,
                      (MPNET_BUCKETS, o["heads"])))
    classifier = o["labels"] is not None
    if o["pooler"] or classifier:
        pooler = {"bert": f"{p}pooler.dense", "jina_bert": f"{p}pooler.dense",
                  "distilbert": "pre_classifier",
                  "roberta": "classifier.dense", "electra": "classifier.dense",
                  "mpnet": "classifier.dense"}[fam]
        specs += [(f"{pooler}.weight", WEIGHT, (H, H)), (f"{pooler}.bias", BIAS, (H,))]
    if o["mlm"]:
        dense, norm, decoder, bias = {
            "bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
                     "cls.predictions.decoder.weight", "cls.predictions.bias"),
            "jina_bert": ("cls.predictions.transform.dense",
                          "cls.predictions.transform.LayerNorm",
                          "cls.predictions.decoder.weight", "cls.predictions.bias"),
            "distilbert": ("vocab_transform", "vocab_layer_norm", "vocab_projector.weight",
                           "vocab_projector.bias"),
            "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight",
                        "lm_head.bias"),
            "mpnet": ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder.weight",
                      "lm_head.bias"),
            "electra": ("generator_predictions.dense", "generator_predictions.LayerNorm",
                        "generator_lm_head.weight", "generator_lm_head.bias"),
        }[fam]
        specs += [
            (f"{dense}.weight", WEIGHT, (E, H)),
            (f"{dense}.bias", BIAS, (E,)),
            (f"{norm}.weight", LN_GAMMA, (E,)),
            (f"{norm}.bias", LN_BETA, (E,)),
            (bias, BIAS, (vocab,)),
        ]
        if o["untied-decoder"]:
            specs.append((decoder, WEIGHT, (vocab, E)))
    if classifier:
        n = len(o["labels"].split(","))
        out = "classifier" if fam in ("bert", "distilbert", "jina_bert") else "classifier.out_proj"
        specs += [(f"{out}.weight", WEIGHT, (n, H)), (f"{out}.bias", BIAS, (n,))]
    if o.get("discriminator"):  # ElectraForPreTraining's ElectraDiscriminatorPredictions
        d = "discriminator_predictions."
        specs += [(d + "dense.weight", WEIGHT, (H, H)), (d + "dense.bias", BIAS, (H,)),
                  (d + "dense_prediction.weight", WEIGHT, (1, H)),
                  (d + "dense_prediction.bias", BIAS, (1,))]
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
    """The config.json bert_config_write produces (the keys that matter), in
    the family's own key names."""
    labels = o["labels"].split(",") if o["labels"] is not None else []
    fam = family(o)
    arch = CLASS_PREFIX[o["model-type"]] + ("ForSequenceClassification" if labels else
                                            "ForMaskedLM" if o["mlm"] else
                                            "ForPreTraining" if o.get("discriminator") else
                                            "Model")
    act = {"gelu": "gelu", "gelu_new": "gelu_new", "relu": "relu", "silu": "silu"}[o["act"]]
    cfg = {"architectures": [arch], "model_type": o["model-type"], "vocab_size": vocab,
           "max_position_embeddings": o["max-position"],
           "pad_token_id": 1 if fam in ("roberta", "mpnet") else 0,
           "tie_word_embeddings": not o["untied-decoder"]}
    if fam == "modernbert":
        b = o["biases"]
        cfg.update({
            "hidden_size": o["hidden"], "intermediate_size": o["intermediate"],
            "num_hidden_layers": o["layers"], "num_attention_heads": o["heads"],
            "norm_eps": float(np.float32(o["eps"])), "hidden_activation": act,
            "classifier_activation": "gelu", "classifier_pooling": o["classifier-pooling"],
            "global_rope_theta": o["global-theta"], "local_rope_theta": o["local-theta"],
            "global_attn_every_n_layers": o["global-every"], "local_attention": o["local-window"],
            "attention_bias": b, "mlp_bias": b, "norm_bias": b, "classifier_bias": b,
            "decoder_bias": True})
    elif fam == "distilbert":
        cfg.update({"dim": o["hidden"], "n_layers": o["layers"], "n_heads": o["heads"],
                    "hidden_dim": o["intermediate"], "activation": act,
                    "sinusoidal_pos_embds": False})
    elif fam == "nomic_bert":
        b = o["biases"]
        cfg.update({
            "n_embd": o["hidden"], "n_inner": o["intermediate"], "n_layer": o["layers"],
            "n_head": o["heads"], "n_positions": o["max-position"],
            "type_vocab_size": o["type-vocab"],
            "layer_norm_epsilon": float(np.float32(o["eps"])),
            "activation_function": {"silu": "swiglu", "gelu": "geglu"}[o["act"]],
            "rotary_emb_base": o["rotary-base"], "rotary_emb_fraction": 1.0,
            "rotary_emb_interleaved": False, "prenorm": False,
            "qkv_proj_bias": b, "mlp_fc1_bias": b, "mlp_fc2_bias": b})
    elif fam == "deberta-v2":
        cfg.update({
            "hidden_size": o["hidden"], "num_hidden_layers": o["layers"],
            "num_attention_heads": o["heads"], "intermediate_size": o["intermediate"],
            "type_vocab_size": 0, "layer_norm_eps": float(np.float32(o["eps"])),
            "hidden_act": act, "relative_attention": True, "max_relative_positions": -1,
            "position_buckets": DEBERTA_BUCKETS, "pos_att_type": ["p2c", "c2p"],
            "share_att_key": True, "position_biased_input": False,
            "norm_rel_ebd": "layer_norm", "pooler_hidden_size": o["hidden"],
            "pooler_hidden_act": "gelu"})
    elif fam == "gte":
        f = o["ntk-factor"]
        cfg.update({
            "hidden_size": o["hidden"], "num_hidden_layers": o["layers"],
            "num_attention_heads": o["heads"], "intermediate_size": o["intermediate"],
            "type_vocab_size": o["type-vocab"],
            "layer_norm_eps": float(np.float32(o["eps"])), "hidden_act": act,
            "position_embedding_type": "rope", "layer_norm_type": "layer_norm",
            "rope_theta": o["rope-theta"],
            "rope_scaling": {"type": "ntk", "factor": f} if f > 1 else None, "pack_qkv": True})
    elif fam == "mpnet":
        cfg.update({
            "hidden_size": o["hidden"], "num_hidden_layers": o["layers"],
            "num_attention_heads": o["heads"], "intermediate_size": o["intermediate"],
            "layer_norm_eps": float(np.float32(o["eps"])), "hidden_act": act,
            "relative_attention_num_buckets": MPNET_BUCKETS})
    else:
        cfg.update({
            "hidden_size": o["hidden"], "num_hidden_layers": o["layers"],
            "num_attention_heads": o["heads"], "intermediate_size": o["intermediate"],
            "type_vocab_size": o["type-vocab"],
            # The C side stores eps as a float32.
            "layer_norm_eps": float(np.float32(o["eps"])), "hidden_act": act,
            "position_embedding_type": "absolute"})
        if fam == "electra":
            cfg["embedding_size"] = embedding_size(o)
        if fam == "jina_bert":  # a BERT config with ALiBi and a GLU
            cfg.update({"model_type": "bert", "position_embedding_type": "alibi",
                        "feed_forward_type": {"gelu": "geglu", "relu": "reglu"}[o["act"]],
                        "hidden_act": "gelu"})
    cfg["id2label"] = {str(i): l for i, l in enumerate(labels)}
    cfg["label2id"] = {l: i for i, l in enumerate(labels)}
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
    vocab = o.get("vocab-size") or vocab_size(tokenizer_dir)
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
    for key, default in defaults(o).items():
        value = o[key]
        if value == default:
            continue
        if isinstance(value, bool):
            cmd.append(f"--{key}")
        else:
            cmd += [f"--{key}", repr(value) if isinstance(value, float) else str(value)]
    return cmd
