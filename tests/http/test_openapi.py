"""proto/openapi.yaml against the server (issue 20): every error example is a
message the code can send (it matches a format string of proto/ or server/),
every example with an `x-request` is exactly what a real bertserve answers
to that request (status and body), every route of the table has a path, and
/info's family enum lists model/names.c's families.

usage: test_openapi.py BIN_DIR MODEL_DIR SOURCE_DIR
"""
import glob
import json
import os
import re
import sys
import unittest

import yaml

from harness import Server

BIN, MODEL, SRC = sys.argv[1], sys.argv[2], sys.argv[3]


def read(rel):
    with open(os.path.join(SRC, rel), encoding="utf-8") as f:
        return f.read()


SPEC = yaml.safe_load(read("proto/openapi.yaml"))
LITERAL = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def c_formats():
    """Every run of adjacent string literals in proto/ and server/, as a
    regex where each printf conversion matches anything."""
    out = []
    for path in glob.glob(os.path.join(SRC, "proto/*.c")) + glob.glob(os.path.join(SRC,
                                                                                    "server/*.[ch]")):
        text = read(os.path.relpath(path, SRC))
        for run in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', text):
            fmt = "".join(m.group(1) for m in LITERAL.finditer(run.group(0)))
            fmt = fmt.encode().decode("unicode_escape").encode("latin-1").decode("utf-8")
            parts = re.split(r"%[-.*0-9]*(?:zu|lld|llu|ld|lu|d|u|s|c|x|g|f)", fmt)
            if sum(len(p) for p in parts) < 12:
                continue  # too little text to identify a message
            out.append(re.compile(".*".join(re.escape(p.replace("%%", "%")) for p in parts)))
    return out


def error_examples(node, where="spec"):
    """(where, example object or value) for every example of an error body."""
    if isinstance(node, dict):
        for key, value in node.items():
            here = "%s/%s" % (where, key)
            if key == "example" and isinstance(value, dict) and "error" in value:
                yield here, {"value": value}
            elif key == "examples" and isinstance(value, dict):
                for name, ex in value.items():
                    if isinstance(ex, dict) and isinstance(ex.get("value"), dict) and \
                            "error" in ex["value"]:
                        yield "%s/%s" % (here, name), ex
            else:
                yield from error_examples(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from error_examples(value, "%s/%d" % (where, i))


def message_of(value):
    err = value["error"]
    return err["message"] if isinstance(err, dict) else err


def status_of(where):
    """The response status an example sits under: /responses/'422'/... or
    the name of a components response."""
    m = re.search(r"/responses/'?(\d{3})", where)
    if m:
        return int(m.group(1))
    names = {"Malformed": 400, "Unauthorized": 401, "MethodNotAllowed": 405, "TooLarge": 413,
             "Invalid": 422, "Overloaded": 429, "Internal": 500, "Unavailable": 503,
             "OpenAIError": 422}
    m = re.search(r"components/responses/(\w+)", where)
    return names[m.group(1)]


class OpenApi(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.examples = list(error_examples(SPEC))

    def test_examples_are_real_messages(self):
        formats = c_formats()
        self.assertGreater(len(self.examples), 10)
        for where, ex in self.examples:
            msg = message_of(ex["value"])
            self.assertTrue(any(f.fullmatch(msg) for f in formats),
                            "%s: %r is no message of proto/ or server/" % (where, msg))

    def test_examples_with_requests_are_what_the_server_answers(self):
        s = Server(BIN, MODEL, ["--served-model-name", "all-MiniLM-L6-v2", "--api-key", "s3cret"])
        try:
            n = 0
            for where, ex in self.examples:
                req = ex.get("x-request")
                if req is None:
                    continue
                body = req.get("body")
                if "body-inputs" in req:
                    spec = req["body-inputs"]
                    text = " ".join([spec["text"]] * spec.get("repeat", 1))
                    body = json.dumps({"inputs": [text] * spec["count"]})
                status, _, data = s.request(req["method"], req["path"], body,
                                            req.get("headers"))
                self.assertEqual((status, json.loads(data)), (status_of(where), ex["value"]),
                                 where)
                n += 1
            self.assertGreaterEqual(n, 10)
        finally:
            self.assertEqual(s.stop(), 0, s.output())

    def test_every_route_has_a_path(self):
        routes = re.findall(r'\.(?:path|alias) = "([^"]+)"', read("proto/route.c"))
        server = re.findall(r'\{"(/[a-z/0-9]*)", EP_', read("server/http.c")) + ["/invocations"]
        self.assertGreater(len(routes), 10)
        for path in routes + server:
            self.assertIn(path, SPEC["paths"], path)
        self.assertIn("/v1/models/{id}", SPEC["paths"])

    def test_info_family_enum_is_complete(self):
        names = read("model/names.c")
        block = names[names.index("family_names[BERT_FAMILY_COUNT]"):]
        families = re.findall(r'\[BERT_FAMILY_\w+\] = "([\w-]+)"', block[:block.index("};")])
        info = SPEC["components"]["schemas"]["Info"]["properties"]["model"]["properties"]
        self.assertEqual(sorted(info["family"]["enum"]), sorted(families))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
