"""common.py -- what the python suite's tests share: the client from the
source tree (api/python), the real daemon (tests/service/daemon.py), and
the independent definitions the results are checked against, written with
numpy: every pair's distance, binned."""
import os
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
