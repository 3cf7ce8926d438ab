#!/usr/bin/env python3
"""Builds the Dockerfile with podman and runs histd from the image (suite
'container', not in the default runs: it costs minutes; tests/run.sh runs
it when HISTD_CI_CONTAINER=1).

No registry is needed: the base is Ubuntu 24.04 (the release under the
nvidia/cuda images) made by mmdebstrap from the Ubuntu archive, checked
with the archive's key (tests/deploy/ubuntu-archive-2018.asc, fingerprint
F6EC B376 2474 EDA9 D21B 7022 8719 20D1 991B C93C), and the image is
built as the Dockerfile documents a CPU-only one (BUILD_IMAGE,
RUNTIME_IMAGE, CUDA=disabled): every instruction runs, the CUDA toolkit
does not. Then the container: it refuses to start without a token; with
one, /healthz answers through the published port, an upload and a
histogram job give the counts of the definition computed here, the
process is user 10001, the HEALTHCHECK passes, and SIGTERM stops it with
status 0.

Skips (77), with the reason, where the machine cannot run containers:
podman, runc or mmdebstrap missing (deploy/install-deps.sh --container),
the Ubuntu archive out of reach, or a container that cannot start here.
A failing image build or daemon is a failure.
(Rootless, as another user: podman and mmdebstrap want subordinate ids
in /etc/subuid and a /dev/net/tun that user may open for slirp4netns; on
the VM where this was written /dev/net/tun is root's alone, so a rootless
container there has no network, and the test ran as root.)

HISTD_CONTAINER_DIR: where the base's tarball is kept between runs and
the podman store lives while the test runs (removed at its end; 3 GB
with vfs); default /var/tmp/histd-container-<uid>, outside the build context.
HISTD_CONTAINER_STORAGE: podman's storage driver: overlay (the default,
podman's own; the kernel's overlayfs, as root) or vfs (plain copies: works
everywhere, also on an overlayfs or rootless, but its build took 392 s
where overlay's took 219 s on the same loaded 2 cores).
"""
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
import harness as h  # noqa: E402
from checks import ROOT, check, finish  # noqa: E402
from test_dashboard import definition  # noqa: E402  (the histogram's definition, pair by pair)

UBUNTU = "http://archive.ubuntu.com/ubuntu"
KEY = os.path.join(ROOT, "tests", "deploy", "ubuntu-archive-2018.asc")
BASE = "localhost/histd-test-ubuntu:24.04"
IMAGE = "localhost/histd:test"
TOKEN = "container-test-token-0123456789abcdef"

WORK = os.environ.get("HISTD_CONTAINER_DIR") or "/var/tmp/histd-container-%d" % os.getuid()
DRIVER = os.environ.get("HISTD_CONTAINER_STORAGE") or "overlay"


def podman_argv(*args):
    # runc, not Debian 12's default crun 1.8: crun refuses hosts with cgroup
    # v1 and v2 both mounted ("cgroups in hybrid mode not supported");
    # runc runs on v1, hybrid and v2. A store of its own, outside the
    # build context.
    return ["podman", "--root", os.path.join(WORK, "storage"), "--runroot", os.path.join(WORK, "run"),
            "--tmpdir", os.path.join(WORK, "libpod"), "--storage-driver", DRIVER,
            "--runtime", "runc", "--cgroup-manager", "cgroupfs", "--events-backend", "file"] + list(args)


def podman(*args, timeout=120):
    return subprocess.run(podman_argv(*args), capture_output=True, text=True, timeout=timeout)


def limits():
    """--ulimit flags at the limits this process has: podman asks for
    1048576 open files, which a kernel may refuse even to root
    ("setrlimit RLIMIT_NOFILE: Operation not permitted")."""
    out = []
    for name, res, most in (("nofile", resource.RLIMIT_NOFILE, 65536), ("nproc", resource.RLIMIT_NPROC, 4096)):
        hard = resource.getrlimit(res)[1]
        n = most if hard == resource.RLIM_INFINITY else min(hard, most)
        out += ["--ulimit", "%s=%d:%d" % (name, n, n)]
    return out


def timed(what, fn):
    t0 = time.monotonic()
    r = fn()
    h.log("%s: %.0f s" % (what, time.monotonic() - t0))
    return r


def tail(text, n=3000):
    return text[-n:].strip()


def make_base():
    """Ubuntu 24.04 (minbase and apt: what the ubuntu:24.04 image holds) as a podman
    image; the tarball is kept as a cache."""
    tar = os.path.join(WORK, "ubuntu-24.04.tar")
    if not os.path.exists(tar):
        lines = ["deb %s %s main universe" % (UBUNTU, s) for s in ("noble", "noble-updates", "noble-security")]
        r = timed("mmdebstrap Ubuntu 24.04", lambda: subprocess.run(
            ["mmdebstrap", "--variant=minbase", "--include=apt", "--format=tar", "--keyring=" + KEY, "noble", tar + ".part"] + lines,
            capture_output=True, text=True, timeout=600))
        if r.returncode != 0:
            h.skip("mmdebstrap could not make Ubuntu 24.04 from %s (is the archive reachable?):\n%s"
                   % (UBUNTU, tail(r.stderr)))
        os.replace(tar + ".part", tar)
    if podman("image", "exists", BASE).returncode != 0:
        r = podman("import", tar, BASE)
        if r.returncode != 0:
            h.skip("podman cannot import an image here (--storage-driver %s; HISTD_CONTAINER_STORAGE=vfs "
                   "where overlayfs fails):\n%s" % (DRIVER, tail(r.stderr)))


def probe():
    """A container starts and reaches the Ubuntu archive (the build's
    apt-get needs it), or the test skips with podman's own words."""
    r = podman("run", "--rm", *limits(), BASE, "true")
    if r.returncode != 0:
        h.skip("this machine cannot run a container (podman run --runtime runc --storage-driver %s "
               "as uid %d; HISTD_CONTAINER_STORAGE=vfs where overlayfs fails):\n%s"
               % (DRIVER, os.getuid(), tail(r.stderr)))
    r = podman("run", "--rm", *limits(), BASE, "apt-get", "update", "--error-on=any")
    if r.returncode != 0:
        h.skip("a container here cannot reach %s (the image build's apt-get needs it):\n%s"
               % (UBUNTU, tail(r.stdout + r.stderr)))


def build():
    r = timed("podman build", lambda: podman(
        "build", "--format", "docker", *limits(),  # docker format keeps the HEALTHCHECK
        "--build-arg", "BUILD_IMAGE=" + BASE, "--build-arg", "RUNTIME_IMAGE=" + BASE,
        "--build-arg", "CUDA=disabled", "-t", IMAGE, ROOT, timeout=1500))
    warnings = sorted({l.strip() for l in r.stdout.splitlines() if "warning:" in l})
    h.log("compiler warnings in the image build (Ubuntu 24.04's GCC): %d%s"
          % (len(warnings), "".join("\n  " + w for w in warnings)))
    if not check(r.returncode == 0, "the image builds from the Dockerfile"):
        h.log(tail(r.stdout + r.stderr, 6000))
        finish()


def run_job(base):
    auth = {"Authorization": "Bearer " + TOKEN}
    rnd = random.Random(33)
    pts = [[rnd.uniform(-10, 10), rnd.uniform(-10, 10), rnd.uniform(-10, 10)] for _ in range(300)]
    r = h.http("POST", base + "/v1/datasets", {"points": pts}, auth)
    if not check(r.status == 201, "upload 300 points (%d %s)" % (r.status, r.body[:200])):
        return
    r = h.http("POST", base + "/v1/jobs", {"dataset": r.json()["id"], "bucket_width": 1.5, "buckets": 16}, auth)
    if not check(r.status == 202, "submit a histogram job (%d %s)" % (r.status, r.body[:200])):
        return
    job = r.json()["id"]
    r = h.http("GET", base + "/v1/jobs/%s?wait=30" % job, headers=auth, timeout=40)
    if not check(r.status == 200 and r.json()["status"] == "succeeded", "the job succeeded (%s)" % r.body[:300]):
        return
    res = h.http("GET", base + "/v1/jobs/%s/result" % job, headers=auth).json()
    counts, overflow = definition(pts, 1.5, 16)
    check(res["counts"] == counts and res["overflow"] == overflow and res["total"] == 300 * 299 // 2,
          "its counts are the definition's, computed here (%s + %d over)" % (counts, overflow))


def main():
    for tool in ("podman", "runc", "mmdebstrap"):
        if not shutil.which(tool):
            h.skip("%s is not installed (bash deploy/install-deps.sh --container installs podman, "
                   "runc and mmdebstrap)" % tool)
    os.makedirs(WORK, exist_ok=True)
    h.log("podman store: %s (%s)" % (WORK, DRIVER))
    try:
        build_and_run()
    finally:  # the store goes, the base's tarball stays
        podman("rmi", "--all", "--force")
        for d in ("storage", "run", "libpod"):
            shutil.rmtree(os.path.join(WORK, d), ignore_errors=True)
    finish()


def build_and_run():
    make_base()
    probe()
    build()

    # The image's environment listens on every interface: no token, no start.
    r = podman("run", "--rm", *limits(), IMAGE)
    check(r.returncode == 2 and "--token" in r.stderr,
          "without a token the container refuses to start (%d: %s)" % (r.returncode, tail(r.stderr, 300)))

    port = h.free_port()
    name = "histd-test-%d" % os.getpid()
    # (without systemd podman says it cannot time the HEALTHCHECK; the test runs it)
    r = podman("run", "-d", "--name", name, *limits(), "-p", "127.0.0.1:%d:8080" % port,
               "-e", "HISTD_TOKEN=" + TOKEN, IMAGE)
    if not check(r.returncode == 0, "podman run -d -p 127.0.0.1:%d:8080 -e HISTD_TOKEN (%s)" % (port, tail(r.stderr))):
        finish()
    try:
        base = "http://127.0.0.1:%d" % port
        try:
            h.wait_for(lambda: h.http("GET", base + "/healthz", timeout=2).status == 200, 30,
                       "/healthz through the published port")
            check(True, "/healthz answers 200 through the published port, without a token")
        except TimeoutError as e:
            check(False, str(e))
        else:
            check(h.http("GET", base + "/v1/kernels").status == 401, "the API wants the token")
            r = h.http("GET", base + "/")
            check(r.status == 200 and b"<html" in r.body.lower(), "the dashboard is served (%d)" % r.status)
            run_job(base)
            r = podman("exec", name, "id", "-u")
            check(r.stdout.strip() == "10001", "histd runs as user 10001 (%s)" % r.stdout.strip())
            r = podman("inspect", "--format", "{{json .Mounts}}", name)
            mounts = json.loads(r.stdout or "[]")
            check(any(m.get("Destination") == "/var/lib/histd" for m in mounts),
                  "/var/lib/histd is a volume (%s)" % [m.get("Destination") for m in mounts])
            r = podman("healthcheck", "run", name)
            check(r.returncode == 0, "the image's HEALTHCHECK passes (%s)" % tail(r.stdout + r.stderr, 300))
        podman("stop", "-t", "30", name, timeout=60)
        r = podman("inspect", "--format", "{{.State.ExitCode}}", name)
        check(r.stdout.strip() == "0", "podman stop (SIGTERM): histd exits 0 (%s)" % r.stdout.strip())
    finally:
        logs = podman("logs", name)
        h.log("---- container log ----\n" + tail(logs.stdout + logs.stderr))
        podman("rm", "-f", "-v", name)


if __name__ == "__main__":
    main()
