"""The other encoder families and reranking over real HTTP.

For each family (DistilBERT, RoBERTa, XLM-R, ELECTRA with an embedding
projection, ModernBERT, and a BERT cross-encoder) a small checkpoint made by `bert init
--model-type ...` is served, and every route it supports is checked: results
equal the `bert` CLI's, /rerank and /v1/rerank order equals sorting the
classifier's scores, /info names the family and its capabilities, routes the
checkpoint cannot serve answer 422 naming why; ModernBERT also takes a
4,096-token input end to end; an ELECTRA discriminator serves
/replaced-tokens; MPNet, NomicBERT, JinaBERT, DeBERTa-v3 and GTE also load their real
checkpoints' config.json (../shared/data). An unsupported model_type or family variant fails
start-up naming config.json and the value.

usage: test_arch.py BIN_DIR TOKENIZER_ROOT
"""
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import unittest

from harness import Server, cli, close_floats

BIN, TOKENIZERS = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="bert-arch-", dir=os.environ.get("TMPDIR"))

QUERY = "Where is the Eiffel Tower?"
DOCS = ["Bananas are rich in potassium.", "The Eiffel Tower is in Paris, France.",
        "How old are you?", "Paris is the capital of France.", "The tower is 330 metres tall."]


def init(name, tokenizer, *flags):
    """`bert init` a checkpoint into WORK/name; returns its folder."""
    out = os.path.join(WORK, name)
    subprocess.run([os.path.join(BIN, "bert"), "init", "--out", out, "--tokenizer",
                    os.path.join(TOKENIZERS, tokenizer), "--layers", "2", "--hidden", "64",
                    "--heads", "2", "--intermediate", "128", "--weight-std", "0.1",
                    "--bias-range", "0.05", "--ln-range", "0.1", "--prefix"] + list(flags),
                   check=True, capture_output=True, timeout=120)
    return out


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


class Family:
    """Checks shared by every family's server; mixed into a TestCase."""

    family = None       # /info "family"
    model_type = None
    mask = "[MASK]"
    tokenizer = "minilm"
    flags = ()
    server_flags = ()

    init_type = None    # `bert init --model-type`, when not model_type

    @classmethod
    def setUpClass(cls):
        cls.model = init(cls.__name__, cls.tokenizer, "--model-type",
                         cls.init_type or cls.model_type, "--mlm", "--labels", "LABEL_0",
                         *cls.flags)
        cls.s = Server(BIN, cls.model, flags=cls.server_flags)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def same_as_cli(self, route, body, tol=1e-5):
        status, _, got = self.s.post("/" + route, body)
        self.assertEqual(status, 200, got)
        rc, want = cli(BIN, route, self.model, body)
        self.assertEqual(rc, 0)
        self.assertTrue(close_floats(got, want, tol), "%s vs %s" % (got, want))
        return got

    def test_info(self):
        status, info = self.s.get_json("/info")
        self.assertEqual(status, 200)
        self.assertEqual(info["model"]["model_type"], self.model_type)
        self.assertEqual(info["model"]["family"], self.family)
        self.assertEqual(sorted(info["model"]["capabilities"]),
                         ["classify", "embed", "fill-mask", "rerank", "score", "tokenize"])

    def test_embed_and_tokenize(self):
        got = self.same_as_cli("embed", {"inputs": ["Hello world!", "Zürich, 東京."]})
        self.assertEqual(len(got), 2)
        self.assertEqual(len(got[0]), 64)
        self.same_as_cli("embed", {"inputs": "Hello world!", "pooling": "cls"})
        toks = self.same_as_cli("tokenize", {"inputs": [["a question", "an answer"]]})
        self.assertTrue(toks[0][0]["special"] and toks[0][-1]["special"])

    def test_fill_mask(self):
        got = self.same_as_cli("fill-mask", {"inputs": "Paris is the %s of France." % self.mask})
        self.assertEqual(len(got), 5)
        scores = [p["score"] for p in got]
        self.assertEqual(scores, sorted(scores, reverse=True))

    def classify_scores(self, docs):
        status, _, got = self.s.post("/classify", {"inputs": [[QUERY, d] for d in docs],
                                                   "raw_scores": True})
        self.assertEqual(status, 200, got)
        return [x[0]["score"] for x in got]

    def test_rerank_orders_like_the_classifier(self):
        logits = self.classify_scores(DOCS)
        want = sorted(range(len(DOCS)), key=lambda i: (-logits[i], i))
        got = self.same_as_cli("rerank", {"query": QUERY, "texts": DOCS})
        self.assertEqual([r["index"] for r in got], want)
        for r in got:
            self.assertEqual(set(r), {"index", "score"})
            self.assertAlmostEqual(r["score"], sigmoid(logits[r["index"]]), places=5)
        raw = self.same_as_cli("rerank", {"query": QUERY, "texts": DOCS, "raw_scores": True,
                                          "return_text": True, "top_n": 2})
        self.assertEqual([r["index"] for r in raw], want[:2])
        for r in raw:
            self.assertAlmostEqual(r["score"], logits[r["index"]], places=5)
            self.assertEqual(r["text"], DOCS[r["index"]])

    def test_v1_rerank(self):
        logits = self.classify_scores(DOCS)
        want = sorted(range(len(DOCS)), key=lambda i: (-logits[i], i))
        docs = [d if i % 2 else {"text": d} for i, d in enumerate(DOCS)]
        status, _, got = self.s.post("/v1/rerank", {"model": "m", "query": QUERY,
                                                    "documents": docs, "top_n": 3,
                                                    "return_documents": True})
        self.assertEqual(status, 200, got)
        self.assertEqual(set(got), {"id", "model", "results", "usage", "meta"})
        self.assertEqual(got["meta"]["api_version"], {"version": "1"})
        self.assertEqual(got["model"], os.path.basename(self.model))  # the served name
        self.assertEqual([r["index"] for r in got["results"]], want[:3])
        for r in got["results"]:
            self.assertAlmostEqual(r["relevance_score"], sigmoid(logits[r["index"]]), places=5)
            self.assertEqual(r["document"], {"text": DOCS[r["index"]]})
        self.assertGreater(got["usage"]["total_tokens"], 0)
        # vLLM's /rerank is Jina's shape: "documents" on TEI's path answers as /v1/rerank.
        status, _, vllm = self.s.post("/rerank", {"model": "m", "query": QUERY,
                                                  "documents": docs, "top_n": 3,
                                                  "return_documents": True})
        self.assertEqual(status, 200, vllm)
        del vllm["id"], got["id"]
        self.assertEqual(vllm, got)
        status, _, err = self.s.post("/rerank", {"query": QUERY, "documents": DOCS,
                                                 "raw_scores": True})
        self.assertEqual(status, 422, err)
        self.assertIn('unknown field "raw_scores"; accepted: "documents"', err["error"])

    def test_cohere_fields(self):
        """Cohere v1 rank_fields (the fields as "name: value" lines, in order)
        and max_chunks_per_doc (the best chunk), v2 max_tokens_per_doc (the
        document's first tokens): scores equal /classify's on those texts."""
        docs = [{"title": "Paris", "text": d, "id": i} for i, d in enumerate(DOCS)]
        status, _, got = self.s.post("/v1/rerank", {"query": QUERY, "documents": docs,
                                                    "rank_fields": ["title", "text"],
                                                    "return_documents": True})
        self.assertEqual(status, 200, got)
        logits = self.classify_scores(["title: Paris\ntext: " + d for d in DOCS])
        for r in got["results"]:
            self.assertAlmostEqual(r["relevance_score"], sigmoid(logits[r["index"]]), places=5)
            self.assertEqual(r["document"], docs[r["index"]])
        status, _, v2 = self.s.post("/v2/rerank", {"model": "x", "query": QUERY, "documents": DOCS,
                                                   "top_n": 2, "max_tokens_per_doc": 4})
        self.assertEqual(status, 200, v2)
        self.assertEqual(v2["meta"]["api_version"], {"version": "2"})
        status, _, toks = self.s.post("/tokenize", {"inputs": DOCS, "add_special_tokens": False})
        cut = [d[:t[3]["stop"]] if len(t) > 4 else d for d, t in zip(DOCS, toks)]
        logits = self.classify_scores(cut)
        want = sorted(range(len(DOCS)), key=lambda i: (-logits[i], i))[:2]
        self.assertEqual([r["index"] for r in v2["results"]], want)
        for r in v2["results"]:
            self.assertAlmostEqual(r["relevance_score"], sigmoid(logits[r["index"]]), places=5)
        # A document longer than the model: chunks of its tokens, the best
        # one. With the WordPiece tokenizer "paris" and "cat" are one token
        # each, so chunks are runs of words.
        status, info = self.s.get_json("/info")
        limit = info["model"]["max_input_tokens"]
        words = ["cat"] * (limit + 40) + ["paris"] * 40
        long_doc = " ".join(words)
        status, _, err = self.s.post("/v1/rerank", {"query": QUERY, "documents": [long_doc]})
        self.assertEqual(status, 413, err)
        status, _, got = self.s.post("/v1/rerank", {"query": QUERY, "documents": [long_doc, "x"],
                                                    "max_chunks_per_doc": 3})
        self.assertEqual(status, 200, got)
        if info["model"]["family"] != "bert":
            return
        status, _, pair = self.s.post("/tokenize", {"inputs": [[QUERY, "x"]]})
        room = limit - (len(pair[0]) - 1)
        chunks = [" ".join(words[k:k + room]) for k in range(0, len(words), room)]
        self.assertEqual(len(chunks), 2)
        best = max(sigmoid(x) for x in self.classify_scores(chunks))
        score = {r["index"]: r["relevance_score"] for r in got["results"]}
        self.assertAlmostEqual(score[0], best, places=5)
        status, _, one = self.s.post("/v1/rerank", {"query": QUERY, "documents": [long_doc],
                                                    "max_chunks_per_doc": 1})
        self.assertAlmostEqual(one["results"][0]["relevance_score"],
                               sigmoid(self.classify_scores(chunks[:1])[0]), places=5)

    def test_rerank_errors(self):
        for path, body, needle in [
                ("/rerank", {"texts": DOCS}, 'missing field "query"'),
                ("/rerank", {"query": QUERY}, 'missing field "texts"'),
                ("/rerank", {"query": QUERY, "texts": "one"}, '"texts" must be a list'),
                ("/rerank", {"query": QUERY, "texts": []}, "must not be an empty list"),
                ("/rerank", {"query": 3, "texts": DOCS}, '"query" must be a string'),
                ("/rerank", {"query": QUERY, "texts": DOCS, "top_n": 0}, '"top_n" must be'),
                ("/rerank", {"query": QUERY, "texts": DOCS, "documents": DOCS},
                 'unknown field "documents"'),
                ("/v1/rerank", {"query": QUERY, "documents": [{"txt": "x"}]},
                 '"documents[0]" must be a string or an object'),
                ("/v1/rerank", {"query": QUERY, "documents": DOCS, "raw_scores": True},
                 'unknown field "raw_scores"')]:
            status, _, got = self.s.post(path, body)
            self.assertEqual(status, 422, (path, body, got))
            self.assertEqual(got["error_type"], "validation")
            self.assertIn(needle, got["error"])


    def test_score(self):
        """vLLM's /score: each pair's sigmoid(logit), in pair order, as /classify of the pairs."""
        logits = self.classify_scores(DOCS)
        body = {"model": "m", "text_1": QUERY, "text_2": DOCS}
        status, _, got = self.s.post("/score", body)
        self.assertEqual(status, 200, got)
        rc, offline = cli(BIN, "score", self.model, body)
        self.assertEqual(rc, 0)
        self.assertTrue(close_floats(got["data"], offline["data"], 1e-5), offline)
        self.assertEqual(set(got), {"id", "object", "created", "model", "data", "usage"})
        self.assertEqual((got["object"], got["model"]), ("list", os.path.basename(self.model)))
        self.assertTrue(got["id"].startswith("score-"), got["id"])
        self.assertLess(abs(got["created"] - time.time()), 300)
        self.assertEqual([d["index"] for d in got["data"]], list(range(len(DOCS))))
        for d in got["data"]:
            self.assertEqual(d["object"], "score")
            self.assertAlmostEqual(d["score"], sigmoid(logits[d["index"]]), places=5)
        status, _, tok = self.s.post("/tokenize", {"inputs": [[QUERY, d] for d in DOCS]})
        n_tokens = sum(len(t) for t in tok)
        self.assertEqual(got["usage"], {"prompt_tokens": n_tokens, "total_tokens": n_tokens,
                                        "completion_tokens": 0, "prompt_tokens_details": None})
        # N:N under vLLM's other spellings, raw logits with use_activation false.
        queries = [QUERY, "How tall is it?", "What is a banana?"]
        pairs = list(zip(queries, DOCS[:3]))
        status, _, cls = self.s.post("/classify", {"inputs": [list(p) for p in pairs],
                                                   "raw_scores": True})
        want = [x[0]["score"] for x in cls]
        for first, second in (("queries", "documents"), ("queries", "items"),
                              ("data_1", "data_2")):
            status, _, got = self.s.post("/v1/score", {first: queries, second: DOCS[:3],
                                                       "use_activation": False})
            self.assertEqual(status, 200, got)
            self.assertTrue(close_floats([d["score"] for d in got["data"]], want, 1e-5))
        # One pair as two strings.
        status, _, one = self.s.post("/score", {"text_1": QUERY, "text_2": DOCS[1]})
        self.assertEqual([d["index"] for d in one["data"]], [0])
        self.assertAlmostEqual(one["data"][0]["score"], sigmoid(logits[1]), places=5)


class ScoreDetails:
    """/score's truncation and refusals: the same code for every family, so
    run on two (BERT's three specials in a pair, RoBERTa's four)."""

    def test_score_truncation(self):
        long_doc = " ".join(["The tower is 330 metres tall."] * 200)
        status, _, err = self.s.post("/score", {"text_1": QUERY, "text_2": ["x", long_doc]})
        self.assertEqual(status, 413, err)
        self.assertEqual(err["error"]["code"], "payload_too_large")
        self.assertRegex(err["error"]["message"],
                         r'^the pair text_1\[0\], text_2\[1\] is \d+ tokens long, more than '
                         r'the limit of \d+; send "truncate_prompt_tokens": -1 to cut it$')
        for n in (-1, 40):
            status, hdrs, got = self.s.post("/score", {"text_1": QUERY, "text_2": ["x", long_doc],
                                                       "truncate_prompt_tokens": n})
            self.assertEqual(status, 200, got)
            self.assertEqual(hdrs.get("x-truncated-inputs"), "1")
        # 40 tokens: the pair as /tokenize cuts it to 40, scored as /classify scores it.
        status, _, tok = self.s.post("/tokenize", {"inputs": [[QUERY, long_doc]], "truncate": True})
        status, _, want = self.s.post("/classify", {"inputs": [[QUERY, long_doc]],
                                                    "raw_scores": True, "truncate": True})
        status, _, got40 = self.s.post("/score", {"text_1": QUERY, "text_2": long_doc,
                                                  "truncate_prompt_tokens": 40,
                                                  "use_activation": False})
        self.assertEqual(got40["usage"]["prompt_tokens"], 40)
        status, _, got_max = self.s.post("/score", {"text_1": QUERY, "text_2": long_doc,
                                                    "truncate_prompt_tokens": -1,
                                                    "use_activation": False})
        self.assertEqual(got_max["usage"]["prompt_tokens"], len(tok[0]))
        self.assertAlmostEqual(got_max["data"][0]["score"], want[0][0]["score"], places=5)
        # truncation_side: the cut takes the start of the document instead.
        status, _, want = self.s.post("/classify", {"inputs": [[QUERY, long_doc]],
                                                    "raw_scores": True, "truncate": True,
                                                    "truncation_direction": "left"})
        status, _, left = self.s.post("/score", {"text_1": QUERY, "text_2": long_doc,
                                                 "truncate_prompt_tokens": -1,
                                                 "truncation_side": "left",
                                                 "use_activation": False})
        self.assertAlmostEqual(left["data"][0]["score"], want[0][0]["score"], places=5)
        self.assertNotAlmostEqual(left["data"][0]["score"], got_max["data"][0]["score"], places=5)

    def test_default_route_is_rerank(self):
        """A cross-encoder's /invocations (SageMaker) and POST / are TEI's
        /rerank, counted as rerank."""
        body = {"query": QUERY, "texts": DOCS}
        want = self.s.post("/rerank", body)[2]
        before = self.s.metrics().get('bertserve_requests_total{route="rerank",status="200"}', 0)
        for path in ("/invocations", "/"):
            status, _, got = self.s.post(path, body)
            self.assertEqual(status, 200, got)
            self.assertEqual(got, want, path)
        after = self.s.metrics()['bertserve_requests_total{route="rerank",status="200"}']
        self.assertEqual(after - before, 2)

    def test_score_errors(self):
        for body, needle in [
                ({}, 'missing fields: send "text_1" with "text_2"'),
                ({"queries": QUERY}, 'missing field "documents"'),
                ({"text_1": QUERY, "documents": DOCS}, '"text_1" does not go with "documents"'),
                ({"text_1": QUERY, "queries": QUERY, "text_2": DOCS},
                 'are two names for the same texts'),
                ({"text_1": [QUERY] * 2, "text_2": DOCS}, '"text_1" has 2 texts and "text_2" 5'),
                ({"text_1": DOCS, "text_2": QUERY}, '"text_1" has 5 texts and "text_2" 1'),
                ({"text_1": QUERY, "text_2": []}, '"text_2" must not be an empty list'),
                ({"text_1": [], "text_2": DOCS}, '"text_1" must not be an empty list'),
                ({"queries": QUERY, "items": [1]}, '"items[0]" must be a string, got an integer'),
                ({"text_1": {"a": 1}, "text_2": DOCS}, '"text_1" must be a string or a list'),
                ({"text_1": QUERY, "text_2": DOCS, "truncate_prompt_tokens": 0}, 'got 0'),
                ({"text_1": QUERY, "text_2": DOCS, "truncate_prompt_tokens": -2},
                 'must be between -1 and'),
                ({"text_1": QUERY, "text_2": DOCS, "truncate_prompt_tokens": 100000},
                 'more than this model\'s limit of'),
                ({"text_1": QUERY, "text_2": DOCS, "truncate_prompt_tokens": 2},
                 '"truncate_prompt_tokens" 2 is too few for the pair text_1[0], text_2[0]'),
                ({"text_1": QUERY, "text_2": DOCS, "use_activation": "no"},
                 '"use_activation" must be a boolean'),
                ({"text_1": QUERY, "text_2": DOCS, "top_n": 1}, 'unknown field "top_n"')]:
            status, _, got = self.s.post("/score", body)
            self.assertEqual(status, 422, (body, got))
            self.assertEqual(got["error"]["code"], "validation", got)
            self.assertIn(needle, got["error"]["message"])


class BertCrossEncoder(ScoreDetails, Family, unittest.TestCase):
    family = model_type = "bert"


class DistilBert(Family, unittest.TestCase):
    family = model_type = "distilbert"


class Roberta(ScoreDetails, Family, unittest.TestCase):
    family = model_type = "roberta"
    tokenizer, mask = "xlmr", "<mask>"
    flags = ("--type-vocab", "1", "--max-position", "514")

    def test_positions_start_after_padding(self):
        # 514 position embeddings from pad_token_id + 1 = 2: 512 tokens fit, 513 do not.
        status, info = self.s.get_json("/info")
        self.assertEqual(info["model"]["max_input_tokens"], 512)


class XlmRoberta(Roberta):
    model_type = "xlm-roberta"


class Electra(Family, unittest.TestCase):
    family = model_type = "electra"
    flags = ("--embedding-size", "32")


class ModernBert(Family, unittest.TestCase):
    """Pre-norm, RoPE, GeGLU, sliding-window layers (window 32 here, so the
    long input below crosses many windows), every bias on, mean pooling in
    the classifier, served with max_batch_tokens 8192 for its 8K context."""
    family = model_type = "modernbert"
    tokenizer = "modernbert"
    flags = ("--max-position", "8192", "--eps", "1e-5", "--local-window", "32",
             "--global-every", "2", "--classifier-pooling", "mean", "--biases")
    server_flags = ("--max-batch-tokens", "8192")

    def test_long_input(self):
        # [CLS] + 4094 words + [SEP]: 4,096 tokens through every layer kind.
        text = "hello" + " world" * 4093
        status, _, toks = self.s.post("/tokenize", {"inputs": text})
        self.assertEqual(status, 200, toks)
        self.assertEqual(len(toks[0]), 4096)
        got = self.same_as_cli("embed", {"inputs": text}, tol=1e-4)
        self.assertEqual(len(got[0]), 64)
        status, _, got = self.s.post("/classify", {"inputs": text, "raw_scores": True})
        self.assertEqual(status, 200, got)
        status, info = self.s.get_json("/info")
        self.assertEqual(info["model"]["max_input_tokens"], 8192)
        status, _, got = self.s.post("/embed", {"inputs": "hello" + " world" * 8191})
        self.assertEqual(status, 413, got)


# The real checkpoints' folders in ../shared/data (their config.json and
# tokenizer files; no weights), relative to TOKENIZER_ROOT.
SHARED = os.path.join("..", "..", "..", "..", "shared", "data")


class MPNet(Family, unittest.TestCase):
    """BERT layers plus the relative position bias, on all-mpnet-base-v2's
    real tokenizer.json (<s> A </s></s> B </s> pairs)."""
    family = model_type = "mpnet"
    tokenizer, mask = os.path.join(SHARED, "all-mpnet-base-v2"), "<mask>"
    flags = ("--max-position", "514")


def real_checkpoint(name, folder, *flags, tokenizer=None):
    """`bert init --config` on a real folder's config.json (weights of the
    shapes it implies, BF16 to halve the bytes), with the folder's
    sentence-transformers files and tokenizer (or `tokenizer`'s)."""
    src = os.path.join(TOKENIZERS, SHARED, folder)
    model = init(name, os.path.join(SHARED, tokenizer or folder), "--config",
                 os.path.join(src, "config.json"), "--dtype", "bf16", *flags)
    for extra in ("modules.json", "sentence_bert_config.json", "1_Pooling"):
        path = os.path.join(src, extra)
        if os.path.isdir(path):
            shutil.copytree(path, os.path.join(model, extra))
        elif os.path.exists(path):
            shutil.copyfile(path, os.path.join(model, extra))
    return model


def edit_config(model, edit):
    """Rewrite `model`'s config.json through `edit` (a function of the
    dict); returns the file's path."""
    path = os.path.join(model, "config.json")
    with open(path) as f:
        cfg = json.load(f)
    edit(cfg)
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


def start_fails(test, model):
    """Start-up on `model` must fail; returns the server's output."""
    s = Server(BIN, model, ready=False)
    deadline = time.time() + 60
    while s.proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    test.assertNotEqual(s.stop(), 0)
    return s.output()


def refused(test, model, edit, needle):
    """Start-up on `model` with config.json edited by `edit` must fail,
    naming config.json and `needle`; returns the server's output."""
    path = edit_config(model, edit)
    out = start_fails(test, model)
    test.assertIn(path, out)
    test.assertIn(needle, out)
    return out


def refused_each(test, model, cases):
    """For each (key, value, needle): config.json with key set to value is
    refused at start-up naming needle; the file is restored after each."""
    path = os.path.join(model, "config.json")
    saved = os.path.join(model, "config.saved")
    for key, value, needle in cases:
        with test.subTest(key=key, value=value):
            shutil.copyfile(path, saved)
            try:
                refused(test, model, lambda c: c.update({key: value}), needle)
            finally:
                shutil.copyfile(saved, path)


class MPNetRealConfig(unittest.TestCase):
    """all-mpnet-base-v2's own config.json (12 layers of 768, 30527 tokens,
    514 positions) and sentence-transformers files: the server names the
    family, takes max_seq_length 384, and answers the model's mean-pooled,
    normalised 768-wide embedding; a bucket count modeling_mpnet.py does
    not compute is refused at start-up."""

    def test_real_config(self):
        model = real_checkpoint("mpnet-real", "all-mpnet-base-v2", "--mlm")
        s = Server(BIN, model)
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "mpnet")
            self.assertEqual(info["model"]["max_input_tokens"], 384)
            self.assertIn("fill-mask", info["model"]["capabilities"])
            status, _, got = s.post("/embed", {"inputs": "Hello world!"})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 768)
            self.assertAlmostEqual(math.sqrt(sum(x * x for x in got[0])), 1.0, places=5)
            status, _, got = s.post("/fill-mask", {"inputs": "Paris is the <mask> of France."})
            self.assertEqual(status, 200, got)
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        refused(self, model, lambda c: c.update(relative_attention_num_buckets=64),
                "relative_attention_num_buckets 64 is not supported")


class Deberta(unittest.TestCase):
    """DeBERTa-v3: deberta-v3-base's own config.json (its head is
    DebertaV2ForQuestionAnswering; 128100 rows over a smaller tokenizer) and
    deberta-v3-large's (no head) load and answer; a small NLI classifier
    (ContextPooler) serves /zero-shot-classification as the CLI does; the
    DeBERTa-v2 ConvLayer is refused at start-up naming config.json."""

    def real(self, name, folder, *flags):
        return init(name, "minilm", "--config",
                    os.path.join(TOKENIZERS, SHARED, folder, "config.json"), "--dtype", "bf16",
                    *flags)

    def test_real_configs(self):
        base = self.real("deberta-base-real", "deberta-v3-base", "--question-answering")
        s = Server(BIN, base)
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "deberta-v2")
            self.assertEqual(info["model"]["max_input_tokens"], 512)
            self.assertIn("question-answering", info["model"]["capabilities"])
            status, _, got = s.post("/question-answering", {
                "inputs": {"question": "Where is the tower?",
                           "context": "The Eiffel Tower is in Paris, France."}})
            self.assertEqual(status, 200, got)
            status, _, got = s.post("/embed", {"inputs": "Hello world! " * 150})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 768)
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        refused(self, base, lambda c: c.update(conv_kernel_size=3),
                "conv_kernel_size 3 is not supported")
        if os.environ.get("BERT_TEST_SANITIZED"):  # 24 layers of 1024: minutes sanitized
            return
        large = self.real("deberta-large-real", "deberta-v3-large")
        s = Server(BIN, large)
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "deberta-v2")
            status, _, got = s.post("/embed", {"inputs": "Hello world!"})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 1024)
        finally:
            self.assertEqual(s.stop(), 0, s.output())

    def test_zero_shot(self):
        model = init("deberta-nli", "minilm", "--model-type", "deberta-v2", "--labels",
                     "entailment,neutral,contradiction")
        s = Server(BIN, model)
        try:
            body = {"inputs": "The new rights are nice enough",
                    "candidate_labels": ["politics", "economy", "sport"]}
            status, _, got = s.post("/zero-shot-classification", body)
            self.assertEqual(status, 200, got)
            rc, want = cli(BIN, "zero-shot-classification", model, body)
            self.assertEqual(rc, 0)
            self.assertTrue(close_floats(got, want, 1e-5), "%s vs %s" % (got, want))
            self.assertAlmostEqual(sum(got["scores"]), 1.0, places=5)
        finally:
            self.assertEqual(s.stop(), 0, s.output())


class NomicBert(Family, unittest.TestCase):
    """Post-LN blocks with RoPE and SwiGLU, every bias on, an 8K context
    served with max_batch_tokens 8192, and a vocabulary padded past the
    tokenizer's (whose rows fill-mask never answers)."""
    family = model_type = "nomic_bert"
    flags = ("--act", "silu", "--max-position", "8192", "--biases", "--vocab-size", "61440")
    server_flags = ("--max-batch-tokens", "8192")

    def test_long_input(self):
        text = "hello" + " world" * 4093
        got = self.same_as_cli("embed", {"inputs": text}, tol=1e-4)
        self.assertEqual(len(got[0]), 64)
        status, info = self.s.get_json("/info")
        self.assertEqual(info["model"]["max_input_tokens"], 8192)

    def test_padding_rows_never_answered(self):
        # Half the rows are padding: a top 100 over all of them would hold some.
        status, _, got = self.s.post("/fill-mask", {"inputs": "a [MASK] b", "top_k": 100})
        self.assertEqual(status, 200, got)
        self.assertTrue(all(p["token"] < 30522 for p in got), got)


class NomicRealConfig(unittest.TestCase):
    """nomic-embed-text-v1.5's and nomic-bert-2048's own config.json (12
    layers of 768, SwiGLU 3072, RoPE base 1000, 30528 rows for a 30522-token
    tokenizer): the server names the family and answers; variants the remote
    code has and bertserve does not run are refused at start-up."""

    def test_nomic_embed_text(self):
        model = real_checkpoint("nomic-embed-real", "nomic-embed-text-v1.5", "--mlm")
        s = Server(BIN, model, flags=("--max-batch-tokens", "8192"))
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "nomic_bert")
            self.assertEqual(info["model"]["max_input_tokens"], 8192)
            status, _, got = s.post("/embed", {"inputs": "search_query: Hello world!"})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 768)
            status, _, got = s.post("/fill-mask", {"inputs": "Paris is the [MASK] of France.",
                                                   "top_k": 100})
            self.assertEqual(status, 200, got)
            self.assertTrue(all(p["token"] < 30522 for p in got), got)
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        refused_each(self, model, (
            ("prenorm", True, "prenorm true is not supported"),
            ("rotary_scaling_factor", 2.0, "rotary_scaling_factor set is not supported"),
            ("rotary_emb_interleaved", True, "rotary_emb_interleaved true"),
            ("activation_function", "gelu", 'activation_function \\"gelu\\"')))

    @unittest.skipIf(os.environ.get("BERT_TEST_SANITIZED"),
                     "a second real-size NomicBERT: too slow for the sanitizer builds")
    def test_nomic_bert_2048(self):
        model = real_checkpoint("nomic-2048-real", "nomic-bert-2048", "--mlm",
                                tokenizer="nomic-embed-text-v1.5")
        s = Server(BIN, model)
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["architecture"], "NomicBertForPreTraining")
            self.assertIn("fill-mask", info["model"]["capabilities"])
            status, _, got = s.post("/fill-mask", {"inputs": "Paris is the [MASK] of France."})
            self.assertEqual(status, 200, got)
        finally:
            self.assertEqual(s.stop(), 0, s.output())


class JinaBert(Family, unittest.TestCase):
    """A BERT config with ALiBi and GeGLU (model_type bert, family jina_bert)
    on jina-embeddings-v2-base-en's tokenizer, 8K context."""
    family, model_type, init_type = "jina_bert", "bert", "jina_bert"
    tokenizer = os.path.join(SHARED, "jina-embeddings-v2-base-en")
    flags = ("--max-position", "8192")
    server_flags = ("--max-batch-tokens", "8192")

    def test_long_input(self):
        text = "hello" + " world" * 8189
        got = self.same_as_cli("embed", {"inputs": text}, tol=1e-4)
        self.assertEqual(len(got[0]), 64)
        status, _, got = self.s.post("/embed", {"inputs": text + " world"})
        self.assertEqual(status, 413, got)


class JinaRealConfig(unittest.TestCase):
    """jina-embeddings-v2-base-en's own folder: the model config's 768 wins
    over 1_Pooling's word_embedding_dimension 512, its tokenizer.json over its
    vocab.txt (two ids differ; the log says so), max_seq_length 8192;
    feed-forward kinds the remote code does not have are refused."""

    def test_real_config(self):
        model = real_checkpoint("jina-real", "jina-embeddings-v2-base-en", "--mlm")
        s = Server(BIN, model, flags=("--max-batch-tokens", "8192"))
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "jina_bert")
            self.assertEqual(info["model"]["model_type"], "bert")
            self.assertEqual(info["model"]["max_input_tokens"], 8192)
            status, _, got = s.post("/embed", {"inputs": "Hello world!"})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 768)
            status, _, got = s.post("/tokenize", {"inputs": "alaeddineabdessalem"})
            self.assertEqual(status, 200, got)
            self.assertEqual(got[0][1]["id"], 30525)  # tokenizer.json's id, not vocab.txt's
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        self.assertIn("disagree at 2 ids", s.output())
        self.assertIn("tokenizer.json wins", s.output())
        refused(self, model, lambda c: c.update(feed_forward_type="original"),
                "feed_forward_type")


class Gte(Family, unittest.TestCase):
    """GTE "new": NomicBERT's post-LN layer order with one up_gate_proj, RoPE
    with NTK scaling (bert init's defaults: theta 20000, factor 8), one token
    type, on the XLM-R Unigram tokenizer gte-multilingual-base uses; an 8K
    context (2K under the sanitizers: XLM-R splits the rerank test's long
    document's words in two, and its chunks of 8K, then 4K, outran the
    request timeout at -O0 on a loaded machine)."""
    family, model_type, mask = "gte", "new", "<mask>"
    tokenizer = "xlmr"
    flags = ("--max-position", "8192", "--type-vocab", "1")
    server_flags = ("--max-batch-tokens",
                    "2048" if os.environ.get("BERT_TEST_SANITIZED") else "8192")

    def test_long_input(self):
        status, info = self.s.get_json("/info")
        limit = info["model"]["max_input_tokens"]
        self.assertEqual(limit, int(self.server_flags[1]))
        # Every "world" is one token of this vocabulary: <s>, limit - 2, </s>.
        text = "world" + " world" * (limit - 3)
        status, _, toks = self.s.post("/tokenize", {"inputs": text})
        self.assertEqual(status, 200, toks)
        self.assertEqual(len(toks[0]), limit)
        got = self.same_as_cli("embed", {"inputs": text}, tol=1e-4)
        self.assertEqual(len(got[0]), 64)
        status, _, got = self.s.post("/embed", {"inputs": text + " world"})
        self.assertEqual(status, 413, got)


class GteRealConfig(unittest.TestCase):
    """gte-multilingual-base's own config.json (12 layers of 768, GLU 3072,
    250048 tokens, 8192 positions, rope_theta 20000 with NTK factor 8) on
    the XLM-R tokenizer: the server names the family and answers 768-wide
    embeddings; its architectures are [NewModel, NewForTokenClassification]
    and, as published, its weights hold NewForTokenClassification's one-label
    `classifier` (its sparse token weights) and no pooler: that is the token
    head it serves. Variants the remote code has and bertserve does not run
    are refused at start-up naming the key."""

    @unittest.skipIf(os.environ.get("BERT_TEST_SANITIZED"),
                     "a real-size 250K-token GTE: too slow for the sanitizer builds")
    def test_real_config(self):
        model = real_checkpoint("gte-real", "gte-multilingual-base", "--token-classification",
                                "--labels", "LABEL_0",
                                tokenizer=os.path.join(os.path.abspath(TOKENIZERS), "xlmr"))
        s = Server(BIN, model, flags=("--max-batch-tokens", "8192"))
        try:
            status, info = s.get_json("/info")
            self.assertEqual(info["model"]["family"], "gte")
            self.assertIn("token-classification", info["model"]["capabilities"])
            self.assertNotIn("classify", info["model"]["capabilities"])
            self.assertEqual(info["model"]["model_type"], "new")
            self.assertEqual(info["model"]["max_input_tokens"], 8192)
            status, _, got = s.post("/embed", {"inputs": "Hello world!"})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got[0]), 768)
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        refused_each(self, model, (
            ("rope_scaling", {"type": "linear", "factor": 2.0}, "rope_scaling"),
            ("rope_scaling", {"type": "ntk", "factor": 2.0, "mixed_b": 1.0}, "mixed_b"),
            ("logn_attention_scale", True, "logn_attention_scale true"),
            ("layer_norm_type", "rms_norm", "layer_norm_type"),
            ("pack_qkv", False, "pack_qkv false"),
            ("position_embedding_type", "absolute", "position_embedding_type")))


class ElectraDiscriminator(unittest.TestCase):
    """ElectraForPreTraining: encoder routes, and /replaced-tokens equal to the
    CLI, one probability per token of /tokenize's tokens."""

    @classmethod
    def setUpClass(cls):
        cls.model = init("electra-discriminator", "minilm", "--model-type", "electra",
                         "--embedding-size", "32", "--discriminator")
        cls.s = Server(BIN, cls.model)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def test_info_and_encoder_routes(self):
        status, info = self.s.get_json("/info")
        self.assertEqual(info["model"]["architecture"], "ElectraForPreTraining")
        self.assertEqual(sorted(info["model"]["capabilities"]),
                         ["embed", "replaced-tokens", "score", "tokenize"])
        status, _, got = self.s.post("/embed", {"inputs": "Hello world!"})
        self.assertEqual(status, 200, got)
        status, _, got = self.s.post("/classify", {"inputs": "Hello world!"})
        self.assertEqual(status, 422, got)

    def test_replaced_tokens(self):
        body = {"inputs": ["The chef cooked the meal.", "Zürich, 東京."]}
        status, _, got = self.s.post("/replaced-tokens", body)
        self.assertEqual(status, 200, got)
        rc, want = cli(BIN, "replaced-tokens", self.model, body)
        self.assertEqual(rc, 0)
        self.assertTrue(close_floats(got, want, 1e-5), "%s vs %s" % (got, want))
        status, _, toks = self.s.post("/tokenize", body)
        self.assertEqual(status, 200, toks)
        for seq, tseq in zip(got, toks):
            self.assertEqual([{k: v for k, v in t.items() if k != "probability"} for t in seq],
                             tseq)
            for t in seq:
                self.assertTrue(0.0 < t["probability"] < 1.0, t)
        status, _, one = self.s.post("/replaced-tokens", {"inputs": body["inputs"][0]})
        self.assertEqual(status, 200, one)
        self.assertTrue(close_floats(one[0], got[0], 1e-5))
        status, _, err = self.s.post("/replaced-tokens", {"inputs": [["a", "pair"]]})
        self.assertEqual(status, 422, err)


class NotACrossEncoder(unittest.TestCase):
    """Two labels: classify works, rerank answers 422 saying why."""

    def test_rerank_refused(self):
        model = init("two-labels", "minilm", "--labels", "no,yes")
        s = Server(BIN, model)
        try:
            status, info = s.get_json("/info")
            self.assertNotIn("rerank", info["model"]["capabilities"])
            self.assertNotIn("score", info["model"]["capabilities"])
            for path, key in (("/rerank", "texts"), ("/v1/rerank", "documents")):
                status, _, got = s.post(path, {"query": QUERY, key: DOCS})
                self.assertEqual(status, 422, got)
                self.assertIn("cannot rerank: its classifier has 2 labels", got["error"])
            status, _, got = s.post("/score", {"text_1": QUERY, "text_2": DOCS})
            self.assertEqual(status, 422, got)
            self.assertIn("cannot score pairs: its classifier has 2 labels",
                          got["error"]["message"])
            status, _, got = s.post("/fill-mask", {"inputs": "a [MASK]"})
            self.assertEqual(status, 422, got)
            self.assertIn("no masked-LM head", got["error"])
            status, _, got = s.post("/replaced-tokens", {"inputs": "a"})
            self.assertEqual(status, 422, got)
            self.assertIn("no ELECTRA discriminator head", got["error"])
        finally:
            self.assertEqual(s.stop(), 0, s.output())


class ScoreByCosine(unittest.TestCase):
    """/score with a checkpoint without a classifier: the cosine of the two
    texts' embeddings, computed here from /embed's vectors."""

    @classmethod
    def setUpClass(cls):
        cls.model = init("embedder", "minilm")
        cls.s = Server(BIN, cls.model)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def embed(self, texts):
        status, _, got = self.s.post("/embed", {"inputs": texts, "normalize": False})
        self.assertEqual(status, 200, got)
        return got

    @staticmethod
    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b))
        return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))

    def test_one_to_many_and_pairwise(self):
        status, info = self.s.get_json("/info")
        self.assertEqual(sorted(info["model"]["capabilities"]), ["embed", "score", "tokenize"])
        q, d = self.embed([QUERY])[0], self.embed(DOCS)
        status, _, got = self.s.post("/score", {"text_1": QUERY, "text_2": DOCS})
        self.assertEqual(status, 200, got)
        want = [self.cosine(q, e) for e in d]
        self.assertTrue(close_floats([x["score"] for x in got["data"]], want, 1e-5))
        # The same numbers as /similarity, which answers the same question.
        status, _, sim = self.s.post("/similarity", {"inputs": {"source_sentence": QUERY,
                                                                "sentences": DOCS}})
        self.assertTrue(close_floats([x["score"] for x in got["data"]], sim, 1e-6))
        # Each text is read alone: the tokens are the query's once and every document's.
        status, _, tok = self.s.post("/tokenize", {"inputs": [QUERY] + DOCS})
        self.assertEqual(got["usage"]["prompt_tokens"], sum(len(t) for t in tok))
        firsts = DOCS[::-1]
        status, _, got = self.s.post("/v1/score", {"queries": firsts, "documents": DOCS,
                                                   "use_activation": False})
        self.assertEqual(status, 200, got)
        want = [self.cosine(a, b) for a, b in zip(self.embed(firsts), d)]
        self.assertTrue(close_floats([x["score"] for x in got["data"]], want, 1e-5))
        self.assertAlmostEqual(got["data"][2]["score"], 1.0, places=5)  # the same text

    def test_default_route_is_embed(self):
        """SageMaker's /invocations and POST / answer as /embed on an embedding
        model, as TEI's; vLLM's /pooling embeds by default."""
        body = {"inputs": ["Hello world!", "Zürich"]}
        want = self.s.post("/embed", body)[2]
        for path in ("/invocations", "/"):
            status, _, got = self.s.post(path, body)
            self.assertEqual(status, 200, got)
            self.assertEqual(got, want, path)
        status, _, pooled = self.s.post("/pooling", {"input": ["Zürich"],
                                                     "use_activation": False})
        self.assertTrue(close_floats(pooled["data"][0]["data"], self.embed(["Zürich"])[0],
                                     1e-6))

    def test_too_long_names_the_text(self):
        long_doc = " ".join(["The tower is 330 metres tall."] * 200)
        status, _, err = self.s.post("/score", {"text_1": [QUERY, "x"], "text_2": ["y", long_doc]})
        self.assertEqual(status, 413, err)
        self.assertRegex(err["error"]["message"], r'^text_2\[1\] is \d+ tokens long')
        status, _, got = self.s.post("/score", {"text_1": [QUERY, "x"], "text_2": ["y", long_doc],
                                                "truncate_prompt_tokens": -1})
        self.assertEqual(status, 200, got)


class CrossEncoderActivation(unittest.TestCase):
    """A cross-encoder whose config names its CrossEncoder activation
    (ms-marco-MiniLM-L-6-v2's "sbert_ce_default_activation_function":
    Identity; sentence-transformers v4's "sentence_transformers":
    {"activation_fn"}): /score, /v1/rerank and /v2/rerank answer the logit
    through it, as sentence-transformers' predict() and vLLM's score task;
    TEI's /rerank keeps its sigmoid; an activation the engine does not
    apply fails start-up naming config.json."""

    def serve(self, name, edit):
        model = init(name, "minilm", "--labels", "LABEL_0")
        edit_config(model, edit)
        return model, Server(BIN, model)

    def scores(self, s):
        status, _, cls = s.post("/classify", {"inputs": [[QUERY, d] for d in DOCS],
                                              "raw_scores": True})
        logits = [x[0]["score"] for x in cls]
        score = [d["score"] for d in s.post("/score", {"text_1": QUERY, "text_2": DOCS})[2]["data"]]
        v1 = s.post("/v1/rerank", {"query": QUERY, "documents": DOCS})[2]["results"]
        v2 = s.post("/v2/rerank", {"query": QUERY, "documents": DOCS})[2]["results"]
        tei = s.post("/rerank", {"query": QUERY, "texts": DOCS})[2]
        by_index = lambda rs, key: [r[key] for r in sorted(rs, key=lambda r: r["index"])]
        return (logits, score, by_index(v1, "relevance_score"), by_index(v2, "relevance_score"),
                by_index(tei, "score"))

    def test_identity_and_tanh(self):
        for name, edit, act in (
                ("ce-identity", lambda c: c.update(
                    sbert_ce_default_activation_function="torch.nn.modules.linear.Identity"),
                 lambda x: x),
                ("ce-tanh", lambda c: c.update(sentence_transformers={
                    "activation_fn": "torch.nn.modules.activation.Tanh", "version": "4.0.1"},
                    sbert_ce_default_activation_function="torch.nn.modules.linear.Identity"),
                 math.tanh)):
            with self.subTest(name=name):
                model, s = self.serve(name, edit)
                try:
                    logits, score, v1, v2, tei = self.scores(s)
                    want = [act(x) for x in logits]
                    for got in (score, v1, v2):
                        self.assertTrue(close_floats(got, want, 1e-5), (got, want))
                    self.assertTrue(close_floats(tei, [sigmoid(x) for x in logits], 1e-5))
                    raw = s.post("/score", {"text_1": QUERY, "text_2": DOCS,
                                            "use_activation": False})[2]["data"]
                    self.assertTrue(close_floats([d["score"] for d in raw], logits, 1e-5))
                finally:
                    self.assertEqual(s.stop(), 0, s.output())

    def test_unknown_activation_is_refused(self):
        model = init("ce-relu", "minilm", "--labels", "LABEL_0")
        refused(self, model, lambda c: c.update(
            sbert_ce_default_activation_function="torch.nn.modules.activation.ReLU"),
                'sbert_ce_default_activation_function \\"torch.nn.modules.activation.ReLU\\" '
                'is not supported')


def write_safetensors(path, tensors):
    """A safetensors file of {name: (dtype "F32" or "F16", shape, flat values)}."""
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, values) in tensors.items():
        blob = struct.pack("<%d%s" % (len(values), "f" if dtype == "F32" else "e"), *values)
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class DenseModules(unittest.TestCase):
    """sentence-transformers Dense modules after pooling (as LaBSE's and
    distiluse's): mean pooling, Dense 64 -> 48 with tanh and bias (F32),
    Dense 48 -> 32 without activation or bias (F16), Normalize. /embed
    equals that chain computed here from /embed_all's token vectors; every
    embedding route answers 32 numbers; a module the engine cannot run
    fails start-up naming its file."""

    IN, MID, OUT = 64, 48, 32

    @classmethod
    def setUpClass(cls):
        cls.model = init("dense", "minilm")
        rng = random.Random(7)
        cls.w1 = [[rng.gauss(0, 0.3) for _ in range(cls.IN)] for _ in range(cls.MID)]
        cls.b1 = [rng.uniform(-0.2, 0.2) for _ in range(cls.MID)]
        cls.w2 = [[rng.gauss(0, 0.3) for _ in range(cls.MID)] for _ in range(cls.OUT)]
        # F16 as stored, so the reference uses the checkpoint's own values.
        cls.w2 = [[struct.unpack("<e", struct.pack("<e", x))[0] for x in row] for row in cls.w2]
        cls.write_modules(cls.model)
        cls.s = Server(BIN, cls.model)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    @classmethod
    def write_modules(cls, model, dense2_config=None, extra_module=None):
        modules = [{"idx": 0, "name": "0", "path": "",
                    "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling",
                    "type": "sentence_transformers.models.Pooling"},
                   {"idx": 2, "name": "2", "path": "2_Dense",
                    "type": "sentence_transformers.models.Dense"},
                   {"idx": 3, "name": "3", "path": "3_Dense",
                    "type": "sentence_transformers.models.Dense"},
                   {"idx": 4, "name": "4", "path": "4_Normalize",
                    "type": "sentence_transformers.models.Normalize"}]
        if extra_module:
            modules.insert(4, extra_module)
        with open(os.path.join(model, "modules.json"), "w") as f:
            json.dump(modules, f)
        os.makedirs(os.path.join(model, "1_Pooling"), exist_ok=True)
        with open(os.path.join(model, "1_Pooling", "config.json"), "w") as f:
            json.dump({"word_embedding_dimension": cls.IN, "pooling_mode_mean_tokens": True}, f)
        for folder, cfg, tensors in (
                ("2_Dense", {"in_features": cls.IN, "out_features": cls.MID, "bias": True,
                             "activation_function": "torch.nn.modules.activation.Tanh"},
                 {"linear.weight": ("F32", [cls.MID, cls.IN], sum(cls.w1, [])),
                  "linear.bias": ("F32", [cls.MID], cls.b1)}),
                ("3_Dense", dense2_config or {"in_features": cls.MID, "out_features": cls.OUT,
                                              "bias": False, "activation_function":
                                              "torch.nn.modules.linear.Identity"},
                 {"linear.weight": ("F16", [cls.OUT, cls.MID], sum(cls.w2, []))})):
            os.makedirs(os.path.join(model, folder), exist_ok=True)
            with open(os.path.join(model, folder, "config.json"), "w") as f:
                json.dump(cfg, f)
            write_safetensors(os.path.join(model, folder, "model.safetensors"), tensors)

    def reference(self, tokens):
        """sentence-transformers' chain over one input's token vectors."""
        x = [sum(col) / len(tokens) for col in zip(*tokens)]
        h = [math.tanh(sum(w * v for w, v in zip(row, x)) + b) for row, b in zip(self.w1, self.b1)]
        y = [sum(w * v for w, v in zip(row, h)) for row in self.w2]
        n = math.sqrt(sum(v * v for v in y))
        return [v / n for v in y]

    def test_embeddings_are_the_chain(self):
        texts = ["Hello world!", "Zürich is a city in Switzerland.", "a"]
        status, _, got = self.s.post("/embed", {"inputs": texts})
        self.assertEqual(status, 200, got)
        status, _, tokens = self.s.post("/embed_all", {"inputs": texts})
        for g, t in zip(got, tokens):
            self.assertEqual(len(g), self.OUT)
            self.assertTrue(close_floats(g, self.reference(t), 1e-5), g)
        rc, offline = cli(BIN, "embed", self.model, {"inputs": texts})
        self.assertEqual(rc, 0)
        self.assertTrue(close_floats(offline, got, 1e-5))
        status, info = self.s.get_json("/info")
        self.assertEqual((info["model"]["hidden_size"], info["model"]["dimensions"]),
                         (self.IN, self.OUT))
        status, _, oai = self.s.post("/v1/embeddings", {"input": texts[0], "dimensions": 16})
        cut = got[0][:16]
        n = math.sqrt(sum(v * v for v in cut))
        self.assertTrue(close_floats(oai["data"][0]["embedding"], [v / n for v in cut], 1e-5))
        status, _, err = self.s.post("/v1/embeddings", {"input": "x", "dimensions": 33})
        self.assertEqual(err["error"]["message"],
                         '"dimensions" must be at most the model\'s embedding size 32, got 33')
        status, _, pooled = self.s.post("/pooling", {"input": texts[:2]})
        self.assertTrue(close_floats([d["data"] for d in pooled["data"]], got[:2], 1e-5))
        # vLLM's token_embed projects every token, then normalises it.
        status, _, rows = self.s.post("/pooling", {"input": texts[1], "task": "token_embed"})
        self.assertEqual(len(tokens[1]), len(rows["data"][0]["data"]))
        for row, t in zip(rows["data"][0]["data"], tokens[1]):
            self.assertTrue(close_floats(row, self.reference([t]), 1e-5))
        status, _, sim = self.s.post("/similarity", {"inputs": {"source_sentence": texts[0],
                                                                "sentences": texts[1:]}})
        for c, v in zip(sim, got[1:]):
            self.assertAlmostEqual(c, sum(a * b for a, b in zip(got[0], v)), places=5)

    def test_refusals_name_the_file(self):
        cases = [
            ({"in_features": 40, "out_features": self.OUT, "bias": False},
             None, "3_Dense/config.json: in_features is 40, but the module before it gives 48"),
            ({"in_features": self.MID, "out_features": self.OUT, "bias": False,
              "activation_function": "torch.nn.modules.activation.ReLU"}, None,
             'activation_function \\"torch.nn.modules.activation.ReLU\\" is not supported'),
            (None, {"idx": 9, "name": "9", "path": "9_LayerNorm",
                    "type": "sentence_transformers.models.LayerNorm"},
             'module type \\"sentence_transformers.models.LayerNorm\\" is not supported'),
        ]
        for k, (dense2, extra, needle) in enumerate(cases):
            with self.subTest(needle=needle):
                model = init("dense-bad-%d" % k, "minilm")
                self.write_modules(model, dense2, extra)
                self.assertIn(needle, start_fails(self, model))
        model = init("dense-pickle", "minilm")
        self.write_modules(model)
        os.rename(os.path.join(model, "2_Dense", "model.safetensors"),
                  os.path.join(model, "2_Dense", "pytorch_model.bin"))
        self.assertIn("2_Dense/pytorch_model.bin is a pickle", start_fails(self, model))


class UnsupportedModelType(unittest.TestCase):
    def test_start_up_names_config_and_value(self):
        model = init("funnel", "minilm")
        out = refused(self, model, lambda c: c.update(model_type="funnel"), "distilbert")
        # The log escapes the quotes around the value.
        self.assertRegex(out, r'model_type \\?"funnel\\?" is not supported')


if __name__ == "__main__":
    try:
        unittest.main(argv=sys.argv[:1], verbosity=2)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
