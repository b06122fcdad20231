"""deploy/kubernetes and deploy/compose, read with python3-yaml and checked
against each other, the Dockerfile and the server's configuration: probes,
resources, grace period longer than the drain, ports, image, labels. The
ConfigMap's config.toml is loaded by a real bertserve, started with the
Deployment's environment, which must become ready.

usage: test_manifests.py BIN_DIR MODEL_DIR
"""
import glob
import json
import os
import re
import signal
import sys
import unittest

try:
    import yaml
except ImportError:  # Debian's python3-yaml; deploy/install-deps.sh installs it
    yaml = None

from deploy_common import (Process, example_config_default, free_port, http_get,
                           parse_dockerfile, project_version, read, repo_path, toml_int,
                           wait_ready, work_dir)

BIN, MODEL = sys.argv[1], sys.argv[2]
K8S = repo_path("deploy", "kubernetes")
RUNTIME = parse_dockerfile(read("Dockerfile"))[-1]
EXPOSED = int(RUNTIME.one("EXPOSE").args)
IMAGE_USER = int(RUNTIME.one("USER").args.split(":")[0])


def load_all(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def manifests():
    docs = {}
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        if os.path.basename(path) == "kustomization.yaml":
            continue
        for d in load_all(path):
            docs.setdefault(d["kind"], []).append((os.path.basename(path), d))
    return docs


def only(docs, kind):
    found = docs.get(kind, [])
    assert len(found) == 1, "%d %s manifests" % (len(found), kind)
    return found[0][1]


def quantity(q):
    """Kubernetes CPU or memory quantity as a float (cores or bytes)."""
    q = str(q)
    units = {"m": 1e-3, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
             "k": 1e3, "M": 1e6, "G": 1e9}
    for u in sorted(units, key=len, reverse=True):
        if q.endswith(u):
            return float(q[:-len(u)]) * units[u]
    return float(q)


def toml_value(text, section, key):
    """A key's value in our TOML subset (enough for the checks here)."""
    current = None
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line.startswith("["):
            current = line.strip("[]")
        elif current == section and "=" in line:
            k, v = (s.strip() for s in line.split("=", 1))
            if k == key:
                return v
    return None


def duration_s(text):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", text)
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


def env_names_documented():
    return set(re.findall(r"env (BERTSERVE_[A-Z_]+)", read("config.example.toml"))) | {
        "BERTSERVE_CONFIG"}


@unittest.skipIf(yaml is None, "python3-yaml is not installed (deploy/install-deps.sh)")
class Kubernetes(unittest.TestCase):
    def setUp(self):
        self.docs = manifests()
        self.deploy = only(self.docs, "Deployment")
        self.pod = self.deploy["spec"]["template"]["spec"]
        self.labels = self.deploy["spec"]["template"]["metadata"]["labels"]
        containers = self.pod["containers"]
        self.assertEqual(len(containers), 1)
        self.c = containers[0]
        self.config_text = only(self.docs, "ConfigMap")["data"]["config.toml"]

    def selects_pods(self, selector):
        return selector and all(self.labels.get(k) == v for k, v in selector.items())

    def test_kinds_and_kustomization(self):
        for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap",
                     "PodDisruptionBudget"):
            only(self.docs, kind)
        kust = load_all(os.path.join(K8S, "kustomization.yaml"))[0]
        files = {os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))}
        self.assertEqual(set(kust["resources"]), files - {"kustomization.yaml"})
        self.assertEqual(kust["images"], [{"name": "bertserve", "newTag": project_version()}])

    def test_image_port_and_user_match_the_dockerfile(self):
        self.assertEqual(self.c["image"], "bertserve:%s" % project_version())
        ports = {p["name"]: p["containerPort"] for p in self.c["ports"]}
        self.assertEqual(ports, {"http": EXPOSED})
        sc = self.pod["securityContext"]
        self.assertTrue(sc["runAsNonRoot"])
        self.assertEqual(sc["runAsUser"], IMAGE_USER)
        self.assertFalse(self.c["securityContext"]["allowPrivilegeEscalation"])

    def probe_port(self, probe):
        port = probe["httpGet"]["port"]
        return {p["name"]: p["containerPort"] for p in self.c["ports"]}.get(port, port)

    def test_probes(self):
        want = {"readinessProbe": "/ready", "livenessProbe": "/health", "startupProbe": "/health"}
        for name, path in want.items():
            probe = self.c[name]
            self.assertEqual(probe["httpGet"]["path"], path, name)
            self.assertEqual(self.probe_port(probe), EXPOSED, name)
        start = self.c["startupProbe"]
        self.assertGreaterEqual(start["periodSeconds"] * start["failureThreshold"], 60,
                                "give a large checkpoint time to load")
        # A pod that is draining leaves the endpoints within a couple of seconds.
        ready = self.c["readinessProbe"]
        self.assertLessEqual(ready["periodSeconds"] * ready["failureThreshold"], 5)

    def test_resources(self):
        res = self.c["resources"]
        for what in ("cpu", "memory"):
            self.assertIn(what, res["requests"])
            self.assertIn(what, res["limits"])
            self.assertLessEqual(quantity(res["requests"][what]), quantity(res["limits"][what]))
        # Whole CPUs: the thread counts come from the CPU quota.
        self.assertEqual(quantity(res["limits"]["cpu"]) % 1, 0)

    def test_grace_period_covers_pause_and_drain(self):
        env = {e["name"]: e.get("value") for e in self.c.get("env", [])}
        drain_ms = env.get("BERTSERVE_SERVER_SHUTDOWN_TIMEOUT_MS") or toml_value(
            self.config_text, "server", "shutdown_timeout_ms") or example_config_default(
            "server", "shutdown_timeout_ms")
        drain_s = toml_int(drain_ms) / 1000
        pre = self.c["lifecycle"]["preStop"]
        if "sleep" in pre:
            pause = pre["sleep"]["seconds"]
        else:
            cmd = pre["exec"]["command"]
            self.assertEqual(cmd[0], "sleep")
            pause = float(cmd[1])
        self.assertGreater(pause, 0)
        grace = self.pod["terminationGracePeriodSeconds"]
        print("grace %ss > preStop %ss + drain %ss" % (grace, pause, drain_s))
        self.assertGreater(grace, pause + drain_s)

    def test_no_service_links(self):
        self.assertIs(self.pod["enableServiceLinks"], False)

    def test_config_map_is_mounted_where_the_environment_points(self):
        env = {e["name"]: e.get("value") for e in self.c.get("env", [])}
        config_path = env["BERTSERVE_CONFIG"]
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mounts = [m for m in self.c["volumeMounts"]
                  if m["mountPath"] == os.path.dirname(config_path)]
        self.assertEqual(len(mounts), 1)
        vol = volumes[mounts[0]["name"]]
        self.assertEqual(vol["configMap"]["name"], only(self.docs, "ConfigMap")["metadata"]["name"])
        self.assertIn(os.path.basename(config_path), only(self.docs, "ConfigMap")["data"])
        for name in env:
            self.assertIn(name, env_names_documented())

    def test_service_hpa_pdb_select_the_pods(self):
        svc = only(self.docs, "Service")
        self.assertTrue(self.selects_pods(svc["spec"]["selector"]))
        self.assertTrue(self.selects_pods(self.deploy["spec"]["selector"]["matchLabels"]))
        target = svc["spec"]["ports"][0]["targetPort"]
        self.assertEqual({p["name"]: p["containerPort"] for p in self.c["ports"]}.get(target,
                                                                                      target),
                         EXPOSED)
        pdb = only(self.docs, "PodDisruptionBudget")
        self.assertTrue(self.selects_pods(pdb["spec"]["selector"]["matchLabels"]))
        hpa = only(self.docs, "HorizontalPodAutoscaler")
        ref = hpa["spec"]["scaleTargetRef"]
        self.assertEqual((ref["kind"], ref["name"]), ("Deployment", self.deploy["metadata"]["name"]))
        metrics = hpa["spec"]["metrics"]
        self.assertEqual([m["resource"]["name"] for m in metrics], ["cpu"])
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 2)
        self.assertGreater(hpa["spec"]["maxReplicas"], hpa["spec"]["minReplicas"])
        # A PDB that allows no disruption would block node drains forever.
        self.assertTrue(pdb["spec"].get("maxUnavailable", 0) >= 1 or
                        pdb["spec"]["minAvailable"] < hpa["spec"]["minReplicas"])

    def test_model_patches_mount_under_models(self):
        mount_root = RUNTIME.all("LABEL")
        self.assertIn('io.bertserve.models-mount="/models"', " ".join(l.args for l in mount_root))
        patches = sorted(glob.glob(os.path.join(K8S, "patches", "*.yaml")))
        self.assertEqual(len(patches), 2)
        for path in patches:
            doc = load_all(path)[0]
            self.assertEqual(doc["metadata"]["name"], self.deploy["metadata"]["name"])
            c = doc["spec"]["template"]["spec"]["containers"][0]
            self.assertEqual(c["name"], self.c["name"])
            env = {e["name"]: e["value"] for e in c["env"]}
            model_path = env["BERTSERVE_MODEL_PATH"]
            mounts = [m for m in c["volumeMounts"] if model_path.startswith(m["mountPath"])]
            self.assertEqual(len(mounts), 1, path)
            self.assertTrue(mounts[0]["mountPath"].startswith("/models"))
            self.assertTrue(mounts[0]["readOnly"])

    def test_config_map_starts_a_server(self):
        tmp = work_dir("manifests")
        config = os.path.join(tmp, "config.toml")
        with open(config, "w") as f:
            f.write(self.config_text)
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("BERTSERVE_")}
        for e in self.c.get("env", []):
            env[e["name"]] = e["value"]
        env["BERTSERVE_CONFIG"] = config  # where the pod mounts it
        # Flags for what differs on this machine: the model and a loopback port.
        log = os.path.join(tmp, "server.log")
        server = Process([os.path.join(BIN, "bertserve"), "--model", MODEL, "--host", "127.0.0.1",
                          "--port", str(port)], log, env=env, inherit=False)
        try:
            wait_ready(port, 60, server.proc, log)
            status, body = http_get(port, "/info")
            self.assertEqual(status, 200)
            shown = json.loads(body)["config"]
            compared = 0
            for section in shown:
                for key, value in shown[section].items():
                    if key in ("host", "port", "path") or section == "workers":
                        continue
                    text = toml_value(self.config_text, section, key)
                    if text is None:
                        continue
                    self.assertEqual(json.dumps(value), json.dumps(
                        json.loads(text.replace("_", "") if text[0].isdigit() else text)),
                        "[%s] %s" % (section, key))
                    compared += 1
            self.assertGreaterEqual(compared, 10)
        finally:
            rc = server.stop(signal.SIGTERM, 40)
        self.assertEqual(rc, 0, server.output())


@unittest.skipIf(yaml is None, "python3-yaml is not installed (deploy/install-deps.sh)")
class Compose(unittest.TestCase):
    def setUp(self):
        self.compose = load_all(repo_path("deploy", "compose", "compose.yaml"))[0]
        self.nginx = read("deploy", "compose", "nginx.conf")
        self.services = self.compose["services"]
        self.replicas = sorted(n for n in self.services if n.startswith("bertserve-"))

    def directive(self, name):
        found = re.findall(r"^\s*%s\s+([^;]+);" % name, self.nginx, re.M)
        self.assertEqual(len(found), 1, name)
        return found[0]

    def test_three_replicas_of_the_image(self):
        self.assertEqual(len(self.replicas), 3)
        for name in self.replicas:
            s = self.services[name]
            self.assertEqual(s["image"], "bertserve:%s" % project_version())
            ctx = os.path.normpath(os.path.join(repo_path("deploy", "compose"),
                                                s["build"]["context"]))
            self.assertTrue(os.path.exists(os.path.join(ctx, "Dockerfile")))
            self.assertEqual(s["expose"], [str(EXPOSED)])
            drain_s = toml_int(example_config_default("server", "shutdown_timeout_ms")) / 1000
            self.assertGreater(duration_s(s["stop_grace_period"]), drain_s)
            for name_ in s.get("environment", {}):
                self.assertIn(name_, env_names_documented())

    def test_nginx_upstream_is_the_replicas(self):
        servers = re.findall(r"^\s*server\s+([\w.-]+):(\d+)\s+([^;]*);", self.nginx, re.M)
        self.assertEqual(sorted(s[0] for s in servers), self.replicas)
        for _, port, params in servers:
            self.assertEqual(int(port), EXPOSED)
            self.assertRegex(params, r"max_fails=\d+")
            self.assertRegex(params, r"fail_timeout=\d+s")
        nginx = self.services["nginx"]
        self.assertIn("./nginx.conf:/etc/nginx/nginx.conf:ro", nginx["volumes"])
        self.assertEqual(sorted(nginx["depends_on"]), self.replicas)
        for dep in nginx["depends_on"].values():
            self.assertEqual(dep["condition"], "service_healthy")

    def test_nginx_limits_match_the_server(self):
        size = self.directive("client_max_body_size")
        self.assertEqual(int(size.rstrip("mMkK")) * {"m": 2 ** 20, "k": 2 ** 10}[size[-1].lower()],
                         toml_int(example_config_default("server", "max_body_bytes")))
        idle_ms = toml_int(example_config_default("server", "request_timeout_ms"))
        upstream = re.search(r"upstream bertserve \{(.*?)\n    \}", self.nginx, re.S).group(1)
        keepalive_idle = re.search(r"keepalive_timeout (\d+)s;", upstream).group(1)
        self.assertLess(int(keepalive_idle) * 1000, idle_ms)
        self.assertRegex(upstream, r"\n\s*keepalive \d+;")
        self.assertGreater(int(self.directive("proxy_read_timeout").rstrip("s")) * 1000, idle_ms)
        retry = self.directive("proxy_next_upstream").split()
        for cond in ("error", "timeout", "http_502", "http_503", "http_429", "non_idempotent"):
            self.assertIn(cond, retry)
        self.assertEqual(self.directive("proxy_http_version"), "1.1")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
