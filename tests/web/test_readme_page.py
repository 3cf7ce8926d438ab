#!/usr/bin/env python3
"""The README's dashboard page built on the JavaScript client (the ```html
block after <!-- test: js-page -->), as written, in headless Chromium.

The page is saved as index.html in a folder beside api/js (linked as js/,
as the README says), which histd serves (--static-dir); a GRO trajectory of
waters that carries its 2 nm box (made here, test_dashboard_truth's) goes
through the page's file picker. The page's table (edges, g, counts) must
be the definition's, computed here with numpy from the file's numbers: the
minimum image in each frame's box, the counts summed over frames, and
g_k = counts_k / sum_f (P V_k / V_f).

Exit 77 (skip) where chromium or numpy is not installed.
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
from test_dashboard_truth import write_gro  # noqa: E402

try:
    import numpy as np
except ImportError:
    h.skip("no numpy (Debian: python3-numpy)")

left = h.deadline(60)
check = h.check


def page_block():
    with open(os.path.join(h.ROOT, "README.md"), encoding="utf-8") as f:
        m = re.search(r"<!-- test: js-page -->\s*```html\n(.*?)```", f.read(), re.S)
    if not m:
        raise AssertionError("no <!-- test: js-page --> html block in README.md")
    return m.group(1)


def read_gro(path):
    """Each frame's positions (nm, as the file writes them) and box."""
    with open(path) as f:
        lines = f.read().split("\n")
    frames, k = [], 0
    while k < len(lines) and lines[k].strip():
        n = int(lines[k + 1])
        atoms = lines[k + 2:k + 2 + n]
        xyz = np.array([[float(a[20 + 8 * c:28 + 8 * c]) for c in range(3)] for a in atoms])
        box = np.array([float(v) for v in lines[k + 2 + n].split()[:3]])
        frames.append((xyz, box))
        k += n + 3
    return frames


def definition(frames, r_max, buckets):
    w = r_max / buckets
    counts = np.zeros(buckets, dtype=np.int64)
    pairs_over_v = 0.0
    for xyz, box in frames:
        d = xyz[:, None, :] - xyz[None, :, :]
        d = d - box * np.round(d / box)
        r = np.sqrt((d[..., 0] * d[..., 0] + d[..., 1] * d[..., 1]) + d[..., 2] * d[..., 2])
        r = r[np.triu_indices(len(xyz), k=1)]
        b = np.floor(r / w)
        counts += np.bincount(b[b < buckets].astype(np.int64), minlength=buckets)
        pairs_over_v += len(r) / np.prod(box)
    edges = np.arange(buckets + 1) * w
    shell = 4.0 / 3.0 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    return edges, counts / (shell * pairs_over_v), counts


def run(chromium, chromedriver, work):
    site = os.path.join(work, "site")
    os.makedirs(site)
    with open(os.path.join(site, "index.html"), "w") as f:
        f.write(page_block())
    os.symlink(os.path.join(h.ROOT, "api", "js"), os.path.join(site, "js"))
    gro = os.path.join(work, "waters.gro")
    write_gro(gro, 5)
    with h.Daemon(workdir=work, static_dir=site) as d, h.Browser(chromium, chromedriver) as b:
        b.get(d.base + "/")
        b.wait(lambda: b.js("return document.readyState") == "complete", min(10, left()), "the page")
        b.type(b.find("#file"), gro)
        out = "return document.getElementById('out').textContent"
        text = b.wait(lambda: (lambda t: t if t.count("\t") >= 18 or "\t" not in t and len(t) > 20 else None)(b.js(out)),
                      min(30, left()), "the page's table")
        rows = [line.split("\t") for line in text.strip().split("\n")]
        check(len(rows) == 9 and all(len(r) == 3 for r in rows), "the page shows 9 rows of edge, g, count: %r" % text[:200])
        edges, g, counts = definition(read_gro(gro), 0.9, 9)
        check([r[0] for r in rows] == ["%.2f" % e for e in edges[:-1]], "the lower edges are k * 0.1")
        check([int(r[2]) for r in rows] == [int(c) for c in counts], "the counts are the definition's: %s" % list(counts))
        check([r[1] for r in rows] == ["%.4f" % v for v in g], "g(r) is the definition's to 4 decimals: %s" % ["%.4f" % v for v in g])
        check(b.js("return document.getElementById('bar').value") == 1, "the progress bar reached the end")
        d.alive()


if __name__ == "__main__":
    h.main(run, "histd-web-page-")
