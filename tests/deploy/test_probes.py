#!/usr/bin/env python3
"""Runs the deployment's health checks, as written, against the real daemon:
the Dockerfile's HEALTHCHECK, the compose healthcheck, and the Kubernetes
probes (HTTP GETs made here; the exec readiness probe run with sh, with and
without the token). The daemon runs with --token on a free loopback port,
so the checks also prove that /healthz needs no token and that the
readiness probe sends it.
"""
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
import harness as h  # noqa: E402
from checks import ROOT, check, finish  # noqa: E402

TOKEN = "probe-token-42"


def sh(script, env):
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    full.update(env)
    return subprocess.run(["sh", "-c", script], env=full, capture_output=True, text=True, timeout=20)


def main():
    if not shutil.which("curl"):
        raise SystemExit("curl is needed (deploy/install-deps.sh --test installs it)")
    with open(os.path.join(ROOT, "Dockerfile"), encoding="utf-8") as f:
        df = f.read()
    hc = re.search(r"^HEALTHCHECK\b.*?CMD\s+(.*?)(?<!\\)$", df, re.S | re.M)
    docker_cmd = hc.group(1).replace("\\\n", " ") if hc else None
    with open(os.path.join(ROOT, "deploy", "docker-compose.yml"), encoding="utf-8") as f:
        compose = yaml.safe_load(f)
    ctest = (compose["services"]["histd"].get("healthcheck") or {}).get("test")
    with open(os.path.join(ROOT, "deploy", "k8s", "deployment.yaml"), encoding="utf-8") as f:
        c = yaml.safe_load(f)["spec"]["template"]["spec"]["containers"][0]

    with h.Daemon("--token", TOKEN) as d:
        port = str(d.port)
        listen = "127.0.0.1:" + port
        if check(docker_cmd is not None, "the Dockerfile has a HEALTHCHECK CMD"):
            r = sh(docker_cmd, {"HISTD_LISTEN": listen})
            check(r.returncode == 0, "the Dockerfile HEALTHCHECK passes against histd --token (%s)" % r.stderr.strip())
            r = sh(docker_cmd, {"HISTD_LISTEN": "127.0.0.1:1"})
            check(r.returncode != 0, "and fails when nothing listens")
        if ctest:
            script = ctest[1] if ctest[0] == "CMD-SHELL" else " ".join(ctest[1:])
            r = sh(script.replace(":8080", ":" + port), {})
            check(r.returncode == 0, "the compose healthcheck passes (%s)" % r.stderr.strip())

        for name in ("startupProbe", "livenessProbe", "readinessProbe"):
            p = c.get(name)
            if not p:
                continue
            if "httpGet" in p:
                r = h.http("GET", d.base + p["httpGet"]["path"])
                check(200 <= r.status < 400, "k8s %s: GET %s answers %d without a token"
                      % (name, p["httpGet"]["path"], r.status))
            elif "exec" in p:
                argv = p["exec"]["command"]
                script = argv[2] if argv[:2] == ["sh", "-c"] else " ".join(argv)
                script = script.replace(":8080", ":" + port)
                r = sh(script, {"HISTD_TOKEN": TOKEN})
                check(r.returncode == 0, "k8s %s passes with the token set (%s)" % (name, r.stderr.strip()))
                r = sh(script, {})
                check(r.returncode != 0, "k8s %s fails without the token, as /readyz needs it" % name)
        r = h.http("GET", d.base + "/readyz", headers={"Authorization": "Bearer " + TOKEN})
        check(r.status == 200, "/readyz answers 200 with the token")
        d.alive()

    finish()


if __name__ == "__main__":
    main()
