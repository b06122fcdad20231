"""Every route of DESIGN.md over real HTTP: exact JSON shapes, results equal to
the `bert` CLI's for the same body, and every error path with its status.

usage: test_routes.py BIN_DIR MODEL_DIR
"""
import base64
import json
import math
import socket
import struct
import sys
import unittest

from harness import Server, cli, close_floats

BIN, MODEL = sys.argv[1], sys.argv[2]
HIDDEN = json.load(open(MODEL + "/config.json"))["hidden_size"]


class Routes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(BIN, MODEL)

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def same_as_cli(self, route, body, tol=1e-6):
        status, _, got = self.s.post("/" + route, body)
        self.assertEqual(status, 200, got)
        rc, want = cli(BIN, route, MODEL, body)
        self.assertEqual(rc, 0)
        # The server may run other kernels than the CLI: under valgrind, whose
        # CPU has no AVX-512, OpenBLAS against our AVX-512 one. Their sums
        # round apart by a few ulps of each value (4 of 2.1 once: 1.0e-6).
        self.assertTrue(close_floats(got, want, tol, on_scale=True), "%s vs %s" % (got, want))
        return got

    def test_health_ready_info_metrics(self):
        self.assertEqual(self.s.get_json("/health"), (200, {"status": "ok"}))
        self.assertEqual(self.s.get_json("/ready"), (200, {"status": "ready"}))
        status, info = self.s.get_json("/info")
        self.assertEqual(status, 200)
        self.assertEqual(info["model"]["hidden_size"], HIDDEN)
        self.assertEqual(sorted(info["model"]["capabilities"]),
                         ["classify", "embed", "fill-mask", "tokenize"])
        self.assertEqual(info["model"]["labels"], ["NEGATIVE", "POSITIVE"])
        self.assertEqual(info["version"], info["version"].strip())
        m = self.s.metrics()
        self.assertIn('bertserve_requests_total{route="embed",status="200"}', m)
        self.assertIn("bertserve_queue_tokens", m)
        self.assertIn("process_resident_memory_bytes", m)
        status, hdrs, _ = self.s.request("HEAD", "/health")
        self.assertEqual(status, 200)

    def test_embed(self):
        one = self.same_as_cli("embed", {"inputs": "The cat sat on the mat."})
        self.assertEqual(len(one), 1)
        self.assertEqual(len(one[0]), HIDDEN)
        many = self.same_as_cli("embed", {"inputs": ["a", "The cat sat on the mat."]})
        self.assertEqual(len(many), 2)
        self.assertTrue(close_floats(many[1], one[0], 1e-5))
        normed = self.same_as_cli("embed", {"inputs": ["hello there"], "normalize": True})
        self.assertAlmostEqual(math.sqrt(sum(x * x for x in normed[0])), 1.0, places=5)
        cls_ = self.same_as_cli("embed", {"inputs": "hello there", "pooling": "cls"})
        mean = self.same_as_cli("embed", {"inputs": "hello there", "pooling": "mean"})
        self.assertNotEqual(cls_, mean)
        hf = self.same_as_cli("embed", {"inputs": "hello there",
                                        "parameters": {"pooling": "cls"}})
        self.assertEqual(hf, cls_)

    def test_embed_token_ids(self):
        """TEI's /embed, /embed_all and /embed_sparse take token ids as the
        model's input as given: /tokenize's ids embed as the text does."""
        texts = ["hello there", "The cat sat on the mat."]
        status, _, toks = self.s.post("/tokenize", {"inputs": texts})
        ids = [[t["id"] for t in seq] for seq in toks]
        for route in ("/embed", "/embed_all", "/embed_sparse"):
            status, _, by_text = self.s.post(route, {"inputs": texts})
            status, _, by_ids = self.s.post(route, {"inputs": ids})
            self.assertEqual(status, 200, by_ids)
            self.assertTrue(close_floats(by_ids, by_text, 1e-6), route)
            status, _, one = self.s.post(route, {"inputs": ids[1]})
            self.assertTrue(close_floats(one, by_text[1:], 1e-6), route)
        self.same_as_cli("embed", {"inputs": ids})

    def test_fill_mask(self):
        single = self.same_as_cli("fill-mask", {"inputs": "Paris is the [MASK] of France."})
        self.assertEqual(len(single), 5)
        self.assertEqual(set(single[0]), {"score", "token", "token_str", "sequence"})
        scores = [p["score"] for p in single]
        self.assertEqual(scores, sorted(scores, reverse=True))
        for p in single:
            self.assertIn(p["token_str"].replace("##", ""), p["sequence"])
        two = self.same_as_cli("fill-mask", {"inputs": "[MASK] is the [MASK] of France.",
                                             "top_k": 3})
        self.assertEqual([len(x) for x in two], [3, 3])
        self.assertIn("[CLS]", two[0][0]["sequence"])  # HF keeps specials with several masks
        batch = self.same_as_cli("fill-mask", {"inputs": ["a [MASK] b", "[MASK] [MASK]"]})
        self.assertEqual(len(batch), 2)
        self.assertEqual(len(batch[0]), 5)
        self.assertEqual(len(batch[1]), 2)
        targeted = self.same_as_cli("fill-mask", {"inputs": "I like [MASK].",
                                                  "targets": ["cats", "dogs"]})
        self.assertEqual(sorted(p["token_str"] for p in targeted), ["cats", "dogs"])

    def test_classify(self):
        nested = self.same_as_cli("classify", {"inputs": "I loved this film."})
        self.assertEqual(len(nested), 1)  # the HF Inference API's [[...]] for one text
        one = nested[0]
        self.assertEqual(sorted(p["label"] for p in one), ["NEGATIVE", "POSITIVE"])
        self.assertAlmostEqual(sum(p["score"] for p in one), 1.0, places=5)
        self.assertGreaterEqual(one[0]["score"], one[1]["score"])
        batch = self.same_as_cli("classify", {"inputs": ["good", "bad"], "top_k": 1})
        self.assertEqual([len(x) for x in batch], [1, 1])
        pairs = self.same_as_cli("classify", {"inputs": [["what is it?", "a cat"]]})
        self.assertEqual(len(pairs), 1)
        raw = self.same_as_cli("classify", {"inputs": "fine", "raw_scores": True})[0]
        sig = self.same_as_cli("classify", {"inputs": "fine", "function_to_apply": "sigmoid"})[0]
        by_label = {p["label"]: p["score"] for p in raw}
        for p in sig:
            self.assertAlmostEqual(p["score"], 1 / (1 + math.exp(-by_label[p["label"]])), 5)

    def test_classify_pairs_and_predict(self):
        """{"text", "text_pair"} is the pair [text, text_pair]; TEI's /predict
        answers one input flat, reads a lone [a, b] as one pair, and scores
        as /classify does."""
        status, _, obj = self.s.post("/classify", {"inputs": {"text": "what is it?",
                                                              "text_pair": "a cat"}})
        self.assertEqual(status, 200, obj)
        status, _, pair = self.s.post("/classify", {"inputs": [["what is it?", "a cat"]]})
        self.assertEqual(obj, pair)
        status, _, flat = self.s.post("/predict", {"inputs": ["what is it?", "a cat"]})
        self.assertEqual(status, 200, flat)
        self.assertEqual(flat, pair[0])
        status, _, one = self.s.post("/predict", {"inputs": "fine", "raw_scores": True})
        status, _, cls = self.s.post("/classify", {"inputs": "fine", "raw_scores": True})
        self.assertEqual(one, cls[0])
        status, _, batch = self.s.post("/predict", {"inputs": ["good", "bad", ["a", "b"]]})
        self.assertEqual(len(batch), 3)
        self.assertEqual(batch[2], self.s.post("/predict", {"inputs": ["a", "b"]})[2])

    def test_vllm_classify(self):
        """vLLM's /classify body ("input") on the same path: per input the
        best label, every label's probability in label order, num_classes;
        the probabilities are /classify's scores, the logits with
        use_activation false; token ids as given; OpenAI's error envelope."""
        texts = ["I loved it", "awful, just awful"]
        status, _, got = self.s.post("/classify", {"model": "x", "input": texts})
        self.assertEqual(status, 200, got)
        self.assertEqual(set(got), {"id", "object", "created", "model", "data", "usage"})
        self.assertTrue(got["id"].startswith("classify-"))
        status, _, hf = self.s.post("/classify", {"inputs": texts})
        status, _, raw = self.s.post("/classify", {"inputs": texts, "raw_scores": True})
        status, _, toks = self.s.post("/tokenize", {"inputs": texts})
        self.assertEqual(got["usage"]["prompt_tokens"], sum(len(t) for t in toks))
        labels = ["NEGATIVE", "POSITIVE"]
        for i, d in enumerate(got["data"]):
            self.assertEqual((d["index"], d["num_classes"]), (i, 2))
            by_label = {p["label"]: p["score"] for p in hf[i]}
            self.assertTrue(close_floats(d["probs"], [by_label[l] for l in labels], 1e-6))
            self.assertEqual(d["label"], hf[i][0]["label"])
        status, _, logits = self.s.post("/classify", {"input": texts[0], "use_activation": False})
        by_label = {p["label"]: p["score"] for p in raw[0]}
        self.assertTrue(close_floats(logits["data"][0]["probs"], [by_label[l] for l in labels],
                                     1e-6))
        ids = [t["id"] for t in toks[1]]
        status, _, by_ids = self.s.post("/classify", {"input": [ids]})
        self.assertTrue(close_floats(by_ids["data"][0]["probs"], got["data"][1]["probs"], 1e-6))
        status, _, err = self.s.post("/classify", {"input": texts, "top_k": 1})
        self.assertEqual(status, 422, err)
        self.assertEqual(err["error"]["message"],
                         'unknown field "top_k"; accepted: "input", "add_special_tokens", '
                         '"model", "user", "truncate_prompt_tokens", "use_activation", '
                         '"truncation_side", "priority"')
        # Counted as the API it is, refusals included.
        m = self.s.metrics()
        self.assertGreaterEqual(m['bertserve_requests_total{route="vllm-classify",status="200"}'],
                                3)
        self.assertGreaterEqual(m['bertserve_requests_total{route="vllm-classify",status="422"}'],
                                1)

    def test_pooling(self):
        """vLLM's /pooling: the default task of a sequence classifier is
        classify (vLLM /classify's probs); embed is /v1/embeddings' vector;
        token_embed is /embed_all's rows, each made unit length in Python
        (as given with use_activation false); base64 holds the same
        float32s row after row; token_classify needs a token classifier;
        answers equal the CLI's; usage counts /tokenize's tokens."""
        texts = ["I loved it", "awful, just awful"]
        status, _, got = self.s.post("/pooling", {"model": "x", "input": texts})
        self.assertEqual(status, 200, got)
        self.assertEqual(set(got), {"id", "object", "created", "model", "data", "usage"})
        self.assertTrue(got["id"].startswith("pooling-"))
        status, _, toks = self.s.post("/tokenize", {"inputs": texts})
        self.assertEqual(got["usage"], {"prompt_tokens": sum(len(t) for t in toks),
                                        "total_tokens": sum(len(t) for t in toks),
                                        "completion_tokens": 0, "prompt_tokens_details": None})
        status, _, vllm = self.s.post("/classify", {"input": texts})
        for i, d in enumerate(got["data"]):
            self.assertEqual((d["index"], d["object"]), (i, "pooling"))
            self.assertTrue(close_floats(d["data"], vllm["data"][i]["probs"], 1e-6))
        status, _, logits = self.s.post("/pooling", {"input": texts, "task": "classify",
                                                     "use_activation": False})
        status, _, raw = self.s.post("/classify", {"input": texts, "use_activation": False})
        self.assertTrue(close_floats([d["data"] for d in logits["data"]],
                                     [d["probs"] for d in raw["data"]], 1e-6))

        status, _, emb = self.s.post("/pooling", {"input": texts, "task": "embed"})
        status, _, openai = self.s.post("/v1/embeddings", {"input": texts})
        self.assertTrue(close_floats([d["data"] for d in emb["data"]],
                                     [d["embedding"] for d in openai["data"]], 1e-6))
        status, _, plain = self.s.post("/pooling", {"input": texts[0], "task": "embed",
                                                    "use_activation": False})
        status, _, tei = self.s.post("/embed", {"inputs": texts[0], "normalize": False})
        self.assertTrue(close_floats(plain["data"][0]["data"], tei[0], 1e-6, on_scale=True))

        status, _, rows = self.s.post("/pooling", {"input": texts, "task": "token_embed"})
        self.assertEqual(status, 200, rows)
        status, _, hidden = self.s.post("/embed_all", {"inputs": texts})
        for d, h in zip(rows["data"], hidden):
            self.assertEqual(len(d["data"]), len(h))
            unit = [[x / max(math.sqrt(sum(y * y for y in v)), 1e-12) for x in v] for v in h]
            self.assertTrue(close_floats(d["data"], unit, 1e-6))
        status, _, raw_rows = self.s.post("/pooling", {"input": [texts[1]], "task": "token_embed",
                                                       "use_activation": False})
        self.assertTrue(close_floats(raw_rows["data"][0]["data"], hidden[1], 1e-6, on_scale=True))
        status, _, b64 = self.s.post("/pooling", {"input": texts, "task": "token_embed",
                                                  "encoding_format": "base64"})
        for d, want in zip(b64["data"], rows["data"]):
            raw_bytes = base64.b64decode(d["data"])
            flat = list(struct.unpack("<%df" % (len(raw_bytes) // 4), raw_bytes))
            # JSON's shortest texts read back as the same float32s.
            f32 = [x for row in want["data"] for x in row]
            self.assertEqual(flat, list(struct.unpack("<%df" % len(f32),
                                                      struct.pack("<%df" % len(f32), *f32))))

        # Token ids as given; a cut keeps the specials, as Hugging Face's.
        ids = [t["id"] for t in toks[1]]
        status, _, by_ids = self.s.post("/pooling", {"input": [ids], "task": "token_embed"})
        self.assertTrue(close_floats(by_ids["data"][0]["data"], rows["data"][1]["data"], 1e-6))
        status, _, cut = self.s.post("/pooling", {"input": texts[1], "task": "token_embed",
                                                  "truncate_prompt_tokens": 3,
                                                  "truncation_side": "left"})
        status, _, kept = self.s.post("/pooling", {"input": [ids[:1] + ids[-2:]],
                                                   "task": "token_embed"})
        self.assertEqual(cut["usage"]["prompt_tokens"], 3)
        self.assertTrue(close_floats(cut["data"], kept["data"], 1e-6))
        body = {"input": texts, "task": "token_embed", "truncate_prompt_tokens": 4}
        rc, want = cli(BIN, "pooling", MODEL, body)
        self.assertEqual(rc, 0)
        status, _, got = self.s.post("/pooling", body)
        self.assertTrue(close_floats(got["data"], want["data"], 1e-6, on_scale=True))

        for body, message in [
                ({"input": "x", "task": "token_classify"},
                 '"task": "token_classify" needs a token classification head, which this '
                 'checkpoint has not; its tasks: "embed", "token_embed", "classify"'),
                ({"input": "x", "task": "plugin"},
                 '"task" must be one of "embed", "classify", "token_embed", '
                 '"token_classify", got "plugin"'),
                ({"input": "x", "encoding_format": "bytes"},
                 '"encoding_format" must be "float" or "base64", got "bytes"'),
                ({"input": " ", "add_special_tokens": False},
                 'input[0] has no tokens: send text that has some, or "add_special_tokens": '
                 'true'),
                ({"input": "x", "dimensions": 8},
                 'unknown field "dimensions"; accepted: "input", "add_special_tokens", '
                 '"model", "encoding_format", "user", "truncate_prompt_tokens", '
                 '"use_activation", "truncation_side", "priority", "task"')]:
            status, _, err = self.s.post("/pooling", body)
            self.assertEqual(status, 422, err)
            self.assertEqual(err["error"]["message"], message)
        m = self.s.metrics()
        self.assertGreaterEqual(m['bertserve_requests_total{route="pooling",status="200"}'], 10)
        self.assertGreaterEqual(m['bertserve_requests_total{route="pooling",status="422"}'], 5)

    def test_platform_paths(self):
        """What SageMaker and Inference Endpoints call: POST /invocations and
        POST / answer as the checkpoint's route (a classifier's /predict, as
        TEI's), GET / and GET /ping are the health probe, /embeddings is
        /v1/embeddings (TEI's alias); a wrong method names the right one."""
        body = {"inputs": ["I loved it", "awful"]}
        status, _, want = self.s.post("/predict", body)
        for path in ("/invocations", "/"):
            status, _, got = self.s.post(path, body)
            self.assertEqual(status, 200, got)
            self.assertEqual(got, want, path)
        status, _, err = self.s.post("/invocations", {"inputs": "x", "top_k": 2})
        self.assertEqual((status, err["error"]), (422, 'unknown field "top_k"; accepted: '
                         '"inputs", "parameters", "options", "truncate", '
                         '"truncation_direction", "raw_scores"'))
        for path in ("/", "/ping"):
            self.assertEqual(self.s.get_json(path), (200, {"status": "ok"}), path)
        status, hdrs, _ = self.s.request("GET", "/invocations")
        self.assertEqual((status, hdrs.get("allow")), (405, "POST"))
        status, hdrs, _ = self.s.request("PUT", "/")
        self.assertEqual((status, hdrs.get("allow")), (405, "GET, HEAD, POST"))
        status, _, a = self.s.post("/embeddings", {"input": "hello"})
        status, _, b = self.s.post("/v1/embeddings", {"input": "hello"})
        self.assertEqual(status, 200, a)
        self.assertEqual(a["data"], b["data"])

    def test_similarity(self):
        """Cosines of the source's /embed vector with each sentence's."""
        sentences = ["a cat sat", "stock markets fell", "The cat sat on the mat."]
        status, _, got = self.s.post("/similarity", {"inputs": {
            "source_sentence": "The cat sat on the mat.", "sentences": sentences}})
        self.assertEqual(status, 200, got)
        status, _, vecs = self.s.post("/embed", {"inputs": ["The cat sat on the mat."] + sentences})
        src = vecs[0]

        def cos(a, b):
            return sum(x * y for x, y in zip(a, b)) / math.sqrt(
                sum(x * x for x in a) * sum(y * y for y in b))
        self.assertEqual(len(got), 3)
        for g, v in zip(got, vecs[1:]):
            self.assertAlmostEqual(g, cos(src, v), 5)
        self.assertAlmostEqual(got[2], 1.0, 5)
        status, _, err = self.s.post("/similarity", {"inputs": {"source_sentence": "x"}})
        self.assertEqual((status, err["error"]), (422, 'missing field "sentences" in "inputs"'))

    def test_tokenize(self):
        toks = self.same_as_cli("tokenize", {"inputs": "Héllo wörld"})
        self.assertEqual(len(toks), 1)
        first = toks[0]
        self.assertEqual(first[0], {"id": 101, "text": "[CLS]", "special": True,
                                    "start": None, "stop": None})
        self.assertEqual(first[1]["text"], "Héllo")
        self.assertEqual((first[1]["start"], first[1]["stop"]), (0, 6))  # bytes
        bare = self.same_as_cli("tokenize", {"inputs": ["a b"], "add_special_tokens": False})
        self.assertEqual([t["text"] for t in bare[0]], ["a", "b"])

    def test_openai(self):
        status, _, out = self.s.post("/v1/embeddings", {"input": ["hello", "world"],
                                                        "model": "m"})
        self.assertEqual(status, 200)
        self.assertEqual(out["object"], "list")
        self.assertEqual(out["model"], "model")  # the served name: the folder's, not "m"
        self.assertEqual([d["index"] for d in out["data"]], [0, 1])
        self.assertEqual(out["usage"]["prompt_tokens"], 6)
        status, _, b64 = self.s.post("/v1/embeddings", {"input": "hello",
                                                        "encoding_format": "base64"})
        vec = struct.unpack("<%df" % HIDDEN, base64.b64decode(b64["data"][0]["embedding"]))
        self.assertTrue(close_floats(list(vec), out["data"][0]["embedding"], 1e-6))
        status, _, err = self.s.post("/v1/embeddings", {"input": 5})
        self.assertEqual(status, 422)
        self.assertEqual(set(err["error"]), {"message", "type", "code"})

    def test_openai_unit_length_and_dimensions(self):
        """Issue 20: unit length by default (this checkpoint has no Normalize
        module, so /embed's vectors are not); "dimensions" cuts /embed's
        vector and makes the cut unit length; Jina's "normalized": false
        gives /embed's raw vector."""
        texts = ["hello world", "The cat sat on the mat."]
        status, _, raw = self.s.post("/embed", {"inputs": texts, "normalize": False})
        self.assertEqual(status, 200)
        self.assertGreater(abs(math.sqrt(sum(x * x for x in raw[0])) - 1), 0.1)

        def unit(v):
            n = math.sqrt(sum(x * x for x in v))
            return [x / n for x in v]
        status, _, out = self.s.post("/v1/embeddings", {"input": texts})
        for d, r in zip(out["data"], raw):
            self.assertEqual(len(d["embedding"]), HIDDEN)
            self.assertAlmostEqual(sum(x * x for x in d["embedding"]), 1.0, 5)
            self.assertTrue(close_floats(d["embedding"], unit(r), 1e-5))
        for dims in (1, 16, HIDDEN - 1, HIDDEN):
            status, _, out = self.s.post("/v1/embeddings", {"input": texts, "dimensions": dims})
            self.assertEqual(status, 200, out)
            for d, r in zip(out["data"], raw):
                self.assertEqual(len(d["embedding"]), dims)
                self.assertAlmostEqual(sum(x * x for x in d["embedding"]), 1.0, 5)
                self.assertTrue(close_floats(d["embedding"], unit(r[:dims]), 1e-5))
        status, _, out = self.s.post("/v1/embeddings", {"input": texts, "dimensions": 16,
                                                        "normalized": False, "task": "x",
                                                        "embedding_type": "float"})
        self.assertEqual(status, 200, out)
        self.assertTrue(close_floats(out["data"][1]["embedding"], raw[1][:16], 1e-5))
        status, _, err = self.s.post("/v1/embeddings", {"input": "a", "dimensions": HIDDEN + 1})
        self.assertEqual(status, 422)
        self.assertEqual(err["error"]["message"],
                         "\"dimensions\" must be at most the model's embedding size %d, got %d"
                         % (HIDDEN, HIDDEN + 1))

    def test_cohere_embed(self):
        """Cohere's /v1/embed and /v2/embed (the cohere-ai client's calls are
        in tests/clients): unit length, its truncation modes and limits, and
        every refusal with its message."""
        texts = ["hello world", "The cat sat on the mat."]
        status, _, raw = self.s.post("/embed", {"inputs": texts, "normalize": False})

        def unit(v):
            n = math.sqrt(sum(x * x for x in v))
            return [x / n for x in v]
        status, _, v2 = self.s.post("/v2/embed", {"texts": texts, "model": "embed-v4.0",
                                                  "input_type": "classification",
                                                  "output_dimension": 16, "priority": 3})
        self.assertEqual(status, 200, v2)
        self.assertEqual(set(v2), {"id", "embeddings", "texts", "meta", "response_type"})
        self.assertEqual(list(v2["embeddings"]), ["float"])
        for e, r in zip(v2["embeddings"]["float"], raw):
            self.assertTrue(close_floats(e, unit(r[:16]), 1e-5))
        self.assertEqual(v2["meta"]["api_version"], {"version": "2"})
        # Cohere cuts at the end unless told "NONE"; "START" keeps the end.
        long_text = " ".join("word%d" % i for i in range(400))
        status, _, tok = self.s.post("/tokenize", {"inputs": long_text, "truncate": True})
        status, _, tok_left = self.s.post("/tokenize", {"inputs": long_text, "truncate": True,
                                                        "truncation_direction": "left"})
        cut = {}
        for mode, want, side in (("END", tok, "right"), ("START", tok_left, "left")):
            status, _, got = self.s.post("/v1/embed", {"texts": [long_text], "truncate": mode})
            self.assertEqual(status, 200, got)
            status, _, emb = self.s.post("/embed", {"inputs": long_text, "normalize": False,
                                                    "truncate": True,
                                                    "truncation_direction": side})
            self.assertTrue(close_floats(got["embeddings"][0], unit(emb[0]), 1e-5), mode)
            self.assertEqual(got["meta"]["billed_units"]["input_tokens"], len(want[0]))
            cut[mode] = got["embeddings"][0]
        self.assertFalse(close_floats(cut["END"], cut["START"], 1e-3))
        status, _, got = self.s.post("/v1/embed", {"texts": [long_text]})
        self.assertEqual(status, 200, got)
        status, _, err = self.s.post("/v1/embed", {"texts": ["x", long_text], "truncate": "NONE"})
        self.assertEqual(status, 413, err)
        self.assertRegex(err["error"], r'^texts\[1\] is \d+ tokens long, more than the limit '
                                       r'of \d+; send "truncate": "END" to cut it$')
        # v2's max_tokens: at most that many tokens, cut unless "NONE".
        status, _, got = self.s.post("/v2/embed", {"texts": texts, "max_tokens": 4})
        self.assertEqual(got["meta"]["billed_units"]["input_tokens"], 8)
        status, _, err = self.s.post("/v2/embed", {"texts": texts, "max_tokens": 4,
                                                   "truncate": "NONE"})
        self.assertEqual(status, 413, err)
        for path, body, message in [
                ("/v1/embed", {"texts": "a"}, '"texts" must be a list of strings, got a string'),
                ("/v1/embed", {"model": "m"}, 'missing field "texts"'),
                ("/v1/embed", {"texts": ["a"], "embedding_types": ["int8"]},
                 '"embedding_types": "int8" is not served: its scale is Cohere\'s own; ask for '
                 '"float", "base64", "binary" or "ubinary"'),
                ("/v1/embed", {"texts": ["a"], "embedding_types": []},
                 '"embedding_types" must not be an empty list'),
                ("/v1/embed", {"texts": ["a"], "embedding_types": ["bits"]},
                 '"embedding_types" must be a list of "float", "base64", "binary", "ubinary", '
                 'got "bits"'),
                ("/v1/embed", {"texts": ["a"], "input_type": "image"},
                 '"input_type": "image" is for images, and this server embeds texts'),
                ("/v1/embed", {"texts": ["a"], "input_type": "query"},
                 '"input_type" must be one of "search_document", "search_query", '
                 '"classification", "clustering", got "query"'),
                ("/v1/embed", {"texts": ["a"], "truncate": "MIDDLE"},
                 '"truncate" must be one of "NONE", "START", "END", got "MIDDLE"'),
                ("/v1/embed", {"texts": ["a"], "output_dimension": 8},
                 'unknown field "output_dimension"; accepted: "texts", "model", "input_type", '
                 '"embedding_types", "truncate"'),
                ("/v2/embed", {"texts": ["a"], "output_dimension": HIDDEN + 1},
                 '"output_dimension" must be at most the model\'s embedding size %d, got %d'
                 % (HIDDEN, HIDDEN + 1)),
                ("/v2/embed", {"texts": ["a"], "max_tokens": 0},
                 '"max_tokens" must be at least 1, got 0'),
                ("/v2/embed", {"texts": ["a"], "priority": -1},
                 '"priority" must be at least 0, got -1'),
                ("/v2/embed", {"images": ["data:image/png;base64,AA=="]},
                 'unknown field "images"; accepted: "texts", "model", "input_type", '
                 '"embedding_types", "truncate", "max_tokens", "output_dimension", "priority"')]:
            status, _, err = self.s.post(path, body)
            self.assertEqual(status, 422, (path, body, err))
            self.assertEqual(err, {"error": message, "error_type": "validation"})

    def test_openai_token_ids(self):
        """OpenAI's token arrays are the model's input as given: the ids
        /tokenize gives (specials included) embed as the text does."""
        status, _, toks = self.s.post("/tokenize", {"inputs": ["hello world", "a cat"]})
        ids = [[t["id"] for t in seq] for seq in toks]
        status, _, by_text = self.s.post("/v1/embeddings", {"input": ["hello world", "a cat"]})
        status, _, by_ids = self.s.post("/v1/embeddings", {"input": ids})
        self.assertEqual(status, 200, by_ids)
        for a, b in zip(by_text["data"], by_ids["data"]):
            self.assertTrue(close_floats(a["embedding"], b["embedding"], 1e-6))
        self.assertEqual(by_ids["usage"], by_text["usage"])
        status, _, one = self.s.post("/v1/embeddings", {"input": ids[0]})
        self.assertTrue(close_floats(one["data"][0]["embedding"], by_text["data"][0]["embedding"],
                                     1e-6))
        status, _, err = self.s.post("/v1/embeddings", {"input": [[101, 30522]]})
        self.assertEqual(status, 422)
        self.assertEqual(err["error"]["message"], "input[0]: token id 30522 at position 1 is not "
                         "in the vocabulary (0 to 30521)")

    def test_vllm_embedding_fields(self):
        """vLLM's extra fields on /v1/embeddings: truncate_prompt_tokens cuts
        to that many tokens (the same vector as the kept tokens' ids),
        truncation_side picks the end that goes, use_activation false is
        the unnormalised vector, add_special_tokens false drops [CLS] and
        [SEP]."""
        text = "the quick brown fox jumps over the lazy dog"
        status, _, toks = self.s.post("/tokenize", {"inputs": text})
        ids = [t["id"] for t in toks[0]]
        for side, kept in (("right", ids[:4] + ids[-1:]), ("left", ids[:1] + ids[-4:])):
            status, _, got = self.s.post("/v1/embeddings", {"input": text,
                                                            "truncate_prompt_tokens": 5,
                                                            "truncation_side": side})
            self.assertEqual(status, 200, got)
            self.assertEqual(got["usage"]["prompt_tokens"], 5)
            status, _, want = self.s.post("/v1/embeddings", {"input": [kept]})
            self.assertTrue(close_floats(got["data"][0]["embedding"],
                                         want["data"][0]["embedding"], 1e-6), side)
        status, _, whole = self.s.post("/v1/embeddings", {"input": text,
                                                          "truncate_prompt_tokens": -1})
        self.assertEqual(whole["usage"]["prompt_tokens"], len(ids))
        status, _, raw = self.s.post("/embed", {"inputs": text, "normalize": False})
        status, _, got = self.s.post("/v1/embeddings", {"input": text, "use_activation": False})
        self.assertTrue(close_floats(got["data"][0]["embedding"], raw[0], 1e-6))
        status, _, bare = self.s.post("/v1/embeddings", {"input": text,
                                                         "add_special_tokens": False})
        status, _, want = self.s.post("/v1/embeddings", {"input": [ids[1:-1]]})
        self.assertEqual(bare["usage"]["prompt_tokens"], len(ids) - 2)
        self.assertTrue(close_floats(bare["data"][0]["embedding"], want["data"][0]["embedding"],
                                     1e-6))
        status, _, err = self.s.post("/v1/embeddings", {"input": text,
                                                        "truncate_prompt_tokens": 100000})
        self.assertEqual(status, 422, err)
        self.assertEqual(err["error"]["message"], '"truncate_prompt_tokens" is 100000, more than '
                         "this model's limit of 512 tokens")
        status, _, err = self.s.post("/v1/embeddings", {"input": text,
                                                        "truncation_side": "middle"})
        self.assertEqual(err["error"]["message"],
                         '"truncation_side" must be "right" or "left", got "middle"')

    def test_decode(self):
        """TEI's /decode: /tokenize's ids back to the (lower-cased) text."""
        status, _, toks = self.s.post("/tokenize", {"inputs": ["Hello world!", "a cat"]})
        ids = [[t["id"] for t in seq] for seq in toks]
        status, _, text = self.s.post("/decode", {"ids": ids})
        self.assertEqual((status, text), (200, ["hello world!", "a cat"]))
        status, _, text = self.s.post("/decode", {"ids": ids[0], "skip_special_tokens": False})
        self.assertEqual(text, ["[CLS] hello world! [SEP]"])
        status, _, err = self.s.post("/decode", {"ids": [5, 30522]})
        self.assertEqual((status, err["error"]), (422, "ids[0]: token id 30522 at position 1 is "
                                                       "not in the vocabulary (0 to 30521)"))

    def test_cors_off(self):
        """Without [server] cors_allow_origin: no CORS headers, OPTIONS 405."""
        status, hdrs, _ = self.s.request("POST", "/embed", {"inputs": "a"},
                                         {"Origin": "https://app.example"})
        self.assertEqual(status, 200)
        self.assertNotIn("access-control-allow-origin", hdrs)
        status, hdrs, _ = self.s.request("OPTIONS", "/embed", None,
                                         {"Origin": "https://app.example"})
        self.assertEqual(status, 405)

    def test_models(self):
        status, models = self.s.get_json("/v1/models")
        self.assertEqual(status, 200)
        self.assertEqual(models["object"], "list")
        self.assertEqual(len(models["data"]), 1)
        model = models["data"][0]
        self.assertEqual((model["id"], model["object"], model["owned_by"]),
                         ("model", "model", "bertserve"))
        self.assertIsInstance(model["created"], int)
        self.assertEqual(self.s.get_json("/v1/models/model"), (200, model))
        status, _, data = self.s.request("GET", "/v1/models/other")
        self.assertEqual(status, 404)
        self.assertEqual(json.loads(data)["error"],
                         {"message": "the model \"other\" does not exist; this server has model",
                          "type": "invalid_request_error", "code": "not_found"})
        status, hdrs, _ = self.s.request("POST", "/v1/models", {})
        self.assertEqual(status, 405)

    def test_timing_and_truncation_headers(self):
        long_text = " ".join(["word"] * 600)
        status, hdrs, body = self.s.post("/embed", {"inputs": [long_text, "x"],
                                                    "truncate": True})
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["x-truncated-inputs"], "1")
        for h in ("x-queue-time", "x-inference-time", "x-total-time"):
            self.assertGreaterEqual(float(hdrs[h]), 0.0)
        status, _, err = self.s.post("/embed", {"inputs": long_text})
        self.assertEqual(status, 413)
        self.assertEqual(err["error_type"], "payload_too_large")
        self.assertIn("512", err["error"])

    def expect(self, method, path, body, status, error_type, contains=None, headers=None):
        got, hdrs, data = self.s.request(method, path, body, headers)
        self.assertEqual(got, status, data)
        err = json.loads(data)
        self.assertEqual(err["error_type"], error_type, err)
        if contains:
            self.assertIn(contains, err["error"])
        return hdrs

    def raw_request(self, data):
        """Send raw bytes, return the raw response (the server may answer before
        reading everything and then close)."""
        with socket.create_connection(("127.0.0.1", self.s.port), timeout=30) as sock:
            try:
                sock.sendall(data)
            except OSError:
                pass
            out = b""
            while True:
                try:
                    part = sock.recv(65536)
                except OSError:
                    break
                if not part:
                    break
                out += part
        self.assertTrue(out.startswith(b"HTTP/1.1 413"), out[:200])
        return out

    def test_errors(self):
        self.expect("POST", "/embed", "{not json", 400, "validation")
        self.expect("POST", "/embed", b'{"inputs": "\xff\xfe"}', 400, "validation")
        self.expect("POST", "/embed", '{"inputs": "a", "inputs": "b"}', 400, "validation")
        self.expect("POST", "/embed", {"inputs": 5}, 422, "validation", "inputs")
        self.expect("POST", "/embed", {"inputs": []}, 422, "validation")
        self.expect("POST", "/embed", {"inputs": "a", "pooling": "avg"}, 422, "validation")
        self.expect("POST", "/embed", {"inputs": "a", "foo": 1}, 422, "validation", "foo")
        self.expect("POST", "/fill-mask", {"inputs": "no mask here"}, 422, "validation",
                    "[MASK]")
        self.expect("POST", "/fill-mask", {"inputs": "a [MASK]", "top_k": 0}, 422,
                    "validation", "top_k")
        self.expect("POST", "/fill-mask", {"inputs": "a [MASK]", "top_k": "3"}, 422,
                    "validation", "top_k")
        # 300 masks x top_k 100 x 302 tokens: over max_fill_mask_decode (2,000,000).
        self.expect("POST", "/fill-mask", {"inputs": "[MASK] " * 300, "top_k": 100}, 413,
                    "payload_too_large", "max_fill_mask_decode")
        self.expect("POST", "/classify", {"inputs": "a", "function_to_apply": "relu"}, 422,
                    "validation")
        self.expect("POST", "/embed", {"inputs": ["x"] * 2049}, 413, "payload_too_large")
        self.assertIn(b"payload_too_large", self.raw_request(
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 3000000\r\n\r\n"))
        chunk = b"%x\r\n%s\r\n" % (1 << 20, b"x" * (1 << 20))
        self.assertIn(b"payload_too_large", self.raw_request(
            b"POST /embed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
            + chunk * 3 + b"0\r\n\r\n"))
        hdrs = self.expect("GET", "/embed", None, 405, "method_not_allowed")
        self.assertEqual(hdrs["allow"], "POST")
        self.expect("POST", "/health", "", 405, "method_not_allowed")
        self.expect("GET", "/nope", None, 404, "not_found")
        # The server keeps serving after all of that.
        self.assertEqual(self.s.get_json("/health")[0], 200)


class ApiKey(unittest.TestCase):
    def test_key_guards_inference_routes(self):
        s = Server(BIN, MODEL, ["--api-key", "s3cret"])
        try:
            status, hdrs, _ = s.request("POST", "/embed", {"inputs": "a"})
            self.assertEqual(status, 401)
            self.assertEqual(hdrs["www-authenticate"], "Bearer")
            status, _, _ = s.request("POST", "/embed", {"inputs": "a"},
                                     {"Authorization": "Bearer wrong"})
            self.assertEqual(status, 401)
            status, _, _ = s.request("POST", "/embed", {"inputs": "a"},
                                     {"Authorization": "Bearer s3cret"})
            self.assertEqual(status, 200)
            self.assertEqual(s.get_json("/health")[0], 200)
            self.assertEqual(s.get_json("/ready")[0], 200)
            self.assertEqual(s.request("GET", "/info")[0], 401)
        finally:
            self.assertEqual(s.stop(), 0)

    def test_without_the_key_every_path_but_the_probes_is_401(self):
        # 404 and 405 before 401 let a client without the key map the routes.
        s = Server(BIN, MODEL, ["--api-key", "s3cret"])
        try:
            for method, path in [("GET", "/nope"), ("POST", "/nope"), ("GET", "/embed"),
                                 ("POST", "/info"), ("DELETE", "/fill-mask")]:
                status, hdrs, body = s.request(method, path)
                self.assertEqual(status, 401, (method, path, body))
                self.assertEqual(json.loads(body)["error_type"], "unauthorized")
            with_key = {"Authorization": "Bearer s3cret"}
            self.assertEqual(s.request("GET", "/nope", headers=with_key)[0], 404)
            self.assertEqual(s.request("GET", "/embed", headers=with_key)[0], 405)
            # Probes stay open, wrong methods on them included.
            self.assertEqual(s.request("POST", "/health")[0], 405)
            self.assertEqual(s.request("GET", "/metrics")[0], 200)
            # A NUL after the key: libmicrohttpd 0.9 (the first front end) cut the
            # value there.
            body = b'{"inputs":"hi"}'
            with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
                sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                             b"Authorization: Bearer s3cret\x00junk\r\n"
                             b"Content-Length: %d\r\n\r\n" % len(body) + body)
                out = b""
                while True:
                    part = sock.recv(65536)
                    if not part:
                        break
                    out += part
            self.assertTrue(out.startswith(b"HTTP/1.1 400 "), out[:200])
        finally:
            self.assertEqual(s.stop(), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
