"""Hostile clients over real HTTP, loopback only, bounded in time: slow
clients (headers or body a byte at a time), half-open and idle connections,
more connections than max_connections, the connection limit filled with idle
sockets (also under a low open-file limit), oversized headers, bad framing
and chunking, request smuggling (one 400 and a closed connection each), NUL
bytes in the head, forged log fields, pipelining, clients that hang up
mid-request, while their request waits in the queue (its work is dropped,
never computed) or while it computes, and hostile JSON. Every refusal is the
right status (a JSON error where the server gets to answer) and the server
keeps serving.

usage: test_hostile.py BIN_DIR MODEL_DIR
"""
import json
import re
import resource
import socket
import sys
import threading
import time
import unittest

from harness import SLOW, Server

BIN, MODEL = sys.argv[1], sys.argv[2]
TIMEOUT_MS = 1500          # request_timeout_ms of the server under test
MAX_CONNECTIONS = 16


def connect(port, timeout=10):
    return socket.create_connection(("127.0.0.1", port), timeout=timeout)


def read_until_closed(sock, limit_s):
    """(bytes, whether the server closed the connection within limit_s)."""
    out = b""
    deadline = time.time() + limit_s
    while time.time() < deadline:
        sock.settimeout(max(0.05, deadline - time.time()))
        try:
            part = sock.recv(65536)
        except socket.timeout:
            return out, False
        except OSError:
            return out, True
        if not part:
            return out, True
        out += part
    return out, False


def read_all(sock, limit_s=10):
    """Everything the server sends until it closes (or limit_s passes)."""
    return read_until_closed(sock, limit_s)[0]


def status_lines(raw):
    """How many status lines ("HTTP/1.1 400 ") the bytes hold."""
    return len(re.findall(rb"HTTP/1\.[01] [0-9]{3} ", raw))


def status_of(raw):
    """Status code of the first response in raw bytes, or None."""
    if not raw.startswith(b"HTTP/1."):
        return None
    return int(raw.split(b" ", 2)[1])


def json_body(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    return json.loads(body)


def post_raw(body, path="/embed", extra=b""):
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
            + extra + b"\r\n" + body)


class Hostile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.s = Server(BIN, MODEL, ["--request-timeout-ms", str(TIMEOUT_MS),
                                    "--max-connections", str(MAX_CONNECTIONS),
                                    "--max-body-bytes", "65536"])

    @classmethod
    def tearDownClass(cls):
        assert cls.s.stop() == 0, cls.s.output()

    def tearDown(self):
        # Whatever a test did, the server still answers (generous bound: a
        # sanitizer build may still be computing work a client abandoned).
        t0 = time.time()
        status, _, body = self.s.request("POST", "/embed", {"inputs": "still serving"},
                                         timeout=20)
        self.assertEqual(status, 200, body)
        self.assertLess(time.time() - t0, 15)
        self.assertIsNone(self.s.proc.poll(), self.s.output())

    def raw(self, data, limit_s=10):
        with connect(self.s.port) as sock:
            try:
                sock.sendall(data)
            except OSError:
                pass
            return read_all(sock, limit_s)

    def expect_json_error(self, data, status, error_type=None):
        out = self.raw(data)
        self.assertEqual(status_of(out), status, out[:300])
        err = json_body(out)
        self.assertIsInstance(err["error"], str)
        if error_type:
            self.assertEqual(err["error_type"], error_type, err)
        return err

    # ---- slow and idle clients ---------------------------------------------

    def slow_send(self, data, interval, head=b""):
        """Send `head`, then `data` a byte every `interval` s until the server
        closes; returns (seconds until closed, what the server sent)."""
        sock = connect(self.s.port)
        sock.sendall(head)
        t0 = time.time()
        try:
            for i in range(len(data)):
                try:
                    sock.sendall(data[i:i + 1])
                except OSError:
                    break
                time.sleep(interval)
                if time.time() - t0 > 4 * TIMEOUT_MS / 1000:
                    break
            out = read_all(sock, 2)
            return time.time() - t0, out
        finally:
            sock.close()

    def test_slowloris_headers_are_cut_at_the_request_deadline(self):
        # A byte every 100 ms never trips an idle timeout; the total
        # request deadline (request_timeout_ms) must close it.
        headers = b"POST /embed HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 400 + b"\r\n"
        done = {}

        def slow():
            done["t"], done["out"] = self.slow_send(headers, 0.1)

        t = threading.Thread(target=slow)
        t.start()
        # Meanwhile other clients are served at full speed.
        for _ in range(5):
            t0 = time.time()
            self.assertEqual(self.s.request("GET", "/health", timeout=5)[0], 200)
            self.assertLess(time.time() - t0, 1.0)
            time.sleep(0.1)
        t.join(20)
        self.assertLess(done["t"], 3 * TIMEOUT_MS / 1000, "slow client kept for %.1fs" % done["t"])
        self.assertNotEqual(status_of(done["out"]), 200)

    def test_slowloris_body_is_cut_at_the_request_deadline(self):
        body = json.dumps({"inputs": "x" * 300}).encode()
        head = (b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(body))
        elapsed, out = self.slow_send(body, 0.1, head)
        self.assertLess(elapsed, 3 * TIMEOUT_MS / 1000)
        self.assertNotEqual(status_of(out), 200)

    def test_idle_and_half_open_connections_are_closed(self):
        idle = connect(self.s.port)
        half = connect(self.s.port)
        half.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
        half.shutdown(socket.SHUT_WR)  # half-open: we will never send the rest
        t0 = time.time()
        self.assertEqual(read_all(idle, 5), b"")
        out = read_all(half, 5)
        self.assertLess(time.time() - t0, 3 * TIMEOUT_MS / 1000)
        self.assertNotEqual(status_of(out), 200)
        idle.close()
        half.close()

    # ---- connection count -----------------------------------------------------

    def test_more_connections_than_max_connections(self):
        # Held busy (mid-body): idle ones would be closed to make room
        # (IdleLockout below).
        held = [connect(self.s.port) for _ in range(MAX_CONNECTIONS)]
        try:
            for sock in held:
                sock.sendall(b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
            time.sleep(0.2)
            # One more is refused cleanly: a 503 JSON error, or closed at once.
            extra = [connect(self.s.port) for _ in range(4)]
            for sock in extra:
                try:
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                except OSError:
                    pass
                out = read_all(sock, 3)
                self.assertIn(status_of(out), (None, 503), out[:300])
                if out:
                    self.assertEqual(json_body(out)["error_type"], "unavailable")
                sock.close()
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.3)

    def test_many_connections_at_once_stay_bounded(self):
        # Far more than max_connections at once: every one gets an answer or
        # is closed, none hangs, and the server survives.
        results = []

        def client():
            try:
                with connect(self.s.port, timeout=10) as sock:
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    results.append(status_of(read_all(sock, 8)))
            except OSError:
                results.append("refused")

        threads = [threading.Thread(target=client) for _ in range(8 * MAX_CONNECTIONS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        self.assertEqual(len(results), len(threads))
        self.assertTrue(set(results) <= {200, 503, None, "refused"}, results)
        self.assertIn(200, results)

    # ---- headers and framing --------------------------------------------------

    def test_huge_headers(self):
        out = self.raw(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 +
                       b"\r\n\r\n")
        self.assertIn(status_of(out), (None, 413, 431), out[:300])
        many = b"".join(b"X-H%d: v\r\n" % i for i in range(20000))
        out = self.raw(b"GET /health HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n")
        self.assertIn(status_of(out), (None, 413, 431), out[:300])
        out = self.raw(b"GET /" + b"a" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertIn(status_of(out), (None, 413, 414, 431), out[:300])

    def test_bad_framing(self):
        for data in [
            b"GARBAGE\r\n\r\n",
            b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"ffffffffffffffffffff\r\nab\r\n0\r\n\r\n",
            b"POST /embed HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
            b"Content-Length: 5\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"\x00\x01\x02\xff\xfe\r\n\r\n",
        ]:
            out = self.raw(data, 5)
            status = status_of(out)
            self.assertTrue(status is None or 400 <= status < 500 or status == 505,
                            (data[:60], out[:300]))

    # ---- request smuggling (RFC 9112 6.1, 6.3) --------------------------------

    def expect_refused_and_closed(self, data, status):
        """One answer with `status` and a JSON error, then the connection is
        closed at once: the bytes after the head are never a request."""
        with connect(self.s.port) as sock:
            sock.sendall(data)
            out, closed = read_until_closed(sock, 3)
        self.assertTrue(closed, (data[:80], out[:300]))
        self.assertEqual(status_lines(out), 1, (data[:80], out[:600]))
        self.assertEqual(status_of(out), status, (data[:80], out[:300]))
        self.assertIn(b"connection: close", out.lower())
        return json_body(out)

    SMUGGLED = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    BODY = b'{"inputs":"hi"}'

    def test_smuggling_forms_get_one_400_and_a_close(self):
        forms = {
            "Transfer-Encoding with Content-Length":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                b"Content-Length: 5\r\n\r\n0\r\n\r\n",
            "two Content-Length":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: 15\r\n"
                b"Content-Length: 0\r\n\r\n" + self.BODY,
            "space before the colon":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length : 15\r\n\r\n" + self.BODY,
            "tab before the colon":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding\t: chunked\r\n\r\n"
                b"0\r\n\r\n",
            "chunked twice":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, chunked\r\n"
                b"\r\n0\r\n\r\n",
            "Transfer-Encoding in HTTP/1.0":
                b"POST /tokenize HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                b"0\r\n\r\n",
            "obsolete line folding":
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nX-A: a\r\n b\r\nContent-Length: 15\r\n"
                b"\r\n" + self.BODY,
            "HTTP/1.1 without Host": b"GET /health HTTP/1.1\r\n\r\n",
            "two Host headers": b"GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        }
        for name, data in forms.items():
            with self.subTest(name):
                err = self.expect_refused_and_closed(data + self.SMUGGLED, 400)
                self.assertEqual(err["error_type"], "validation", err)

    def test_unknown_transfer_coding_gets_501_at_once(self):
        t0 = time.time()
        err = self.expect_refused_and_closed(
            b"POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n" +
            self.BODY, 501)
        self.assertLess(time.time() - t0, 2.0 * SLOW)
        self.assertEqual(err["error_type"], "not_implemented", err)
        self.assertIn("gzip", err["error"])

    def test_an_unknown_expectation_gets_417_at_once(self):
        # RFC 9110 10.1.1: only 100-continue is defined; the client learns at
        # once, and its body (sent or not) is never taken as a request.
        for value in (b"x-custom", b"100-continue, x-custom", b"  X-Other  "):
            with self.subTest(value):
                t0 = time.time()
                err = self.expect_refused_and_closed(
                    b"POST /tokenize HTTP/1.1\r\nHost: x\r\nExpect: " + value +
                    b"\r\nContent-Length: 15\r\n\r\n" + self.BODY + self.SMUGGLED, 417)
                self.assertLess(time.time() - t0, 2.0 * SLOW)
                self.assertEqual(err["error_type"], "expectation_failed", err)
                self.assertIn(value.split(b",")[-1].strip().decode(), err["error"])

    def test_refused_heads_are_counted_under_other(self):
        # A head refused before its route is known belongs to no route; one
        # refused after it (417) to its route. Each status line has its
        # reason phrase.
        before = self.s.metrics()
        cases = ((b"GARBAGE\r\n\r\n", b"400 Bad Request"),
                 (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414 URI Too Long"),
                 (b"GET /health HTTP/9.9\r\nHost: x\r\n\r\n", b"505 HTTP Version Not Supported"),
                 (b"POST /embed HTTP/1.1\r\nHost: x\r\nExpect: x\r\nContent-Length: 2\r\n\r\n{}",
                  b"417 Expectation Failed"))
        for data, line in cases:
            with connect(self.s.port) as sock:
                sock.sendall(data)
                out = read_all(sock)
            self.assertTrue(out.startswith(b"HTTP/1.1 " + line + b"\r\n"), out[:100])
        after = self.s.metrics()

        def delta(route, status):
            key = f'bertserve_requests_total{{route="{route}",status="{status}"}}'
            return after.get(key, 0) - before.get(key, 0)
        for status in (400, 414, 505):
            self.assertEqual(delta("other", status), 1, status)
            self.assertEqual(delta("embed", status), 0, status)
        self.assertEqual(delta("embed", 417), 1)

    def test_http_1_0_has_no_expectations(self):
        with connect(self.s.port) as sock:
            sock.sendall(b"POST /tokenize HTTP/1.0\r\nExpect: x-custom\r\n"
                         b"Content-Length: 15\r\n\r\n" + self.BODY)
            out = read_all(sock)
        self.assertEqual(status_of(out), 200, out[:300])

    def test_100_continue_in_any_case_is_met(self):
        # The head is answered with 100 before the body is sent, then the
        # request itself; an empty Expect asks for nothing.
        for value in (b"100-continue", b"100-Continue", b""):
            with self.subTest(value), connect(self.s.port) as sock:
                sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                             b"Expect: " + value + b"\r\nContent-Length: 15\r\n\r\n")
                if value:
                    sock.settimeout(5)
                    interim = sock.recv(64)
                    self.assertTrue(interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n"), interim)
                    rest = interim[len(b"HTTP/1.1 100 Continue\r\n\r\n"):]
                else:
                    rest = b""
                sock.sendall(self.BODY)
                out = rest + read_all(sock)
                self.assertEqual(status_of(out), 200, out[:300])

    def test_a_tls_handshake_is_refused_at_once(self):
        # A client that speaks TLS to this plain port: its ClientHello has no
        # line end, so only its first byte can tell, well before the
        # request deadline.
        hello = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]) + \
            bytes(range(32))
        t0 = time.time()
        err = self.expect_refused_and_closed(hello, 400)
        self.assertLess(time.time() - t0, 2.0 * SLOW)
        self.assertIn("TLS handshake", err["error"])

    def test_nul_in_the_head_is_refused(self):
        # libmicrohttpd 0.9, the first front end, cut strings at a NUL: the
        # first was routed as /health.
        for data in [b"GET /health\x00/../x HTTP/1.1\r\nHost: x\r\n\r\n",
                     b"GET /health%00/../x HTTP/1.1\r\nHost: x\r\n\r\n",
                     b"GET /health HTTP/1.1\r\nHost: x\x00evil\r\n\r\n",
                     b"POST /tokenize HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\x00junk\r\n"
                     b"Content-Length: 15\r\n\r\n" + self.BODY]:
            with self.subTest(data[:40]):
                self.expect_refused_and_closed(data, 400)

    # libmicrohttpd 0.9.75, the first front end, wrote the status line and
    # headers of its answer to these twice. One answer, nothing after the
    # head served as a request, and the connection closes.
    def test_malformed_content_length_is_answered_once(self):
        for value in [b"-5", b"abc", b"25, 25", b"18446744073709551616"]:
            with connect(self.s.port) as sock:
                sock.sendall(b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: " + value +
                             b"\r\n\r\n" + self.SMUGGLED)
                out, closed = read_until_closed(sock, 3)
            self.assertTrue(closed)
            self.assertIn(status_of(out), (400, 413))
            self.assertNotIn(b'{"status":"ok"}', out)
            self.assertEqual(status_lines(out), 1, out[:600])

    def test_a_path_cannot_forge_log_fields(self):
        out = self.raw(b"GET /x%20status=200%20total_ms=1 HTTP/1.1\r\nHost: x\r\n"
                       b"Connection: close\r\n\r\n")
        self.assertEqual(status_of(out), 404)
        self.assertIn('path="/x status=200 total_ms=1" status=404', self.s.output())

    def test_chunked_body_within_limits_is_served(self):
        body = json.dumps({"inputs": "chunked hello"}).encode()
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 5]), body[i:i + 5])
                          for i in range(0, len(body), 5))
        out = self.raw(b"POST /embed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                       b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                       + chunks + b"0\r\n\r\n")
        self.assertEqual(status_of(out), 200, out[:300])

    def test_oversized_bodies(self):
        big = b"x" * 70000
        self.expect_json_error(post_raw(big), 413, "payload_too_large")
        chunk = b"%x\r\n%s\r\n" % (len(big), big)
        self.expect_json_error(b"POST /embed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                               b"Transfer-Encoding: chunked\r\n\r\n" + chunk + b"0\r\n\r\n",
                               413, "payload_too_large")
        # Without Content-Length or chunking, HTTP/1.0 reads to close.
        out = self.raw(b"POST /embed HTTP/1.0\r\nHost: x\r\n\r\n" + big, 5)
        self.assertIn(status_of(out), (None, 400, 411, 413), out[:300])

    def test_pipelined_requests_are_answered_in_order(self):
        one = json.dumps({"inputs": "first"}).encode()
        two = json.dumps({"inputs": "second", "add_special_tokens": False}).encode()
        data = (b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(one) + one +
                b"POST /tokenize HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(two) +
                two + b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        out = self.raw(data)
        self.assertEqual(out.count(b"HTTP/1.1 200"), 3, out[:500])
        self.assertLess(out.index(b"x-inference-time"), out.index(b'"id"'))
        self.assertTrue(out.rstrip().endswith(b'{"status":"ok"}'), out[-200:])

    # ---- clients that leave ---------------------------------------------------

    def test_disconnect_mid_headers_and_mid_body(self):
        for data in [b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Le",
                     b"POST /embed HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"inp"]:
            for _ in range(20):
                sock = connect(self.s.port)
                sock.sendall(data)
                sock.close()
        # The bytes and the FIN arrive together and the server usually frees
        # the connections at once; at the latest request_timeout_ms frees
        # them (a loaded sanitizer build can take that long), never later.
        deadline = time.time() + 2 * TIMEOUT_MS / 1000
        while self.s.request("GET", "/health", timeout=5)[0] != 200:
            self.assertLess(time.time(), deadline, "hung-up connections still held")
            time.sleep(0.05)

    def test_disconnect_while_queued_or_computing(self):
        before = self.s.metrics()
        long_text = " ".join(["word"] * 400)
        body = json.dumps({"inputs": [long_text] * 4}).encode()
        for _ in range(12):
            sock = connect(self.s.port)
            sock.sendall(post_raw(body))
            time.sleep(0.01)
            # RST instead of FIN, the rudest way to leave.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
        time.sleep(1.0)
        after = self.s.metrics()
        key = 'bertserve_requests_total{route="embed",status="500"}'
        self.assertEqual(before.get(key, 0), after.get(key, 0))

    # ---- hostile JSON ------------------------------------------------------------

    def test_hostile_json(self):
        cases = [
            (b'{"inputs": "\xff\xfe"}', 400),                        # invalid UTF-8
            (b'{"inputs": "\xc0\xaf"}', 400),                        # overlong '/'
            (b'{"inputs": "\xed\xa0\x80"}', 400),                    # UTF-8 surrogate
            (b'{"inputs": "\\ud800"}', 400),                         # lone surrogate escape
            (b"[" * 30000 + b"]" * 30000, 400),                    # deep nesting
            (b'{"inputs": ' + b"[" * 5000 + b"]" * 5000 + b"}", 400),
            (b'{"inputs": "a", "truncate": 1' + b"0" * 5000 + b"}", 400),
            (b'{"inputs": "a", "inputs": "b"}', 400),                # duplicate keys
            (b'{"inputs": NaN}', 400),
            (b'{"inputs": "a", "normalize": Infinity}', 400),
            (b'{"inputs": 1e999}', 400),
            (b'{"inputs": "a"} trailing', 400),
            (b'{"inputs": "a\x00b"}', 400),
            (b"", 400),
            (b"null", 422),
            (b'"just a string"', 422),
            (b'{"inputs": 12345678901234567890}', 400),
            (b'{"inputs": -1}', 422),
            (b'{"inputs": {"a": "b"}}', 422),
            (b'{"inputs": [null]}', 422),
            (b'{"inputs": [["a"]]}', 422),
            (b'{"inputs": [["a", "b", "c"]]}', 422),
            (b'{"inputs": [1, "a"]}', 422),                         # token ids, one not
            (b'{"inputs": [[1, 2], [-1]]}', 422),
            (b'{"inputs": true}', 422),
            (json.dumps({"inputs": [""] * 10000}).encode(), 413),
        ]
        for body, status in cases:
            got, _, data = self.s.request("POST", "/embed", body)
            self.assertEqual(got, status, (body[:60], data[:200]))
            err = json.loads(data)
            self.assertEqual(err["error_type"], "validation" if status != 413
                             else "payload_too_large", (body[:60], err))
        for route, body in [("/fill-mask", {"inputs": "a [MASK]", "top_k": 10 ** 30}),
                            ("/fill-mask", {"inputs": "a [MASK]", "top_k": -1}),
                            ("/fill-mask", {"inputs": "a [MASK]", "top_k": 1.5}),
                            ("/fill-mask", {"inputs": "a [MASK]", "targets": [5]}),
                            ("/classify", {"inputs": "a", "top_k": 10 ** 30}),
                            ("/v1/embeddings", {"input": "a", "encoding_format": 5}),
                            ("/tokenize", {"inputs": "a", "add_special_tokens": "yes"})]:
            got, _, data = self.s.request("POST", route, json.dumps(body))
            self.assertIn(got, (400, 422), (route, body, data[:200]))

    def test_empty_strings_and_odd_text_are_served(self):
        # U+0000 is dropped as BertNormalizer's clean_text drops it: "a\0b"
        # tokenizes as "ab" (issue 20); the /embed vectors agree too.
        status, _, data = self.s.request("POST", "/tokenize", {"inputs": ["a\u0000b", "ab"]})
        self.assertEqual(status, 200, data)
        toks = json.loads(data)
        self.assertEqual([t["id"] for t in toks[0]], [t["id"] for t in toks[1]])
        status, _, data = self.s.request("POST", "/embed", {"inputs": ["x \u0000 y", "x y"]})
        self.assertEqual(status, 200, data)
        vecs = json.loads(data)
        self.assertEqual(vecs[0], vecs[1])
        for inputs in [[""] * 32, ["\u200b" * 1000], ["\U0001F600" * 500],
                       ["a" * 60000]]:
            status, _, data = self.s.request("POST", "/tokenize", {"inputs": inputs})
            self.assertIn(status, (200, 413), data[:200])


class IdleLockout(unittest.TestCase):
    """Issue 18: connections that never send a request must not lock out
    clients that do. Past max_connections (and its reserve) the others wait
    in the listen backlog, and before the change they waited there until
    request_timeout_ms (30 s) closed the idle ones. Now the connection idle
    longest (idle at least a second) is closed to make room."""

    def fill_and_serve(self, s, idle_count):
        idle = []
        try:
            for _ in range(idle_count):
                idle.append(connect(s.port))
            time.sleep(1.5)  # idle longer than the grace before eviction
            t0 = time.time()
            status, _, body = s.request("POST", "/embed", {"inputs": "a normal client"},
                                        timeout=10 * SLOW)
            self.assertEqual(status, 200, body)
            self.assertLess(time.time() - t0, 3.0 * SLOW)
            self.assertEqual(s.request("GET", "/health", timeout=10 * SLOW)[0], 200)
            # Some idle ones were closed for it; the server says so.
            closed = sum(1 for sock in idle if read_until_closed(sock, 0.05)[1])
            self.assertGreater(closed, 0)
            self.assertIn("idle connections to make room", s.output())
        finally:
            for sock in idle:
                sock.close()

    def test_a_client_is_served_while_idle_sockets_fill_the_limit(self):
        # 16 + the reserve of 10 accepted, 20 more in the backlog.
        s = Server(BIN, MODEL, ["--max-connections", "16", "--request-timeout-ms", "30000"])
        try:
            self.fill_and_serve(s, 46)
        finally:
            self.assertEqual(s.stop(), 0, s.output()[-3000:])

    def test_a_low_open_file_limit_lowers_max_connections(self):
        # 64 descriptors cannot hold 1024 connections: start-up says so and
        # serves fewer, instead of stalling on accept once they run out.
        def low_limit():
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

        s = Server(BIN, MODEL, ["--request-timeout-ms", "30000"], preexec_fn=low_limit)
        try:
            self.assertIn("open-file limit", s.output())
            self.assertRegex(s.output(), r"max_connections 1024 needs: serving at most [0-9]+ ")
            self.fill_and_serve(s, 80)
        finally:
            self.assertEqual(s.stop(), 0, s.output()[-3000:])


class DepartedClients(unittest.TestCase):
    """A request whose client hangs up is not computed further: queued
    ones are dropped before their forward pass (one worker is kept busy by a
    long request while the queued ones' clients leave, and the tokens
    computed are the long request's alone), and a request spanning many
    batches stops at the next batch after its client leaves."""

    def setUp(self):
        self.s = Server(BIN, MODEL, ["--threads", "1", "--blas-threads", "1",
                                     "--max-batch-tokens", "256", "--max-wait-us", "0",
                                     "--max-client-batch", "128",
                                     "--max-queue-tokens", "262144"])

    def tearDown(self):
        self.assertEqual(self.s.stop(), 0, self.s.output())

    def wait_in_flight(self, n, limit_s=30):
        deadline = time.time() + limit_s
        while True:
            got = self.s.metrics()["bertserve_requests_in_flight"]
            if got == n:
                return
            self.assertLess(time.time(), deadline, "in flight: %s, waiting for %d" % (got, n))
            time.sleep(0.005)

    def departed_lines(self, n, limit_s=10):
        """The count of 499 log lines once it reaches n (or the limit): a
        request leaves the in-flight gauge when the workers release it, and
        the loop logs it when it takes the completion, a moment later."""
        deadline = time.time() + limit_s * SLOW
        while self.s.output().count("status=499") < n and time.time() < deadline:
            time.sleep(0.005)
        return self.s.output().count("status=499")

    # 128 inputs cut to 256 tokens: 128 forward passes, far longer than
    # queueing other requests or watching the first pass end takes.
    LONG_BODY = {"inputs": [" ".join(["word%d" % i for i in range(600)])] * 128,
                 "truncate": True}

    def test_queued_work_of_departed_clients_is_not_computed(self):
        tokens_key = 'bertserve_input_tokens_total{route="embed"}'
        before = self.s.metrics()
        long_body = self.LONG_BODY
        answer = {}
        blocker = threading.Thread(target=lambda: answer.update(
            r=self.s.request("POST", "/embed", long_body, timeout=120)))
        blocker.start()
        self.wait_in_flight(1)
        long_tokens = self.s.metrics()[tokens_key] - before[tokens_key]
        socks = []
        for i in range(6):
            sock = connect(self.s.port)
            sock.sendall(post_raw(json.dumps({"inputs": "client %d leaves" % i}).encode()))
            socks.append(sock)
        self.wait_in_flight(1 + len(socks))
        for i, sock in enumerate(socks):
            if i % 2:  # RST for half of them, FIN for the rest
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                b"\x01\x00\x00\x00\x00\x00\x00\x00")
            sock.close()
        blocker.join(120)
        self.assertEqual(answer["r"][0], 200, answer["r"][2][:300])
        self.wait_in_flight(0)
        after = self.s.metrics()
        self.assertEqual(after["bertserve_batch_tokens_sum"] - before["bertserve_batch_tokens_sum"],
                         long_tokens)
        self.assertEqual(self.departed_lines(len(socks)), len(socks), self.s.output()[-3000:])
        self.assertEqual(self.s.request("POST", "/embed", {"inputs": "still serving"})[0], 200)

    def test_client_leaving_mid_request_stops_its_compute(self):
        before = self.s.metrics()
        sock = connect(self.s.port)
        sock.sendall(post_raw(json.dumps(self.LONG_BODY).encode()))
        deadline = time.time() + 30
        while self.s.metrics()["bertserve_batch_tokens_sum"] == before["bertserve_batch_tokens_sum"]:
            self.assertLess(time.time(), deadline, "no forward pass started")
            time.sleep(0.002)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()
        self.wait_in_flight(0)
        computed = (self.s.metrics()["bertserve_batch_tokens_sum"]
                    - before["bertserve_batch_tokens_sum"])
        self.assertLess(computed, 128 * 256 // 2, "most of the request was computed anyway")
        self.assertEqual(self.departed_lines(1), 1, self.s.output()[-3000:])
        departed = 'bertserve_requests_total{route="embed",status="499"}'
        self.assertEqual(self.s.metrics()[departed] - before.get(departed, 0), 1)
        self.assertEqual(self.s.request("POST", "/embed", {"inputs": "still serving"})[0], 200)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[3:], verbosity=2)
