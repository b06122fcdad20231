"""Several event-loop threads ([server] loop_threads) over real HTTP: the
start-up line names the loop count; many connections at once (spread over
the loops by SO_REUSEPORT, which each loop thread's CPU time shows) get
exactly the answers they get one at a time on every route; /metrics counts
every loop (requests and loop CPU); SIGTERM drains the requests in flight on
every loop, and its time-out answers what is left on every loop;
max_connections holds over all loops together; a bad count or a
taken port fails at start-up with a clear message.

usage: test_loops.py BIN_DIR MODEL_DIR
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest

from harness import SLOW, Server, close_floats, free_port
from test_load import text

BIN, MODEL = sys.argv[1], sys.argv[2]


def loop_threads(pid):
    """Thread ids of the loop threads: the main thread runs the first loop."""
    tids = [int(pid)]
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == "bertserve-loop":
                tids.append(int(tid))
    return tids


def cpu_ns(pid, tid):
    """Nanoseconds a thread has run (schedstat's first field), or None."""
    try:
        with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
            return int(f.read().split()[0])
    except OSError:
        return None


def run_parallel(server, reqs, repeat):
    """Each request on its own thread, `repeat` times, each on a fresh
    connection (so the kernel picks a loop for each)."""
    results = [[] for _ in reqs]

    def client(i):
        for _ in range(repeat):
            method, path, body = reqs[i]
            status, _, data = server.request(method, path, body)
            results[i].append((status, json.loads(data) if data else None))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(len(reqs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120 * SLOW)
    return results


def every_route(count):
    reqs = []
    for i in range(count):
        n = 3 + (i * 29) % 60
        kind = i % 7
        if kind == 0:
            reqs.append(("POST", "/embed", {"inputs": [text(n, i), text(n // 2 + 1, i + 1)]}))
        elif kind == 1:
            reqs.append(("POST", "/classify", {"inputs": text(n, i)}))
        elif kind == 2:
            words = text(n, i).split()
            words[len(words) // 2] = "[MASK]"
            reqs.append(("POST", "/fill-mask", {"inputs": " ".join(words), "top_k": 3}))
        elif kind == 3:
            reqs.append(("POST", "/tokenize", {"inputs": text(n, i)}))
        elif kind == 4:
            reqs.append(("POST", "/v1/embeddings", {"input": text(n, i)}))
        elif kind == 5:
            reqs.append(("GET", "/health", None))
        else:
            reqs.append(("GET", "/v1/models", None))
    return reqs


class ManyLoops(unittest.TestCase):
    LOOPS = 3

    def test_connections_spread_over_the_loops_and_every_answer_is_right(self):
        s = Server(BIN, MODEL, ["--loop-threads", str(self.LOOPS), "--max-wait-us", "2000"])
        try:
            self.assertIn("with %d loop threads" % self.LOOPS, s.output())
            tids = loop_threads(s.proc.pid)
            self.assertEqual(len(tids), self.LOOPS, tids)
            reqs = every_route(42)
            expected = []
            for method, path, body in reqs:
                status, _, data = s.request(method, path, body)
                self.assertEqual(status, 200, data)
                expected.append(json.loads(data))
            before = s.metrics()
            cpu_before = [cpu_ns(s.proc.pid, t) for t in tids]
            results = run_parallel(s, reqs, repeat=4)
            cpu_after = [cpu_ns(s.proc.pid, t) for t in tids]
            after = s.metrics()
            for i, res in enumerate(results):
                self.assertEqual(len(res), 4)
                for status, body in res:
                    self.assertEqual(status, 200, body)
                    self.assertTrue(close_floats(body, expected[i], 1e-5),
                                    "%s %s differs under load" % reqs[i][:2])
            # Every loop served some of the 168 connections: each thread
            # ran at least 1 ms (an idle loop's sweeps take microseconds).
            if None not in cpu_before:
                busy = [(b - a) / 1e6 for a, b in zip(cpu_before, cpu_after)]
                self.assertTrue(all(ms > 1.0 for ms in busy), busy)
            # The request counters are the server's, whichever loop counted.
            sent = {}
            for _, path, _ in reqs:
                route = {"/v1/embeddings": "openai-embeddings", "/v1/models": "models"}.get(
                    path, path[1:])
                sent[route] = sent.get(route, 0) + 4
            for route, n in sent.items():
                key = 'bertserve_requests_total{route="%s",status="200"}' % route
                self.assertEqual(after[key] - before[key], n, route)
            self.assertEqual(after["bertserve_requests_in_flight"], 0)
            # Loop CPU sums every loop thread: more than the other threads
            # had run before it was read, at most what all have run (the
            # first one's loading excluded).
            other_cpu = sum(cpu_after[1:]) / 1e9 if None not in cpu_after else 0
            m = s.metrics()["bertserve_loop_cpu_seconds_total"]
            total = [cpu_ns(s.proc.pid, t) for t in tids]
            self.assertGreater(m, other_cpu)
            if None not in total:
                self.assertLessEqual(m, sum(total) / 1e9 + 0.01)
        finally:
            self.assertEqual(s.stop(), 0, s.output()[-3000:])

    def test_max_connections_holds_over_all_loops(self):
        limit = 8
        s = Server(BIN, MODEL, ["--loop-threads", str(self.LOOPS),
                                "--max-connections", str(limit),
                                "--request-timeout-ms", "30000"])
        held = []
        try:
            # Busy mid-body, so that none can be closed to make room: spread
            # over the loops, 8 in all.
            for _ in range(limit):
                sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
                sock.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
                held.append(sock)
            time.sleep(0.3)
            # One more, on whichever loop, is refused: 503 and a close.
            for _ in range(6):
                status, hdrs, data = s.request("GET", "/health", timeout=10)
                self.assertEqual(status, 503, data)
                self.assertIn("too many open connections (max_connections 8)",
                              json.loads(data)["error"])
                self.assertEqual(hdrs["connection"], "close")
            # One slot freed, on whichever loop: a new connection is served.
            held.pop().close()
            time.sleep(0.3)
            self.assertEqual(s.request("GET", "/health", timeout=10)[0], 200)
        finally:
            for sock in held:
                sock.close()
            self.assertEqual(s.stop(), 0, s.output()[-3000:])


class DrainEveryLoop(unittest.TestCase):
    def test_sigterm_finishes_the_requests_in_flight_on_every_loop(self):
        # One worker, so the requests queue: 24 connections, each on a loop
        # the kernel picks (none left out but with odds 2 x 2^-24).
        s = Server(BIN, MODEL, ["--loop-threads", "2", "--threads", "1",
                                "--max-batch-tokens", "1024", "--max-queue-tokens", "200000",
                                "--shutdown-timeout-ms", "300000"])
        try:
            # 24 x 12 x 300 tokens: over a second of work in a release build,
            # so the probes below come while it drains.
            body = {"inputs": [text(300, i) for i in range(12)]}
            results = []
            threads = [threading.Thread(target=lambda: results.append(
                s.post("/embed", body, timeout=120 * SLOW)[0])) for _ in range(24)]
            for t in threads:
                t.start()
            done = 'bertserve_requests_total{route="embed",status="200"}'
            m = s.wait_admitted("embed", 24)
            self.assertEqual(m["bertserve_requests_in_flight"] + m.get(done, 0), 24)
            self.assertGreater(m["bertserve_requests_in_flight"], 1)
            s.signal(signal.SIGTERM)
            time.sleep(0.2)
            # Every loop is draining: new connections (on either) get 503.
            for _ in range(4):
                self.assertEqual(s.get_json("/ready"), (503, {"status": "draining"}))
            for t in threads:
                t.join(120 * SLOW)
            self.assertEqual(results, [200] * 24)
            self.assertEqual(s.proc.wait(60 * SLOW), 0, s.output()[-3000:])
            self.assertIn("drained; exiting", s.output())
        finally:
            s.stop()


    def test_the_drain_time_out_answers_what_is_left_on_every_loop(self):
        # A 100 ms time-out against requests of 16k tokens on one worker:
        # each loop answers what it still has 503 (those still with the
        # workers come back after the daemons stop) and the process exits 0.
        s = Server(BIN, MODEL, ["--loop-threads", "2", "--threads", "1",
                                "--max-batch-tokens", "1024", "--max-queue-tokens", "1000000",
                                "--shutdown-timeout-ms", "100"])
        try:
            body = {"inputs": [text(500, i) for i in range(32)]}
            results = []

            def client():
                try:
                    results.append(s.post("/embed", body, timeout=60 * SLOW)[0])
                except OSError as e:
                    results.append(repr(e))

            threads = [threading.Thread(target=client) for _ in range(16)]
            for t in threads:
                t.start()
            # Every request admitted (so none comes after the listener
            # closed), then the drain.
            m = s.wait_admitted("embed", 16)
            self.assertGreater(m["bertserve_requests_in_flight"], 1)
            s.signal(signal.SIGTERM)
            self.assertEqual(s.proc.wait(60 * SLOW), 0, s.output()[-3000:])
            for t in threads:
                t.join(60 * SLOW)
            self.assertEqual(len(results), 16)
            self.assertTrue(set(results) <= {200, 503}, results)
            self.assertIn(503, results)
            self.assertIn("drain timed out", s.output())
        finally:
            s.stop()


class StartUp(unittest.TestCase):
    def run_server(self, port, *flags):
        return subprocess.run([os.path.join(BIN, "bertserve"), "--model", MODEL, "--host",
                               "127.0.0.1", "--port", str(port)] + list(flags),
                              capture_output=True, timeout=120 * SLOW)

    def test_a_count_out_of_range_is_refused(self):
        for bad in ("-1", "65"):
            proc = self.run_server(free_port(), "--loop-threads", bad)
            self.assertEqual(proc.returncode, 2)
            self.assertIn(b"--loop-threads", proc.stderr)
            self.assertIn(b"64", proc.stderr)

    def test_a_taken_port_is_refused_with_loops_sharing_it(self):
        # A second server with SO_REUSEPORT would share the port with the
        # first without a word: start-up checks the port is free first.
        s = Server(BIN, MODEL, ["--loop-threads", "2"])
        try:
            proc = self.run_server(s.port, "--loop-threads", "2")
            self.assertEqual(proc.returncode, 1, proc.stderr[-2000:])
            self.assertIn(b"cannot listen on 127.0.0.1:%d" % s.port, proc.stderr)
            self.assertEqual(s.request("GET", "/health")[0], 200)
        finally:
            self.assertEqual(s.stop(), 0, s.output()[-3000:])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
