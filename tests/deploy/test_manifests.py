#!/usr/bin/env python3
"""Validates deploy/docker-compose.yml and deploy/k8s/*.yaml with python3-yaml
and structural checks (no cluster and no Docker engine run here): the compose
GPU reservation, the Deployment's nvidia.com/gpu limit, its probes on
/healthz and /readyz, the PVC mounted at the data dir, labels and ports that
line up between Deployment and Service, and agreement with the Dockerfile
(user, port, data dir).
"""
import glob
import os
import re
import subprocess
import sys
from checks import ROOT, check, failures, finish  # noqa: E402

try:
    import yaml
except ImportError:
    print("python3-yaml is missing (Debian: apt-get install python3-yaml; deploy/install-deps.sh --test)")
    sys.exit(1)

DEPLOY = os.path.join(ROOT, "deploy")


def dockerfile_facts():
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
        text = f.read()
    final = text.split("\nFROM ")[-1]
    user = re.findall(r"^USER\s+(\S+)", final, re.M)[-1].split(":")[0]
    data = re.search(r"HISTD_DATA_DIR=(\S+)", final).group(1)
    port = int(re.search(r"^EXPOSE\s+(\d+)", final, re.M).group(1))
    return {"user": int(user), "data": data, "port": port}


def shell_ok(argv):
    """sh -n on an exec probe's script, and a dry run of its word splitting."""
    if argv[:2] != ["sh", "-c"] or len(argv) != 3:
        return True
    if subprocess.run(["sh", "-n", "-c", argv[2]]).returncode != 0:
        return False
    # with a token, the header must stay one word: run it with curl replaced by printf
    script = argv[2].replace("curl ", "printf '[%s]' ", 1)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True,
                         env={"HISTD_TOKEN": "t0k en", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}).stdout
    return "[Authorization: Bearer t0k en]" in out if "HISTD_TOKEN" in script else True


def image_pinned(image):
    return ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")


def test_compose(df):
    path = os.path.join(DEPLOY, "docker-compose.yml")
    with open(path, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    check(isinstance(doc, dict) and isinstance(doc.get("services"), dict), "compose: parses, has services")
    svc = doc["services"].get("histd")
    if not check(isinstance(svc, dict), "compose: a histd service"):
        return
    devices = (((svc.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices") or []
    gpu = [d for d in devices if d.get("driver") == "nvidia" and "gpu" in (d.get("capabilities") or [])]
    check(len(gpu) == 1, "compose: deploy.resources.reservations.devices reserves nvidia gpu")
    if gpu:
        g = gpu[0]
        check(("count" in g) != ("device_ids" in g), "compose: the reservation has count or device_ids, not both")
        check(g.get("count") in ("all",) or isinstance(g.get("count"), int) or "device_ids" in g,
              "compose: count is 'all' or a number")
    check(image_pinned(svc.get("image", "x:latest")), "compose: image %s has a version tag" % svc.get("image"))
    build = svc.get("build") or {}
    ctx = os.path.normpath(os.path.join(DEPLOY, build.get("context", ".")))
    check(os.path.isfile(os.path.join(ctx, build.get("dockerfile", "Dockerfile"))),
          "compose: the build context holds the Dockerfile")
    env = svc.get("environment") or {}
    if isinstance(env, list):
        env = dict(e.split("=", 1) for e in env)
    check(env.get("HISTD_LISTEN", "0.0.0.0:%d" % df["port"]).startswith("0.0.0.0:"),
          "compose: histd listens on every interface inside the container")
    check(all(isinstance(v, str) for v in env.values()), "compose: environment values are strings")
    # the token: from an env file kept out of git, never inline, never waived
    env_files = svc.get("env_file") or []
    env_files = [env_files] if isinstance(env_files, (str, dict)) else env_files
    paths = [e if isinstance(e, str) else e.get("path") for e in env_files]
    check("histd.env" in paths, "compose: the token comes from the env file histd.env: %s" % paths)
    check("HISTD_TOKEN" not in env, "compose: no HISTD_TOKEN written in the compose file")
    check("HISTD_ALLOW_ANONYMOUS" not in env, "compose: does not opt out of the token")
    example = os.path.join(DEPLOY, "histd.env.example")
    if check(os.path.isfile(example), "compose: deploy/histd.env.example shows the env file"):
        with open(example, encoding="utf-8") as f:
            keys = [line.split("=", 1)[0] for line in f if "=" in line and not line.startswith("#")]
        check(keys == ["HISTD_TOKEN"], "compose: the example env file sets HISTD_TOKEN: %s" % keys)
    with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as f:
        check("/deploy/histd.env" in f.read().split(), "compose: git ignores deploy/histd.env")
    data_mounts = [v for v in svc.get("volumes") or [] if isinstance(v, str) and v.split(":")[1] == df["data"]]
    check(len(data_mounts) == 1, "compose: a volume is mounted at the data dir %s" % df["data"])
    if data_mounts:
        vol = data_mounts[0].split(":")[0]
        check(vol in (doc.get("volumes") or {}), "compose: the named volume %s is declared" % vol)
    ports = [str(p) for p in svc.get("ports") or []]
    check(any(p.endswith(":%d" % df["port"]) for p in ports), "compose: publishes container port %d" % df["port"])
    hc = svc.get("healthcheck") or {}
    check("/healthz" in " ".join(hc.get("test") or []) if hc else True, "compose: healthcheck (if any) probes /healthz")
    check(svc.get("restart") in ("unless-stopped", "always", "on-failure"), "compose: restarts on failure")


def load_k8s():
    docs = {}
    for path in sorted(glob.glob(os.path.join(DEPLOY, "k8s", "*.yaml"))):
        with open(path, encoding="utf-8") as f:
            for d in yaml.safe_load_all(f):
                if d is None:
                    continue
                name = os.path.basename(path)
                ok = check(isinstance(d, dict) and d.get("apiVersion") and d.get("kind"),
                           "k8s: %s: a document with apiVersion and kind" % name)
                if ok:
                    if d["kind"] != "Kustomization":
                        check(bool((d.get("metadata") or {}).get("name")), "k8s: %s: %s has a name" % (name, d["kind"]))
                    docs.setdefault(d["kind"], []).append((name, d))
    return docs


def test_k8s(df):
    docs = load_k8s()
    for kind in ("Deployment", "Service", "PersistentVolumeClaim"):
        check(len(docs.get(kind, [])) == 1, "k8s: one %s" % kind)
    if failures:
        return
    _, dep = docs["Deployment"][0]
    _, svc = docs["Service"][0]
    _, pvc = docs["PersistentVolumeClaim"][0]
    check(dep["apiVersion"] == "apps/v1" and svc["apiVersion"] == "v1" and pvc["apiVersion"] == "v1",
          "k8s: current apiVersions")

    spec = dep["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    sel = spec["selector"]["matchLabels"]
    check(all(labels.get(k) == v for k, v in sel.items()), "k8s: the Deployment's selector matches its pods")
    check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "k8s: the Service selects the pods")
    if "ReadWriteOnce" in pvc["spec"]["accessModes"]:
        check(spec.get("replicas", 1) == 1 and spec.get("strategy", {}).get("type") == "Recreate",
              "k8s: one replica and Recreate, since the volume is ReadWriteOnce")
    check(re.match(r"^\d+(\.\d+)?[EPTGMK]i?$", str(pvc["spec"]["resources"]["requests"]["storage"])) is not None,
          "k8s: the PVC requests a storage size")

    containers = pod["containers"]
    check(len(containers) == 1, "k8s: one container")
    c = containers[0]
    check(image_pinned(c["image"]), "k8s: image %s has a version tag" % c["image"])
    limits = (c.get("resources") or {}).get("limits") or {}
    gpus = limits.get("nvidia.com/gpu")
    check(isinstance(gpus, int) and gpus >= 1, "k8s: limits nvidia.com/gpu = %r" % gpus)
    requests = (c.get("resources") or {}).get("requests") or {}
    check("nvidia.com/gpu" not in requests or requests["nvidia.com/gpu"] == gpus,
          "k8s: a GPU request, if any, equals the limit")

    env = {e["name"]: e for e in c.get("env") or []}
    ports = {p.get("name"): p["containerPort"] for p in c.get("ports") or []}
    check(df["port"] in ports.values(), "k8s: the container port is %d" % df["port"])

    def probe_ok(name, path):
        p = c.get(name) or {}
        g = p.get("httpGet") or {}
        port = g.get("port")
        resolved = ports.get(port) if isinstance(port, str) else port
        return check(g.get("path") == path and resolved == df["port"],
                     "k8s: %s is an HTTP GET of %s on port %s" % (name, path, port))

    probe_ok("livenessProbe", "/healthz")
    rp = c.get("readinessProbe") or {}
    if "exec" in rp:
        # an exec probe (curl) can carry the token that /readyz needs when set
        cmd = " ".join(rp["exec"].get("command") or [])
        check(re.search(r"curl .*-f.*http://127\.0\.0\.1:%d/readyz" % df["port"], cmd) is not None,
              "k8s: readinessProbe curls /readyz on port %d and fails on errors" % df["port"])
        if "HISTD_TOKEN" in env:
            check("Authorization: Bearer $HISTD_TOKEN" in cmd, "k8s: the readiness probe sends the token when set")
        check(shell_ok(rp["exec"]["command"]), "k8s: the readiness command is valid sh")
    else:
        probe_ok("readinessProbe", "/readyz")
    if c.get("startupProbe"):
        probe_ok("startupProbe", "/healthz")

    tp = svc["spec"]["ports"][0]["targetPort"]
    check((ports.get(tp) if isinstance(tp, str) else tp) == df["port"], "k8s: the Service targets the container port")

    check(env.get("HISTD_LISTEN", {}).get("value", "0.0.0.0:").startswith("0.0.0.0:"),
          "k8s: histd listens on the pod's interfaces")
    data_dir = env.get("HISTD_DATA_DIR", {}).get("value", df["data"])
    vols = {v["name"]: v for v in pod.get("volumes") or []}
    mounts = {m["mountPath"]: m for m in c.get("volumeMounts") or []}
    m = mounts.get(data_dir)
    if check(m is not None, "k8s: a volume is mounted at the data dir %s" % data_dir):
        v = vols.get(m["name"], {})
        check((v.get("persistentVolumeClaim") or {}).get("claimName") == pvc["metadata"]["name"],
              "k8s: the data dir is the PVC %s" % pvc["metadata"]["name"])
        check(not m.get("readOnly"), "k8s: the data mount is writable")
    check(all(mm["name"] in vols for mm in mounts.values()), "k8s: every mount has a volume")
    tok = env.get("HISTD_TOKEN") or {}
    ref = (tok.get("valueFrom") or {}).get("secretKeyRef")
    check(ref is not None and "value" not in tok, "k8s: the token comes from a Secret")
    check(ref is not None and not ref.get("optional"), "k8s: the Secret is required, not optional")
    check("HISTD_ALLOW_ANONYMOUS" not in env, "k8s: does not opt out of the token")
    hosts = env.get("HISTD_ALLOWED_HOSTS", {}).get("value", "").split(",")
    check(svc["metadata"]["name"] in hosts, "k8s: the Service's name %s passes the Host check: %s"
          % (svc["metadata"]["name"], hosts))

    psc = pod.get("securityContext") or {}
    csc = c.get("securityContext") or {}
    check(psc.get("runAsNonRoot") or csc.get("runAsNonRoot"), "k8s: runAsNonRoot")
    uid = csc.get("runAsUser", psc.get("runAsUser"))
    check(uid in (None, df["user"]), "k8s: runAsUser %s is the image's USER %d" % (uid, df["user"]))
    check(csc.get("allowPrivilegeEscalation") is False, "k8s: allowPrivilegeEscalation false")
    if csc.get("readOnlyRootFilesystem"):
        check("/tmp" in mounts, "k8s: a read-only root has a writable /tmp")

    kust = docs.get("Kustomization", [])
    if kust:
        res = kust[0][1].get("resources") or []
        files = {os.path.basename(p) for p in glob.glob(os.path.join(DEPLOY, "k8s", "*.yaml"))} - {kust[0][0]}
        check(set(res) == files, "k8s: the kustomization lists every manifest: %s" % sorted(res))


def main():
    df = dockerfile_facts()
    test_compose(df)
    test_k8s(df)
    finish()


if __name__ == "__main__":
    main()
