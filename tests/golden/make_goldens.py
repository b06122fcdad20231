#!/usr/bin/python3
"""Regenerate tests/data/golden/*.json: reference outputs for synthetic checkpoints.

For every checkpoint spec below: build its weights with synth.py (the numpy
twin of train/synth.c), write the folder, get token ids from the official
Rust tokenizer (npm `tokenizers`, tests/golden/node), run the float64 PyTorch
reference (reference.py) and write the expected outputs with per-tensor
checksums. With --bert, first check that `bert init` writes bit-identical
tensors.

Run from the repository root with Debian's python (it has torch and numpy):
    (cd tests/golden/node && npm ci)
    /usr/bin/python3 tests/golden/make_goldens.py --bert build/bin/bert
See tests/golden/README.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import reference  # noqa: E402
import synth  # noqa: E402

TOKENIZERS = os.path.join(ROOT, "tests", "data", "tokenizer")
OUT_DIR = os.path.join(ROOT, "tests", "data", "golden")
# The other families' goldens run as their own ctest (test_golden_families).
FAMILY_OUT_DIR = os.path.join(ROOT, "tests", "data", "golden-families")

# The C tests' tolerances (tests/golden/README.md explains them). Near-ties
# closer than TOPK_LOGIT_GAP in the reference could flip under float32 noise,
# so a spec whose top-5 has one is rejected.
TOPK = 5
TOPK_LOGIT_GAP = 2e-3
# test_golden.c also runs F32 checkpoints with bf16 compute (oneDNN) and
# requires the same top-1 there: bf16 moves logits by about 1%, so the
# winner must lead by a margin that noise cannot close (the smallest lead
# of the BERT goldens that pass, untied-gelu-new's, is 0.063).
TOP1_BF16_GAP = 0.06
FILE_LIMIT = 2 << 20
# test_golden.c's bounds for a BF16/F16 checkpoint against the F32 golden:
# the reference's own BF16/F16-vs-F32 difference must stay well inside them.
LOOSE = {"bf16": {"hidden": 0.1, "cos": 0.999, "prob": 5e-3},
         "f16": {"hidden": 0.02, "cos": 0.99999, "prob": 1e-3}}

LONG_TEXT = (
    "It is a truth universally acknowledged, that a single man in possession of a good "
    "fortune must be in want of a wife. However little known the feelings or views of such "
    "a man may be on his first entering a neighbourhood, this truth is so well fixed in the "
    "minds of the surrounding families, that he is considered as the rightful property of "
    "some one or other of their daughters. \u201cMy dear Mr. Bennet,\u201d said his lady to "
    "him one day, \u201chave you heard that Netherfield Park is let at last?\u201d Mr. Bennet "
    "replied that he had not. \u201cBut it is,\u201d returned she; \u201cfor Mrs. Long has "
    "just been here, and she told me all about it.\u201d Mr. Bennet made no answer. \u201cDo "
    "not you want to know who has taken it?\u201d cried his wife, impatiently. \u201cYou want "
    "to tell me, and I have no objection to hearing it.\u201d This was invitation enough. "
    "\u201cWhy, my dear, you must know, Mrs. Long says that Netherfield is taken by a young "
    "man of large fortune from the north of England; that he came down on Monday in a chaise "
    "and four to see the place, and was so much delighted with it that he agreed with "
    "Mr. Morris immediately.\u201d"
)  # Jane Austen, Pride and Prejudice, ch. 1 (public domain)
LONG_MASKED = LONG_TEXT.replace("agreed with", "[MASK] with").replace("a young man", "a [MASK] man")

COMMON = [
    "Hello world!",
    "Cr\u00e8me br\u00fbl\u00e9e \u00e0 la fran\u00e7aise, na\u00efve caf\u00e9 \u2014 "
    "\u00c6r\u00f8sk\u00f8bing, S\u00e3o Paulo, Z\u00fcrich.",
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u3002"
    "\u5317\u4eac\u662f\u4e2d\u56fd\u7684\u9996\u90fd\u3002",
    "Don't stop: it's 3.14159, e=mc^2 (roughly) & 100% #1 \U0001F600!",
]
MASKED = [
    "The capital of France is [MASK].",
    "I [MASK] to the [MASK] yesterday.",
    "[MASK] quick brown [MASK] jumps over the lazy [MASK].",
    "Paris is [MASK] beautiful city \u2014 caf\u00e9s, mus\u00e9es [MASK] \u6771\u4eac!",
]
SENTENCES = [
    "The movie was absolutely wonderful, I loved every minute.",
    "This is the worst service I have ever had.",
    "The package arrived on Tuesday.",
]
PAIRS = [
    ("How old are you?", "I am six years old."),
    ("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris, France."),
    ("Where is the Eiffel Tower?", "Bananas are rich in potassium."),
    ("Qu'est-ce que c'est?", "C'est une cr\u00e8me br\u00fbl\u00e9e."),
    ("\u6771\u4eac\u306f\u3069\u3053\uff1f", "\u65e5\u672c\u3067\u3059\u3002"),
    ("A short question", LONG_TEXT),
]

# Shared by the spread-out checkpoints: weights wide enough that attention,
# MLM and classifier outputs are far from uniform, LayerNorms and biases
# perturbed so a missed gamma, beta or bias changes the numbers.
SPREAD = {"weight-std": 0.15, "bias-range": 0.1, "ln-range": 0.2}
# MLM heads need wider embeddings: logits ~ sqrt(H) * weight-std.
MLM_STD = {"weight-std": 0.2}
L2H128 = {"layers": 2, "hidden": 128, "heads": 2, "intermediate": 512}

SPECS = [
    {
        "name": "tiny-mlm",
        "about": "L=2 H=128 A=2, bert. prefix, tied MLM head, pooler; F32, BF16 and F16 copies",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, **MLM_STD, "seed": 11, "prefix": True, "mlm": True,
                 "pooler": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + MASKED + [LONG_MASKED]],
        "hidden": {"f32": "all", "bf16": [0, 4, 8], "f16": [0, 4, 8]},
    },
    {
        "name": "minilm",
        "about": "L=6 H=384 A=12 I=1536 like all-MiniLM-L6-v2: BertModel names, pooler, "
                 "sentence-transformers mean pooling + Normalize; F32 and BF16",
        "tokenizer": "minilm",
        "init": {"layers": 6, "hidden": 384, "heads": 12, "intermediate": 1536,
                 "weight-std": 0.08, "bias-range": 0.1, "ln-range": 0.2, "seed": 2,
                 "pooler": True, "sentence-transformers": True, "pooling": "mean",
                 "normalize": True, "max-seq-length": 384},
        "dtypes": ["f32", "bf16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES + MASKED[:2] + [LONG_TEXT]],
        "hidden": {"f32": [0, 2, 9], "bf16": [0, 2]},
    },
    {
        "name": "classify3",
        "about": "L=2 H=128 A=4 classifier, 3 labels single_label (softmax), hidden_act relu",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "heads": 4, "seed": 3, "prefix": True, "act": "relu",
                 "labels": "negative,neutral,positive", "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES + COMMON] + PAIRS[:3],
        "hidden": {"f32": "all"},
    },
    {
        "name": "classify4-multi",
        "about": "L=2 H=128 A=2 classifier, 4 labels multi_label (sigmoid), hidden_act silu",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "seed": 4, "prefix": True, "act": "silu",
                 "labels": "toxic,obscene,insult,threat", "problem-type": "multi_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES + COMMON + [LONG_TEXT]],
        "hidden": {"f32": "all"},
    },
    {
        "name": "cross-encoder",
        "about": "L=2 H=128 A=2 cross-encoder: 1 label (sigmoid) over sentence pairs",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "seed": 5, "prefix": True, "labels": "LABEL_0"},
        "dtypes": ["f32"],
        "inputs": PAIRS + [(SENTENCES[0], SENTENCES[1]), (COMMON[1], COMMON[2]),
                           (COMMON[0], None)],
        "hidden": {"f32": "all"},
    },
    {
        "name": "untied-gelu-new",
        "about": "L=2 H=128 A=4, untied MLM decoder, hidden_act gelu_new, layer_norm_eps 1e-7",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, **MLM_STD, "heads": 4, "seed": 6, "prefix": True, "mlm": True,
                 "untied-decoder": True, "act": "gelu_new", "eps": 1e-7},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON[:3] + MASKED + [LONG_MASKED]],
        "hidden": {"f32": "all"},
    },
    {
        "name": "cased-mlm",
        "about": "L=3 H=96 A=3 I=256 with the bert-base-cased vocab.txt layout (28996 "
                 "tokens, no tokenizer.json), tied MLM head",
        "tokenizer": "bert-base-cased",
        "init": {"layers": 3, "hidden": 96, "heads": 3, "intermediate": 256,
                 "weight-std": 0.25, "bias-range": 0.1, "ln-range": 0.2, "seed": 9,
                 "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + MASKED + ["The City of LONDON is in England.",
                                                        LONG_MASKED]],
        "hidden": {"f32": "all"},
    },
]



def with_mask(texts, mask):
    """The [MASK] inputs for a tokenizer whose mask token is `mask`."""
    return [t.replace("[MASK]", mask) for t in texts]


# The other encoder families, on the same inputs. Each writes its task
# model's exact Hugging Face tensor names (synth.py tensor_specs).
SPECS += [
    {
        "name": "distilbert-mlm",
        "about": "DistilBertForMaskedLM L=2 H=128 A=2: transformer.layer names, no token "
                 "types, vocab_transform / vocab_projector head; F32 and BF16",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, **MLM_STD, "model-type": "distilbert", "seed": 26,
                 "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + MASKED + [LONG_MASKED]],
        "hidden": {"f32": "all"},
    },
    {
        "name": "distilbert-classify",
        "about": "DistilBertForSequenceClassification L=2 H=128 A=4, 3 labels: "
                 "pre_classifier + ReLU, pairs whose type ids the model ignores",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "heads": 4, "model-type": "distilbert", "seed": 22,
                 "prefix": True, "labels": "negative,neutral,positive",
                 "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES + COMMON] + PAIRS[:3],
        "hidden": {"f32": "all"},
    },
    {
        "name": "roberta-mlm",
        "about": "RobertaForMaskedLM L=2 H=128 A=2 on the XLM-R Unigram tokenizer: "
                 "positions from pad_token_id + 1 (514 of them), one token type, lm_head "
                 "(gelu)",
        "tokenizer": "xlmr",
        "init": {**L2H128, **SPREAD, "weight-std": 0.25, "model-type": "roberta", "seed": 32,
                 "prefix": True, "mlm": True, "type-vocab": 1, "max-position": 514,
                 "act": "gelu_new"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + with_mask(MASKED + [LONG_MASKED], "<mask>")],
        "hidden": {"f32": "all"},
    },
    {
        "name": "xlmr-classify",
        "about": "XLMRobertaForSequenceClassification L=2 H=128 A=4, 2 labels: "
                 "classifier.dense + tanh + out_proj, sentence pairs, no encoder prefix "
                 "on the heads",
        "tokenizer": "xlmr",
        "init": {**L2H128, **SPREAD, "heads": 4, "model-type": "xlm-roberta", "seed": 32,
                 "prefix": True, "labels": "no,yes", "type-vocab": 1, "max-position": 514},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES + COMMON] + PAIRS,
        "hidden": {"f32": "all"},
    },
    {
        "name": "xlmr-embed",
        "about": "XLMRobertaModel L=2 H=128 A=4 like a multilingual sentence-transformers "
                 "embedder: no prefix, mean pooling + Normalize; F32 and BF16",
        "tokenizer": "xlmr",
        "init": {**L2H128, "heads": 4, "weight-std": 0.08, "bias-range": 0.1, "ln-range": 0.2,
                 "model-type": "xlm-roberta", "seed": 33, "type-vocab": 1,
                 "max-position": 514, "sentence-transformers": True, "pooling": "mean",
                 "normalize": True},
        "dtypes": ["f32", "bf16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES + [LONG_TEXT]],
        "hidden": {"f32": "all", "bf16": [0, 3]},
    },
    {
        "name": "electra-mlm",
        "about": "ElectraForMaskedLM (generator) L=2 H=128 A=2 with embedding_size 64: "
                 "embeddings_project, generator_predictions (gelu) at width 64",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "weight-std": 0.2, "model-type": "electra",
                 "embedding-size": 64, "seed": 62, "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + MASKED + [LONG_MASKED]],
        "hidden": {"f32": "all"},
    },
    {
        "name": "electra-classify",
        "about": "ElectraForSequenceClassification L=2 H=128 A=2 (embedding_size = hidden, "
                 "no projection), 1 label (sigmoid) over pairs: classifier.dense + gelu",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "model-type": "electra", "seed": 42, "prefix": True,
                 "labels": "LABEL_0"},
        "dtypes": ["f32"],
        "inputs": PAIRS + [(SENTENCES[0], SENTENCES[1]), (COMMON[0], None)],
        "hidden": {"f32": "all"},
    },
]


# ELECTRA discriminator (ElectraForPreTraining): per-token replaced probabilities.
SPECS += [
    {
        "name": "electra-discriminator",
        "about": "ElectraForPreTraining L=2 H=128 A=2 embedding_size 64: "
                 "discriminator_predictions dense + gelu_new (hidden_act) + dense_prediction, "
                 "sigmoid per token",
        "tokenizer": "minilm",
        "init": {**L2H128, **SPREAD, "model-type": "electra", "embedding-size": 64, "seed": 63,
                 "prefix": True, "discriminator": True, "act": "gelu_new"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + SENTENCES + MASKED[:2] + [LONG_TEXT]],
        "hidden": {"f32": "all"},
    },
]

# ModernBERT: 4 layers, so with global attention every 3 layers 0 and 3 are
# global and 1 and 2 local; inputs longer than the local window.
MODERN = {"model-type": "modernbert", "layers": 4, "hidden": 128, "heads": 2,
          "intermediate": 192, "max-position": 1024, "eps": 1e-5}
SPECS += [
    {
        "name": "modernbert-mlm",
        "about": "ModernBertForMaskedLM L=3 H=128 A=2 I=192 (GeGLU Wi 384), local window 16 "
                 "(+-8) in layer 1, global 0 and 2, tied decoder, no biases",
        "tokenizer": "modernbert",
        "init": {**MODERN, **SPREAD, "weight-std": 0.2, "seed": 123, "prefix": True, "mlm": True,
                 "layers": 3, "global-every": 2, "local-window": 16},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON + MASKED[:2] + [LONG_MASKED]],
        "hidden": {"f32": "all"},
    },
    {
        "name": "modernbert-embed",
        "about": "ModernBertModel L=4 H=128 A=2 like ModernBERT-base's geometry rules (window "
                 "128, thetas 160000 / 10000), no prefix, mean pooling + Normalize, inputs "
                 "up to ~560 tokens; F32 and BF16",
        "tokenizer": "modernbert",
        "init": {**MODERN, "weight-std": 0.08, "ln-range": 0.2, "seed": 72,
                 "sentence-transformers": True, "pooling": "mean", "normalize": True},
        "dtypes": ["f32", "bf16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES + [LONG_TEXT,
                                                            LONG_TEXT + " " + LONG_TEXT]],
        "hidden": {"f32": [0, 3, 8], "bf16": [0, 7]},
    },
    {
        "name": "modernbert-classify",
        "about": "ModernBertForSequenceClassification L=4 H=128 A=2, every bias on (--biases), "
                 "window 32, cls pooling, 3 labels softmax, pairs",
        "tokenizer": "modernbert",
        "init": {**MODERN, **SPREAD, "weight-std": 0.1, "seed": 73, "prefix": True, "biases": True,
                 "local-window": 32, "labels": "negative,neutral,positive",
                 "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES + COMMON] + PAIRS,
        "hidden": {"f32": "all"},
    },
    {
        "name": "modernbert-rerank",
        "about": "ModernBertForSequenceClassification cross-encoder L=4 H=128 A=4: "
                 "classifier_pooling mean, 1 label (sigmoid), global every 2 layers, "
                 "hidden_activation gelu_new",
        "tokenizer": "modernbert",
        "init": {**MODERN, **SPREAD, "weight-std": 0.1, "heads": 4, "seed": 74, "prefix": True,
                 "classifier-pooling": "mean", "global-every": 2, "local-window": 64,
                 "act": "gelu_new", "labels": "LABEL_0"},
        "dtypes": ["f32"],
        "inputs": PAIRS + [(SENTENCES[0], SENTENCES[1]), (COMMON[0], None)],
        "hidden": {"f32": "all"},
    },
]


# Tokenizers read from ../shared/data (beside the repository) instead of a
# committed copy: the real files, and nothing more to commit. The path is
# relative to tests/data/tokenizer, where the other specs' tokenizers are.
SHARED_TOKENIZER = "../../../../shared/data/"

# MPNet: inputs past 128 tokens reach the last, logarithmic buckets of the
# relative position bias (distances of 128 and more share one).
MPNET = {"model-type": "mpnet", "layers": 2, "hidden": 128, "heads": 2, "intermediate": 256,
         "max-position": 514, "eps": 1e-5}
SPECS += [
    {
        "name": "mpnet-mlm",
        "about": "MPNetForMaskedLM L=2 H=128 A=2 on all-mpnet-base-v2's tokenizer.json: "
                 "mpnet. names, attention.attn.{q,k,v,o}, relative_attention_bias (32 "
                 "buckets, shared by the layers), positions from 2, no token types, lm_head "
                 "(gelu) tied; masks in a 270-token passage",
        "tokenizer": SHARED_TOKENIZER + "all-mpnet-base-v2",
        "init": {**MPNET, **SPREAD, "weight-std": 0.2, "seed": 81, "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON[:2] + with_mask(MASKED[:2] + [LONG_MASKED],
                                                             "<mask>")],
        "hidden": {"f32": [0, 2]},
    },
    {
        "name": "mpnet-embed",
        "about": "MPNetModel L=2 H=128 A=4 like all-mpnet-base-v2 (no prefix, mean pooling + "
                 "Normalize); F32, BF16 and F16",
        "tokenizer": SHARED_TOKENIZER + "all-mpnet-base-v2",
        "init": {**MPNET, "heads": 4, "weight-std": 0.08, "bias-range": 0.1, "ln-range": 0.2,
                 "seed": 82, "sentence-transformers": True, "pooling": "mean",
                 "normalize": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES[:1] + [LONG_TEXT]],
        "hidden": {"f32": [0], "bf16": [0], "f16": [0]},
    },
    {
        "name": "mpnet-classify",
        "about": "MPNetForSequenceClassification L=2 H=128 A=2: classifier.dense + tanh + "
                 "out_proj on <s>, 3 labels softmax, `<s> A </s></s> B </s>` pairs",
        "tokenizer": SHARED_TOKENIZER + "all-mpnet-base-v2",
        "init": {**MPNET, **SPREAD, "weight-std": 0.1, "seed": 83, "prefix": True,
                 "labels": "negative,neutral,positive", "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES[:2]] + PAIRS[1:3] + [PAIRS[5]],
        "hidden": {"f32": [0]},
    },
]


# NomicBERT: post-LN with RoPE (nomic-embed's base 1000) and SwiGLU; the
# MLM spec pads the vocabulary far past the tokenizer's so that padding
# rows would reach the top-5 if the engine answered them.
NOMIC = {"model-type": "nomic_bert", "layers": 2, "hidden": 64, "heads": 2, "intermediate": 128,
         "max-position": 2048, "eps": 1e-12, "act": "silu"}
SPECS += [
    {
        "name": "nomic-mlm",
        "about": "NomicBertForPreTraining L=2 H=64 A=2 I=128 (SwiGLU fc11 / fc12 / fc2), "
                 "bert. prefix, fused Wqkv, RoPE base 1000, token types, cls.predictions "
                 "(silu, layer_norm, tied decoder, no biases); vocabulary padded to 40000 "
                 "rows (the tokenizer has 30522): padding rows are never answered",
        "tokenizer": "minilm",
        "init": {**NOMIC, **SPREAD, "weight-std": 0.25, "seed": 94, "prefix": True, "mlm": True,
                 "vocab-size": 40000},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON[:2] + MASKED[:3] + [LONG_MASKED]],
        "hidden": {"f32": [0, 2]},
    },
    {
        "name": "nomic-embed",
        "about": "NomicBertModel L=2 H=64 A=2 like nomic-embed-text-v1.5 (no prefix, no "
                 "biases), mean pooling + Normalize, inputs up to ~550 tokens; F32, BF16, F16",
        "tokenizer": "minilm",
        "init": {**NOMIC, "weight-std": 0.1, "bias-range": 0.1, "ln-range": 0.2, "seed": 92,
                 "sentence-transformers": True, "pooling": "mean", "normalize": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES[:1] + [LONG_TEXT + " " + LONG_TEXT]],
        "hidden": {"f32": [0], "bf16": [0], "f16": [0]},
    },
    {
        "name": "nomic-classify",
        "about": "NomicBertForSequenceClassification L=2 H=64 A=2 with every bias on "
                 "(qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias) and GeGLU: pooler.dense + tanh, "
                 "classifier, 3 labels softmax, pairs (token type 1)",
        "tokenizer": "minilm",
        "init": {**NOMIC, **SPREAD, "weight-std": 0.15, "seed": 93, "prefix": True,
                 "biases": True, "act": "gelu", "labels": "negative,neutral,positive",
                 "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES[:2]] + PAIRS[1:3] + [PAIRS[5]],
        "hidden": {"f32": [0]},
    },
]


# JinaBERT v2: ALiBi instead of positions, GeGLU; three heads, so the
# slopes take ALiBi's workaround for head counts that are not powers of two
# (2^-4, 2^-8, then 2^-2). Its tokenizer is jina-embeddings-v2-base-en's
# real tokenizer.json (30528 tokens).
JINA = {"model-type": "jina_bert", "layers": 2, "hidden": 96, "heads": 3, "intermediate": 128,
        "max-position": 8192}
SPECS += [
    {
        "name": "jina-mlm",
        "about": "JinaBertForMaskedLM L=2 H=96 A=3 I=128: bert. names without position "
                 "embeddings, mlp.gated_layers (2I, no bias) / mlp.wo / mlp.layernorm, ALiBi "
                 "with three heads' slopes, cls.predictions (hidden_act gelu) tied",
        "tokenizer": SHARED_TOKENIZER + "jina-embeddings-v2-base-en",
        "init": {**JINA, **SPREAD, "weight-std": 0.25, "seed": 104, "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON[:2] + MASKED[:3] + [LONG_MASKED]],
        "hidden": {"f32": [0, 2]},
    },
    {
        "name": "jina-embed",
        "about": "JinaBertModel L=2 H=96 A=3 like jina-embeddings-v2 (no prefix), mean "
                 "pooling + Normalize, inputs up to ~530 tokens; F32, BF16, F16",
        "tokenizer": SHARED_TOKENIZER + "jina-embeddings-v2-base-en",
        "init": {**JINA, "weight-std": 0.1, "bias-range": 0.1, "ln-range": 0.2, "seed": 102,
                 "sentence-transformers": True, "pooling": "mean", "normalize": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES[:1] + [LONG_TEXT + " " + LONG_TEXT]],
        "hidden": {"f32": [0], "bf16": [0], "f16": [0]},
    },
    {
        "name": "jina-classify",
        "about": "JinaBertForSequenceClassification L=2 H=96 A=3 with feed_forward_type "
                 "reglu: pooler.dense + tanh, classifier, 3 labels softmax, pairs",
        "tokenizer": SHARED_TOKENIZER + "jina-embeddings-v2-base-en",
        "init": {**JINA, **SPREAD, "weight-std": 0.15, "seed": 103, "prefix": True, "act": "relu",
                 "labels": "negative,neutral,positive", "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES[:2]] + PAIRS[1:3] + [PAIRS[5]],
        "hidden": {"f32": [0]},
    },
]


# DeBERTa-v3: disentangled attention with v3's 256 log buckets over 512
# positions, so the ~265-token passages reach the logarithmic buckets
# (distances past 128). The minilm WordPiece tokenizer stands in for
# DeBERTa's SentencePiece one (the numerics do not depend on it).
DEBERTA = {"model-type": "deberta-v2", "layers": 2, "hidden": 64, "heads": 2,
           "intermediate": 128, "eps": 1e-7}
SPECS += [
    {
        "name": "deberta-embed",
        "about": "DebertaV2Model L=2 H=64 A=2 (no prefix): no positions or token types, "
                 "c2p + p2c relative attention (256 buckets), rel_embeddings LayerNorm; mean "
                 "pooling + Normalize, inputs up to ~290 tokens; F32, BF16, F16",
        "tokenizer": "minilm",
        "init": {**DEBERTA, "weight-std": 0.1, "bias-range": 0.1, "ln-range": 0.2, "seed": 112,
                 "sentence-transformers": True, "pooling": "mean", "normalize": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES[:1] + [LONG_TEXT]],
        "hidden": {"f32": [0, 5], "bf16": [0], "f16": [0]},
    },
    {
        "name": "deberta-classify",
        "about": "DebertaV2ForSequenceClassification L=2 H=64 A=2, deberta. prefix: "
                 "ContextPooler (pooler.dense + gelu on [CLS]) and classifier, 3 labels "
                 "softmax, pairs up to ~270 tokens",
        "tokenizer": "minilm",
        "init": {**DEBERTA, **SPREAD, "weight-std": 0.15, "seed": 113, "prefix": True,
                 "labels": "entailment,neutral,contradiction", "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES[:2]] + PAIRS[1:3] + [PAIRS[5]],
        "hidden": {"f32": [0]},
    },
]
# GTE "new": NomicBERT's layer order with one up_gate_proj (the gate is its
# second half) and RoPE scaled by rope_scaling's NTK factor (8, as
# gte-multilingual-base; with 32-wide heads the first frequency is already
# 8^(-1/16) = 0.88 of plain RoPE's, so a lost factor shows at once). The
# tokenizer is the XLM-R Unigram one gte-multilingual-base uses.
GTE = {"model-type": "new", "layers": 2, "hidden": 64, "heads": 2, "intermediate": 96,
       "max-position": 8192, "type-vocab": 1, "rope-theta": 20000.0, "ntk-factor": 8.0}
SPECS += [
    {
        "name": "gte-mlm",
        "about": "NewForMaskedLM L=2 H=64 A=2 I=96: new. prefix, fused qkv_proj, RoPE theta "
                 "20000 with NTK factor 8, up_gate_proj (gelu on the gate half), attn_ln / "
                 "mlp_ln, lm_head (dense, gelu, norm, tied decoder) on the XLM-R Unigram "
                 "tokenizer",
        "tokenizer": "xlmr",
        "init": {**GTE, **SPREAD, "weight-std": 0.25, "seed": 120, "prefix": True, "mlm": True},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in COMMON[:2] + with_mask(MASKED[:3] + [LONG_MASKED],
                                                              "<mask>")],
        "hidden": {"f32": [0, 2]},
    },
    {
        "name": "gte-embed",
        "about": "NewModel L=2 H=64 A=2 like gte-multilingual-base (no prefix, CLS pooling + "
                 "Normalize), inputs up to ~600 tokens; F32, BF16, F16",
        "tokenizer": "xlmr",
        "init": {**GTE, "weight-std": 0.1, "bias-range": 0.1, "ln-range": 0.2, "seed": 112,
                 "sentence-transformers": True, "pooling": "cls", "normalize": True},
        "dtypes": ["f32", "bf16", "f16"],
        "inputs": [(t, None) for t in COMMON + SENTENCES[:1] + [LONG_TEXT + " " + LONG_TEXT]],
        "hidden": {"f32": [0], "bf16": [0], "f16": [0]},
    },
    {
        "name": "gte-classify",
        "about": "NewForSequenceClassification L=2 H=64 A=2 with silu and plain RoPE (no "
                 "rope_scaling, theta 10000): pooler.dense + tanh, classifier, 3 labels "
                 "softmax, `<s> A </s></s> B </s>` pairs",
        "tokenizer": "xlmr",
        "init": {**GTE, **SPREAD, "weight-std": 0.15, "seed": 113, "prefix": True, "act": "silu",
                 "rope-theta": 10000.0, "ntk-factor": 1.0,
                 "labels": "negative,neutral,positive", "problem-type": "single_label"},
        "dtypes": ["f32"],
        "inputs": [(t, None) for t in SENTENCES[:2]] + PAIRS[1:3] + [PAIRS[5]],
        "hidden": {"f32": [0]},
    },
]


def tokenize(tokenizer_dir, inputs):
    """Ids from the official tokenizer: tokenizer.json as is, or the
    vocab.txt layout converted as transformers does."""
    tj = os.path.join(tokenizer_dir, "tokenizer.json")
    if os.path.exists(tj):
        tok = {"file": tj}
    else:
        with open(os.path.join(tokenizer_dir, "tokenizer_config.json")) as f:
            lowercase = json.load(f).get("do_lower_case", True)
        tok = {"vocab": os.path.join(tokenizer_dir, "vocab.txt"), "lowercase": lowercase}
    req = json.dumps({"tokenizer": tok, "inputs": [list(p) for p in inputs]})
    res = subprocess.run(["node", os.path.join(HERE, "node", "tokenize.js")], input=req.encode(),
                         capture_output=True, check=True)
    return json.loads(res.stdout)


def checksums(stored, dtype):
    """Per tensor: float64 sum and sum of squares of the stored values, and an
    exact position-weighted sum of their bit patterns (mod 2^64)."""
    out = {}
    np_dtype = {"f32": "<f4", "f16": "<f2", "bf16": "<u2"}[dtype]
    bits_dtype = {"f32": "<u4", "f16": "<u2", "bf16": "<u2"}[dtype]
    for name, _, raw in stored:
        if dtype == "bf16":
            bits = np.frombuffer(raw, dtype="<u2")
            values = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            values = np.frombuffer(raw, dtype=np_dtype).astype(np.float64)
            bits = np.frombuffer(raw, dtype=bits_dtype)
        weights = np.arange(len(bits), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        with np.errstate(over="ignore"):
            mixed = int(np.sum(bits.astype(np.uint64) * weights, dtype=np.uint64))
        out[name] = {"count": int(len(bits)), "sum": float(np.sum(values)),
                     "sum_sq": float(np.sum(values * values)), "bits": f"{mixed:016x}"}
    return out


def rounded(t, digits=8):
    """A tensor as nested lists of floats with `digits` significant digits."""
    if t.dim() == 0:
        return float(f"{t.item():.{digits}g}")
    return [rounded(x, digits) for x in t]


def top_k(logits, k, emit):
    """Indices and probabilities of the k best entries among the first
    `emit` (the tokenizer's ids; rows past them pad the vocabulary and are
    never answered, though the softmax runs over every row), plus the logit
    gaps between consecutive ranks 1..k+1 (to reject near-ties)."""
    probs = reference.softmax(logits)
    order = torch.argsort(logits[:emit], descending=True, stable=True)[:k + 1]
    gaps = (logits[order[:-1]] - logits[order[1:]]).tolist()
    return order[:k].tolist(), probs[order[:k]], min(gaps)


def run_reference(model, spec, dtype, tokens, mask_id, report, emit):
    hidden_for = spec["hidden"][dtype]
    outputs = []
    for i, tk in enumerate(tokens):
        h = model.encode(tk["ids"], tk["type_ids"])
        out = {}
        if hidden_for == "all" or i in hidden_for:
            out["hidden"] = rounded(h)
        for mode in ("cls", "mean", "max"):
            out[mode] = rounded(model.pool(h, mode))
        if model.pooling is not None:
            e = model.pool(h, model.pooling)
            out["embedding"] = rounded(model.l2_normalize(e) if model.normalize else e)
        if model.has_pooler():
            out["pooler"] = rounded(model.pooler(h))
        if model.has_discriminator():
            probs = model.replaced_probabilities(h)
            out["replaced"] = rounded(probs)
            report["class_spread"].append(float((probs - 0.5).abs().max()))
        if model.has_classifier():
            logits = model.classifier_logits(h)
            probs = model.class_probabilities(logits)
            out["logits"] = rounded(logits)
            out["probabilities"] = rounded(probs)
            report["class_spread"].append(float((probs - probs.mean()).abs().max())
                                          if probs.numel() > 1 else abs(float(probs) - 0.5))
        if model.has_mlm():
            positions = [t for t, x in enumerate(tk["ids"]) if x == mask_id]
            masks = []
            if positions:
                logits = model.mlm_logits(h[positions])
                for t, row in zip(positions, logits):
                    ids, probs, gap = top_k(row, TOPK, emit)
                    # A padding row that the full vocabulary's top-k would
                    # have answered: proof that the golden checks the limit.
                    report["padding_would_win"] += bool(
                        (torch.argsort(row, descending=True)[:TOPK] >= emit).any())
                    lead = float(row[ids[0]] - row[ids[1]])
                    if lead < TOP1_BF16_GAP:
                        raise SystemExit(f"{spec['name']} {dtype}: input {i} mask at {t}: top-1 "
                                         f"leads by only {lead:.3f}; bf16 compute could flip it; "
                                         f"change the seed or text")
                    if gap < TOPK_LOGIT_GAP:
                        raise SystemExit(f"{spec['name']} {dtype}: input {i} mask at {t}: top-{TOPK} "
                                         f"logits only {gap:.2e} apart; change the seed or text")
                    report["top1"].append(float(probs[0]))
                    report["min_gap"] = min(report["min_gap"], gap)
                    masks.append({"position": t, "top_ids": ids, "top_probs": rounded(probs)})
            out["masks"] = masks
        outputs.append(out)
    return outputs


def bits_equal(bert, o, tok_dir, stored, work):
    """`bert init` must write the same bytes for every tensor."""
    out = os.path.join(work, "c-" + o["dtype"])
    subprocess.run(synth.init_command(o, tok_dir, out, bert), check=True)
    c = reference.read_safetensors(os.path.join(out, "model.safetensors"))
    names = {name for name, _, _ in stored}
    if set(c) != names:
        raise SystemExit(f"bert init wrote tensors {sorted(set(c) ^ names)} differently")
    for name, shape, raw in stored:
        if c[name][1] != list(shape) or c[name][2] != raw:
            raise SystemExit(f"generator drift: tensor {name} differs from bert init's")


def compare(a, b):
    """Reference-to-reference differences (e.g. BF16 weights vs F32 weights)."""
    worst = {"hidden": 0.0, "cos": 1.0, "prob": 0.0, "top1": 0}
    for x, y in zip(a, b):
        if "hidden" in x and "hidden" in y:
            worst["hidden"] = max(worst["hidden"], float(
                (torch.tensor(x["hidden"]) - torch.tensor(y["hidden"])).abs().max()))
        for mode in ("cls", "mean", "max"):
            u, v = torch.tensor(x[mode], dtype=torch.float64), torch.tensor(y[mode], dtype=torch.float64)
            worst["cos"] = min(worst["cos"], float(u @ v / (u.norm() * v.norm())))
            worst["hidden"] = max(worst["hidden"], float((u - v).abs().max()))  # C: same bound
        for m, n in zip(x.get("masks", []), y.get("masks", [])):
            worst["top1"] += m["top_ids"][0] != n["top_ids"][0]
            worst["prob"] = max(worst["prob"], max(abs(p - q) for p, q in
                                                   zip(m["top_probs"], n["top_probs"])))
        if "probabilities" in x:
            worst["prob"] = max(worst["prob"], max(abs(p - q) for p, q in
                                                   zip(x["probabilities"], y["probabilities"])))
    return worst


def find_mask_id(tokenizer_dir):
    """The id of the tokenizer's mask token ([MASK] or <mask>)."""
    tj = os.path.join(tokenizer_dir, "tokenizer.json")
    if os.path.exists(tj):
        with open(tj, encoding="utf-8") as f:
            added = json.load(f)["added_tokens"]
        return next(t["id"] for t in added if t["content"] in ("[MASK]", "<mask>"))
    with open(os.path.join(tokenizer_dir, "vocab.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f].index("[MASK]")


def make(spec, bert, work):
    tok_dir = os.path.join(TOKENIZERS, spec["tokenizer"])
    tokens = tokenize(tok_dir, spec["inputs"])
    vocab = synth.vocab_size(tok_dir)
    mask_id = find_mask_id(tok_dir)
    golden = {
        "format": 1,
        "name": spec["name"],
        "about": spec["about"],
        "tokenizer": spec["tokenizer"],
        "vocab_size": synth.options(spec["init"]).get("vocab-size") or vocab,
        # Every `bert init` option, defaults included, so the C test needs none.
        "init": {k: v for k, v in synth.options(spec["init"]).items() if k != "dtype"},
        "command": " ".join(synth.init_command(synth.options(spec["init"]),
                                                f"tests/data/tokenizer/{spec['tokenizer']}",
                                                "DIR", "build/bin/bert")),
        "inputs": [{"text": t, "pair": p, "ids": k["ids"], "type_ids": k["type_ids"],
                    "tokens": k["tokens"]} for (t, p), k in zip(spec["inputs"], tokens)],
        "variants": [],
    }
    longest = max(len(k["ids"]) for k in tokens)
    report = {"top1": [], "class_spread": [], "min_gap": float("inf"), "padding_would_win": 0}
    for dtype in spec["dtypes"]:
        o = synth.options({**spec["init"], "dtype": dtype})
        folder = os.path.join(work, dtype)
        stored = synth.write_checkpoint(o, tok_dir, folder)
        if bert:
            bits_equal(bert, o, tok_dir, stored, work)
        model = reference.load(folder)
        outputs = run_reference(model, spec, dtype, tokens, mask_id, report, vocab)
        golden["variants"].append({"dtype": dtype, "checksums": checksums(stored, dtype),
                                   "outputs": outputs})
        del model
    text = json.dumps(golden, ensure_ascii=False, separators=(",", ":"))
    family = synth.options(spec["init"])["model-type"] != "bert"
    path = os.path.join(FAMILY_OUT_DIR if family else OUT_DIR, spec["name"] + ".json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    size = os.path.getsize(path)
    msg = f"{spec['name']}: {len(tokens)} inputs, longest {longest} tokens, {size / 1e6:.2f} MB"
    if report["top1"]:
        msg += (f"; MLM top-1 p in [{min(report['top1']):.3f}, {max(report['top1']):.3f}], "
                f"min top-{TOPK} logit gap {report['min_gap']:.3g}")
    if report["class_spread"]:
        msg += (f"; class probabilities' largest distance from uniform "
                f"{min(report['class_spread']):.3f}..{max(report['class_spread']):.3f}")
    print(msg)
    base = golden["variants"][0]["outputs"]
    for v in golden["variants"][1:]:
        w = compare(v["outputs"], base)
        print(f"  {v['dtype']} weights vs f32 (reference): hidden max abs {w['hidden']:.3g}, "
              f"pooled cosine min {w['cos']:.6f}, prob max abs {w['prob']:.3g}")
        bound = LOOSE[v["dtype"]]
        if (w["hidden"] > bound["hidden"] / 1.5 or 1 - w["cos"] > (1 - bound["cos"]) / 1.5
                or w["prob"] > bound["prob"] / 1.5 or w["top1"]):
            raise SystemExit(f"{spec['name']} {v['dtype']}: rounding the weights moves the "
                             f"outputs too close to test_golden.c's loose bounds {bound}")
    padded = synth.options(spec["init"]).get("vocab-size", 0) > vocab
    if padded and report["top1"] and not report["padding_would_win"]:
        raise SystemExit(f"{spec['name']}: no padding row would reach a top-{TOPK}; the golden "
                         f"would not show that padding is never answered")
    if padded:
        print(f"  padding rows in the full vocabulary's top-{TOPK}: "
              f"{report['padding_would_win']} masks")
    if size > FILE_LIMIT:
        raise SystemExit(f"{path}: {size} bytes, over the {FILE_LIMIT} limit")
    if report["top1"] and min(report["top1"]) < 20.0 / vocab:
        raise SystemExit(f"{spec['name']}: MLM probabilities are too flat; widen weight-std")
    spread = report["class_spread"]
    if spread and (max(spread) < 0.1 or sum(spread) / len(spread) < 0.05):
        raise SystemExit(f"{spec['name']}: classifier probabilities too uniform")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bert", help="build/bin/bert: check `bert init` writes the same tensors")
    ap.add_argument("--only", action="append", help="only this checkpoint (repeatable)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    reference.self_check()
    os.makedirs(OUT_DIR, exist_ok=True)
    os.makedirs(FAMILY_OUT_DIR, exist_ok=True)
    if not args.bert:
        print("warning: no --bert; generator not cross-checked against bert init",
              file=sys.stderr)
    for spec in SPECS:
        if args.only and spec["name"] not in args.only:
            continue
        with tempfile.TemporaryDirectory() as work:
            make(spec, args.bert and os.path.abspath(args.bert), work)


if __name__ == "__main__":
    main()
