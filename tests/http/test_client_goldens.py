"""The client-facing numeric paths of issue 20 against the float64 PyTorch
reference (tests/data/golden/clients.json, made by
tests/golden/make_client_goldens.py): a real bertserve on the tiny-mlm
synthetic checkpoint, rebuilt here with `bert init`.

Tolerances: float32 compute against float64; every component of a
unit-length vector within 5e-6 absolute (measured worst 6.3e-7), every cosine
within 5e-6 (7.3e-8); /embed_all's hidden states within 1e-4 of tiny-mlm.json's
(2.5e-6).

usage: test_client_goldens.py BIN_DIR SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

from harness import Server

BIN, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
GOLDEN = json.load(open(os.path.join(SRC, "tests/data/golden/clients.json"), encoding="utf-8"))
TOL = 5e-6


PROMPTS = {"prompts": {"query": "query: ", "passage": "passage: "},
           "default_prompt_name": "passage"}


def build_checkpoint():
    out = os.path.join(WORK, "tiny-mlm")
    args = GOLDEN["command"].split()
    args[0] = os.path.join(BIN, "bert")
    args[args.index("DIR")] = out
    tok = args.index("--tokenizer") + 1
    args[tok] = os.path.join(SRC, args[tok])
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump(PROMPTS, f)
    return out


class ClientGoldens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = build_checkpoint()
        cls.s = Server(BIN, cls.model, flags=("--served-model-name", "org/tiny-mlm"))

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def assert_close(self, got, want, what):
        self.assertEqual(len(got), len(want), what)
        worst = max(abs(a - b) for a, b in zip(got, want))
        self.assertLessEqual(worst, TOL, "%s: worst %.3g" % (what, worst))
        return worst

    def test_served_model_name(self):
        status, models = self.s.get_json("/v1/models")
        self.assertEqual([m["id"] for m in models["data"]], ["org/tiny-mlm"])
        self.assertEqual(self.s.get_json("/v1/models/org/tiny-mlm")[1]["id"], "org/tiny-mlm")
        self.assertEqual(self.s.request("GET", "/v1/models/org")[0], 404)
        status, _, out = self.s.post("/v1/embeddings", {"input": "a", "model": "gpt"})
        self.assertEqual(out["model"], "org/tiny-mlm")

    def test_dimensions(self):
        """/v1/embeddings and /embed with "dimensions" (prompt "" so that the
        checkpoint's default prompt does not apply)."""
        worst = 0
        for dims, want in GOLDEN["dimensions"].items():
            status, _, out = self.s.post("/v1/embeddings", {"input": GOLDEN["texts"],
                                                            "dimensions": int(dims)})
            self.assertEqual(status, 200, out)
            status, _, tei = self.s.post("/embed", {"inputs": GOLDEN["texts"], "normalize": True,
                                                    "dimensions": int(dims), "prompt": ""})
            self.assertEqual(status, 200, tei)
            for i, (d, t, w) in enumerate(zip(out["data"], tei, want)):
                worst = max(worst, self.assert_close(d["embedding"], w, "dims %s, text %d"
                                                     % (dims, i)),
                            self.assert_close(t, w, "/embed dims %s, text %d" % (dims, i)))
        print("dimensions: worst abs error %.3g" % worst)

    def test_prompts(self):
        """config_sentence_transformers.json: prompt_name puts its prompt
        before the text, "prompt" a given one, and without either the
        default_prompt_name applies (/embed and /similarity); /v1/embeddings
        takes none."""
        def embed(body):
            status, _, out = self.s.post("/embed", body)
            self.assertEqual(status, 200, out)
            return out[0]
        plain = embed({"inputs": "query: Hello world!", "prompt": ""})
        self.assertEqual(embed({"inputs": "Hello world!", "prompt_name": "query"}), plain)
        self.assertEqual(embed({"inputs": "Hello world!", "prompt": "query: "}), plain)
        self.assertEqual(embed({"inputs": "Hello world!"}),
                         embed({"inputs": "passage: Hello world!", "prompt": ""}))
        self.assertNotEqual(embed({"inputs": "Hello world!", "prompt": ""}), plain)
        status, _, sim = self.s.post("/similarity", {"inputs": {
            "source_sentence": "Hello world!", "sentences": ["Hello world!"]},
            "parameters": {"prompt_name": "query"}})
        self.assertAlmostEqual(sim[0], 1.0, 5)
        status, _, err = self.s.post("/embed", {"inputs": "a", "prompt_name": "doc"})
        self.assertEqual((status, err["error"]), (422, '"prompt_name" "doc" is not one of this '
                                                       "model's 2 prompts "
                                                       "(config_sentence_transformers.json)"))
        status, _, err = self.s.post("/v1/embeddings", {"input": "a", "prompt_name": "query"})
        self.assertEqual(status, 422)

    def test_bad_prompts_file_fails_start_up(self):
        bad = os.path.join(WORK, "bad-prompts")
        shutil.rmtree(bad, ignore_errors=True)
        shutil.copytree(self.model, bad)
        with open(os.path.join(bad, "config_sentence_transformers.json"), "w") as f:
            json.dump({"prompts": {"q": "q: "}, "default_prompt_name": "x"}, f)
        s = Server(BIN, bad, ready=False)
        rc = s.proc.wait(timeout=60)
        out = s.output()
        s.stop()
        self.assertNotEqual(rc, 0)
        self.assertIn("config_sentence_transformers.json: default_prompt_name 'x' is not one "
                      "of its prompts", out)


    def test_embed_all(self):
        """TEI's /embed_all: every token's final hidden state, against the
        float64 reference's in tests/data/golden/tiny-mlm.json (the engine's
        own golden: 1e-4 absolute, test_golden's tolerance for hidden states)."""
        src = json.load(open(os.path.join(SRC, "tests/data/golden/tiny-mlm.json"),
                             encoding="utf-8"))
        f32 = [v for v in src["variants"] if v["dtype"] == "f32"][0]["outputs"]
        worst = 0
        for i in (0, 2):
            text = src["inputs"][i]["text"]
            status, _, got = self.s.post("/embed_all", {"inputs": [text], "prompt": ""})
            self.assertEqual(status, 200, got)
            self.assertEqual(len(got), 1)
            self.assertEqual(len(got[0]), len(src["inputs"][i]["ids"]))
            flat = [x for row in got[0] for x in row]
            hidden = f32[i]["hidden"]
            want = [x for row in hidden for x in row] if isinstance(hidden[0], list) else hidden
            self.assertEqual(len(flat), len(want))
            worst = max(worst, max(abs(a - b) for a, b in zip(flat, want)))
        self.assertLessEqual(worst, 1e-4)
        print("embed_all: worst abs error %.3g" % worst)
        # tokens x width floats over max_response_bytes (32 MiB): refused first.
        status, _, err = self.s.post("/embed_all", {"inputs": ["word " * 500] * 200})
        self.assertEqual(status, 413, err)
        self.assertIn("token vectors of 128 numbers, more than max_response_bytes", err["error"])

    def test_embed_sparse(self):
        """TEI's /embed_sparse (SPLADE) against the reference's
        log(1 + relu(MLM logits)) max-pooled over every token: the 64
        largest entries within 1e-4 (float32 logits of magnitude ~2.5), the
        count of non-zero entries within 0.1% (entries at 0 can flip), their
        sum within 0.01%."""
        want = GOLDEN["sparse"]
        status, _, got = self.s.post("/embed_sparse", {"inputs": GOLDEN["texts"], "prompt": ""})
        self.assertEqual(status, 200, got)
        self.assertEqual(len(got), len(want))
        worst = 0
        for entries, w in zip(got, want):
            value = {e["index"]: e["value"] for e in entries}
            self.assertEqual([e["index"] for e in entries], sorted(value))
            self.assertLessEqual(abs(len(entries) - w["n_positive"]), w["n_positive"] / 1000)
            self.assertLessEqual(abs(sum(value.values()) - w["sum"]), w["sum"] * 1e-4)
            for index, v in w["top"]:
                worst = max(worst, abs(value.get(index, 0.0) - v))
        self.assertLessEqual(worst, 1e-4)
        print("embed_sparse: worst abs error %.3g" % worst)
        # The threshold keeps only the entries above it.
        cut = want[0]["top"][9][1] - 1e-3
        status, _, got = self.s.post("/embed_sparse", {"inputs": GOLDEN["texts"][0],
                                                       "prompt": "", "threshold": cut})
        self.assertEqual(status, 200, got)
        self.assertEqual(sorted(e["index"] for e in got[0]),
                         sorted(j for j, _ in want[0]["top"][:10]))
        status, _, err = self.s.post("/embed_sparse", {"inputs": "x", "threshold": -1})
        self.assertEqual(status, 422, err)
        self.assertEqual(err["error"], '"threshold" must be at least 0, got -1')
        status, _, err = self.s.post("/embed_sparse", {"inputs": "x", "threshold": "0.5"})
        self.assertEqual(status, 422, err)
        self.assertEqual(err["error"], '"threshold" must be a number, got a string')
        # inputs x vocabulary floats over max_response_bytes (32 MiB): refused first.
        status, _, err = self.s.post("/embed_sparse", {"inputs": ["word"] * 300})
        self.assertEqual(status, 413, err)
        self.assertEqual(err["error"], "300 sparse vectors of 30522 entries are more than "
                                       "max_response_bytes (33554432) allows: send fewer inputs")

    def test_similarity(self):
        sim = GOLDEN["similarity"]
        status, _, got = self.s.post("/similarity", {"inputs": {
            "source_sentence": sim["source_sentence"], "sentences": sim["sentences"]},
            "prompt": ""})
        self.assertEqual(status, 200, got)
        print("similarity: worst abs error %.3g"
              % self.assert_close(got, sim["cosines"], "similarity"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
