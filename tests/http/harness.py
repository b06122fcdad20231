"""Start a real bertserve on a free loopback port and talk HTTP to it.

Standard library only, so the HTTP tests need nothing beyond python3.
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Time bounds in the tests are for a release build; a sanitizer build
# (tests/http.cmake sets BERT_TEST_SANITIZED) runs several times slower.
SLOW = 5.0 if os.environ.get("BERT_TEST_SANITIZED") else 1.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A bertserve process; `flags` are extra command-line flags."""

    def __init__(self, bin_dir, model, flags=(), env=None, ready=True, timeout=60,
                 preexec_fn=None):
        self.port = free_port()
        self.log_path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                     "bertserve-%d.log" % self.port)
        self.log = open(self.log_path, "w+b")
        # BERTSERVE_WRAPPER runs the server under a tool (valgrind, gdb ...).
        wrapper = os.environ.get("BERTSERVE_WRAPPER", "").split()
        # Every request waits longer under a wrapper (a CI run with valgrind
        # beside the flood tests on a loaded machine took 61 s for one /embed)
        # or a sanitizer (a real DeBERTa geometry took over 60 s to start
        # under TSan on a loaded machine).
        self.time_factor = 5 if wrapper else SLOW
        cmd = wrapper + [os.path.join(bin_dir, "bertserve"), "--model", model,
                         "--host", "127.0.0.1", "--port", str(self.port)] + list(flags)
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=full_env, preexec_fn=preexec_fn)
        if ready:
            try:
                # Under a wrapper (valgrind runs 20-50x slower) the warm-up
                # pass alone can take a minute on a busy machine.
                self.wait_ready(timeout * self.time_factor)
            except RuntimeError:
                # The caller never gets this object to stop: a server that did not
                # come up (under valgrind on a loaded machine) must not outlive it.
                self.stop()
                raise

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("bertserve exited with %d:\n%s" % (self.proc.returncode,
                                                                       self.output()))
            try:
                status, _, _ = self.request("GET", "/ready", timeout=2)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("bertserve not ready after %ss:\n%s" % (timeout, self.output()))

    def request(self, method, path, body=None, headers=None, timeout=60):
        """One request on a fresh connection: (status, headers dict, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                          timeout=timeout * self.time_factor)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
            if isinstance(body, str):
                body = body.encode()
            hdrs = {"Content-Type": "application/json"} if body is not None else {}
            hdrs.update(headers or {})
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def post(self, path, body, headers=None, timeout=60):
        status, hdrs, data = self.request("POST", path, body, headers, timeout)
        return status, hdrs, json.loads(data) if data else None

    def get_json(self, path):
        status, hdrs, data = self.request("GET", path)
        return status, json.loads(data)

    def metrics(self):
        """{(name, labels-string): value} from /metrics."""
        _, _, data = self.request("GET", "/metrics")
        out = {}
        for line in data.decode().splitlines():
            if not line or line.startswith("#"):
                continue
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
        return out

    def wait_admitted(self, route, n, limit_s=30):
        """/metrics once n requests to `route` are in flight or answered 200
        (every one admitted), or at the limit: the caller asserts on it."""
        done = 'bertserve_requests_total{route="%s",status="200"}' % route
        deadline = time.time() + limit_s * self.time_factor
        while True:
            m = self.metrics()
            if m["bertserve_requests_in_flight"] + m.get(done, 0) >= n or time.time() >= deadline:
                return m
            time.sleep(0.01)

    def output(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def rss_mib(self):
        """Resident memory of the server process."""
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
        return 0.0

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=30):
        """SIGTERM and wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode


def cli(bin_dir, command, model, body, *flags):
    """Run `bert <command>` with a JSON body on stdin: (exit code, parsed stdout)."""
    proc = subprocess.run([os.path.join(bin_dir, "bert"), command, "--model", model] + list(flags),
                          input=json.dumps(body).encode(), capture_output=True, timeout=120)
    out = proc.stdout.decode()
    return proc.returncode, json.loads(out) if out.strip() else None


def close_floats(a, b, tol, on_scale=False):
    """Structural equality with floats within tol, or with on_scale within
    tol * max(1, |b|): float rounding grows with the value's magnitude."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        return abs(a - b) <= (tol * max(1.0, abs(b)) if on_scale else tol)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(
            close_floats(x, y, tol, on_scale) for x, y in zip(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(
            close_floats(a[k], b[k], tol, on_scale) for k in a)
    return a == b
