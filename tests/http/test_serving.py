"""Issue 20's serving features on a real bertserve: CORS
([server] cors_allow_origin: preflights before the key check, headers on
every answer, errors included) and `bertserve --health-check` following the
configured port whatever its source (flag, environment, config file).
Issue 23's prepare stage: parsing and tokenizing run on the prepare
threads, not the event loop, as the CPU counters of /metrics show.

usage: test_serving.py BIN_DIR MODEL_DIR
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from harness import Server, free_port

BIN, MODEL = sys.argv[1], sys.argv[2]
APP = "https://app.example"


class Cors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(BIN, MODEL, ["--cors-allow-origin", "http://localhost:3000, " + APP,
                                    "--api-key", "k3y"])

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def test_preflight_before_the_key(self):
        status, hdrs, data = self.s.request("OPTIONS", "/v1/embeddings", None, {
            "Origin": APP, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        self.assertEqual((status, data), (204, b""))
        self.assertEqual(hdrs["access-control-allow-origin"], APP)
        self.assertEqual(hdrs["access-control-allow-methods"], "POST, OPTIONS")
        self.assertEqual(hdrs["access-control-allow-headers"], "authorization, content-type")
        self.assertEqual(hdrs["vary"], "Origin")
        status, hdrs, _ = self.s.request("OPTIONS", "/v1/models", None, {"Origin": APP})
        self.assertEqual((status, hdrs["access-control-allow-methods"]),
                         (204, "GET, HEAD, OPTIONS"))
        status, _, _ = self.s.request("OPTIONS", "/nope", None, {"Origin": APP})
        self.assertEqual(status, 401)  # unknown paths stay behind the key

    def test_headers_on_answers_and_errors(self):
        key = {"Authorization": "Bearer k3y", "Origin": APP}
        status, hdrs, _ = self.s.request("POST", "/embed", {"inputs": "a"}, key)
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["access-control-allow-origin"], APP)
        self.assertIn("x-total-time", hdrs["access-control-expose-headers"])
        for body, headers, want in [({"inputs": 5}, key, 422),
                                    ({"inputs": "a"}, {"Origin": APP}, 401)]:
            status, hdrs, _ = self.s.request("POST", "/embed", body, headers)
            self.assertEqual(status, want)
            self.assertEqual(hdrs["access-control-allow-origin"], APP)
        status, hdrs, _ = self.s.request("POST", "/embed", {"inputs": "a"},
                                         {"Authorization": "Bearer k3y",
                                          "Origin": "https://evil.example"})
        self.assertEqual(status, 200)
        self.assertNotIn("access-control-allow-origin", hdrs)


class HealthCheck(unittest.TestCase):
    """The check reads the server's config: the port from a flag, the
    environment or the config file; 1 when nothing answers 200 there."""

    def check(self, args=(), env=None):
        full = dict(os.environ)
        full.pop("BERTSERVE_SERVER_PORT", None)
        full.update(env or {})
        return subprocess.run([os.path.join(BIN, "bertserve"), "--health-check"] + list(args),
                              env=full, capture_output=True, text=True, timeout=30)

    def test_follows_the_port_wherever_it_is_set(self):
        s = Server(BIN, MODEL)
        try:
            port = str(s.port)
            self.assertEqual(self.check(["--port", port]).returncode, 0)
            self.assertEqual(self.check(env={"BERTSERVE_SERVER_PORT": port}).returncode, 0)
            with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as f:
                f.write("[server]\nport = %s\nhost = \"127.0.0.1\"\n" % port)
            try:
                self.assertEqual(self.check(["--config", f.name]).returncode, 0)
            finally:
                os.unlink(f.name)
            other = self.check(["--port", str(free_port())])
            self.assertEqual(other.returncode, 1)
            self.assertIn("cannot connect", other.stderr)
            bad = self.check(["--port", "0"])
            self.assertEqual(bad.returncode, 2)  # a config error, as the server's
        finally:
            self.assertEqual(s.stop(), 0, s.output())


class PrepareOffLoop(unittest.TestCase):
    """bertserve_loop_cpu_seconds_total and bertserve_prepare_cpu_seconds_total
    count, and the work of a body goes to the second: a 600 KB text
    (truncated to the model's length, so the forward pass is short) costs
    the prepare threads tens of ms to parse and tokenize, the loop only what
    receiving its bytes does. Were tokenizing back on the loop, the loop's
    share would be at least the prepare threads'."""

    def test_tokenizing_a_long_body_costs_the_loop_little(self):
        s = Server(BIN, MODEL)
        try:
            before = s.metrics()
            self.assertGreater(before["bertserve_loop_cpu_seconds_total"], 0)
            text = " ".join("word%d" % (i % 997) for i in range(60000))
            for _ in range(3):
                status, _, got = s.post("/embed", {"inputs": text, "truncate": True})
                self.assertEqual(status, 200, got)
            after = s.metrics()
            loop = (after["bertserve_loop_cpu_seconds_total"]
                    - before["bertserve_loop_cpu_seconds_total"])
            prepare = (after["bertserve_prepare_cpu_seconds_total"]
                       - before["bertserve_prepare_cpu_seconds_total"])
            self.assertGreater(loop, 0)
            self.assertGreater(prepare, 0.01)
            self.assertLess(loop, prepare / 3, (loop, prepare))
        finally:
            self.assertEqual(s.stop(), 0, s.output())


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
