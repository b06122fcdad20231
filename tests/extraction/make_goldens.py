#!/usr/bin/python3
"""Regenerate tests/data/extraction/golden/*.json: the pipelines' answers on
synthetic token-classification, question-answering and NLI checkpoints.

For every spec below: build the checkpoint (heads.py over tests/golden's
synth.py), get whole encodings from the official Rust tokenizer
(node/encode.js), cut the windows the pipeline feeds the model
(pipelines.py), run the float64 PyTorch reference (tests/golden/reference.py
+ heads.py) on each window, and write the logits and the pipeline's answers
(pipelines.py) for every parameter set. Every string the decoders produced
is checked against the official decoder, and every answer must survive
small noise on the logits unchanged (no near-ties a float32 engine could
flip).

Run from the repository root with Debian's python and Node 20:
    (cd tests/extraction/node && npm ci)
    /usr/bin/python3 tests/extraction/make_goldens.py [--only NAME]
See tests/extraction/README.md.
"""

import argparse
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "golden"))

import conlleval  # noqa: E402
import heads  # noqa: E402
import pipelines as pl  # noqa: E402
import reference  # noqa: E402


def _load_golden_script():
    """tests/golden/make_goldens.py (its checksums), under another name
    than this file's."""
    spec = importlib.util.spec_from_file_location(
        "golden_make_goldens", os.path.join(ROOT, "tests", "golden", "make_goldens.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


base = _load_golden_script()

DATA = os.path.join(ROOT, "tests", "data")
EXTRACTION = os.path.join(DATA, "extraction")
OUT_DIR = os.path.join(EXTRACTION, "golden")
FILE_LIMIT = 2 << 20

# Noise added to the logits when checking that an answer is not a near-tie:
# several times the engine's float32 error on logits (about 1e-5).
NOISE, NOISE_TRIALS = 5e-5, 6

# tokenizer name -> (folder under tests/data, unk token, cls token)
TOKENIZERS = {
    "dslim": ("extraction/dslim-bert-base-NER", "[UNK]", "[CLS]"),
    "minilm": ("tokenizer/minilm", "[UNK]", "[CLS]"),
    "roberta": ("extraction/roberta-large-mnli", "<unk>", "<s>"),
    "xlmr": ("tokenizer/xlmr", "<unk>", "<s>"),
    "modernbert": ("tokenizer/modernbert", "[UNK]", "[CLS]"),
    # The real tokenizer.json files in ../shared/data, beside the repository.
    "mpnet": ("../../../shared/data/all-mpnet-base-v2", "[UNK]", "<s>"),
    "jina": ("../../../shared/data/jina-embeddings-v2-base-en", "[UNK]", "[CLS]"),
}

CONLL_LABELS = "O,B-MISC,I-MISC,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC"  # dslim's order
SPREAD = {"weight-std": 0.15, "bias-range": 0.1, "ln-range": 0.2}
SMALL = {"layers": 2, "hidden": 64, "heads": 2, "intermediate": 128, "max-position": 64}
ROBERTA = {"type-vocab": 1, "max-position": 66}  # positions from pad_token_id + 1
MPNET = {"model-type": "mpnet", "eps": 1e-5, "max-position": 66}  # positions from 2
JINA = {"model-type": "jina_bert"}  # ALiBi: no position table, max-position only bounds
DEBERTA = {"model-type": "deberta-v2", "eps": 1e-7}
# GTE "new" (gte-multilingual-base's rope_theta and NTK factor 8).
GTE = {"model-type": "new", "layers": 2, "hidden": 64, "heads": 2, "intermediate": 96,
       "type-vocab": 1, "max-position": 130, "rope-theta": 20000.0, "ntk-factor": 8.0}
MODERN = {"model-type": "modernbert", "layers": 3, "hidden": 64, "heads": 2, "intermediate": 96,
          "max-position": 64, "eps": 1e-5, "local-window": 16, "global-every": 2}


def conll_texts():
    """Sentences of the CoNLL-2003 test sample as text (tokens joined by
    spaces), and one document of twelve sentences for the windows."""
    sents = conlleval.read_conll(os.path.join(EXTRACTION, "conll2003", "test-head.txt"))
    short = [" ".join(sents[i][0]) for i in (0, 2, 3, 10, 16, 26)]
    return short, " ".join(" ".join(t) for t, _ in sents[22:34])


SHORT, LONG_DOC = conll_texts()
HAND = [
    "Hugging Face Inc. is a company based in New York City. Its headquarters are in DUMBO, "
    "therefore very close to the Manhattan Bridge which is visible from the window.",
    "Z\u00fcrich's Caf\u00e9 M\u00fcnster (Gen\u00e8ve) hosted the \u00c5ngstr\u00f6m-Prize "
    "winners: Dr. \u00c5sa \u00d6berg & Jos\u00e9 N\u00fa\u00f1ez.",
    "I \u2764\ufe0f Paris \U0001F600 and Berlin \u2014 call [SEP] now, na\u00efve fa\u00e7ade, "
    "U.S.-based A.B.C. Corp. (NYSE: ABC) rose 3.5%.",
    "",
]
NER_TEXTS = SHORT + HAND
# The encoder families' specs ("brief": their encoders are checked in depth
# by tests/data/golden-families; here the head and post-processing on top):
# two CoNLL sentences, the hand-written texts, the long document in strided
# windows.
NER_BRIEF_TEXTS = SHORT[:2] + HAND

# Per text: every strategy with the default ignore_labels, and two
# ignore_labels variants. The long document: windows with overlap (stride),
# without (stride 0) and plain truncation.
NER_PARAMS = [{"aggregation_strategy": s} for s in pl.STRATEGIES] + [
    {"aggregation_strategy": "simple", "ignore_labels": []},
    {"aggregation_strategy": "first", "ignore_labels": ["O", "MISC", "B-PER"]},
    {"aggregation_strategy": "none", "ignore_labels": ["O", "B-LOC"]},
]
NER_LONG = [
    ({"stride": 16}, [{"aggregation_strategy": s} for s in pl.STRATEGIES[1:]]),
    ({"stride": 0}, [{"aggregation_strategy": "first"}]),
    ({"truncate": True}, [{"aggregation_strategy": "simple"}, {"aggregation_strategy": "none"}]),
]


def squad_cases():
    """(question, context) pairs from the SQuAD v1.1 dev sample: the first
    two questions of each paragraph."""
    with open(os.path.join(EXTRACTION, "squad-v1.1-dev-sample.json"), encoding="utf-8") as f:
        squad = json.load(f)
    out = []
    for art in squad["data"]:
        for par in art["paragraphs"]:
            for qa in par["qas"][:2]:
                out.append((qa["question"], par["context"]))
    return out


QA_PAIRS = squad_cases() + [
    ("Who hosted the winners?", HAND[1]),
    ("Where is the company based?", HAND[0]),
    # A special token typed in the context ([SEP]) is a word of its own.
    ("What rose?", HAND[2] + " " + HAND[0]),
]
# The families' brief specs: two SQuAD pairs and the hand-written ones.
QA_BRIEF_PAIRS = QA_PAIRS[:2] + QA_PAIRS[-3:]
# Post-processing variants on every pair; window variants on a few.
QA_PARAMS = [{}, {"top_k": 3}, {"handle_impossible_answer": True},
             {"align_to_words": False, "top_k": 2}, {"max_answer_len": 4, "top_k": 2}]
QA_WINDOWS = [{"doc_stride": 16}, {"max_seq_len": 48, "doc_stride": 20}]
# Contexts of a few tokens: [CLS] holds a large share of the softmax, so the
# impossible answer can win.
QA_SHORT = [("Who?", "Paris."), ("What is it?", "A black cat"), ("Where?", "In Z\u00fcrich.")]
QA_SHORT_PARAMS = [{}, {"handle_impossible_answer": True},
                   {"handle_impossible_answer": True, "align_to_words": False, "top_k": 2}]
# [CLS] typed in the question and the context: every [CLS]-id token may
# start or end a span, and one from the question slices the context at its
# offset into the question (a span past the context or running backwards
# is sliced as Python does). Enough answers that such spans are among them;
# its own small spec (bert-qa-cls).
QA_CLS = ("Who is [CLS]?", "A black [CLS] cat sat")
QA_CLS_PARAMS = [{"top_k": 21, "align_to_words": False}, {"top_k": 12}]


def nli_premises():
    with open(os.path.join(EXTRACTION, "mnli_dev_matched-head.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    return [r["premise"] for r in rows[:5]]


ZS_CASES = [(p, ["politics", "economy", "entertainment", "travel"], None)
            for p in nli_premises()] + [
    (HAND[0], "technology, travel ,  , sports", None),
    (HAND[2], ["news"], None),
    (SHORT[3], ["sports", "politics", "science"], "The topic of this text is {}."),
    (LONG_DOC, ["sports", "politics"], "{}"),  # premise truncated to fit
]
ZS_PARAMS = [{}, {"multi_label": True}]


def ner_spec(name, about, tokenizer, init, brief=False):
    return {"name": name, "task": "token-classification", "about": about,
            "tokenizer": tokenizer, "init": {**init, "token-classification": True},
            "brief": brief}


def qa_spec(name, about, tokenizer, init, brief=False, cls_only=False):
    return {"name": name, "task": "question-answering", "about": about, "tokenizer": tokenizer,
            "init": {**init, "question-answering": True}, "brief": brief, "cls_only": cls_only}


def zs_spec(name, about, tokenizer, init):
    return {"name": name, "task": "zero-shot-classification", "about": about,
            "tokenizer": tokenizer, "init": init}


SPECS = [
    ner_spec("bert-ner", "BertForTokenClassification L=2 H=64, dslim/bert-base-NER's cased "
             "tokenizer and 9 CoNLL labels", "dslim",
             {**SMALL, **SPREAD, "seed": 2120, "prefix": True, "labels": CONLL_LABELS}),
    ner_spec("distilbert-ner", "DistilBertForTokenClassification L=2 H=64, uncased WordPiece",
             "minilm", {**SMALL, **SPREAD, "model-type": "distilbert", "seed": 2106,
                        "prefix": True, "labels": CONLL_LABELS}),
    ner_spec("roberta-ner", "RobertaForTokenClassification L=2 H=64, roberta-large-mnli's "
             "byte-level BPE (no word-aware prefix: the whitespace heuristic)", "roberta",
             {**SMALL, **SPREAD, **ROBERTA, "model-type": "roberta", "seed": 2109,
              "prefix": True, "labels": CONLL_LABELS}),
    ner_spec("xlmr-ner", "XLMRobertaForTokenClassification L=2 H=64, Unigram + Metaspace "
             "decoder, labels without B-/I- prefixes", "xlmr",
             {**SMALL, **SPREAD, **ROBERTA, "model-type": "xlm-roberta", "seed": 2104,
              "prefix": True, "labels": "O,PER,ORG,LOC", "max-position": 130}),
    ner_spec("electra-ner", "ElectraForTokenClassification L=2 H=64 embedding_size 32, cased "
             "WordPiece", "dslim",
             {**SMALL, **SPREAD, "model-type": "electra", "embedding-size": 32, "seed": 2103,
              "prefix": True, "labels": CONLL_LABELS}),
    ner_spec("modernbert-ner", "ModernBertForTokenClassification L=3 H=64, prediction head "
             "before the classifier, byte-level BPE", "modernbert",
             {**MODERN, **SPREAD, "seed": 2102, "prefix": True, "labels": CONLL_LABELS}),
    ner_spec("mpnet-ner", "MPNetForTokenClassification L=2 H=64 (relative position bias, "
             "positions from 2), all-mpnet-base-v2's tokenizer", "mpnet",
             {**SMALL, **SPREAD, **MPNET, "seed": 2131, "prefix": True,
              "labels": CONLL_LABELS}, brief=True),
    ner_spec("jina-ner", "JinaBertForTokenClassification L=2 H=64 (ALiBi, GeGLU), "
             "jina-embeddings-v2-base-en's tokenizer", "jina",
             {**SMALL, **SPREAD, **JINA, "seed": 2132, "prefix": True,
              "labels": CONLL_LABELS}, brief=True),
    qa_spec("mpnet-qa", "MPNetForQuestionAnswering L=2 H=64, <s> q </s></s> c </s>", "mpnet",
            {**SMALL, **SPREAD, **MPNET, "seed": 2133, "prefix": True}, brief=True),
    qa_spec("jina-qa", "JinaBertForQuestionAnswering L=2 H=64 (ALiBi, GeGLU)", "jina",
            {**SMALL, **SPREAD, **JINA, "seed": 2134, "prefix": True}, brief=True),
    ner_spec("gte-ner", "NewForTokenClassification L=2 H=64 (GTE: NTK RoPE, GLU), the "
             "XLM-R Unigram tokenizer gte-multilingual-base uses", "xlmr",
             {**GTE, **SPREAD, "seed": 2131, "prefix": True, "labels": "O,PER,ORG,LOC"}, brief=True),
    qa_spec("gte-qa", "NewForQuestionAnswering L=2 H=64 (GTE), <s> q </s></s> c </s>", "xlmr",
            {**GTE, **SPREAD, "seed": 2132, "prefix": True}, brief=True),
    qa_spec("bert-qa", "BertForQuestionAnswering L=2 H=64, uncased WordPiece", "minilm",
            {**SMALL, **SPREAD, "seed": 2111, "prefix": True}),
    qa_spec("bert-qa-cls", "bert-qa's model on [CLS] typed in the question and the context",
            "minilm", {**SMALL, **SPREAD, "seed": 2111, "prefix": True}, cls_only=True),
    qa_spec("distilbert-qa", "DistilBertForQuestionAnswering L=2 H=64 (the "
            "distilbert-base-uncased-distilled-squad family)", "minilm",
            {**SMALL, **SPREAD, "model-type": "distilbert", "seed": 2112, "prefix": True}),
    qa_spec("roberta-qa", "RobertaForQuestionAnswering L=2 H=64, <s> q </s></s> c </s>",
            "roberta", {**SMALL, **SPREAD, **ROBERTA, "model-type": "roberta", "seed": 2113,
                        "prefix": True}),
    qa_spec("electra-qa", "ElectraForQuestionAnswering L=2 H=64 embedding_size 32", "minilm",
            {**SMALL, **SPREAD, "model-type": "electra", "embedding-size": 32, "seed": 2114,
             "prefix": True}),
    qa_spec("modernbert-qa", "ModernBertForQuestionAnswering L=3 H=64 (head + classifier)",
            "modernbert", {**MODERN, **SPREAD, "seed": 2115, "prefix": True}),
    ner_spec("deberta-ner", "DebertaV2ForTokenClassification L=2 H=64, disentangled attention, "
             "uncased WordPiece standing in for DeBERTa's Unigram", "minilm",
             {**SMALL, **SPREAD, **DEBERTA, "seed": 2130, "prefix": True,
              "labels": CONLL_LABELS}, brief=True),
    qa_spec("deberta-qa", "DebertaV2ForQuestionAnswering L=2 H=64 (deberta-v3-base's config "
            "names this head)", "minilm", {**SMALL, **SPREAD, **DEBERTA, "seed": 2131,
                                          "prefix": True}, brief=True),
    zs_spec("deberta-nli", "DebertaV2ForSequenceClassification L=2 H=64: ContextPooler (gelu) + "
            "classifier, entailment 0 as the NLI DeBERTa-v3 checkpoints", "minilm",
            {**SMALL, **SPREAD, **DEBERTA, "seed": 2132, "prefix": True,
             "labels": "entailment,neutral,contradiction"}),
    zs_spec("roberta-nli", "RobertaForSequenceClassification L=2 H=64 with roberta-large-mnli's "
            "labels (entailment 2, contradiction 0)", "roberta",
            {**SMALL, **SPREAD, **ROBERTA, "model-type": "roberta", "seed": 2121, "prefix": True,
             "labels": "CONTRADICTION,NEUTRAL,ENTAILMENT"}),
    zs_spec("bert-nli", "BertForSequenceClassification L=2 H=64, entailment first (so "
            "contradiction is the last class)", "minilm",
            {**SMALL, **SPREAD, "seed": 2126, "prefix": True,
             "labels": "entailment,neutral,contradiction"}),
    zs_spec("distilbert-nli", "DistilBertForSequenceClassification L=2 H=64, entailment 1 "
            "(class 0 taken as contradiction whatever its name)", "minilm",
            {**SMALL, **SPREAD, "model-type": "distilbert", "seed": 2123, "prefix": True,
             "labels": "neutral,Entailment,contradiction"}),
    zs_spec("electra-nli", "ElectraForSequenceClassification L=2 H=64, two classes "
            "(ENTAILMENT, NOT_ENTAILMENT)", "minilm",
            {**SMALL, **SPREAD, "model-type": "electra", "seed": 2124, "prefix": True,
             "labels": "ENTAILMENT,NOT_ENTAILMENT"}),
    zs_spec("modernbert-nli", "ModernBertForSequenceClassification L=3 H=64", "modernbert",
            {**MODERN, **SPREAD, "seed": 2125, "prefix": True,
             "labels": "contradiction,entailment,neutral"}),
]


# ------------------------------------------------------------------ helpers


def node_encode(tokenizer_json, inputs, decode=()):
    req = json.dumps({"tokenizer": tokenizer_json, "inputs": [list(p) for p in inputs],
                      "decode": [list(t) for t in decode]})
    res = subprocess.run(["node", os.path.join(HERE, "node", "encode.js")], input=req.encode(),
                         capture_output=True, check=True)
    return json.loads(res.stdout)


class RecordingDecoder:
    """Wraps a Decoder, remembering every token list it decoded."""

    def __init__(self, inner):
        self.inner, self.calls = inner, {}

    def decode(self, tokens):
        out = self.inner.decode(tokens)
        self.calls[tuple(tokens)] = out
        return out


def model_max_length(tok_dir, cfg):
    """tokenizer_config.json's model_max_length narrowed to the positions the
    checkpoint has (max_position_embeddings, less RoBERTa's offset)."""
    limit = cfg.get("max_position_embeddings", cfg.get("max_position_embeddings"))
    if cfg.get("model_type") in ("roberta", "xlm-roberta", "camembert", "mpnet"):
        limit -= cfg.get("pad_token_id", 1) + 1
    path = os.path.join(tok_dir, "tokenizer_config.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            mml = json.load(f).get("model_max_length")
        if isinstance(mml, int) and 0 < mml < limit:
            limit = mml
    return limit


class Runner:
    """The reference model of one checkpoint, with a cache per window."""

    def __init__(self, folder, task):
        self.model = reference.load(folder)
        self.task = task
        self.cache = {}

    def logits(self, enc, idx):
        key = tuple(enc["ids"][i] for i in idx)
        if key not in self.cache:
            ids = [enc["ids"][i] for i in idx]
            types = [enc["type_ids"][i] for i in idx]
            with torch.no_grad():
                h = self.model.encode(ids, types)
                if self.task == "token-classification":
                    out = heads.token_logits(self.model, h)
                elif self.task == "question-answering":
                    out = heads.qa_logits(self.model, h)
                else:
                    out = heads.nli_logits(self.model, h)[None, :]
            self.cache[key] = out.tolist()
        return self.cache[key]


def strip_scores(x):
    """An answer without its scores (what must not move under noise)."""
    if isinstance(x, list):
        return [strip_scores(v) for v in x]
    if isinstance(x, dict):
        return {k: strip_scores(v) for k, v in x.items() if k not in ("score", "scores")}
    return x


def check_stable(name, fn, logits, answer, rng):
    """fn(logits) must give the same answer, scores aside, with the logits
    moved by up to NOISE: no label, span, grouping or order decided by a
    near-tie."""
    want = strip_scores(answer)
    for _ in range(NOISE_TRIALS):
        noisy = [[[v + rng.uniform(-NOISE, NOISE) for v in row] for row in win] for win in logits]
        if strip_scores(fn(noisy)) != want:
            raise SystemExit(f"{name}: a near-tie: noise of {NOISE} on the logits changes the "
                             f"answer; change the seed or the input")


def window_json(enc, idx, extra=()):
    """A window as the golden stores it: ids and type ids, and the
    character offsets / word ids the post-processing read (specials have
    offsets [0, 0] and word id null)."""
    keys = ("ids", "type_ids") + tuple(extra)
    return {k: [enc[k][i] for i in idx] for k in keys}


def rounded_logits(logits):
    return [[[float(f"{v:.9g}") for v in row] for row in win] for win in logits]


def json_scores(x, digits=10):
    """Answers with scores rounded to `digits` significant digits."""
    if isinstance(x, list):
        return [json_scores(v, digits) for v in x]
    if isinstance(x, dict):
        return {k: (float(f"{v:.{digits}g}") if k == "score" else
                    [float(f"{s:.{digits}g}") for s in v] if k == "scores" else json_scores(v))
                for k, v in x.items()}
    return x


# -------------------------------------------------------------------- tasks


def ner_cases(spec, runner, tok, cfg, mml, rng, stats):
    id2label = [cfg["id2label"][str(i)] for i in range(len(cfg["id2label"]))]
    texts, long = (NER_BRIEF_TEXTS, NER_LONG[:1]) if spec.get("brief") else (NER_TEXTS, NER_LONG)
    jobs = [(t, {}, NER_PARAMS) for t in texts] + [(LONG_DOC, w, p) for w, p in long]
    encs = node_encode(spec["tokenizer_json"], [(t, None) for t, _, _ in jobs])["encodings"]
    cases = []
    for (text, wparams, plist), enc in zip(jobs, encs):
        windows = pl.split_windows(enc, 0, mml, wparams.get("stride"))
        if len(enc["ids"]) > mml and not wparams:
            raise SystemExit(f"{spec['name']}: {text[:40]!r} needs windows; shorten it")
        logits = [runner.logits(enc, w) for w in windows]
        results = []
        for p in plist:
            def run(lg, p=p):
                return pl.token_classification(text, enc, windows, lg, id2label, tok,
                                               p["aggregation_strategy"], p.get("ignore_labels"))
            answer = run(logits)
            check_stable(f"{spec['name']} {text[:30]!r} {p}", run, logits, answer, rng)
            results.append({"parameters": {**wparams, **p}, "output": json_scores(answer)})
            stats["entities"] += len(answer)
        stats["windows"] += len(windows)
        cases.append({"inputs": text, "parameters": wparams,
                      "windows": [window_json(enc, w, ("offsets",)) for w in windows],
                      "logits": rounded_logits(logits), "results": results})
    return cases


def qa_cases(spec, runner, tok, cfg, mml, rng, stats):
    cls_id = tok.ids[spec["cls_token"]]
    pairs, windows = (QA_BRIEF_PAIRS, QA_WINDOWS[:1]) if spec.get("brief") else (QA_PAIRS,
                                                                                  QA_WINDOWS)
    jobs = [(q, c, {}, QA_PARAMS) for q, c in pairs]
    jobs += [(q, c, w, QA_PARAMS) for w in windows for q, c in pairs[:3]]
    jobs += [(q, c, {}, QA_SHORT_PARAMS) for q, c in QA_SHORT]
    if spec.get("cls_only"):
        jobs = [(*QA_CLS, {}, QA_CLS_PARAMS)]
    encs = node_encode(spec["tokenizer_json"], [(q, c) for q, c, _, _ in jobs])["encodings"]
    cases = []
    for (question, context, wparams, plist), enc in zip(jobs, encs):
        max_seq_len, doc_stride = pl.qa_defaults(mml, wparams.get("max_seq_len"),
                                                 wparams.get("doc_stride"))
        windows = pl.qa_windows(enc, max_seq_len, doc_stride)
        logits = [runner.logits(enc, w) for w in windows]
        results = []
        for p in plist:
            def run(lg, p=p):
                return pl.question_answering(context, enc, windows, lg, cls_id, **p)
            answer = run(logits)
            stats["null answers"] += sum(a["answer"] == "" for a in
                                     (answer if isinstance(answer, list) else [answer]))
            check_stable(f"{spec['name']} {question!r} {wparams} {p}", run, logits, answer, rng)
            results.append({"parameters": {**wparams, **p}, "output": json_scores(answer)})
        stats["windows"] += len(windows)
        cases.append({"inputs": {"question": question, "context": context},
                      "parameters": wparams,
                      "windows": [window_json(enc, w, ("offsets", "word_ids", "sequence_ids"))
                                  for w in windows],
                      "logits": rounded_logits(logits), "results": results})
    return cases


def zs_cases(spec, runner, tok, cfg, mml, rng, stats):
    del tok
    entail = pl.entailment_id(cfg)
    if entail < 0:
        raise SystemExit(f"{spec['name']}: no entailment label")
    cases = []
    for sequence, labels_in, template in ZS_CASES:
        labels = pl.parse_labels(labels_in)
        hyps = pl.hypotheses(labels, template or pl.DEFAULT_TEMPLATE)
        encs = node_encode(spec["tokenizer_json"], [(sequence, h) for h in hyps])["encodings"]
        windows = [pl.zs_truncate(enc, mml) for enc in encs]
        stats["truncated"] += sum(len(w) < len(e["ids"]) for w, e in zip(windows, encs))
        # One window per hypothesis; logits (n_labels, classes).
        logits = [runner.logits(enc, w) for enc, w in zip(encs, windows)]
        results = []
        for p in ZS_PARAMS:
            def run(lg, p=p):
                return pl.zero_shot(sequence, labels, [w[0] for w in lg], entail, **p)
            answer = run(logits)
            check_stable(f"{spec['name']} {sequence[:30]!r} {p}", run, logits, answer, rng)
            results.append({"parameters": p, "output": json_scores(answer)})
        params = {"candidate_labels": labels_in}
        if template:
            params["hypothesis_template"] = template
        stats["windows"] += len(windows)
        cases.append({"inputs": sequence, "parameters": params,
                      "windows": [window_json(e, w) for e, w in zip(encs, windows)],
                      "logits": rounded_logits(logits), "results": results})
    return cases


TASKS = {"token-classification": ner_cases, "question-answering": qa_cases,
         "zero-shot-classification": zs_cases}


def check_decoders(spec, recorder):
    """Every token list the pipelines decoded, against the official decoder."""
    calls = list(recorder.calls.items())
    got = node_encode(spec["tokenizer_json"], [], [t for t, _ in calls])["decoded"]
    bad = [(t, ours, theirs) for (t, ours), theirs in zip(calls, got) if ours != theirs]
    if bad:
        raise SystemExit(f"{spec['name']}: decoder differs from tokenizers' on {bad[:3]}")
    return len(calls)


def make(spec, work):
    tok_rel, unk, cls = TOKENIZERS[spec["tokenizer"]]
    tok_dir = os.path.join(DATA, tok_rel)
    spec["tokenizer_json"] = os.path.join(tok_dir, "tokenizer.json")
    spec["cls_token"] = cls
    o = heads.options(spec["init"])
    stored = heads.write_checkpoint(o, tok_dir, work)
    with open(os.path.join(work, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    with open(spec["tokenizer_json"], encoding="utf-8") as f:
        tok = pl.TokenizerInfo(json.load(f), unk)
    recorder = RecordingDecoder(tok.decoder)
    tok.decoder = recorder
    mml = model_max_length(tok_dir, cfg)
    runner = Runner(work, spec["task"])
    stats = {"windows": 0, "entities": 0, "truncated": 0, "null answers": 0}
    rng = random.Random(21)
    cases = TASKS[spec["task"]](spec, runner, tok, cfg, mml, rng, stats)
    decoded = check_decoders(spec, recorder)
    golden = {
        "format": 1, "name": spec["name"], "task": spec["task"], "about": spec["about"],
        "tokenizer": tok_rel, "model_max_length": mml,
        "init": {k: v for k, v in o.items() if k != "dtype"},
        "command": " ".join(heads.init_command(o, f"tests/data/{tok_rel}", "DIR")),
        "checksums": base.checksums(stored, "f32"),
        "cases": cases,
    }
    path = os.path.join(OUT_DIR, spec["name"] + ".json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(golden, ensure_ascii=False, separators=(",", ":")) + "\n")
    size = os.path.getsize(path)
    print(f"{spec['name']}: {len(cases)} inputs, {stats['windows']} windows, "
          f"{sum(len(c['results']) for c in cases)} answers, {stats['entities']} entities, "
          f"{stats['null answers']} impossible answers shown, "
          f"{stats['truncated']} truncated pairs, {decoded} decodes checked, "
          f"model_max_length {mml}, {size / 1e6:.2f} MB")
    if size > FILE_LIMIT:
        raise SystemExit(f"{path}: {size} bytes, over the {FILE_LIMIT} limit")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", help="only this spec (repeatable)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    reference.self_check()
    os.makedirs(OUT_DIR, exist_ok=True)
    for spec in SPECS:
        if args.only and spec["name"] not in args.only:
            continue
        with tempfile.TemporaryDirectory() as work:
            make(spec, work)


if __name__ == "__main__":
    main()
