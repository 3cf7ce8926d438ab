#!/usr/bin/env python3
"""Lints the Dockerfile and .dockerignore (no Docker engine runs here, and
Debian 12 packages no hadolint), by parsing the instructions and checking
what the image must be: multi-stage from an nvidia/cuda devel image to a
runtime image, pinned tags, a non-root USER, a HEALTHCHECK on /healthz, a
VOLUME for the data dir, configuration by HISTD_* environment, EXPOSE 8080,
an exec-form ENTRYPOINT, tidy apt-get use, and a build context that keeps
every source the build needs.
"""
import fnmatch
import json
import os
import re
import shlex
import sys
from checks import ROOT, check, failures, finish  # noqa: E402

INSTRUCTIONS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
                "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL", "MAINTAINER"}

def parse(path):
    """[(line, INSTRUCTION, argument text)], continuations joined, comments dropped."""
    out, buf, start = [], "", 0
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for no, raw in enumerate(lines, 1):
        s = raw.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if buf and s.startswith("#"):
            continue  # comment lines inside a continued instruction
        if not buf:
            start = no
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        word, _, rest = buf.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        if word != word.upper():
            failures.append("line %d: instruction %r should be upper case" % (start, word))
        buf = ""
    return out


def expand(text, args):
    """text with the ARG defaults put in, until none is left (an ARG's
    default may name earlier ARGs: BUILD_IMAGE=nvidia/cuda:${CUDA_VERSION}...)."""
    for _ in range(10):
        new = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def env_pairs(arg):
    toks = shlex.split(arg)
    if len(toks) >= 2 and "=" not in toks[0]:
        return {toks[0]: " ".join(toks[1:])}
    return dict(t.split("=", 1) for t in toks)


def main():
    ins = parse(os.path.join(ROOT, "Dockerfile"))
    bad = ["line %d: %s" % (line, word) for line, word, _ in ins if word not in INSTRUCTIONS]
    check(ins and not bad, "%d instructions, all known %s" % (len(ins), bad or ""))

    # ARGs before the first FROM are the defaults its image names use.
    args = {}
    for _, word, arg in ins:
        if word == "FROM":
            break
        if word == "ARG" and "=" in arg:
            k, v = arg.split("=", 1)
            args[k] = v
    stages = []  # [{"image", "name", "ins": [...]}]
    for line, word, arg in ins:
        if word == "FROM":
            toks = arg.split()
            toks = [t for t in toks if not t.startswith("--platform")]
            stages.append({"line": line, "image": expand(toks[0], args),
                           "name": toks[2] if len(toks) >= 3 and toks[1].upper() == "AS" else None, "ins": []})
        elif stages:
            stages[-1]["ins"].append((line, word, arg))
    check(len(stages) >= 2, "multi-stage: %d stages" % len(stages))
    for st in stages:
        image = st["image"]
        check(":" in image and not image.endswith(":latest") and "$" not in image,
              "line %d: FROM %s is pinned to a tag, not latest" % (st["line"], image))
    build, final = stages[0], stages[-1]
    check(re.match(r"nvidia/cuda:[\d.]+-devel-", build["image"]) is not None,
          "the build stage is an nvidia/cuda devel image (%s)" % build["image"])
    check(re.match(r"nvidia/cuda:[\d.]+-(runtime|base)-", final["image"]) is not None,
          "the final stage is an nvidia/cuda runtime image (%s)" % final["image"])
    cuda_v = {re.match(r"nvidia/cuda:([\d.]+)-", s["image"]).group(1) for s in stages
              if re.match(r"nvidia/cuda:([\d.]+)-", s["image"])}
    check(len(cuda_v) == 1, "both stages use one CUDA version: %s" % sorted(cuda_v))
    check(build["name"] is not None, "the build stage is named")

    build_runs = " ".join(a for _, w, a in build["ins"] if w == "RUN")
    check("meson setup" in build_runs and "ninja" in build_runs and "meson install" in build_runs,
          "the build stage builds and installs with meson")
    build_args = {}
    for _, w, a in build["ins"]:
        if w == "ARG" and "=" in a:
            k, v = a.split("=", 1)
            build_args[k] = v
    check(re.search(r"-Dcuda=enabled", expand(build_runs, build_args)) is not None,
          "by default the image builds the CUDA kernels (-Dcuda=enabled)")

    copies_from = [a for _, w, a in final["ins"] if w == "COPY" and "--from=" in a]
    names = {s["name"] for s in stages if s["name"]}
    check(copies_from and all(re.search(r"--from=(\S+)", a).group(1) in names for a in copies_from),
          "the final stage copies the build stage's output (COPY --from=%s)" % build["name"])

    # every RUN: apt-get tidy, no sudo, no cd (use WORKDIR)
    for st in stages:
        for line, w, a in st["ins"]:
            if w != "RUN":
                continue
            if "apt-get install" in a:
                check("--no-install-recommends" in a, "line %d: apt-get install --no-install-recommends" % line)
                check("rm -rf /var/lib/apt/lists/*" in a, "line %d: apt lists removed in the same RUN" % line)
                check("apt-get update" in a, "line %d: apt-get update in the same RUN as install" % line)
            if re.search(r"apt-get update\s*$", a):
                check(False, "line %d: apt-get update alone in a RUN goes stale in the cache" % line)
            check(not re.search(r"(^|[;&|]\s*)sudo\b", a), "line %d: no sudo" % line)
            check(not re.search(r"(^|&&|;)\s*cd\s", a), "line %d: no cd in RUN (use WORKDIR)" % line)
        for line, w, a in st["ins"]:
            if w == "ADD":
                check(not re.match(r"\S*https?://", a), "line %d: no ADD of a URL" % line)

    fin = {}
    for line, w, a in final["ins"]:
        fin.setdefault(w, []).append((line, a))
    users = fin.get("USER", [])
    check(bool(users), "the final stage sets USER")
    if users:
        user = users[-1][1].split(":")[0]
        check(user not in ("root", "0"), "USER %s is not root" % user)
        check(user.isdigit(), "USER is numeric (Kubernetes runAsNonRoot can check it)")
        last_user_line = users[-1][0]
        check(all(line < last_user_line for line, _ in fin.get("RUN", [])), "no RUN after the final USER")

    hc = fin.get("HEALTHCHECK", [])
    check(len(hc) == 1 and "/healthz" in hc[0][1] and "CMD" in hc[0][1], "HEALTHCHECK probes /healthz")
    if hc:
        m = re.search(r"--interval=(\d+)s", hc[0][1])
        check(m is not None and 5 <= int(m.group(1)) <= 120, "HEALTHCHECK has a sane interval")

    env = {}
    for _, a in fin.get("ENV", []):
        env.update(env_pairs(a))
    check(env.get("HISTD_LISTEN") == "0.0.0.0:8080", "ENV HISTD_LISTEN=0.0.0.0:8080 (reachable through -p)")
    check("HISTD_TOKEN" not in env, "no token baked into the image (it comes with --env-file at run time)")
    check("HISTD_ALLOW_ANONYMOUS" not in env, "the image does not opt out of the token")
    data_dir = env.get("HISTD_DATA_DIR")
    check(bool(data_dir), "ENV HISTD_DATA_DIR is set")

    vols = []
    for _, a in fin.get("VOLUME", []):
        vols += json.loads(a) if a.startswith("[") else a.split()
    check(data_dir in vols, "VOLUME %s holds the data dir" % vols)
    exposed = [p for _, a in fin.get("EXPOSE", []) for p in a.split()]
    check(any(p.split("/")[0] == "8080" for p in exposed), "EXPOSE 8080")

    ep = fin.get("ENTRYPOINT", [])
    check(len(ep) == 1, "one ENTRYPOINT")
    if ep:
        try:
            argv = json.loads(ep[0][1])
            check(isinstance(argv, list) and argv and argv[0].endswith("/histd"),
                  "ENTRYPOINT is exec-form and runs histd (gets SIGTERM directly)")
        except ValueError:
            check(False, "ENTRYPOINT is exec-form JSON")

    # the runtime stage installs the runtime halves of the -dev packages histd builds with
    with open(os.path.join(ROOT, "deploy", "install-deps.sh"), encoding="utf-8") as f:
        deps = f.read()
    m = re.search(r"pkgs=\(([^)]*)\)", deps)
    dev = [p[:-4] for p in m.group(1).split() if p.startswith("lib") and p.endswith("-dev")] if m else []
    final_runs = " ".join(a for _, a in fin.get("RUN", []))
    for lib in dev:
        if lib == "libc6":
            continue
        # libuv1 -> uv, libsqlite3 -> sqlite, libcurl4-openssl -> curl (the TLS flavour)
        stem = re.sub(r"\d*$", "", re.sub(r"-(openssl|gnutls|nss)$", "", lib.replace("lib", "", 1)))
        check(re.search(r"\blib%s[\w.-]*" % re.escape(stem), final_runs) is not None,
              "the runtime stage installs the runtime package of %s-dev" % lib)

    # every --build-arg the README and the Dockerfile's comments name is an
    # ARG (test_container.py builds with BUILD_IMAGE, RUNTIME_IMAGE, CUDA)
    declared = {a.split("=", 1)[0] for _, w, a in ins if w == "ARG"}
    for name in ("README.md", "Dockerfile"):
        with open(os.path.join(ROOT, name), encoding="utf-8") as f:
            named = set(re.findall(r"--build-arg\s+(\w+)=", f.read()))
        check(named <= declared, "%s's --build-arg names are ARGs (%s)" % (name, sorted(named - declared) or sorted(named)))

    # .dockerignore keeps the sources and drops the clutter
    with open(os.path.join(ROOT, ".dockerignore"), encoding="utf-8") as f:
        pats = [p.strip() for p in f if p.strip() and not p.startswith("#")]

    def ignored(path):
        hit = False
        for p in pats:
            neg = p.startswith("!")
            p = p.lstrip("!").rstrip("/")
            if fnmatch.fnmatch(path, p) or fnmatch.fnmatch(path, p + "/*") or \
                    (p.startswith("**/") and fnmatch.fnmatch(os.path.basename(path), p[3:])):
                hit = not neg
        return hit

    for need in ("meson.build", "meson_options.txt", "include/histd/histd.h", "src/engine/meson.build",
                 "src/service/meson.build", "kernels/meson.build", "tests/meson.build", "bench/meson.build",
                 "api/dashboard/index.html", "api/dashboard/app.js", "api/dashboard/style.css",
                 "api/js/histd.js", "api/js/npz.js", "api/js/exact-json.js"):
        check(not ignored(need), ".dockerignore keeps %s" % need)
    for drop in (".git", "build", "build-test/x", "histd-data"):
        check(ignored(drop), ".dockerignore drops %s" % drop)

    finish()


if __name__ == "__main__":
    main()
