"""Three bertserve replicas behind a real nginx running deploy/compose/nginx.conf,
on loopback only. For LOAD_SECONDS (20) 32 clients send a mix of /embed,
/classify, /fill-mask and /tokenize requests through nginx while the test
SIGKILLs one replica, then SIGTERMs another and restarts it (and, like a
container runtime, later restarts the killed one too). Checks: no client
request fails, every answer equals the one a replica gave directly before the
load, the drained replica exits 0, nginx really sent traffic to all three and
retried around the dead ones. Prints the figures.

usage: test_balancer.py BIN_DIR MODEL_DIR
"""
import http.client
import json
import os
import re
import shutil
import signal
import sys
import threading
import time
import unittest

from deploy_common import (Process, close_floats, free_port, http_get, read, tail, wait_ready,
                           wait_until, work_dir)

BIN, MODEL = sys.argv[1], sys.argv[2]
LOAD_SECONDS = float(os.environ.get("BERT_DEPLOY_LOAD_SECONDS", "20"))
CLIENTS = 32
KILL_AT, TERM_AT = 0.25 * LOAD_SECONDS, 0.4 * LOAD_SECONDS

WORDS = ("the quick brown fox jumps over a lazy dog while seven wizards quietly judge "
         "boxing matches in the old town square near the river bank").split()


def text(n, seed):
    return " ".join(WORDS[(seed * 5 + i * 3) % len(WORDS)] for i in range(n))


def request_mix(count):
    """Distinct requests over the four routes, of varied lengths and batch sizes."""
    reqs = []
    for i in range(count):
        n = 3 + (i * 13) % 60
        kind = i % 4
        if kind == 0:
            reqs.append(("/embed", {"inputs": [text(n, i), text(n // 3 + 1, i + 1)]}))
        elif kind == 1:
            body = {"inputs": text(n, i)} if i % 8 == 1 else {
                "inputs": [[text(n // 2 + 1, i), text(n // 4 + 1, i + 2)]]}
            reqs.append(("/classify", body))
        elif kind == 2:
            words = text(n, i).split()
            words[len(words) // 2] = "[MASK]"
            reqs.append(("/fill-mask", {"inputs": " ".join(words), "top_k": 3}))
        else:
            reqs.append(("/tokenize", {"inputs": [text(n, i), text(2, i)]}))
    return reqs


def post(port, path, body, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(body),
                     headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def render_nginx_conf(replica_ports, listen_port, tmp):
    """deploy/compose/nginx.conf with only the machine-specific parts changed:
    the upstream names become loopback ports, the listen address a free
    loopback port, and nginx's temp folders go under `tmp`."""
    conf = read("deploy", "compose", "nginx.conf")
    names = re.findall(r"^\s*server\s+(bertserve-\d+:8080)\b", conf, re.M)
    if len(names) != len(replica_ports):
        raise AssertionError("nginx.conf has upstream servers %s, expected %d"
                             % (names, len(replica_ports)))
    for name, port in zip(names, replica_ports):
        conf = conf.replace(name, "127.0.0.1:%d" % port)
    conf, n = re.subn(r"^(\s*)listen\s+8080;", r"\1listen 127.0.0.1:%d;" % listen_port, conf,
                      flags=re.M)
    if n != 1:
        raise AssertionError("nginx.conf should have one `listen 8080;`")
    temps = "".join("    %s_temp_path %s/%s;\n" % (t, tmp, t)
                    for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf, n = re.subn(r"^http \{\n", "http {\n" + temps, conf, flags=re.M)
    if n != 1:
        raise AssertionError("nginx.conf should have one `http {` block")
    return conf


# The `upstreams` log_format of nginx.conf.
ACCESS_LINE = re.compile(r'^(?P<addr>\S+) \[(?P<time>[^]]+)\] (?P<msec>[0-9.]+) "(?P<request>[^"]*)" '
                         r'(?P<status>\d+) (?P<bytes>\d+) (?P<rtime>[0-9.]+) '
                         r'upstream=(?P<upstream>.*?) status=(?P<tries>.*?) time=(?P<utime>.*)$')


def percentile(values, q):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


class Replica:
    def __init__(self, tmp, index, port):
        self.tmp, self.index, self.port = tmp, index, port
        self.generation = 0
        self.process = None

    def start(self):
        self.generation += 1
        log = os.path.join(self.tmp, "replica%d.%d.log" % (self.index, self.generation))
        # One worker and one BLAS thread each, as compose.yaml's one-CPU limit
        # gives them; three replicas share the machine.
        self.process = Process([os.path.join(BIN, "bertserve"), "--model", MODEL,
                                "--host", "127.0.0.1", "--port", str(self.port),
                                "--threads", "1", "--blas-threads", "1"], log)

    def wait_ready(self, timeout=60):
        wait_ready(self.port, timeout, self.process.proc, self.process.log_path)


class Balancer(unittest.TestCase):
    def setUp(self):
        self.nginx_bin = shutil.which("nginx") or (
            "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if self.nginx_bin is None:
            self.skipTest("nginx is not installed (deploy/install-deps.sh installs it)")
        self.tmp = work_dir("balancer")
        self.replicas = []
        self.nginx = None

    def tearDown(self):
        for r in self.replicas:
            if r.process is not None:
                r.process.stop(signal.SIGKILL, 10)
        if self.nginx is not None:
            self.nginx.stop(signal.SIGQUIT, 10)

    def start_nginx(self, ports):
        self.nginx_port = free_port()
        conf_path = os.path.join(self.tmp, "nginx.conf")
        with open(conf_path, "w") as f:
            f.write(render_nginx_conf(ports, self.nginx_port, self.tmp))
        log = os.path.join(self.tmp, "nginx.log")
        # -e: the log nginx writes before it reads the config (its compiled-in
        # default is under /var/log, not writable by everyone).
        self.nginx = Process([self.nginx_bin, "-p", self.tmp + "/", "-e", self.tmp + "/error.log",
                              "-c", conf_path, "-g",
                              "daemon off; pid %s/nginx.pid;" % self.tmp], log)
        wait_until(lambda: http_get(self.nginx_port, "/ready")[0] == 200, 30, "nginx up",
                   self.nginx.proc, log)

    def test_replicas_die_and_drain_under_load_without_a_failed_request(self):
        for i in range(3):
            r = Replica(self.tmp, i, free_port())
            r.start()
            self.replicas.append(r)
        for r in self.replicas:
            r.wait_ready()
        ports = [r.port for r in self.replicas]
        self.assertEqual(len(set(ports)), 3)

        # Expected answers straight from one replica; the others agree.
        reqs = request_mix(48)
        expected = []
        for path, body in reqs:
            status, out = post(ports[0], path, body)
            self.assertEqual(status, 200, (path, out))
            expected.append(out)
        for r in self.replicas[1:]:
            for (path, body), want in zip(reqs, expected):
                status, out = post(r.port, path, body)
                self.assertEqual(status, 200, out)
                self.assertTrue(close_floats(out, want, 1e-5), "replicas disagree on %s" % path)

        self.start_nginx(ports)

        records = []          # (start offset s, latency s, ok)
        failures = []         # (offset, path, what)
        lock = threading.Lock()
        t0 = time.monotonic()
        wall0 = time.time()
        stop_at = t0 + LOAD_SECONDS

        def client(cid):
            conn = http.client.HTTPConnection("127.0.0.1", self.nginx_port, timeout=60)
            i = cid
            mine, bad = [], []
            while time.monotonic() < stop_at:
                path, body = reqs[i % len(reqs)]
                want = expected[i % len(reqs)]
                i += CLIENTS
                start = time.monotonic()
                try:
                    conn.request("POST", path, body=json.dumps(body),
                                 headers={"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    data = resp.read()
                    status = resp.status
                except (OSError, http.client.HTTPException) as e:
                    conn.close()
                    mine.append((start - t0, time.monotonic() - start, False))
                    bad.append((start - t0, path, repr(e)))
                    continue
                latency = time.monotonic() - start
                ok = status == 200
                what = "status %d: %s" % (status, data[:200])
                if ok:
                    try:
                        ok = close_floats(json.loads(data), want, 1e-5)
                    except ValueError:
                        ok = False
                    what = "answer differs: %s" % data[:200]
                mine.append((start - t0, latency, ok))
                if not ok:
                    bad.append((start - t0, path, what))
            conn.close()
            with lock:
                records.extend(mine)
                failures.extend(bad)

        threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
        for t in threads:
            t.start()
        events = {}
        try:
            victim, drained = self.replicas[0], self.replicas[1]
            time.sleep(max(0.0, t0 + KILL_AT - time.monotonic()))
            events["kill"] = time.monotonic() - t0
            victim.process.proc.send_signal(signal.SIGKILL)
            killed_rc = victim.process.proc.wait(10)
            victim.process.stop()

            time.sleep(max(0.0, t0 + TERM_AT - time.monotonic()))
            events["term"] = time.monotonic() - t0
            drained_process = drained.process
            drained_rc = drained_process.stop(signal.SIGTERM, 40)
            events["drained"] = time.monotonic() - t0
            drained.start()
            drained.wait_ready()
            events["drained_back"] = time.monotonic() - t0
            victim.start()
            victim.wait_ready()
            events["killed_back"] = time.monotonic() - t0
        finally:
            for t in threads:
                t.join(LOAD_SECONDS + 120)
        self.assertFalse(any(t.is_alive() for t in threads), "a client hung")

        window = (events["kill"], events["killed_back"])
        overall = [lat for _, lat, _ in records]
        during = [lat for start, lat, _ in records if window[0] <= start <= window[1]]
        access = [m.groupdict() for m in map(ACCESS_LINE.match,
                                              tail(self.nginx.log_path, 1 << 30).splitlines())
                  if m and m.group("request").startswith("POST ")]
        retried = [a for a in access if "," in a["tries"]]
        print("deploy figures: %d requests in %.1f s through nginx, %d failed; "
              "latency p50 %.1f ms, p99 %.1f ms overall; kill window %.1f-%.1f s: "
              "%d requests, p50 %.1f ms, p99 %.1f ms; nginx retried %d requests"
              % (len(records), LOAD_SECONDS, len(failures), 1e3 * percentile(overall, 0.5),
                 1e3 * percentile(overall, 0.99), window[0], window[1], len(during),
                 1e3 * percentile(during, 0.5), 1e3 * percentile(during, 0.99), len(retried)))
        print("deploy events (s after the load started): %s"
              % ", ".join("%s %.2f" % kv for kv in sorted(events.items(), key=lambda kv: kv[1])))
        sys.stdout.flush()

        self.assertEqual(failures[:10], [], "%d failed requests" % len(failures))
        self.assertEqual(killed_rc, -signal.SIGKILL)
        self.assertEqual(drained_rc, 0, drained_process.output())
        self.assertGreaterEqual(len(records), 200, "the load hardly ran")
        self.assertGreaterEqual(len(during), 20, "hardly any requests during the kill window")

        # nginx's view: every request logged, every replica served, the dead
        # ones were tried and the request sent on, and the restarted ones
        # took traffic again.
        self.assertEqual(len(access), len(records))
        served = {}
        for a in access:
            if a["status"] == "200":
                last = a["upstream"].split(", ")[-1]
                served.setdefault(last, []).append(float(a["msec"]) - wall0)
        for r in self.replicas:
            times = served.get("127.0.0.1:%d" % r.port, [])
            self.assertTrue(times, "replica %d never served through nginx" % r.index)
            self.assertTrue(any(t < events["kill"] for t in times))
        self.assertTrue(any(t > events["drained_back"]
                            for t in served["127.0.0.1:%d" % drained.port]),
                        "the restarted replica got no traffic")
        self.assertGreater(len(retried), 0, "nginx never had to retry: the kill did not bite")

        for r in self.replicas:
            rc = r.process.stop(signal.SIGTERM, 40)
            self.assertEqual(rc, 0, "replica %d exited %d:\n%s" % (r.index, rc, r.process.output()))
        self.assertEqual(self.nginx.stop(signal.SIGQUIT, 20), 0)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
