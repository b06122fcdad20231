"""The Dockerfile, checked without a Docker engine.

Live: the runtime stage's CMD and HEALTHCHECK run exactly as written against
a server laid out like the image. The layout is made the way the image makes
it: the build stage's `DESTDIR=/staging cmake --install build --prefix
/usr/local` into TMP/staging (the runtime stage copies /staging/usr/local/
to /usr/local/), plus a `bert init` checkpoint where the runtime stage
copies models/default. Only paths are mapped: TMP/staging/usr/local/bin
stands first on PATH (where the image has /usr/local/bin), the process runs
in TMP/staging + WORKDIR, and the environment holds what `docker run -e`
would give (a loopback host and a free port instead of 0.0.0.0:8080).

Static: the runtime stage installs a package for every library the binary
links (ldd -> dpkg -S -> package names, compared with its apt-get install
list and the Depends of those packages), the same lists as
deploy/install-deps.sh, and the ports, user, paths and sources agree with
the rest of the repository.

usage: test_image.py BIN_DIR MODEL_DIR BUILD_DIR
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import unittest

from deploy_common import (Process, example_config_default, exec_or_shell, free_port, http_get,
                           http_post,
                           install_deps_lists, parse_dockerfile, project_version, read,
                           apt_packages, repo_path, toml_int, wait_ready, work_dir)

BIN, MODEL, BUILD = sys.argv[1], sys.argv[2], sys.argv[3]
STAGES = parse_dockerfile(read("Dockerfile"))
BUILD_STAGE, RUNTIME = STAGES[0], STAGES[-1]
# Sanitizer runtimes appear when this runs in a -DBERT_SANITIZE build; the
# image is a Release build without them.
SANITIZER_LIBS = re.compile(r"lib(asan|ubsan|tsan|lsan)\.so")


def healthcheck_argv():
    args = RUNTIME.one("HEALTHCHECK").args
    m = re.search(r"(?:^|\s)CMD\s+(.*)$", args)
    return exec_or_shell(m.group(1))


def healthcheck_options():
    args = RUNTIME.one("HEALTHCHECK").args
    return dict(re.findall(r"--([a-z-]+)=(\S+)", args.split(" CMD ")[0]))


def runtime_packages():
    pkgs = []
    for run in RUNTIME.all("RUN"):
        pkgs += apt_packages(run.args)
    return pkgs


def dpkg_owner(path):
    """The Debian package that ships `path` (following symlinks and the
    /lib -> /usr/lib merge), or None."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/"):
            candidates.append("/usr" + p)
    for p in candidates:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    return None


def installed_packages():
    """{name: (priority, [dependency alternatives])} for installed packages."""
    out = subprocess.run(["dpkg-query", "-W", "-f",
                          "${Package}\t${Priority}\t${Depends}, ${Pre-Depends}\t${db:Status-Abbrev}\n"],
                         capture_output=True, text=True, check=True).stdout
    pkgs = {}
    for line in out.splitlines():
        name, prio, deps, status = line.split("\t")
        if not status.startswith("ii"):
            continue
        alts = []
        for dep in deps.split(","):
            names = [re.sub(r"[\s(].*$", "", a.strip()).split(":")[0] for a in dep.split("|")]
            names = [n for n in names if n]
            if names:
                alts.append(names)
        pkgs[name] = (prio, alts)
    return pkgs


def depends_closure(roots, pkgs):
    seen, todo = set(), list(roots)
    while todo:
        p = todo.pop()
        if p in seen or p not in pkgs:
            continue
        seen.add(p)
        for alts in pkgs[p][1]:
            todo += [a for a in alts if a in pkgs]
    return seen


class Static(unittest.TestCase):
    def test_stages(self):
        self.assertEqual(RUNTIME.base, "debian:bookworm-slim")
        self.assertEqual(BUILD_STAGE.base, "debian:bookworm")
        self.assertEqual(BUILD_STAGE.name, "build")
        self.assertEqual(RUNTIME.one("STOPSIGNAL").args, "SIGTERM")

    def test_exposed_port_is_the_default_port(self):
        default_port = toml_int(example_config_default("server", "port"))
        self.assertEqual(RUNTIME.one("EXPOSE").args, "%d" % default_port)

    def test_runs_as_a_numeric_non_root_user(self):
        user, _, group = RUNTIME.one("USER").args.partition(":")
        self.assertTrue(user.isdigit() and int(user) != 0, user)
        self.assertTrue(group.isdigit() and int(group) != 0, group)
        self.assertIn("--uid %s" % user, " ".join(r.args for r in RUNTIME.all("RUN")))

    def test_healthcheck_is_bertserve_health_check(self):
        # It reads the server's own config, so it follows the port wherever
        # it is set (tests/http/test_serving.py checks flag, env and file).
        self.assertEqual(healthcheck_argv(), ["bertserve", "--health-check"])
        opts = healthcheck_options()
        self.assertEqual(set(opts), {"interval", "timeout", "start-period", "retries"})

    def test_version_label_is_the_project_version(self):
        labels = " ".join(l.args for l in RUNTIME.all("LABEL"))
        self.assertIn('org.opencontainers.image.version="%s"' % project_version(), labels)

    def test_package_lists_match_install_deps(self):
        lists = install_deps_lists()
        self.assertEqual(sorted(runtime_packages()), sorted(lists["runtime"]))
        build = []
        for run in BUILD_STAGE.all("RUN"):
            build += apt_packages(run.args)
        self.assertEqual(set(lists["build"]) - set(build), set())

    def test_runtime_packages_provide_every_linked_library(self):
        ldd = subprocess.run(["ldd", os.path.join(BIN, "bertserve")], capture_output=True,
                             text=True, check=True).stdout
        linked = re.findall(r"^\s*(\S+) => (/\S+)", ldd, re.M)
        self.assertGreater(len(linked), 5, ldd)
        readelf = subprocess.run(["readelf", "-d", os.path.join(BIN, "bertserve")],
                                 capture_output=True, text=True, check=True).stdout
        direct = set(re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", readelf))
        pkgs = installed_packages()
        listed = set(runtime_packages())
        closure = depends_closure(listed, pkgs)
        # Priority required and what it depends on (libc6 among them): in every
        # Debian image, debian:bookworm-slim too.
        base = depends_closure({p for p, (prio, _) in pkgs.items() if prio == "required"}, pkgs)
        owners = {}
        for soname, path in linked:
            if SANITIZER_LIBS.search(soname):
                print("ignoring the sanitizer runtime %s" % soname)
                continue
            owner = dpkg_owner(path)
            self.assertIsNotNone(owner, "no package ships %s" % path)
            owners[soname] = owner
            self.assertIn(owner, closure | base,
                          "%s (%s) is linked but package %s is not installed by the runtime "
                          "stage (%s) nor a dependency of it" % (soname, path, owner,
                                                                 " ".join(sorted(listed))))
            if soname in direct:
                self.assertIn(owner, listed | base,
                              "%s is linked directly: name %s in the runtime stage"
                              % (soname, owner))
        print("linked libraries -> packages: %s" % ", ".join(
            "%s=%s" % kv for kv in sorted(owners.items())))
        # Nothing listed that the binary does not need, except curl (for operators).
        needed = {owners[s] for s in direct if s in owners} | {"curl"}
        self.assertEqual(listed - needed, set(), "listed but not linked")

    def test_build_stage_has_every_source_folder(self):
        subdirs = re.findall(r"^add_subdirectory\((\w+)\)", read("CMakeLists.txt"), re.M)
        copied = {i.args.split()[0] for i in BUILD_STAGE.all("COPY")}
        ignore = read(".dockerignore").splitlines()
        for d in subdirs:
            self.assertIn(d, copied, "the build stage does not COPY %s/" % d)
            self.assertIn("!%s/" % d, ignore, ".dockerignore leaves out %s/" % d)
        # The unit file is read by the install rules.
        self.assertIn("deploy/systemd", copied)

    def test_model_lands_where_the_default_path_points(self):
        copies = [i.args.split() for i in RUNTIME.all("COPY") if not i.args.startswith("--")]
        model_copy = [c for c in copies if c[0] == "models/default"]
        self.assertEqual(len(model_copy), 1, copies)
        workdir = RUNTIME.one("WORKDIR").args
        default_path = example_config_default("model", "path").strip('"')
        self.assertEqual(model_copy[0][1], os.path.join(workdir, default_path))
        self.assertIn("!models/default/", read(".dockerignore").splitlines())
        # ... which is where `cmake --install` puts it too.
        self.assertRegex(read("CMakeLists.txt"),
                         r"install\(DIRECTORY models/default DESTINATION "
                         r"\$\{CMAKE_INSTALL_DATADIR\}/bertserve/models\)")
        self.assertEqual(workdir, "/usr/local/share/bertserve")
        self.assertIn("mkdir /models", " ".join(r.args for r in RUNTIME.all("RUN")))


class Live(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        """The runtime stage's files, from the build stage's install command."""
        cls.tmp = work_dir("image")
        cls.root = os.path.join(cls.tmp, "staging")
        shutil.rmtree(cls.root, ignore_errors=True)
        install = [r.args for r in BUILD_STAGE.all("RUN") if "cmake --install" in r.args]
        assert len(install) == 1, install
        m = re.search(r"DESTDIR=(\S+) cmake --install build --prefix (\S+)", install[0])
        destdir, cls.prefix = m.group(1), m.group(2)
        cls.copy_staging = "COPY --from=build %s%s/ %s/" % (destdir, cls.prefix, cls.prefix)
        subprocess.run(["cmake", "--install", BUILD, "--prefix", cls.prefix],
                       env=dict(os.environ, DESTDIR=cls.root), check=True,
                       stdout=subprocess.DEVNULL)
        model_dst = [i.args.split()[1] for i in RUNTIME.all("COPY")
                     if i.args.split()[0] == "models/default"][0]
        shutil.rmtree(cls.root + model_dst, ignore_errors=True)
        shutil.copytree(MODEL, cls.root + model_dst)

    def setUp(self):
        self.server = None

    def tearDown(self):
        if self.server is not None:
            self.server.stop(signal.SIGKILL, 10)

    def test_runtime_stage_copies_the_install(self):
        self.assertIn(self.copy_staging, ["COPY " + c.args for c in RUNTIME.all("COPY")])

    def test_cmd_and_healthcheck_run_as_written(self):
        prefix = self.prefix
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BERTSERVE_")}
        env.update({
            # The image's PATH (Debian's default) with its /usr/local/bin here.
            "PATH": "%s%s/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
                    % (self.root, prefix),
            "BERTSERVE_SERVER_HOST": "127.0.0.1",
            "BERTSERVE_SERVER_PORT": str(port),
        })
        for e in RUNTIME.all("ENV"):
            k, _, v = e.args.partition("=")
            env[k] = v
        self.assertEqual(RUNTIME.all("ENTRYPOINT"), [])
        cmd = exec_or_shell(RUNTIME.one("CMD").args)
        workdir = self.root + RUNTIME.one("WORKDIR").args
        log = os.path.join(self.tmp, "cmd.log")
        self.server = Process(cmd, log, env=env, cwd=workdir, inherit=False)
        wait_ready(port, 60, self.server.proc, log)
        status, body = http_get(port, "/info")
        self.assertEqual(status, 200)
        self.assertIn(b'"path":"models/default"', body.replace(b" ", b""))

        check = healthcheck_argv()
        r = subprocess.run(check, env=env, capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

        # STOPSIGNAL drains and exits 0; then the health check fails.
        rc = self.server.stop(getattr(signal, RUNTIME.one("STOPSIGNAL").args), 40)
        self.assertEqual(rc, 0, self.server.output())
        r = subprocess.run(check, env=env, capture_output=True, text=True, timeout=10)
        self.assertNotEqual(r.returncode, 0)

    def test_sagemaker_serve_runs_as_written(self):
        """SageMaker's `docker run IMAGE serve`: the script the runtime stage
        copies to /usr/local/bin/serve serves the model SageMaker unpacked
        (SM_MODEL_DIR stands for /opt/ml/model here) on SAGEMAKER_BIND_TO_PORT,
        answers GET /ping and POST /invocations (the checkpoint's own route,
        /predict for this classifier), and drains on SIGTERM."""
        copy = [c.args.split() for c in RUNTIME.all("COPY")
                if c.args.split()[0] == "deploy/sagemaker/serve"]
        self.assertEqual(len(copy), 1)
        serve = self.root + copy[0][1]
        os.makedirs(os.path.dirname(serve), exist_ok=True)
        shutil.copy2(repo_path("deploy/sagemaker/serve"), serve)
        self.assertEqual(os.path.dirname(copy[0][1]), self.prefix + "/bin")
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BERTSERVE_")}
        env.update({"PATH": "%s%s/bin:/usr/bin:/bin" % (self.root, self.prefix),
                    "BERTSERVE_SERVER_HOST": "127.0.0.1", "SAGEMAKER_BIND_TO_PORT": str(port),
                    "SM_MODEL_DIR": MODEL})
        log = os.path.join(self.tmp, "serve.log")
        self.server = Process(["serve"], log, env=env, cwd=self.root + RUNTIME.one("WORKDIR").args,
                              inherit=False)
        wait_ready(port, 60, self.server.proc, log)
        self.assertEqual(http_get(port, "/ping"), (200, b'{"status":"ok"}'))
        status, body = http_get(port, "/info")
        self.assertIn(('"path":"%s"' % MODEL).encode(), body.replace(b" ", b""))
        status, body = http_post(port, "/invocations", b'{"inputs": "a fine film"}')
        self.assertEqual(status, 200, body)
        self.assertEqual(sorted(p["label"] for p in json.loads(body)), ["NEGATIVE", "POSITIVE"])
        self.assertEqual(self.server.stop(signal.SIGTERM, 40), 0, self.server.output())

    def test_cli_runs_from_the_image_layout(self):
        prefix = self.prefix
        bert = os.path.join(self.root + prefix, "bin", "bert")
        r = subprocess.run([bert, "tokenize", "--model", "models/default"],
                           input='{"inputs": "hello world"}', capture_output=True, text=True,
                           cwd=self.root + RUNTIME.one("WORKDIR").args, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"hello"', r.stdout)


if __name__ == "__main__":
    if not os.path.exists(repo_path("Dockerfile")):
        sys.exit("no Dockerfile")
    unittest.main(argv=sys.argv[:1], verbosity=2)
