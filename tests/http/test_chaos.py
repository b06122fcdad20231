"""Seeded random traffic from many clients at once against one server, for
a bounded time: valid and broken requests of every kind (Content-Length,
chunked, Expect: 100-continue, pipelined runs, a byte flipped or the rest cut
off), each written in pieces of random size, and clients that read all,
part or none of their answers, shut their write side, hang up or reset the
connection. What arrives must be whole, well-framed answers (status line,
headers, a body of exactly its Content-Length) with no 500; afterwards the
server still serves, and it exits 0 on SIGTERM, which under the sanitizer
builds also means no leak and no data race.

usage: test_chaos.py BIN_DIR MODEL_DIR [SECONDS] [SEED]
"""
import random
import re
import socket
import struct
import sys
import threading
import time
import unittest

from harness import Server

BIN, MODEL = sys.argv[1], sys.argv[2]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 15.0
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else 20261206
CLIENTS = 16

BODIES = [b'{"inputs":"hello world"}', b'{"inputs":["a","b","c"]}', b'{"inputs":""}',
          b'{"inputs":', b'{"inputs":"' + b"word " * 600 + b'"}', b"[]", b"\x00\xff"]
ROUTES = {b"/embed": None, b"/tokenize": None, b"/classify": None, b"/health": None,
          b"/nope": None, b"/v1/embeddings": b'{"input":"hi","model":"m"}',
          b"/rerank": b'{"query":"q","texts":["a","b"]}', b"/predict": None}


def request(rnd):
    route = rnd.choice(list(ROUTES))
    if route == b"/health" or rnd.random() < 0.1:
        return b"GET " + route + b" HTTP/1.1\r\nHost: x\r\n\r\n"
    body = ROUTES[route] or rnd.choice(BODIES)
    if rnd.random() < 0.2:
        chunks, i = [], 0
        while i < len(body):
            piece = body[i:i + rnd.randint(1, 40)]
            chunks.append(b"%x\r\n" % len(piece) + piece + b"\r\n")
            i += len(piece)
        return (b"POST " + route + b" HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" +
                b"".join(chunks) + b"0\r\n\r\n")
    expect = b"Expect: 100-continue\r\n" if rnd.random() < 0.1 else b""
    return (b"POST " + route + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
            expect + b"Content-Length: %d\r\n\r\n" % len(body) + body)


def damaged(rnd, data):
    r = rnd.random()
    if r < 0.05:
        i = rnd.randrange(len(data))
        return data[:i] + bytes([rnd.randrange(256)]) + data[i + 1:]
    if r < 0.08:
        return data[:rnd.randrange(len(data))]
    return data


HEAD_END = re.compile(rb"\r\n\r\n")
STATUS = re.compile(rb"HTTP/1\.1 (\d{3}) [^\r\n]*\r\n")
LENGTH = re.compile(rb"\r\ncontent-length: (\d+)\r\n", re.I)


def check_answers(raw):
    """The statuses of the whole answers at the start of `raw` (a stream
    read in full or cut short by the client); raises on a malformed one."""
    statuses, pos = [], 0
    while pos < len(raw):
        end = HEAD_END.search(raw, pos)
        if end is None:
            break  # the client stopped reading inside a head
        head = raw[pos:end.end()]
        status = STATUS.match(head)
        if status is None:
            raise AssertionError("not a status line at byte %d: %r" % (pos, raw[pos:pos + 80]))
        code = int(status.group(1))
        statuses.append(code)
        if code == 100:
            pos = end.end()
            continue
        length = LENGTH.search(head)
        if length is None:
            raise AssertionError("an answer without Content-Length: %r" % head)
        pos = end.end() + int(length.group(1))  # past the end: the client stopped reading
    return statuses


class Chaos(unittest.TestCase):
    def test_random_clients(self):
        server = Server(BIN, MODEL, ["--request-timeout-ms", "3000", "--max-connections", "64"])
        failures, counts, lock = [], {}, threading.Lock()

        def client(n):
            rnd = random.Random(SEED * 1000 + n)
            deadline = time.time() + SECONDS
            while time.time() < deadline and not failures:
                try:
                    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
                        data = b"".join(damaged(rnd, request(rnd))
                                        for _ in range(rnd.randint(1, 6)))
                        i = 0
                        while i < len(data):
                            step = rnd.randint(1, len(data))
                            s.sendall(data[i:i + step])
                            i += step
                            if rnd.random() < 0.1:
                                time.sleep(rnd.random() * 0.01)
                        leave = rnd.random()
                        if leave < 0.15:
                            continue  # hang up at once
                        if leave < 0.2:  # reset
                            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                         struct.pack("ii", 1, 0))
                            continue
                        if leave < 0.3:
                            s.shutdown(socket.SHUT_WR)
                        raw, stop = b"", time.time() + 2.0 * server.time_factor
                        s.settimeout(0.5)
                        while time.time() < stop:
                            try:
                                got = s.recv(65536)
                            except socket.timeout:
                                break
                            if not got:
                                break
                            raw += got
                            if rnd.random() < 0.2:
                                break  # read part of it
                        statuses = check_answers(raw)
                        with lock:
                            for code in statuses:
                                counts[code] = counts.get(code, 0) + 1
                        if 500 in statuses:
                            raise AssertionError("500 in %r" % raw[-600:])
                except (ConnectionError, socket.timeout):
                    pass  # the server closing a damaged request's connection
                except AssertionError as e:
                    failures.append(str(e))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        try:
            print("answers by status:", dict(sorted(counts.items())))
            self.assertEqual(failures, [])
            self.assertGreater(counts.get(200, 0), 100, counts)
            self.assertGreater(sum(counts.values()) - counts.get(200, 0), 10, counts)
            status, _, body = server.request("POST", "/embed", {"inputs": "still serving"},
                                             timeout=20)
            self.assertEqual(status, 200, body)
        finally:
            code = server.stop()
        self.assertEqual(code, 0, server.output()[-3000:])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
