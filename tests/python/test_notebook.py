"""test_notebook.py -- api/python/examples' notebooks executed from top to
bottom by nbconvert (Debian: python3-nbconvert, python3-ipykernel) against
a live daemon, with the client from the source tree: every cell runs
without an error, and their figures are drawn. rdf.ipynb asserts that
histd's g(r) equals LAMMPS's; clustering.ipynb that its DD in (r_p, pi)
equals a NumPy brute force of the rule, then plots w_p and the multipoles
from DD, DR and RR. Skips (77) where nbconvert, ipykernel or matplotlib
is not installed.

usage: test_notebook.py HISTD_EXE
"""
import json
import os
import subprocess
import sys
import tempfile

from common import ROOT, Daemon, check, exe

EXAMPLES = os.path.join(ROOT, "api", "python", "examples")
# each notebook, its figures and the lines it prints as it checks itself
NOTEBOOKS = (("rdf.ipynb", 2, ("largest difference in g:", "weighted sums:", "below 0.8:")),
             ("clustering.ipynb", 2, ("DD bins that differ from the brute force: 0",
                                      "w_p (Landy-Szalay):", "xi_0:")))


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
        for name, figures, says in NOTEBOOKS:
            out = os.path.join(tmp, name.replace(".ipynb", ".out.ipynb"))
            run = subprocess.run([sys.executable, "-m", "nbconvert", "--to", "notebook",
                                  "--execute", "--ExecutePreprocessor.timeout=120", "--output",
                                  out, os.path.join(EXAMPLES, name)],
                                 cwd=EXAMPLES, env=env, capture_output=True, text=True,
                                 timeout=300)
            check(run.returncode == 0, "%s: nbconvert failed:\n%s" % (name, run.stderr[-4000:]))
            with open(out) as f:
                nb = json.load(f)
            outputs = [o for c in nb["cells"] if c["cell_type"] == "code"
                       for o in c.get("outputs", [])]
            errors = [o for o in outputs if o.get("output_type") == "error"]
            check(not errors, "%s: cells raised: %s" % (name, errors))
            images = [o for o in outputs if "image/png" in o.get("data", {})]
            check(len(images) == figures, "%s: %d figures drawn, got %d"
                  % (name, figures, len(images)))
            text = "".join("".join(o.get("text", "")) for o in outputs)
            check(all(s in text for s in says),
                  "%s: the notebook's printed checks:\n%s" % (name, text[-1500:]))
    print("test_notebook: rdf.ipynb (g(r) equals LAMMPS's) and clustering.ipynb (DD equals the "
          "brute force; w_p and the multipoles) executed, 4 figures")


if __name__ == "__main__":
    main()
