"""make_rdf.py -- MDAnalysis's g(r) of the water box that gmx solvate wrote
(tests/io/data/water.gro), for tests/cli/test_gro_rdf.py.

Run with Debian's python3 (MDAnalysis 2.4.2):

    cd tests/cli/gro && /usr/bin/python3 make_rdf.py

writes, for MDAnalysis.analysis.rdf.InterRDF over (0, R_MAX) in BUCKETS bins
(Angstrom: 10 R_MAX, as MDAnalysis holds GRO files):
  rdf_oo.txt  OW-OW, exclusion_block=(1, 1) (an atom is not its own pair)
  rdf_oh.txt  OW-(HW1, HW2), exclusion_block=(1, 2) (the pairs within a
              water left out)
  rdf_oo_density.txt, rdf_oo_none.txt  OW-OW, exclusion_block=(1, 1), in
              norm "density" and "none" (histd's "norm")
  rdf_oo_ordered.txt  OW-OW without exclusion_block: every ordered pair,
              each atom with itself at r = 0 included (histd's "pairs":
              "ordered")
  rdf_s_oh.txt  InterRDF_s, the site-specific g(r) of the first four OW
              (atoms 0, 3, 6, 9) against every HW1 and HW2: per OW, its
              count summed over the H atoms and its rdf averaged over them
              (histd's "per_point_histogram": each point's counts and g)
one line a bin: its centre (Angstrom), g, and MDAnalysis's count (ordered
pairs: OW-OW pairs twice). The values are %.17g.
"""
import os
import warnings

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.analysis.rdf import InterRDF, InterRDF_s  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
WATER = os.path.join(HERE, "..", "..", "io", "data", "water.gro")
R_MAX, BUCKETS = 0.8, 70  # nm; test_gro_rdf.py uses the same


def write(path, what, r):
    with open(path, "w") as f:
        f.write("# MDAnalysis %s InterRDF, %s, water.gro, range (0, %g) A, %d bins\n"
                % (mda.__version__, what, 10 * R_MAX, BUCKETS))
        f.write("# centre(A) g count\n")
        for c, g, n in zip(r.results.bins, r.results.rdf, r.results.count):
            f.write("%.17g %.17g %d\n" % (c, g, n))


def main():
    u = mda.Universe(WATER)
    ow = u.select_atoms("name OW")
    hw = u.select_atoms("name HW1 HW2")
    kw = dict(nbins=BUCKETS, range=(0.0, 10 * R_MAX))
    oo = InterRDF(ow, ow, exclusion_block=(1, 1), **kw).run()
    oh = InterRDF(ow, hw, exclusion_block=(1, 2), **kw).run()
    ordered = InterRDF(ow, ow, **kw).run()
    density = InterRDF(ow, ow, exclusion_block=(1, 1), norm="density", **kw).run()
    counts = InterRDF(ow, ow, exclusion_block=(1, 1), norm="none", **kw).run()
    write(os.path.join(HERE, "rdf_oo.txt"), "OW-OW exclusion_block=(1, 1)", oo)
    write(os.path.join(HERE, "rdf_oh.txt"), "OW-HW1,HW2 exclusion_block=(1, 2)", oh)
    write(os.path.join(HERE, "rdf_oo_ordered.txt"), "OW-OW without exclusion_block", ordered)
    write(os.path.join(HERE, "rdf_oo_density.txt"), "OW-OW exclusion_block=(1, 1) norm=density",
          density)
    write(os.path.join(HERE, "rdf_oo_none.txt"), "OW-OW exclusion_block=(1, 1) norm=none",
          counts)
    site = InterRDF_s(u, [[ow[:4], hw]], **kw).run()
    count, rdf = site.results.count[0], site.results.rdf[0]  # (4, H atoms, bins)
    with open(os.path.join(HERE, "rdf_s_oh.txt"), "w") as f:
        f.write("# MDAnalysis %s InterRDF_s, OW atoms %s against HW1,HW2, water.gro, range "
                "(0, %g) A, %d bins\n" % (mda.__version__, list(ow[:4].indices), 10 * R_MAX,
                                          BUCKETS))
        f.write("# atom centre(A) count(summed over H) rdf(mean over H)\n")
        for a in range(4):
            for k, c in enumerate(site.results.bins):
                f.write("%d %.17g %d %.17g\n" % (ow[a].index, c, count[a, :, k].sum(),
                                                  rdf[a, :, k].mean()))


if __name__ == "__main__":
    main()
