"""Helpers shared by the deploy tests: the repository's files, a Dockerfile
reader, and bertserve processes started the way a deployment starts them.

Standard library only (the Kubernetes test adds python3-yaml).
"""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "http"))
from harness import close_floats, free_port  # noqa: E402,F401


def repo_path(*parts):
    return os.path.join(ROOT, *parts)


def read(*parts):
    with open(repo_path(*parts), encoding="utf-8") as f:
        return f.read()


def project_version():
    m = re.search(r"project\(bertserve VERSION ([0-9.]+)", read("CMakeLists.txt"))
    return m.group(1)


def example_config_default(section, key):
    """The value config.example.toml gives `key` in `[section]`, as text."""
    current = None
    for line in read("config.example.toml").splitlines():
        line = line.strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and re.match(r"%s\s*=" % re.escape(key), line):
            return line.split("=", 1)[1].strip()
    raise KeyError("%s.%s" % (section, key))


def toml_int(text):
    return int(text.replace("_", ""))


# ---- Dockerfile --------------------------------------------------------------

class Instruction:
    def __init__(self, keyword, args, line):
        self.keyword, self.args, self.line = keyword, args, line

    def __repr__(self):
        return "%s %s (line %d)" % (self.keyword, self.args, self.line)


class Stage:
    def __init__(self, base, name):
        self.base, self.name, self.instructions = base, name, []

    def all(self, keyword):
        return [i for i in self.instructions if i.keyword == keyword]

    def one(self, keyword):
        found = self.all(keyword)
        if len(found) != 1:
            raise AssertionError("stage %s: %d %s instructions" % (self.name, len(found), keyword))
        return found[0]


def parse_dockerfile(text):
    """[Stage] in order, each with its instructions; continuation lines joined
    (a trailing backslash), comment lines dropped, as the Dockerfile
    reference describes. Global ARGs before the first FROM are substituted
    into FROM lines."""
    logical, start, buf = [], 0, []
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue  # comments inside a continued instruction are dropped
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf.append(stripped[:-1].strip())
            continue
        buf.append(stripped)
        logical.append((start, " ".join(b for b in buf if b)))
        buf = []
    if buf:
        raise ValueError("Dockerfile ends inside a continued line")
    stages, global_args = [], {}
    for line, text_ in logical:
        keyword, _, args = text_.partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            args = re.sub(r"\$\{(\w+)\}", lambda m: global_args.get(m.group(1), ""), args)
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(stages))
            stages.append(Stage(words[0], name))
        elif not stages:
            if keyword == "ARG":
                k, _, v = args.partition("=")
                global_args[k.strip()] = v.strip()
        else:
            stages[-1].instructions.append(Instruction(keyword, args.strip(), line))
    return stages


def exec_or_shell(args):
    """A CMD/ENTRYPOINT argument as the argv Docker runs: the JSON exec form
    as is, the shell form under /bin/sh -c."""
    if args.startswith("["):
        return json.loads(args)
    return ["/bin/sh", "-c", args]


def apt_packages(run_args):
    """Package names an `apt-get install` in a RUN line names."""
    pkgs = []
    for cmd in re.split(r"&&|;|\|\|", run_args):
        words = shlex.split(cmd)
        if len(words) >= 2 and words[0] == "apt-get" and "install" in words:
            after = words[words.index("install") + 1:]
            pkgs += [w for w in after if not w.startswith("-")]
    return pkgs


def install_deps_lists():
    """{"runtime": [...], "build": [...], "tests": [...]} from deploy/install-deps.sh."""
    text = read("deploy", "install-deps.sh").replace("\\\n", " ")
    out = {}
    for name in ("runtime", "build", "tests"):
        m = re.search(r'^%s="([^"]*)"' % name, text, re.M)
        out[name] = m.group(1).split()
    return out


# ---- processes ------------------------------------------------------------------

def http_get(port, path, timeout=2.0):
    """(status, body bytes); (None, b"") when nothing answers."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path),
                                    timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, urllib.error.URLError):
        return None, b""


def http_post(port, path, body, timeout=10.0):
    """(status, body bytes) of a JSON POST; (None, b"") when nothing answers."""
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (OSError, urllib.error.URLError):
        return None, b""


def wait_until(predicate, timeout, what, proc=None, log=None):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise AssertionError("%s: process exited with %d:\n%s"
                                 % (what, proc.returncode, tail(log)))
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("%s: not after %ss\n%s" % (what, timeout, tail(log)))


def tail(path, n=4000):
    if not path or not os.path.exists(path):
        return ""
    with open(path, "rb") as f:
        return f.read()[-n:].decode(errors="replace")


class Process:
    """A child process with its output in a log file. `env` adds to this
    process's environment, or with inherit=False is the whole of it."""

    def __init__(self, argv, log_path, env=None, cwd=None, inherit=True):
        self.argv, self.log_path = argv, log_path
        self.log = open(log_path, "ab")
        full_env = dict(os.environ) if inherit else {}
        full_env.update(env or {})
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     env=full_env, cwd=cwd)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        """Signal, wait, return the exit code (-N for a signal)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def output(self):
        if not self.log.closed:
            self.log.flush()
        return tail(self.log_path, 20000)


def wait_ready(port, timeout=60, proc=None, log=None):
    wait_until(lambda: http_get(port, "/ready")[0] == 200, timeout,
               "bertserve on port %d ready" % port, proc, log)


def work_dir(name):
    """A fresh folder for one test under TMPDIR (ctest points it into the build)."""
    base = os.environ.get("TMPDIR", "/tmp")
    path = os.path.join(base, "deploy-%s-%d" % (name, os.getpid()))
    os.makedirs(path, exist_ok=True)
    return path

