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
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
import harness as h  # noqa: E402
from checks import ROOT, check, finish  # noqa: E402

TOKEN = "probe-token-42"


def sh(script, env):
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    full.update(env)
    return subprocess.run(["sh", "-c", script], env=full, capture_output=True, text=True, timeout=20)


def start_as_deployed(env, port):
    """histd with a deploy file's environment (its listen port moved to a free
    one, its data dir to a temporary one); (process, None) once it listens,
    or (None, (exit status, stderr)) when it refuses to start."""
    full = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    full.update(env)
    full["HISTD_LISTEN"] = re.sub(r":\d+$", ":%d" % port, full.get("HISTD_LISTEN", "0.0.0.0:8080"))
    full["HISTD_DATA_DIR"] = tempfile.mkdtemp(prefix="histd-deploy-")
    full.pop("HISTD_STATIC_DIR", None)
    p = subprocess.Popen([h.histd_binary()], env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    if b"listening on" in line:
        return p, None
    p.wait(10)
    return None, (p.returncode, p.stderr.read().decode(errors="replace").strip())


def stop(p):
    p.terminate()
    p.wait(10)
    p.stdout.close()
    p.stderr.close()


def check_token_policy(df_env, compose_env, k8s_env):
    """Each deploy file, as written, refuses to serve its wide listen address
    without a token, and serves once the token arrives from its secret."""
    with open(os.path.join(ROOT, "deploy", "histd.env.example"), encoding="utf-8") as f:
        example = dict(line.strip().split("=", 1) for line in f if "=" in line and not line.startswith("#"))
    cases = [("Dockerfile", df_env, {}), ("compose", compose_env, example),
             ("k8s", k8s_env, {})]
    for name, env, secret in cases:
        port = h.free_port()
        p, refused = start_as_deployed(dict(env, **secret), port)
        if p is not None:
            stop(p)
        check(refused is not None and refused[0] == 2 and "--token" in refused[1],
              "%s: without a token histd refuses to start (%s)" % (name, refused))
        p, refused = start_as_deployed(dict(env, **dict(secret, HISTD_TOKEN=TOKEN)), port)
        if not check(p is not None, "%s: with the token from its secret histd starts (%s)" % (name, refused)):
            continue
        try:
            base = "http://127.0.0.1:%d" % port
            auth = {"Authorization": "Bearer " + TOKEN}
            check(h.http("GET", base + "/v1/kernels", headers=auth).status == 200,
                  "%s: the API answers with the token" % name)
            check(h.http("GET", base + "/v1/kernels").status == 401, "%s: and not without it" % name)
            if name == "k8s":
                r = h.http("GET", base + "/v1/kernels", headers=dict(auth, Host="histd.lab.svc:8080"))
                check(r.status == 200, "k8s: a client using the Service's name passes the Host check (%d)" % r.status)
                r = h.http("GET", base + "/v1/kernels", headers=dict(auth, Host="evil.example:8080"))
                check(r.status == 421, "k8s: another name does not (%d)" % r.status)
        finally:
            stop(p)


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

    df_env = {}
    m = re.search(r"^ENV\s+((?:.*\\\n)*.*)$", df.split("\nFROM ")[-1], re.M)
    if check(m is not None, "the Dockerfile's final stage sets ENV"):
        df_env = dict(t.split("=", 1) for t in shlex.split(m.group(1).replace("\\\n", " ")) if "=" in t)
    cenv = compose["services"]["histd"].get("environment") or {}
    kenv = {}
    for e in c.get("env") or []:
        if "value" in e:
            kenv[e["name"]] = re.sub(r"\$\(POD_NAMESPACE\)", "lab", e["value"])
    check_token_policy(df_env, cenv, kenv)

    finish()


if __name__ == "__main__":
    main()
