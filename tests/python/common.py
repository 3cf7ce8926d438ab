"""common.py -- what the python suite's tests share: the client from the
source tree (api/python), the real daemon (tests/service/daemon.py), and
the independent definitions the results are checked against, written with
numpy: every pair's distance, binned; the distance matrix of the
contract's minimum image (orthorhombic and triclinic); a GRO file read as
histd reads it; api/python/README.md's examples run as pasted."""
import contextlib
import io
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "api", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "service"))

from daemon import Daemon, check  # noqa: E402,F401

try:
    import numpy as np
except ImportError:  # the suite's definitions need numpy (deploy/install-deps.sh --test)
    print("numpy is not installed: skipped")
    sys.exit(77)


def exe():
    return os.environ.get("HISTD_BIN") or sys.argv[1]


def distances(a, b=None, box=None):
    """Every pair's distance: a's own pairs (i < j), or a x b; the minimum
    image in an orthogonal box [Lx, Ly, Lz]. Summed as the daemon does:
    (dx*dx + dy*dy) + dz*dz, then sqrt, all binary64."""
    a = np.asarray(a, dtype=np.float64)
    b = a if b is None else np.asarray(b, dtype=np.float64)
    d = a[:, None, :] - b[None, :, :]
    if box is not None:
        L = np.asarray(box, dtype=np.float64)
        d = d - L * np.round(d / L)
    s = (d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2]
    r = np.sqrt(s)
    if b is a:
        r = r[np.triu_indices(len(a), k=1)]
    return r.ravel()


def width_counts(r, width, buckets):
    """Bin k holds floor(d / width) = k; the rest overflows."""
    k = np.floor(r / width)
    counts = np.bincount(k[k < buckets].astype(np.int64), minlength=buckets)
    return counts.astype(np.uint64), int(np.count_nonzero(k >= buckets))


def edge_counts(r, edges):
    """Bin k holds E[k] <= d < E[k+1]; below and overflow outside."""
    edges = np.asarray(edges)
    k = np.searchsorted(edges, r, side="right") - 1
    inside = (k >= 0) & (k < len(edges) - 1)
    counts = np.bincount(k[inside], minlength=len(edges) - 1).astype(np.uint64)
    return counts, int(np.count_nonzero(k < 0)), int(np.count_nonzero(k >= len(edges) - 1))


def rdf(r, edges, pairs, volume, n, cross=False):
    """g(r) = counts_k / (pairs * V_k / V), V_k the shell's volume; the
    coordination number: the cumulative count per atom of A (self pairs
    count each pair for both atoms)."""
    counts, below, _ = edge_counts(r, edges)
    e = np.asarray(edges)
    shell = 4.0 / 3.0 * np.pi * (e[1:] ** 3 - e[:-1] ** 3)
    g = counts / (pairs * shell / volume)
    coord = (1.0 if cross else 2.0) * (below + np.cumsum(counts)) / n
    return counts, g, coord


def dmatrix(a, b, box=None):
    """d of every (a_i, b_j) as the contract defines it (README "Job
    parameters", include/histd/pair.h), each operation one binary64
    rounding: dx = xi - xj; the minimum image in `box` (None: open space;
    [Lx, Ly, Lz]: per axis dx - L * nearbyint(dx / L); nine numbers, the
    vectors a, b, c lower-triangular: z, then y, then x); then
    sqrt((dx*dx + dy*dy) + dz*dz). np.rint rounds half to even, as nearbyint."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    dx = a[:, None, 0] - b[None, :, 0]
    dy = a[:, None, 1] - b[None, :, 1]
    dz = a[:, None, 2] - b[None, :, 2]
    if box is not None and len(box) == 3:
        lx, ly, lz = (float(v) for v in box)
        dx = dx - lx * np.rint(dx / lx)
        dy = dy - ly * np.rint(dy / ly)
        dz = dz - lz * np.rint(dz / lz)
    elif box is not None:
        ax, ay, az, bx, by, bz, cx, cy, cz = (float(v) for v in box)
        assert ay == az == bz == 0.0, "a along x, b in the xy plane"
        n = np.rint(dz / cz)
        dz = dz - cz * n
        dy = dy - cy * n
        dx = dx - cx * n
        n = np.rint(dy / by)
        dy = dy - by * n
        dx = dx - bx * n
        n = np.rint(dx / ax)
        dx = dx - ax * n
    return np.sqrt((dx * dx + dy * dy) + dz * dz)


def read_gro(path):
    """A GRO file's atom names, float64 coordinates (its %8.3f columns, nm)
    and its box line's numbers."""
    lines = open(path).read().splitlines()
    n = int(lines[1])
    names = [l[10:15].strip() for l in lines[2:2 + n]]
    pos = np.array([[float(l[20 + 8 * k:28 + 8 * k]) for k in range(3)] for l in lines[2:2 + n]])
    return names, pos, [float(v) for v in lines[2 + n].split()]


def run_readme_example(port, heading=None):
    """Runs api/python/README.md's python block (the first one, or the
    first after the line `heading`) with HISTD_URL pointing at the daemon
    on `port`; it must print what its last comment shows."""
    path = os.path.join(ROOT, "api", "python", "README.md")
    text = open(path).read()
    if heading is not None:
        text = text[text.index("\n" + heading + "\n"):]
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    os.environ["HISTD_URL"] = "http://127.0.0.1:%d" % port
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, path, "exec"), {"__name__": "__readme__"})
    shown = code.rstrip().rsplit("# ", 1)[1]
    check(out.getvalue().strip() == shown, "README printed %r, shows %r" % (out.getvalue(), shown))
