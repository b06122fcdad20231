"""The extraction routes over real HTTP: /token-classification,
/question-answering and /zero-shot-classification.

Three small checkpoints made by `bert init` (a token classifier, a
question-answering head, an NLI classifier) are served, each with a
64-token limit so that long texts are read in windows and long contexts in
chunks. For each: answers equal the `bert` CLI's (which
test_extract_golden holds to the transformers pipelines), answers given
under 16 concurrent clients equal the answers given alone, a request's
windows / chunks / hypothesis pairs ride one forward pass (visible in
/metrics), /info lists the capability, every bad input of docs/SECURITY.md
gets its status and message, and a checkpoint without the head answers 422
naming what the route needs. The genuine config.json and tokenizer files of
dslim/bert-base-NER, distilbert-base-uncased-distilled-squad and
roberta-large-mnli load and serve (one layer, F16 weights of their geometry).

usage: test_extract.py BIN_DIR TOKENIZER_ROOT SQUAD_SAMPLE
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest

from harness import Server, cli, close_floats

BIN, TOKENIZERS, SQUAD = sys.argv[1], sys.argv[2], sys.argv[3]
WORK = tempfile.mkdtemp(prefix="bert-extract-", dir=os.environ.get("TMPDIR"))


def init(name, *flags):
    """`bert init` a 64-token checkpoint into WORK/name; returns its folder."""
    out = os.path.join(WORK, name)
    subprocess.run([os.path.join(BIN, "bert"), "init", "--out", out, "--tokenizer",
                    os.path.join(TOKENIZERS, "minilm"), "--layers", "2", "--hidden", "64",
                    "--heads", "2", "--intermediate", "128", "--max-position", "64",
                    "--weight-std", "0.15", "--bias-range", "0.1", "--ln-range", "0.2",
                    "--seed", "5"] + list(flags),
                   check=True, capture_output=True, timeout=120)
    return out


def squad_items(n):
    """n (question, context) pairs of the SQuAD v1.1 dev sample."""
    with open(SQUAD) as f:
        data = json.load(f)
    out = []
    for article in data["data"]:
        for para in article["paragraphs"]:
            for qa in para["qas"]:
                out.append({"question": qa["question"], "context": para["context"]})
                if len(out) == n:
                    return out
    return out


def batch_stats(server):
    m = server.metrics()
    return (m.get("bertserve_batch_sequences_count", 0.0),
            m.get("bertserve_batch_sequences_sum", 0.0))


class Extraction:
    """Checks shared by the three servers; mixed into a TestCase."""

    route = None
    default_route = None  # (path, body) POST /invocations answers as; None: route's
    flags = ()
    server_flags = ()
    capability = None

    @classmethod
    def setUpClass(cls):
        cls.model = init(cls.__name__, *cls.flags)
        # One worker: a request's sequences must share one pass to count.
        cls.s = Server(BIN, cls.model, ["--threads", "1"] + list(cls.server_flags))

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def post_ok(self, body):
        status, _, got = self.s.post(self.route, body)
        self.assertEqual(status, 200, got)
        return got

    def same_as_cli(self, body):
        got = self.post_ok(body)
        rc, want = cli(BIN, self.route[1:], self.model, body)
        self.assertEqual(rc, 0, want)
        self.assertTrue(close_floats(got, want, 1e-6), "%s\nvs\n%s" % (got, want))
        return got

    def refused(self, body, status, message):
        got_status, _, got = self.s.post(self.route, body)
        self.assertEqual(got_status, status, got)
        self.assertEqual(got["error"], message)

    def test_info(self):
        status, info = self.s.get_json("/info")
        self.assertEqual(status, 200)
        self.assertIn(self.capability, info["model"]["capabilities"])

    def test_default_route(self):
        """POST /invocations (SageMaker) and POST / answer as this head's
        pipeline route (an NLI classifier's as TEI's /predict)."""
        path, body = self.default_route or (self.route, self.bodies()[0])
        status, _, want = self.s.post(path, body)
        self.assertEqual(status, 200, want)
        for path in ("/invocations", "/"):
            status, _, got = self.s.post(path, body)
            self.assertEqual(status, 200, got)
            self.assertTrue(close_floats(got, want, 1e-6), path)

    def test_concurrent_answers_equal_alone(self):
        bodies = self.bodies()
        alone = [self.post_ok(b) for b in bodies]
        results = [None] * (4 * len(bodies))

        def client(k):
            status, _, got = self.s.post(self.route, bodies[k % len(bodies)])
            results[k] = (status, got)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(len(results))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for k, (status, got) in enumerate(results):
            self.assertEqual(status, 200, got)
            self.assertTrue(close_floats(got, alone[k % len(bodies)], 1e-6), k)

    def one_pass(self, body, sequences):
        """The request's `sequences` sequences ran in one forward pass."""
        count0, sum0 = batch_stats(self.s)
        self.post_ok(body)
        count1, sum1 = batch_stats(self.s)
        self.assertEqual((count1 - count0, sum1 - sum0), (1, sequences))


class TokenClassification(Extraction, unittest.TestCase):
    route = "/token-classification"
    flags = ("--token-classification", "--labels", "O,B-PER,I-PER,B-LOC,I-LOC")
    capability = "token-classification"
    LONG = " ".join(["Angela Merkel visited Paris and Berlin with Marie Curie."] * 12)

    def bodies(self):
        return [{"inputs": "Angela Merkel met Emmanuel Macron in Paris."}] + \
               [{"inputs": ["john lives in new york", "bonjour"],
                 "parameters": {"aggregation_strategy": s}}
                for s in ("none", "simple", "first", "average", "max")] + \
               [{"inputs": self.LONG, "parameters": {"stride": 16}}]

    def test_same_as_cli(self):
        for body in self.bodies():
            self.same_as_cli(body)

    def test_pooling_token_classify(self):
        """vLLM's /pooling on a token classifier: token_classify by default,
        one row per token with specials, each the softmax of the labels'
        logits: its best label and probability are the pipeline's entity
        and score (aggregation none, nothing ignored); use_activation false
        answers logits whose softmax is that row; embed still serves."""
        text = "Angela Merkel met Emmanuel Macron in Paris."
        status, _, got = self.s.post("/pooling", {"input": text})
        self.assertEqual(status, 200, got)
        status, _, toks = self.s.post("/tokenize", {"inputs": text})
        rows = got["data"][0]["data"]
        self.assertEqual(len(rows), len(toks[0]))
        labels = self.s.get_json("/info")[1]["model"]["labels"]
        for row in rows:
            self.assertEqual(len(row), len(labels))
            self.assertAlmostEqual(sum(row), 1.0, 5)
        ents = self.post_ok({"inputs": text, "parameters": {"aggregation_strategy": "none",
                                                            "ignore_labels": []}})
        self.assertEqual(len(ents), len(toks[0]) - 2)
        for e in ents:
            row = rows[e["index"]]
            best = max(range(len(row)), key=row.__getitem__)
            self.assertEqual(labels[best], e["entity"])
            self.assertAlmostEqual(row[best], e["score"], 6)
        status, _, logits = self.s.post("/pooling", {"input": text, "task": "token_classify",
                                                     "use_activation": False})
        for raw, row in zip(logits["data"][0]["data"], rows):
            top = max(raw)
            z = sum(math.exp(x - top) for x in raw)
            self.assertTrue(close_floats([math.exp(x - top) / z for x in raw], row, 1e-6))
        status, _, emb = self.s.post("/pooling", {"input": text, "task": "embed"})
        self.assertEqual(status, 200, emb)
        self.assertEqual(len(emb["data"][0]["data"]), 64)

    def test_windows_ride_one_pass(self):
        # 12 sentences, ~150 tokens: windows of 62 text tokens every 46.
        self.one_pass({"inputs": self.LONG, "parameters": {"stride": 16}}, 3)

    def test_bad_inputs(self):
        self.refused({"inputs": "x", "aggregation_strategy": "best"}, 422,
                     '"aggregation_strategy" must be one of "none", "simple", "first", '
                     '"average", "max", got "best"')
        self.refused({"inputs": self.LONG}, 413,
                     'inputs[0] is 146 tokens long, more than the limit of 64; send "stride" '
                     'to read it in windows or "truncate": true to cut it')
        self.refused({"inputs": self.LONG, "stride": 62}, 422,
                     '"stride" 62 must be less than the 62 text tokens a window holds')


class QuestionAnswering(Extraction, unittest.TestCase):
    route = "/question-answering"
    flags = ("--question-answering",)
    capability = "question-answering"

    def bodies(self):
        items = squad_items(6)
        return [{"inputs": items[0]},
                {"inputs": items[1:4], "parameters": {"top_k": 3}},
                {"inputs": items[4], "parameters": {"handle_impossible_answer": True,
                                                    "doc_stride": 20, "max_answer_len": 4}},
                {"inputs": items[5], "top_k": 2, "align_to_words": False, "max_seq_len": 48}]

    def test_same_as_cli(self):
        for body in self.bodies():
            got = self.same_as_cli(body)
            answers = got if isinstance(got, list) else [got]
            if isinstance(body["inputs"], list):
                self.assertEqual(len(answers), len(body["inputs"]))
                continue
            context = body["inputs"]["context"]
            for a in answers:
                self.assertEqual(list(a), ["score", "start", "end", "answer"])
                self.assertEqual(context[a["start"]:a["end"]], a["answer"])

    def test_chunks_ride_together(self):
        # A SQuAD paragraph is several 64-token chunks (test_extract_golden
        # holds their count and bounds to the pipeline's); all in one pass.
        # Passes are a share of the work in flight (at least 256 tokens), so
        # a paragraph of ~8 chunks of 64 tokens takes two or three passes.
        count0, sum0 = batch_stats(self.s)
        self.post_ok({"inputs": squad_items(1)[0]})
        count1, sum1 = batch_stats(self.s)
        self.assertGreater(sum1 - sum0, 4)
        self.assertGreaterEqual((sum1 - sum0) / (count1 - count0), 3)

    def test_bad_inputs(self):
        item = squad_items(1)[0]
        self.refused({"inputs": {"question": "Who?"}}, 422, 'missing field "inputs.context"')
        self.refused({"inputs": {"question": "", "context": "x"}}, 422,
                     '"inputs.question" must not be empty')
        self.refused({"inputs": [{"question": "a", "context": 7}]}, 422,
                     '"inputs[0].context" must be a string, got an integer')
        self.refused({"inputs": {"question": "a", "context": "b", "answer": "c"}}, 422,
                     'unknown field "answer" in "inputs"; accepted: "question", "context"')
        self.refused({"inputs": "a question"}, 422,
                     '"inputs" must be an object {"question": string, "context": string} or '
                     'a list of them, got a string')
        self.refused({"inputs": dict(item, question="why " * 70)}, 413,
                     'inputs[0].question is 70 tokens long, more than "max_question_len" 64')
        self.refused({"inputs": dict(item, question="why " * 70), "max_question_len": 100},
                     422, 'inputs[0]: the question and special tokens take 73 of the 64 '
                     'tokens of a chunk ("max_seq_len"), leaving no room for the context')
        self.refused({"inputs": item, "max_seq_len": 65}, 422,
                     '"max_seq_len" 65 is more than the 64 tokens this model takes')
        self.refused({"inputs": item, "doc_stride": 60}, 422,
                     '"doc_stride" 60 must be less than the 50 context tokens a chunk holds '
                     'for inputs[0]')
        self.refused({"inputs": item, "top_k": 0}, 422,
                     '"top_k" must be between 1 and 100, got 0')
        self.refused({"inputs": item, "max_answer_len": 0}, 422,
                     '"max_answer_len" must be between 1 and 2147483647, got 0')


class ZeroShot(Extraction, unittest.TestCase):
    route = "/zero-shot-classification"
    default_route = ("/predict", {"inputs": ["a cat", "a dog"]})
    flags = ("--labels", "CONTRADICTION,NEUTRAL,ENTAILMENT")
    server_flags = ("--max-client-batch", "32")
    capability = "zero-shot-classification"
    LABELS = ["politics", "economy", "entertainment", "travel", "sport"]

    def bodies(self):
        return [{"inputs": "The new rights are nice enough",
                 "parameters": {"candidate_labels": self.LABELS}},
                {"inputs": ["stocks fell sharply", "a gorgeous film"],
                 "parameters": {"candidate_labels": " finance, movies,,sport ",
                                "multi_label": True}},
                {"inputs": "one label", "candidate_labels": ["yes"],
                 "hypothesis_template": "The answer is {}!"}]

    def test_same_as_cli(self):
        for body in self.bodies():
            got = self.same_as_cli(body)
            for answer in got if isinstance(got, list) else [got]:
                self.assertEqual(list(answer), ["sequence", "labels", "scores"])
                self.assertEqual(answer["scores"], sorted(answer["scores"], reverse=True))
        got = self.post_ok(self.bodies()[1])
        self.assertEqual(sorted(got[0]["labels"]), ["finance", "movies", "sport"])
        single = self.post_ok(self.bodies()[0])
        self.assertAlmostEqual(sum(single["scores"]), 1.0, places=5)

    def test_pairs_ride_one_pass(self):
        self.one_pass({"inputs": ["a", "b"], "candidate_labels": self.LABELS}, 10)

    def test_bad_inputs(self):
        self.refused({"inputs": "x"}, 422, 'missing field "candidate_labels"')
        self.refused({"inputs": "x", "candidate_labels": []}, 422,
                     '"candidate_labels" must name at least one label')
        self.refused({"inputs": "x", "candidate_labels": " , "}, 422,
                     '"candidate_labels" must name at least one label')
        self.refused({"inputs": "x", "candidate_labels": 3}, 422,
                     '"candidate_labels" must be a string or a list of strings, got an integer')
        self.refused({"inputs": "x", "candidate_labels": "a", "hypothesis_template": "{} {}"},
                     422, '"hypothesis_template" must hold "{}" once, where the label goes, '
                     'and no other brace; got "{} {}"')
        self.refused({"inputs": ["x"] * 8, "candidate_labels": ["a"] * 5}, 413,
                     "too many pairs: 8 texts x 5 candidate labels = 40, at most 32 are "
                     "allowed per request")
        self.refused({"inputs": "x", "candidate_labels": ["a " * 70]}, 413,
                     "inputs[0]: a hypothesis with its special tokens is 77 tokens, which "
                     "leaves no room for the text in the limit of 64")


EXTRACTION = os.path.join(os.path.dirname(TOKENIZERS), "extraction")


def real_checkpoint(name, tokenizer, layers_key, *flags):
    """The genuine config.json (and tokenizer files) of a Hub checkpoint in
    ../shared/data, with one layer instead of its dozen or more, over F16
    weights of its geometry from `bert init`."""
    out = os.path.join(WORK, "real-" + name)
    subprocess.run([os.path.join(BIN, "bert"), "init", "--out", out, "--tokenizer", tokenizer,
                    "--layers", "1", "--dtype", "f16", "--prefix", "--weight-std", "0.05",
                    "--seed", "9"] + list(flags), check=True, capture_output=True, timeout=300)
    real = os.path.join(EXTRACTION, name)
    with open(os.path.join(real, "config.json")) as f:
        config = json.load(f)
    config[layers_key] = 1
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f)
    for extra in ("tokenizer_config.json", "special_tokens_map.json"):
        if os.path.exists(os.path.join(real, extra)):
            shutil.copy(os.path.join(real, extra), out)
    return out


class RealConfigs(unittest.TestCase):
    """dslim/bert-base-NER, distilbert-base-uncased-distilled-squad and
    roberta-large-mnli load from their own config.json and tokenizer files,
    and serve their route as the CLI answers it."""

    def serve(self, model, route, body, capability, family):
        s = Server(BIN, model)
        try:
            status, info = s.get_json("/info")
            self.assertEqual(status, 200)
            self.assertIn(capability, info["model"]["capabilities"])
            self.assertEqual(info["model"]["family"], family)
            status, _, got = s.post(route, body)
            self.assertEqual(status, 200, got)
            rc, want = cli(BIN, route[1:], model, body)
            self.assertEqual(rc, 0, want)
            self.assertTrue(close_floats(got, want, 1e-6), "%s vs %s" % (got, want))
        finally:
            self.assertEqual(s.stop(), 0, s.output())
        return got

    def test_dslim_bert_base_ner(self):
        labels = "O,B-MISC,I-MISC,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC"
        model = real_checkpoint(
            "dslim-bert-base-NER", os.path.join(EXTRACTION, "dslim-bert-base-NER"),
            "num_hidden_layers", "--hidden", "768", "--heads", "12", "--intermediate", "3072",
            "--token-classification", "--labels", labels)
        self.serve(model, "/token-classification",
                   {"inputs": "Angela Merkel met Emmanuel Macron in Paris.",
                    "parameters": {"aggregation_strategy": "none", "ignore_labels": []}},
                   "token-classification", "bert")

    def test_distilbert_distilled_squad(self):
        model = real_checkpoint(
            "distilbert-base-uncased-distilled-squad", os.path.join(TOKENIZERS, "minilm"),
            "n_layers", "--model-type", "distilbert", "--hidden", "768", "--heads", "12",
            "--intermediate", "3072", "--question-answering")
        got = self.serve(model, "/question-answering", {"inputs": squad_items(1)[0]},
                         "question-answering", "distilbert")
        self.assertEqual(list(got), ["score", "start", "end", "answer"])

    def test_roberta_large_mnli(self):
        model = real_checkpoint(
            "roberta-large-mnli", os.path.join(EXTRACTION, "roberta-large-mnli"),
            "num_hidden_layers", "--model-type", "roberta", "--hidden", "1024", "--heads", "16",
            "--intermediate", "4096", "--max-position", "514", "--type-vocab", "1",
            "--eps", "1e-5", "--labels", "CONTRADICTION,NEUTRAL,ENTAILMENT")
        got = self.serve(model, "/zero-shot-classification",
                         {"inputs": "The stock market fell sharply.",
                          "candidate_labels": ["finance", "sport", "politics"]},
                         "zero-shot-classification", "roberta")
        self.assertEqual(sorted(got["labels"]), ["finance", "politics", "sport"])


class NoHead(unittest.TestCase):
    """A checkpoint without the route's head: 422 naming what is missing."""

    @classmethod
    def setUpClass(cls):
        cls.model = init("NoHead", "--labels", "NEGATIVE,POSITIVE")
        cls.s = Server(BIN, cls.model)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def test_refused(self):
        status, _, got = self.s.post("/question-answering",
                                     {"inputs": {"question": "a", "context": "b"}})
        self.assertEqual(status, 422)
        self.assertEqual(got["error"],
                         "this model cannot answer questions: the checkpoint has no "
                         "question-answering head (its architecture is "
                         "BertForSequenceClassification, not a *ForQuestionAnswering)")
        status, _, got = self.s.post("/zero-shot-classification",
                                     {"inputs": "a", "candidate_labels": "b"})
        self.assertEqual(status, 422)
        self.assertEqual(got["error"],
                         'this model cannot classify zero-shot: none of its labels starts '
                         'with "entail" (id2label in config.json names the NLI classes)')
        status, _, got = self.s.post("/token-classification", {"inputs": "a"})
        self.assertEqual(status, 422)
        status, _, got = self.s.post("/embed_sparse", {"inputs": "a"})
        self.assertEqual(status, 422)
        self.assertEqual(got["error"],
                         "this model cannot make sparse embeddings: the checkpoint has no "
                         "masked-LM head (SPLADE reads its logits)")
        status, info = self.s.get_json("/info")
        for cap in ("question-answering", "zero-shot-classification", "token-classification"):
            self.assertNotIn(cap, info["model"]["capabilities"])


if __name__ == "__main__":
    try:
        unittest.main(argv=sys.argv[:1], verbosity=2)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
