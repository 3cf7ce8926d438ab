"""test_ase_extxyz.py -- sdh reads an extended XYZ file that ASE wrote.

tests/cli/ase/frames.extxyz: two frames written by Debian's python3-ase
(make.py), the first in a triclinic cell, the second in a cube, with a
per-atom array w (Properties=species:S:1:pos:R:3:w:R:1) and pbc="T T T".
frames.json: the same frames as ASE reads them back (cell, pbc, positions,
w). sdh must read the two frames with their cells and weights: its counts
and weighted sums must be the sums of each frame's, computed here by brute
force with the minimum-image rule written out (README: the triclinic
sequence), and its g(r) the frames' total normalisation. CI needs no ASE:
both files are shipped.

usage: test_ase_extxyz.py SDH_EXE
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ase")


def image_d(p, q, cell):
    (ax, _, _), (bx, by, _), (cx, cy, cz) = cell
    dx, dy, dz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
    n = round(dz / cz)
    dz = dz - cz * n
    dy = dy - cy * n
    dx = dx - cx * n
    n = round(dy / by)
    dy = dy - by * n
    dx = dx - bx * n
    n = round(dx / ax)
    dx = dx - ax * n
    return math.sqrt((dx * dx + dy * dy) + dz * dz)


def main():
    sdh = sys.argv[1]
    frames = json.load(open(os.path.join(HERE, "frames.json")))
    width, buckets = 0.5, 6
    out = subprocess.run([sdh, os.path.join(HERE, "frames.extxyz"), "--r-max", "3", "--buckets",
                          str(buckets), "--weighted", "-f", "json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    counts, sums, mags = [0] * buckets, [0.0] * buckets, [0.0] * buckets
    density, atoms = 0.0, 0
    for fr in frames:
        assert fr["pbc"] == [True, True, True], fr["pbc"]
        pos, w, cell = fr["positions"], fr["w"], fr["cell"]
        for i in range(len(pos)):
            for j in range(i + 1, len(pos)):
                k = math.floor(image_d(pos[i], pos[j], cell) / width)
                if k < buckets:
                    counts[k] += 1
                    sums[k] += w[i] * w[j]
                    mags[k] += abs(w[i] * w[j])
        n = len(pos)
        density += n * (n - 1) / 2 / (cell[0][0] * cell[1][1] * cell[2][2])
        atoms += n
    assert doc["frames"] == 2 and doc["box_source"] == "dataset", doc
    assert doc["n"] == atoms and doc["counts"] == counts, (doc["counts"], counts)
    for k in range(buckets):
        assert abs(doc["weighted"][k] - sums[k]) <= 1e-12 * mags[k] + 1e-300, (k, doc["weighted"][k], sums[k])
        shell = 4.0 / 3.0 * math.pi * (((k + 1) * width) ** 3 - (k * width) ** 3)
        g = counts[k] / (shell * density)
        assert abs(doc["g"][k] - g) <= 1e-12 * g + 1e-300, (k, doc["g"][k], g)
    print("test_ase_extxyz: two frames ASE wrote (triclinic and cubic, weighted): counts, "
          "weighted sums and g(r) as the frames' sums")


if __name__ == "__main__":
    main()
