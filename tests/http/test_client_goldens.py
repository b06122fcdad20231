"""The client-facing numeric paths of issue 20 against the float64 PyTorch
reference (tests/data/golden/clients.json, made by
tests/golden/make_client_goldens.py): a real bertserve on the tiny-mlm
synthetic checkpoint, rebuilt here with `bert init`.

Tolerances: float32 compute against float64; every component of a
unit-length vector within 5e-6 absolute (measured worst 6.3e-7), every cosine
within 5e-6.

usage: test_client_goldens.py BIN_DIR SOURCE_DIR WORK_DIR
"""
import json
import os
import subprocess
import sys
import unittest

from harness import Server

BIN, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
GOLDEN = json.load(open(os.path.join(SRC, "tests/data/golden/clients.json"), encoding="utf-8"))
TOL = 5e-6


def build_checkpoint():
    out = os.path.join(WORK, "tiny-mlm")
    args = GOLDEN["command"].split()
    args[0] = os.path.join(BIN, "bert")
    args[args.index("DIR")] = out
    tok = args.index("--tokenizer") + 1
    args[tok] = os.path.join(SRC, args[tok])
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return out


class ClientGoldens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(BIN, build_checkpoint(), flags=("--served-model-name", "org/tiny-mlm"))

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
        worst = 0
        for dims, want in GOLDEN["dimensions"].items():
            status, _, out = self.s.post("/v1/embeddings", {"input": GOLDEN["texts"],
                                                            "dimensions": int(dims)})
            self.assertEqual(status, 200, out)
            for i, (d, w) in enumerate(zip(out["data"], want)):
                worst = max(worst, self.assert_close(d["embedding"], w, "dims %s, text %d"
                                                     % (dims, i)))
        print("dimensions: worst abs error %.3g" % worst)


    def test_similarity(self):
        sim = GOLDEN["similarity"]
        status, _, got = self.s.post("/similarity", {"inputs": {
            "source_sentence": sim["source_sentence"], "sentences": sim["sentences"]}})
        self.assertEqual(status, 200, got)
        print("similarity: worst abs error %.3g"
              % self.assert_close(got, sim["cosines"], "similarity"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
