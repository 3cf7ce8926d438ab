"""test_notebook.py -- api/python/examples/rdf.ipynb executed from top to
bottom by nbconvert (Debian: python3-nbconvert, python3-ipykernel) against
a live daemon, with the client from the source tree: every cell runs
without an error (the notebook asserts that histd's g(r) equals LAMMPS's),
and its figures are drawn. Skips (77) where nbconvert, ipykernel or
matplotlib is not installed.

usage: test_notebook.py HISTD_EXE
"""
import json
import os
import subprocess
import sys
import tempfile

from common import ROOT, Daemon, check, exe

NOTEBOOK = os.path.join(ROOT, "api", "python", "examples", "rdf.ipynb")


def main():
    for mod, pkg in (("nbconvert", "python3-nbconvert"), ("ipykernel", "python3-ipykernel"),
                     ("matplotlib", "python3-matplotlib")):
        if subprocess.run([sys.executable, "-c", "import " + mod],
                          capture_output=True).returncode != 0:
            print("skipped: %s is not installed (apt-get install %s)" % (mod, pkg))
            sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp, Daemon(exe()) as d:
        env = dict(os.environ, HISTD_URL="http://127.0.0.1:%d" % d.port,
                   MPLCONFIGDIR=os.path.join(tmp, "mpl"), JUPYTER_RUNTIME_DIR=tmp,
                   IPYTHONDIR=os.path.join(tmp, "ipython"),
                   PYTHONPATH=os.pathsep.join(filter(None, [os.path.join(ROOT, "api", "python"),
                                                            os.environ.get("PYTHONPATH")])))
        env.pop("HISTD_TOKEN", None)
        out = os.path.join(tmp, "rdf.out.ipynb")
        run = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
                              "--ExecutePreprocessor.timeout=120", "--output", out, NOTEBOOK],
                             cwd=os.path.dirname(NOTEBOOK), env=env, capture_output=True,
                             text=True, timeout=300)
        check(run.returncode == 0, "nbconvert failed:\n%s" % run.stderr[-4000:])
        with open(out) as f:
            nb = json.load(f)
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    errors = [o for o in outputs if o.get("output_type") == "error"]
    check(not errors, "cells raised: %s" % errors)
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    check(len(images) == 2, "two figures drawn, got %d" % len(images))
    text = "".join("".join(o.get("text", "")) for o in outputs)
    check("largest difference in g:" in text and "weighted sums:" in text and
          "below 0.8:" in text, "the notebook's printed checks:\n" + text[-1500:])
    print("test_notebook: rdf.ipynb executed: g(r) equals LAMMPS's, 2 figures")


if __name__ == "__main__":
    main()
