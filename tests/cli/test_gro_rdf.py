"""test_gro_rdf.py -- histd's g(r) on a GRO file against MDAnalysis's InterRDF.

tests/io/data/water.gro is a box of SPC water that gmx solvate wrote (1.8 nm
cube, 176 waters); tests/cli/gro/rdf_oo.txt and rdf_oh.txt are what
MDAnalysis 2.4.2's InterRDF made of it (tests/cli/gro/make_rdf.py): OW-OW
with exclusion_block=(1, 1), and OW-(HW1, HW2) with exclusion_block=(1, 2),
which leaves out the pairs within a water; rdf_oo_ordered.txt is OW-OW
without exclusion_block, every ordered pair and each atom with itself,
which histd gives as "pairs": "ordered"; rdf_oo_density.txt and
rdf_oo_none.txt are OW-OW (exclusion_block=(1, 1)) in InterRDF's other
normalisations, which histd's "norm" gives as the result's rdf;
rdf_s_oh.txt is InterRDF_s, the site-specific g(r) of four OW atoms against
every H, which histd's --per-atom (per_point_histogram) gives as each
point's counts and g; gmx_rdf_*.xvg are GROMACS's gmx rdf of OW around
OW in its three -norm (make_gmx.sh), held to the conversions the README
states from histd's g and rdf (norm density and none) on gmx's bins
(centred on multiples of the width: explicit edges 0, w/2, 3w/2, ...), to
the 3 decimals gmx prints. The MDAnalysis user's
`--select-a name:OW --select-b name:OW` must be the self job, and OW
against every atom must count each pair of distinct atoms once. sdh reads the same file, its box
and its atoms' names and residues:

  sdh water.gro --select-a name:OW --r-max 0.8 --buckets 70
  sdh water.gro --select-a name:OW --select-b name:HW1,HW2 --exclude-same molecule ...

Every bin's count must equal a brute force written here (the contract's
minimum image in float64) and MDAnalysis's (which counts each OW-OW pair
twice) and its g match to 1e-6 relative (MDAnalysis measures in float32
Angstrom, histd in float64 nm), except where a pair lies within 1e-5 nm of
the bin's edges: float32 may put it on the other side, so such a bin's
count may differ by as many pairs as lie that close (this test finds them
from the file's coordinates; in water.gro 44 do, the closest 4e-7 nm from
an edge, and in fact every count agrees).

usage: test_gro_rdf.py SDH_EXE
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
WATER = os.path.join(HERE, "..", "io", "data", "water.gro")
R_MAX, BUCKETS = 0.8, 70


def read_gro(path):
    lines = open(path).read().splitlines()
    n = int(lines[1])
    atoms = [(l[10:15].strip(), int(l[0:5]), [float(l[20 + 8 * k:28 + 8 * k]) for k in range(3)])
             for l in lines[2:2 + n]]
    return atoms, [float(v) for v in lines[2 + n].split()]


def near_edges(atoms, box, pairs):
    """For each bin, how many pairs (minimum images) lie within 1e-5 nm of
    one of its edges."""
    width = R_MAX / BUCKETS
    slack = [0] * BUCKETS
    for i, j in pairs:
        d = math.sqrt(sum(((atoms[i][2][k] - atoms[j][2][k]) - box[k] *
                           round((atoms[i][2][k] - atoms[j][2][k]) / box[k])) ** 2
                          for k in range(3)))
        e = round(d / width)  # the nearest edge
        if e <= BUCKETS and abs(d - e * width) < 1e-5:
            for b in (e - 1, e):
                if 0 <= b < BUCKETS:
                    slack[b] += 1
    return slack


def brute_force(atoms, box, pairs):
    """The contract's counts, written out: per axis dx - L nearbyint(dx / L)
    (Python's round is half to even, as nearbyint), the squares summed in
    order, sqrt, then floor(d / width); an independent check of sdh's
    counts beside MDAnalysis's float32 ones."""
    width = R_MAX / BUCKETS
    counts = [0] * BUCKETS
    for i, j in pairs:
        s = 0.0
        parts = []
        for k in range(3):
            dx = atoms[i][2][k] - atoms[j][2][k]
            dx = dx - box[k] * float(round(dx / box[k]))
            parts.append(dx * dx)
        s = parts[0] + parts[1]
        s = s + parts[2]
        b = math.floor(math.sqrt(s) / width)
        if b < BUCKETS:
            counts[b] += 1
    return counts


def mdanalysis(name):
    rows = [l.split() for l in open(os.path.join(HERE, "gro", name)) if not l.startswith("#")]
    return [float(r[1]) for r in rows], [int(r[2]) for r in rows]


def sdh(exe, *args):
    out = subprocess.run([exe, WATER, "--r-max", repr(R_MAX), "--buckets", str(BUCKETS),
                          "-f", "json"] + list(args), check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def compare(what, doc, g_ref, n_ref, count_scale, slack):
    bad = []
    if len(doc["g"]) != len(g_ref):
        return ["%s: %d bins, MDAnalysis %d" % (what, len(doc["g"]), len(g_ref))]
    for k, (g, want, c, n) in enumerate(zip(doc["g"], g_ref, doc["counts"], n_ref)):
        off = abs(c * count_scale - n)
        if off > count_scale * slack[k] or (off == 0 and abs(g - want) > 1e-6 * abs(want)):
            bad.append("%s bin %d: histd g %.17g count %d, MDAnalysis g %.17g count %d "
                       "(%d pairs near its edges)" % (what, k, g, c, want, n, slack[k]))
    return bad


def gromacs_check(exe, n_ow):
    """gmx rdf -norm rdf, number_density, none of OW around OW: from
    histd's g (times (N - 1) / N: gmx divides by N_sel, not the N - 1
    others), rdf in norm density (over N_ref) and in norm none (over N_ref
    and the bin width), on gmx's bins, each to gmx's printed 3 decimals."""
    w = R_MAX / BUCKETS
    edges = [0.0] + [(k + 0.5) * w for k in range(BUCKETS)]
    args = ["--select-a", "name:OW", "--edges", ",".join(repr(e) for e in edges)]
    out = {}
    for norm in ("density", "none"):
        out[norm] = subprocess.run([exe, WATER, "-f", "json", "--norm", norm] + args,
                                   check=True, capture_output=True, text=True).stdout
    dens, none = json.loads(out["density"]), json.loads(out["none"])
    want = {"rdf": [g * (n_ow - 1) / n_ow for g in dens["g"]],
            "number_density": [v / n_ow for v in dens["rdf"]],
            "none": [v / (n_ow * w) for v in none["rdf"]]}
    bad = []
    for norm, values in want.items():
        rows = [l.split() for l in open(os.path.join(HERE, "gro", "gmx_rdf_%s.xvg" % norm))]
        if len(rows) != BUCKETS or any(abs(float(r[0]) - k * w) > 6e-4 for k, r in enumerate(rows)):
            bad.append("gmx rdf -norm %s: %d bins, not centred on k * %g" % (norm, len(rows), w))
            continue
        for k, (r, v) in enumerate(zip(rows, values)):
            if abs(float(r[1]) - v) > 5e-4 + 1e-6 * abs(v):  # gmx's %.3f
                bad.append("gmx rdf -norm %s bin %d: gmx %s, histd %.6f" % (norm, k, r[1], v))
    if sum(float(r.split()[1]) > 0 for r in open(os.path.join(HERE, "gro", "gmx_rdf_rdf.xvg"))) < 40:
        bad.append("gmx rdf: fewer than 40 non-zero bins (not the water box?)")
    return bad


def main():
    exe = sys.argv[1]
    atoms, box = read_gro(WATER)
    ow = [i for i, a in enumerate(atoms) if a[0] == "OW"]
    hw = [i for i, a in enumerate(atoms) if a[0] in ("HW1", "HW2")]
    oo_pairs = [(i, j) for a, i in enumerate(ow) for j in ow[a + 1:]]
    oh_pairs = [(i, j) for i in ow for j in hw if atoms[i][1] != atoms[j][1]]
    bad = []
    oo = sdh(exe, "--select-a", "name:OW")
    g, n = mdanalysis("rdf_oo.txt")
    bad += compare("OW-OW", oo, g, n, 2, near_edges(atoms, box, oo_pairs))
    if oo["counts"] != brute_force(atoms, box, oo_pairs):
        bad.append("OW-OW: counts differ from the brute force")
    if oo.get("n") != len(ow):
        bad.append("OW-OW: n %s, want %d" % (oo.get("n"), len(ow)))

    oh = sdh(exe, "--select-a", "name:OW", "--select-b", "name:HW1,HW2",
             "--exclude-same", "molecule")
    g, n = mdanalysis("rdf_oh.txt")
    bad += compare("OW-HW", oh, g, n, 1, near_edges(atoms, box, oh_pairs))
    if oh["counts"] != brute_force(atoms, box, oh_pairs):
        bad.append("OW-HW: counts differ from the brute force (pairs within a water left out)")
    if oh.get("excluded") != len(ow) * 2:
        bad.append("OW-HW: excluded %s, want %d (two O-H a water)" % (oh.get("excluded"),
                                                                        2 * len(ow)))
    # the way MDAnalysis users write it: one selection against itself is a
    # self job (no atom with itself, each pair once), the same counts;
    # "pairs": "ordered" is InterRDF's own count (every ordered pair, each
    # atom with itself at r = 0), g included
    same = sdh(exe, "--select-a", "name:OW", "--select-b", "name:OW")
    if same.get("pairing") != "self" or same["counts"] != oo["counts"] or \
            same["total"] != oo["total"] or "n_b" in same:
        bad.append("OW x OW: pairing %s, total %s: want the self job's %d pairs and counts"
                   % (same.get("pairing"), same.get("total"), oo["total"]))
    ordered = sdh(exe, "--select-a", "name:OW", "--select-b", "name:OW", "--pairs", "ordered")
    g, n = mdanalysis("rdf_oo_ordered.txt")
    bad += compare("OW x OW ordered", ordered, g, n, 1,
                   [2 * x for x in near_edges(atoms, box, oo_pairs)])
    want = [2 * c for c in brute_force(atoms, box, oo_pairs)]
    want[0] += len(ow)  # each atom with itself, d = 0
    if ordered.get("pairing") != "ordered" or ordered["counts"] != want or \
            ordered["total"] != len(ow) ** 2:
        bad.append("OW x OW ordered: pairing %s, total %s: counts differ from the brute force"
                   % (ordered.get("pairing"), ordered.get("total")))
    # selections that share atoms: each pair of distinct atoms once
    ow_set = set(ow)
    mixed_pairs = oo_pairs + [(i, j) for i in ow for j in range(len(atoms)) if j not in ow_set]
    mixed = sdh(exe, "--select-a", "name:OW", "--select-b", "all")
    if mixed.get("pairing") != "distinct" or mixed["counts"] != brute_force(atoms, box, mixed_pairs) \
            or mixed["total"] != len(mixed_pairs):
        bad.append("OW x all: pairing %s, total %s (want distinct, %d): counts differ from the "
                   "brute force" % (mixed.get("pairing"), mixed.get("total"), len(mixed_pairs)))
    # MDAnalysis's normalisations as the result's rdf ("norm"): InterRDF's
    # results.rdf of OW-OW, exclusion_block=(1, 1), in each norm; density is
    # per cubic Angstrom there and per nm^3 here (1000 times more)
    for norm, name, scale in (("rdf", "rdf_oo.txt", 1.0), ("density", "rdf_oo_density.txt", 1e-3),
                              ("none", "rdf_oo_none.txt", 1.0)):
        doc = sdh(exe, "--select-a", "name:OW", "--norm", norm)
        g, n = mdanalysis(name)
        if doc.get("norm") != norm or len(doc.get("rdf", [])) != len(g):
            bad.append("norm %s: the result's norm %s, %d rdf values" % (norm, doc.get("norm"),
                                                                       len(doc.get("rdf", []))))
            continue
        for k, (got, want, c, m) in enumerate(zip(doc["rdf"], g, doc["counts"], n)):
            if 2 * c == m and abs(got * scale - want) > 1e-6 * abs(want):
                bad.append("norm %s bin %d: histd %.17g, MDAnalysis %.17g" % (norm, k, got * scale,
                                                                             want))
    # InterRDF_s: each of four OW atoms against every H (no exclusion), its
    # count summed over the H atoms and its g their rdfs' mean
    site = sdh(exe, "--per-atom", "--select-a", "index:0,3,6,9", "--select-b", "name:HW1,HW2")
    rows = [l.split() for l in open(os.path.join(HERE, "gro", "rdf_s_oh.txt"))
            if not l.startswith("#")]
    point = site.get("point", {})
    if site.get("index") != [0, 3, 6, 9] or len(point.get("counts", [])) != 4:
        bad.append("per atom: rows %s" % site.get("index"))
    else:
        for a, i in enumerate((0, 3, 6, 9)):
            mine = [r for r in rows if int(r[0]) == i]
            want = brute_force(atoms, box, [(i, j) for j in hw])
            slack = near_edges(atoms, box, [(i, j) for j in hw])
            if point["counts"][a] != want or point["partners"][a] != len(hw):
                bad.append("per atom %d: counts differ from the brute force" % i)
            for k, r in enumerate(mine):
                c, g = point["counts"][a][k], point["g"][a][k]
                off = abs(c - int(r[2]))
                if off > slack[k] or (off == 0 and abs(g - float(r[3])) > 1e-6 * abs(float(r[3]))):
                    bad.append("per atom %d bin %d: histd count %d g %.17g, InterRDF_s %s %s"
                               % (i, k, c, g, r[2], r[3]))
    bad += gromacs_check(exe, len(ow))
    for b in bad[:10]:
        print("FAIL:", b)
    if bad:
        sys.exit(1)
    print("test_gro_rdf: OW-OW, OW-HW and ordered OW x OW g(r) of %d waters match MDAnalysis's "
          "InterRDF in all %d bins (%d, %d and %d pairs in range); OW x OW is the self job, "
          "OW x all each distinct pair once; four OW's site g(r) match InterRDF_s; gmx rdf's "
          "three -norm match to its 3 decimals"
          % (len(ow), BUCKETS, sum(oo["counts"]), sum(oh["counts"]), sum(ordered["counts"])))


if __name__ == "__main__":
    main()
