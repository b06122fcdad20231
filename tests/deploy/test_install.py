"""`cmake --install BUILD --prefix TMP` and the systemd unit it installs.

The installed files are where they should be, an edited config.toml survives
a reinstall, the installed binaries run, and the installed unit's ExecStart
runs as written (in its WorkingDirectory, with its Environment=) against a
`bert init` checkpoint until /ready, then drains on its KillSignal and exits
0. The unit passes `systemd-analyze verify` and scores as well sandboxed in
`systemd-analyze security`, and, under strace, every system call bertserve
makes from start through requests to drain is allowed by the unit's
SystemCallFilter (a forbidden one would fail with EPERM in production).
Tools that are missing skip their part with a message.

usage: test_install.py BIN_DIR MODEL_DIR BUILD_DIR
"""
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import unittest

from deploy_common import (Process, free_port, http_get, project_version, read, repo_path,
                           wait_ready, work_dir)

BIN, MODEL, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
UNIT = "lib/systemd/system/bertserve.service"


def parse_unit(text):
    """{section: [(key, value)]}, comments and blank lines dropped."""
    out, section = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = []
        else:
            k, _, v = line.partition("=")
            out[section].append((k.strip(), v.strip()))
    return out


def unit_values(unit, section, key):
    return [v for k, v in unit[section] if k == key]


def syscall_groups():
    """{"@group": [names and @subgroups]} from systemd-analyze."""
    out = subprocess.run(["systemd-analyze", "syscall-filter"], capture_output=True,
                         text=True).stdout
    groups, current = {}, None
    for line in out.splitlines():
        if line.startswith("@"):
            current = line.strip()
            groups[current] = []
        elif current and line.strip() and not line.strip().startswith("#"):
            groups[current].append(line.strip())
    return groups


def expand(names, groups, seen=None):
    seen = set() if seen is None else seen
    out = set()
    for n in names:
        if n.startswith("@"):
            if n not in seen:
                seen.add(n)
                out |= expand(groups.get(n, []), groups, seen)
        else:
            out.add(n)
    return out


def allowed_syscalls(unit):
    """The set SystemCallFilter= lines allow: allow lists add, ~ lists remove."""
    groups = syscall_groups()
    allowed = None
    for value in unit_values(unit, "Service", "SystemCallFilter"):
        deny = value.startswith("~")
        names = expand(value.lstrip("~").split(), groups)
        if deny:
            allowed = (allowed if allowed is not None else set()) - names
        else:
            allowed = (allowed or set()) | names
    return allowed


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = work_dir("install")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        shutil.rmtree(cls.prefix, ignore_errors=True)
        subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix], check=True,
                       stdout=subprocess.DEVNULL)
        with open(os.path.join(cls.prefix, UNIT)) as f:
            cls.unit_text = f.read()
        cls.unit = parse_unit(cls.unit_text)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_files(self):
        for exe in ("bin/bertserve", "bin/bert"):
            self.assertTrue(os.access(self.path(exe), os.X_OK), exe)
        example = read("config.example.toml")
        with open(self.path("etc/bertserve/config.toml")) as f:
            self.assertEqual(f.read(), example)
        with open(self.path("share/doc/bertserve/config.example.toml")) as f:
            self.assertEqual(f.read(), example)
        self.assertTrue(os.path.isdir(self.path("share/bertserve/models")))
        self.assertEqual(os.path.isdir(self.path("share/bertserve/models/default")),
                         os.path.isdir(repo_path("models", "default")))
        self.assertEqual(self.unit_text,
                         read("deploy", "systemd", "bertserve.service").replace("/usr/local",
                                                                              self.prefix))

    def test_reinstall_keeps_an_edited_config(self):
        prefix = os.path.join(self.tmp, "reinstall")
        shutil.rmtree(prefix, ignore_errors=True)
        config = os.path.join(prefix, "etc/bertserve/config.toml")
        subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                       stdout=subprocess.DEVNULL)
        with open(config, "a") as f:
            f.write("# edited\n")
        subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True,
                       stdout=subprocess.DEVNULL)
        with open(config) as f:
            self.assertTrue(f.read().endswith("# edited\n"))

    def test_installed_binaries_run(self):
        r = subprocess.run([self.path("bin/bertserve"), "--version"], capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0)
        self.assertIn(project_version(), r.stdout)
        r = subprocess.run([self.path("bin/bert"), "version"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)

    def exec_start(self):
        (line,) = unit_values(self.unit, "Service", "ExecStart")
        return shlex.split(line)

    def unit_env(self):
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
        for value in unit_values(self.unit, "Service", "Environment"):
            for item in shlex.split(value):
                k, _, v = item.partition("=")
                env[k] = v
        # What differs on this machine, as a drop-in would set it: a loopback
        # port, and the test checkpoint unless one was installed.
        port = free_port()
        env.update({"BERTSERVE_SERVER_HOST": "127.0.0.1", "BERTSERVE_SERVER_PORT": str(port)})
        if not os.path.isdir(self.path("share/bertserve/models/default")):
            env["BERTSERVE_MODEL_PATH"] = MODEL
        return env, port

    def run_unit(self, wrapper=(), extra_env=None):
        """Start ExecStart as the unit would; returns (Process, port)."""
        argv = self.exec_start()
        self.assertTrue(argv[0].startswith(self.prefix), argv)
        (cwd,) = unit_values(self.unit, "Service", "WorkingDirectory")
        env, port = self.unit_env()
        env.update(extra_env or {})
        log = os.path.join(self.tmp, "unit-%d.log" % port)
        return Process(list(wrapper) + argv, log, env=env, cwd=cwd, inherit=False), port

    def stop_signal(self):
        (name,) = unit_values(self.unit, "Service", "KillSignal")
        return getattr(signal, name)

    def test_exec_start_serves_and_drains(self):
        server, port = self.run_unit()
        try:
            wait_ready(port, 60, server.proc, server.log_path)
            status, body = http_get(port, "/health")
            self.assertEqual(status, 200)
            info = json.loads(http_get(port, "/info")[1])
            self.assertEqual(info["config"]["server"]["shutdown_timeout_ms"], 30000)
        finally:
            rc = server.stop(self.stop_signal(), 40)
        self.assertEqual(rc, 0, server.output())
        # systemd waits TimeoutStopSec before SIGKILL: longer than the drain.
        (stop_s,) = unit_values(self.unit, "Service", "TimeoutStopSec")
        self.assertGreater(int(stop_s) * 1000, info["config"]["server"]["shutdown_timeout_ms"])

    def test_systemd_analyze_verify(self):
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed")
        r = subprocess.run(["systemd-analyze", "verify", self.path(UNIT)], capture_output=True,
                           text=True, timeout=60)
        messages = [l for l in (r.stdout + r.stderr).splitlines() if "bertserve" in l]
        self.assertEqual((r.returncode, messages), (0, []), r.stdout + r.stderr)
        r = subprocess.run(["systemd-analyze", "security", "--offline=yes", self.path(UNIT)],
                           capture_output=True, text=True, timeout=60)
        m = re.search(r"Overall exposure level for bertserve.service: ([0-9.]+)", r.stdout)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        print("systemd-analyze security: exposure %s (0 is best, 10 worst)" % m.group(1))
        self.assertLessEqual(float(m.group(1)), 2.0, r.stdout)

    def test_every_system_call_is_allowed_by_the_unit(self):
        if shutil.which("strace") is None or shutil.which("systemd-analyze") is None:
            self.skipTest("strace or systemd-analyze is not installed")
        allowed = allowed_syscalls(self.unit)
        self.assertTrue(allowed and "read" in allowed and "mount" not in allowed)
        trace = os.path.join(self.tmp, "strace.txt")
        # LeakSanitizer (a -DBERT_SANITIZE build) cannot run under ptrace.
        server, port = self.run_unit(["strace", "-f", "-qq", "-c", "-o", trace],
                                     {"ASAN_OPTIONS": "detect_leaks=0"})
        try:
            wait_ready(port, 120, server.proc, server.log_path)
            requests = [("/embed", {"inputs": ["a b c", "d"]}),
                        ("/classify", {"inputs": "good"}),
                        ("/fill-mask", {"inputs": "a [MASK] day"}),
                        ("/tokenize", {"inputs": "x y"}),
                        ("/v1/embeddings", {"input": "z"})]
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for path, body in requests:
                conn.request("POST", path, body=json.dumps(body))
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200, resp.read())
                resp.read()
            for path in ("/info", "/metrics", "/nope"):
                conn.request("GET", path)
                conn.getresponse().read()
            conn.close()
            # Signal bertserve, strace's child; strace exits with its status.
            with open("/proc/%d/task/%d/children" % (server.proc.pid, server.proc.pid)) as f:
                (child,) = f.read().split()
            os.kill(int(child), self.stop_signal())
            rc = server.proc.wait(60)
        finally:
            server.stop(signal.SIGKILL, 10)
        self.assertEqual(rc, 0, server.output())
        with open(trace) as f:
            rows = [l.split() for l in f if re.match(r"\s*[0-9.]+\s+[0-9.]+\s+\d+\s+\d+", l)]
        used = {row[-1] for row in rows} - {"total"}
        self.assertGreater(len(used), 10, used)
        print("system calls made: %s" % " ".join(sorted(used)))
        self.assertEqual(used - allowed, set(), "not allowed by the unit's SystemCallFilter")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
