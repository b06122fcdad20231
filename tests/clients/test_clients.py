"""Issue 20: the real npm client libraries against real bertservers on
127.0.0.1 (clients.mjs says what each call checks). Needs Node 20+ and
`npm ci` in tests/clients (.ci/run does it); without node_modules the test
fails saying so.

usage: test_clients.py BIN_DIR MODEL_DIR TOKENIZER_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "http"))
from harness import Server  # noqa: E402

BIN, MODEL, TOKENIZER, WORK = sys.argv[1:5]


def cross_encoder():
    """A one-label classifier (a cross-encoder) with a sentence-transformers
    prompt "query", made by `bert init`."""
    out = os.path.join(WORK, "cross-encoder")
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([os.path.join(BIN, "bert"), "init", "--out", out, "--tokenizer", TOKENIZER,
                    "--layers", "2", "--hidden", "64", "--heads", "2", "--intermediate", "128",
                    "--weight-std", "0.1", "--bias-range", "0.05", "--ln-range", "0.1",
                    "--prefix", "--labels", "LABEL_0"], check=True, capture_output=True,
                   timeout=120)
    with open(os.path.join(out, "config_sentence_transformers.json"), "w") as f:
        json.dump({"prompts": {"query": "query: "}}, f)
    return out


class Clients(unittest.TestCase):
    def test_real_clients(self):
        if shutil.which("node") is None:
            self.fail("node (20 or later) is not on PATH: the client libraries need it")
        if not os.path.isdir(os.path.join(HERE, "node_modules")):
            self.fail("tests/clients/node_modules is missing: run `npm ci` in tests/clients")
        embed = Server(BIN, MODEL, ["--served-model-name", "bert-tiny"])
        try:
            rerank = Server(BIN, cross_encoder())
            try:
                r = subprocess.run(["node", os.path.join(HERE, "clients.mjs"),
                                    "http://127.0.0.1:%d" % embed.port,
                                    "http://127.0.0.1:%d" % rerank.port],
                                   capture_output=True, text=True, timeout=240)
                print(r.stdout + r.stderr)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            finally:
                self.assertEqual(rerank.stop(), 0, rerank.output())
        finally:
            self.assertEqual(embed.stop(), 0, embed.output())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
