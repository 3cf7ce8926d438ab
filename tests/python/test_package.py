"""test_package.py -- api/python installs as the README says, offline
(no package index: Debian's python3-setuptools and python3-wheel build
it): a venv with the system's packages, then, as the README says,
    pip install ./api/python
with no index to reach (PIP_NO_INDEX), leaving the source tree as it was
(no build/, no histd.egg-info), and the installed `histd` (not the source
tree's) computes a histogram against the real daemon. The package's
sources parse as Python 3.9 (its python_requires). Skips (77) where
python3-venv is missing.

usage: test_package.py HISTD_EXE
"""
import ast
import os
import shutil
import subprocess
import sys
import tempfile

from common import ROOT, Daemon, check, exe

CODE = """
import os, sys, histd
assert os.path.realpath(histd.__file__).startswith(os.path.realpath(sys.prefix)), histd.__file__
assert os.path.exists(os.path.join(os.path.dirname(histd.__file__), "py.typed"))
r = histd.Client(sys.argv[1]).histogram([[0, 0, 0], [3, 4, 0], [6, 8, 0]], 5, 4, progress=False)
print([int(c) for c in r.counts], r.total)
"""


def tree(top):
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top)
                  for f in fs + ["/"] if "__pycache__" not in d)


def main():
    pkg = os.path.join(ROOT, "api", "python")
    for name in os.listdir(os.path.join(pkg, "histd")) + ["../setup.py"]:
        if name.endswith(".py"):
            with open(os.path.join(pkg, "histd", name)) as f:
                ast.parse(f.read(), name, feature_version=(3, 9))  # SyntaxError past 3.9
    tmp = tempfile.mkdtemp(prefix="histd-venv-")
    try:
        venv = os.path.join(tmp, "venv")
        made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                              capture_output=True, text=True)
        if made.returncode != 0:
            print("skipped: no venv (apt-get install python3-venv): %s" % made.stderr[-300:])
            sys.exit(77)
        py = os.path.join(venv, "bin", "python")
        # a copy, to see that the install leaves it as it was
        src = os.path.join(tmp, "python")
        shutil.copytree(pkg, src, ignore=shutil.ignore_patterns("__pycache__", "examples"))
        before = tree(src)
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("PIP_FIND_LINKS", None)
        got = subprocess.run([py, "-m", "pip", "install", src], capture_output=True, text=True,
                             env=env, timeout=180)
        check(got.returncode == 0, "pip install failed:\n%s%s" % (got.stdout[-2000:],
                                                                   got.stderr[-2000:]))
        check(tree(src) == before, "pip install left %s in the source tree"
              % sorted(set(tree(src)) - set(before)))
        with Daemon(exe()) as d:
            run = subprocess.run([py, "-c", CODE, "http://127.0.0.1:%d" % d.port], cwd=tmp,
                                 capture_output=True, text=True, timeout=60)
        check(run.returncode == 0 and run.stdout.strip() == "[0, 2, 1, 0] 3",
              "the installed client: %s %s" % (run.stdout, run.stderr[-1500:]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("test_package: pip install ./api/python works offline")


if __name__ == "__main__":
    main()
