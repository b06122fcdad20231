"""Faults in the checkpoint: a missing, truncated or corrupt file makes
bertserve fail at start-up, exit non-zero and name the file; a checkpoint
deleted or replaced (by rename) on disk while serving does not disturb the
running server, which keeps its mapping of the file it loaded.

usage: test_faults.py BIN_DIR MODEL_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness import Server, free_port

BIN, MODEL = sys.argv[1], sys.argv[2]


def start_fails(model_dir):
    """Run bertserve on model_dir; it must exit on its own. Returns (code, output)."""
    proc = subprocess.run([os.path.join(BIN, "bertserve"), "--model", model_dir,
                           "--host", "127.0.0.1", "--port", str(free_port())],
                          capture_output=True, timeout=60)
    return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")


class StartUp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=os.environ.get("TMPDIR"))
        self.dir = os.path.join(self.tmp, "model")
        shutil.copytree(MODEL, self.dir)

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def path(self, name):
        return os.path.join(self.dir, name)

    def expect_failure(self, *needles):
        code, out = start_fails(self.dir)
        self.assertNotEqual(code, 0, out)
        self.assertLess(code, 128, "killed by a signal:\n" + out)
        for needle in needles:
            self.assertIn(needle, out)
        return out

    def truncate(self, name, keep):
        with open(self.path(name), "r+b") as f:
            f.truncate(keep)

    def overwrite(self, name, data):
        with open(self.path(name), "wb") as f:
            f.write(data)

    def test_missing_folder(self):
        shutil.rmtree(self.dir)
        self.expect_failure(self.dir)

    def test_missing_config(self):
        os.remove(self.path("config.json"))
        self.expect_failure("config.json")

    def test_corrupt_config(self):
        self.overwrite("config.json", b'{"model_type": "bert", "hidden_size": ')
        self.expect_failure("config.json")

    def test_config_wrong_type(self):
        self.overwrite("config.json", b'{"model_type": "bert", "hidden_size": "big"}')
        self.expect_failure("config.json")

    def test_missing_weights(self):
        os.remove(self.path("model.safetensors"))
        self.expect_failure("model.safetensors")

    def test_empty_weights(self):
        self.truncate("model.safetensors", 0)
        self.expect_failure("model.safetensors")

    def test_truncated_header(self):
        self.truncate("model.safetensors", 100)
        self.expect_failure("model.safetensors")

    def test_truncated_data(self):
        size = os.path.getsize(self.path("model.safetensors"))
        self.truncate("model.safetensors", size - 1000)
        self.expect_failure("model.safetensors")

    def test_garbage_weights(self):
        self.overwrite("model.safetensors", b"\xff" * 4096)
        self.expect_failure("model.safetensors")

    def test_header_length_past_end(self):
        with open(self.path("model.safetensors"), "r+b") as f:
            f.write((1 << 40).to_bytes(8, "little"))
        self.expect_failure("model.safetensors")

    def test_missing_tokenizer(self):
        for name in ("tokenizer.json", "vocab.txt"):
            if os.path.exists(self.path(name)):
                os.remove(self.path(name))
        self.expect_failure("vocab")

    def test_corrupt_tokenizer_json(self):
        self.overwrite("tokenizer.json", b'{"model": {"type": "WordPiece", "vocab": [')
        self.expect_failure("tokenizer.json")

    def test_unreadable_weights(self):
        if os.geteuid() == 0:
            self.skipTest("root reads files whatever their mode")
        os.chmod(self.path("model.safetensors"), 0)
        self.expect_failure("model.safetensors")


class WhileServing(unittest.TestCase):
    def test_deleted_and_replaced_checkpoint(self):
        tmp = tempfile.mkdtemp(dir=os.environ.get("TMPDIR"))
        model = os.path.join(tmp, "model")
        shutil.copytree(MODEL, model)
        s = Server(BIN, model)
        try:
            body = {"inputs": ["the weights are mapped", "not read again"]}
            status, _, before = s.post("/embed", body)
            self.assertEqual(status, 200)
            weights = os.path.join(model, "model.safetensors")
            # Replaced by rename (how deploys swap files): the old inode lives on.
            with open(weights + ".new", "wb") as f:
                f.write(b"\0" * 64)
            os.replace(weights + ".new", weights)
            self.assertEqual(s.post("/embed", body)[2], before)
            # Deleted, folder and all.
            shutil.rmtree(model)
            status, _, after = s.post("/embed", body)
            self.assertEqual(status, 200)
            self.assertEqual(after, before)
            self.assertEqual(s.get_json("/health")[0], 200)
        finally:
            self.assertEqual(s.stop(), 0, s.output())
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
