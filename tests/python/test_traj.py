"""test_traj.py -- the Python client with trajectories in memory, against
the real daemon and the field's tools (issue 33):

- an MDAnalysis Universe of several frames and molecules (built in memory:
  Universe.empty and a MemoryReader, a box that changes each frame) goes up
  as ONE dataset with its topology; g(r) by name, O-H without the bonded
  pairs (exclude="molecule"), and frames= as a slice and as
  u.trajectory[a:b:c], each held field by field to MDAnalysis's InterRDF
  run on the same Universe through result.as_mdanalysis();
- as_freud() and as_corrfunc() against their tools' documented field
  definitions, computed here with numpy (Debian has neither tool);
- an ASE list of Atoms as one trajectory, against numpy;
- weights from arrays ((N, 4), weights= on upload and on a statistics
  call) against numpy's sums, and every wrong form refused with a sentence;
- temporary uploads: deleted when the client closes (only those it made),
  and the client's expires reaching the daemon;
- errors at submit: a selection that matches nothing, a name the file does
  not give (the sentence points to topology=); no job is queued;
- Ctrl-C during wait(): the job is cancelled and job.status says so;
- site_rdf (per_point_histogram) against MDAnalysis's InterRDF_s;
- nbins=/range=(lo, hi) as MDAnalysis spells them; Result.bins are centres;
- api/python/README.md's example runs as pasted, and prints what it shows.
Skips (77) without MDAnalysis or ASE (python3-mdanalysis, python3-ase).

usage: test_traj.py HISTD_EXE
"""
import os
import signal
import sys
import threading
import warnings

from common import Daemon, check, distances, exe, np, run_readme_example

import histd

warnings.simplefilter("ignore", DeprecationWarning)
try:
    import MDAnalysis
    from MDAnalysis.analysis.rdf import InterRDF
    from MDAnalysis.coordinates.memory import MemoryReader
    import ase
except ImportError as e:
    print("skipped: %s (apt-get install python3-mdanalysis python3-ase)" % e)
    sys.exit(77)

NMOL, FRAMES = 50, 5


def water_universe(seed=3):
    """NMOL waters (O, H, H; a residue each) over FRAMES frames in a cube
    whose side changes each frame, random positions (float32, as MDAnalysis
    keeps them)."""
    rng = np.random.default_rng(seed)
    n = 3 * NMOL
    u = MDAnalysis.Universe.empty(n, n_residues=NMOL, atom_resindex=np.repeat(np.arange(NMOL), 3),
                                  trajectory=True)
    u.add_TopologyAttr("names", ["OW", "HW1", "HW2"] * NMOL)
    u.add_TopologyAttr("resnames", ["SOL"] * NMOL)
    u.add_TopologyAttr("resids", np.arange(1, NMOL + 1))
    u.add_TopologyAttr("elements", ["O", "H", "H"] * NMOL)
    sides = [11.0 + 0.25 * f for f in range(FRAMES)]
    coords = np.stack([rng.uniform(0, L, (n, 3)) for L in sides]).astype(np.float32)
    dims = np.array([[L, L, L, 90, 90, 90] for L in sides], dtype=np.float32)
    u.load_new(coords, format=MemoryReader, dimensions=dims)
    return u


def same_as_interrdf(r, ref, what):
    m = r.as_mdanalysis().results
    want = ref.results
    check(np.allclose(m.bins, want.bins, rtol=1e-12) and np.allclose(m.edges, want.edges,
                                                                     rtol=1e-12),
          "%s: bins/edges %s vs %s" % (what, m.edges, want.edges))
    check(np.array_equal(m.count, want.count), "%s: count %s vs InterRDF %s" % (what, m.count,
                                                                               want.count))
    check(np.allclose(m.rdf, want.rdf, rtol=1e-9, atol=1e-12),
          "%s: rdf %s vs InterRDF %s" % (what, m.rdf, want.rdf))


def test_mdanalysis(c):
    u = water_universe()
    O, H = u.select_atoms("name OW"), u.select_atoms("name HW1 HW2")
    ds = c.upload(u, temporary=True)
    atoms = ds.doc["atoms"]
    check(ds.frames == FRAMES and ds.n == FRAMES * 3 * NMOL and ds.doc["unit"] == "Angstrom" and
          atoms["names"] == {"OW": NMOL, "HW1": NMOL, "HW2": NMOL} and
          atoms["elements"] == {"O": NMOL, "H": 2 * NMOL} and atoms["molecules"] == NMOL and
          ds.box == [11.0] * 3, "one upload, every frame and the topology: %s" % ds.doc)
    r = c.rdf(ds, select_a="name:OW", select_b="name:OW", nbins=12, range=(0.0, 5.0),
              progress=False)
    same_as_interrdf(r, InterRDF(O, O, nbins=12, range=(0.0, 5.0), exclusion_block=(1, 1)).run(),
                     "O-O")
    check(np.allclose(r.bins, r.centers) and r.binning == "width", "Result.bins: %r" % r.bins)
    # O-H without each water's own O-H pairs: InterRDF's exclusion_block=(1, 2)
    r = c.rdf(u, select_a="element:O", select_b="element:H", exclude="molecule", nbins=10,
              range=(0.5, 5.0), progress=False)
    check(r.excluded == 2 * NMOL * FRAMES, "excluded %s" % r.excluded)
    same_as_interrdf(r, InterRDF(O, H, nbins=10, range=(0.5, 5.0), exclusion_block=(1, 2)).run(),
                     "O-H, exclude molecule, range from 0.5")
    # frames: a slice, and u.trajectory[a:b:c] (uploads those frames only)
    ref = InterRDF(O, O, nbins=8, range=(0.0, 5.0), exclusion_block=(1, 1)).run(start=1, step=2)
    for frames in (slice(1, None, 2), u.trajectory[1::2]):
        r = c.rdf(u, select_a="name:OW", select_b="name:OW", nbins=8, range=(0, 5),
                  frames=frames, progress=False)
        check(r.frames == 2, "frames=%r: %s frames" % (frames, r.frames))
        same_as_interrdf(r, ref, "frames %r" % (frames,))
    r = c.rdf(ds, select_a="name:OW", select_b="name:OW", nbins=8, range=(0, 5),
              frames=slice(1, None, 2), progress=False)
    same_as_interrdf(r, ref, "a stored dataset's frames as a slice")
    # an AtomGroup of the trajectory: its atoms, every frame
    r = c.rdf(O, nbins=8, range=(0, 5), progress=False)
    same_as_interrdf(r, ref.__class__(O, O, nbins=8, range=(0, 5),
                                      exclusion_block=(1, 1)).run(), "an AtomGroup")
    check(u.trajectory.ts.frame == 0, "the Universe is left on its frame")
    print("MDAnalysis %s: one upload of %d frames; as_mdanalysis() = InterRDF field by field"
          % (MDAnalysis.__version__, FRAMES))
    return u, ds


def test_site_rdf(c, u):
    """InterRDF_s: each of the first four O against every H, on the same
    Universe. Counts equal; g is a point's counts over its partners'
    expectation in the frames' harmonic-mean volume, InterRDF_s's rdf (per
    atom pair, in the frames' mean volume) averaged over the H atoms times
    harmonic / mean volume."""
    from MDAnalysis.analysis.rdf import InterRDF_s
    O, H = u.select_atoms("name OW"), u.select_atoms("name HW1 HW2")
    sites = O[:4]
    r = c.site_rdf(u, select_a="index:%s" % ",".join(str(i) for i in sites.indices),
                   select_b="name:HW1,HW2", nbins=10, range=(0.0, 5.0), progress=False)
    ref = InterRDF_s(u, [[sites, H]], nbins=10, range=(0.0, 5.0)).run()
    counts = ref.results.count[0].sum(axis=1)  # (sites, bins): over the H atoms
    vols = np.array([ts.volume for ts in u.trajectory])
    u.trajectory[0]
    harmonic = len(vols) / np.sum(1 / vols)
    g = ref.results.rdf[0].mean(axis=1) * harmonic / vols.mean()
    check(r.statistic == "per_point_histogram" and list(r.index) == list(sites.indices) and
          np.array_equal(r.point["counts"], counts), "site counts %s vs InterRDF_s %s"
          % (r.point["counts"], counts))
    check(np.array_equal(r.point["partners"], [len(H) * FRAMES] * 4) and
          np.allclose(r.point["g"], g, rtol=1e-9, atol=1e-12), "site g %s vs %s"
          % (r.point["g"][0], g[0]))
    print("site_rdf: four O against every H = InterRDF_s (counts equal, g to 1e-9)")


def test_freud_corrfunc(c, u):
    """The adapters against the tools' documented definitions, over every
    frame of the O atoms: freud's bin_counts and Corrfunc's npairs count
    each ordered pair (i != j), n_r = cumulative bin_counts per query point
    and frame, rdf freud's (and with normalize=True, g); Corrfunc's weightavg = mean w_i w_j of the bin."""
    O = u.select_atoms("name OW")
    edges = np.linspace(0, 5, 11)
    r = c.rdf(O, r_max=5, buckets=10, progress=False)
    counts, shell_g = np.zeros(10), np.zeros(10)
    for ts in u.trajectory:
        L = ts.dimensions[0].astype(np.float64)
        k, _ = np.histogram(distances(O.positions.astype(np.float64), box=[L] * 3), bins=edges)
        counts += k
        shell = 4 / 3 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
        shell_g += shell / L ** 3  # per frame
    pairs = NMOL * (NMOL - 1) / 2
    f = r.as_freud()
    check(np.array_equal(f.bin_edges, r.edges) and np.allclose(f.bin_centers,
                                                                (edges[1:] + edges[:-1]) / 2),
          "freud: bin edges and centres")
    check(np.array_equal(f.bin_counts, 2 * counts), "freud: bin_counts %s" % f.bin_counts)
    check(np.allclose(f.n_r, np.cumsum(2 * counts) / (NMOL * FRAMES), rtol=1e-12),
          "freud: n_r %s" % f.n_r)
    # freud divides by the density of all N points: its default rdf is
    # bin_counts / (N_query N_points shell / V) (tending to (N - 1) / N), and
    # normalize=True (freud 3's "finite_size") scales it by N / (N - 1)
    check(np.allclose(f.rdf, 2 * counts / (NMOL * NMOL * shell_g), rtol=1e-9),
          "freud: rdf %s" % f.rdf)
    check(np.allclose(r.as_freud(normalize=True).rdf, counts / (pairs * shell_g), rtol=1e-9),
          "freud normalize=True: rdf %s" % r.as_freud(normalize=True).rdf)
    # Corrfunc, weighted: weightavg is the mean of w_i w_j over the bin's pairs
    pts = np.random.default_rng(8).uniform(0, 10, (200, 3))
    w = np.random.default_rng(9).uniform(0.5, 2, 200)
    h = c.pair_counts(np.column_stack([pts, w]), edges=[0.5, 1, 2, 4], weights=True,
                      progress=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cf = h.as_corrfunc()
    d = distances(pts)
    i, j = np.triu_indices(200, 1)
    k = np.searchsorted([0.5, 1, 2, 4], d, side="right") - 1
    for b in range(3):
        sel = k == b
        check(cf["rmin"][b] == [0.5, 1, 2][b] and cf["rmax"][b] == [1, 2, 4][b] and
              cf["npairs"][b] == 2 * sel.sum() and cf["ravg"][b] == 0.0 and
              abs(cf["weightavg"][b] - (w[i] * w[j])[sel].mean()) < 1e-12,
              "corrfunc bin %d: %s" % (b, cf[b]))
    check(cf.dtype.names == ("rmin", "rmax", "ravg", "npairs", "weightavg") and
          cf.dtype["npairs"] == np.uint64, cf.dtype)
    check(len(said) == 1 and "ravg" in str(said[0].message) and
          "weightavg" not in str(said[0].message), [str(x.message) for x in said])
    # with ravg: each bin's mean distance, weighted by w_i w_j, and no warning
    h = c.pair_counts(np.column_stack([pts, w]), edges=[0.5, 1, 2, 4], weights=True, ravg=True,
                      progress=False)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        cf = h.as_corrfunc()
    for b in range(3):
        sel = k == b
        want = (w[i] * w[j] * d)[sel].sum() / (w[i] * w[j])[sel].sum()
        check(abs(cf["ravg"][b] - want) <= 1e-12 * want, "corrfunc ravg %d: %s, %s"
              % (b, cf["ravg"][b], want))
    check(not said, [str(x.message) for x in said])
    print("as_freud(), as_corrfunc(): their documented fields, against numpy")


def test_ase(c):
    rng = np.random.default_rng(5)
    traj = []
    for L in (9.0, 10.0, 11.0):
        pos = rng.uniform(0, L, (40, 3))
        traj.append(ase.Atoms("O20H20", positions=pos, cell=[L, L, L], pbc=True))
    r = c.rdf(traj, select_a="element:O", select_b="element:H", r_max=4, buckets=8,
              progress=False)
    counts = np.zeros(8, dtype=np.uint64)
    for a in traj:
        d = distances(a.positions[:20], a.positions[20:], box=a.cell.lengths())
        counts += np.histogram(d, bins=np.linspace(0, 4, 9))[0].astype(np.uint64)
    check(r.frames == 3 and np.array_equal(r.counts, counts), "ASE trajectory: %s vs %s"
          % (r.counts, counts))
    print("ASE %s: a list of Atoms as one trajectory" % ase.__version__)


def test_weights(c):
    rng = np.random.default_rng(11)
    pts, w = rng.uniform(0, 10, (150, 3)), rng.uniform(0.1, 3, 150)
    i, j = np.triu_indices(150, 1)
    d, ww = distances(pts), w[i] * w[j]
    k = np.floor(d / 2).astype(int)
    want = np.array([ww[k == b].sum() for b in range(5)])
    for what, r in [
            ("(N, 4)", c.histogram(np.column_stack([pts, w]), 2, 5, weights=True, progress=False)),
            ("weights= on the call", c.histogram(pts, 2, 5, weights=w, progress=False)),
            ("weights= on upload", c.histogram(c.upload(pts, weights=list(w), temporary=True),
                                               2, 5, weights=True, progress=False))]:
        check(np.allclose(r.weighted, want, rtol=1e-12), "%s: %s vs %s" % (what, r.weighted, want))
    ds = c.upload(pts, temporary=True)
    for bad, words in [
            (dict(weights=w[:-1]), "149 values for 150 points"),
            (dict(weights=np.ones((150, 2))), "one number a point"),
            (dict(weights="heavy"), "sequence of 150 numbers"),
            (dict(weights=3.0), "sequence of 150 numbers"),
            (dict(weights=[1.0] * 149 + [float("nan")]), "weight 149 is nan"),
            (dict(weights=["a"] * 150), "weight 0 must be a number")]:
        for call in (lambda: c.histogram(pts, 2, 5, progress=False, **bad),
                     lambda: c.upload(pts, **bad)):
            try:
                call()
                raise AssertionError("%s was taken" % bad)
            except ValueError as e:
                check(words in str(e), "%s: %s" % (bad, e))
    for call, words in [
            (lambda: c.upload(np.ones((5, 5))), "(N, 3) array of x, y, z, or (N, 4)"),
            (lambda: c.upload(np.ones((5, 4)), weights=np.ones(5)), "weights given twice"),
            (lambda: c.histogram(ds, 2, 5, weights=w), "a stored dataset has its own"),
            (lambda: c.upload(__file__, weights=w), "a file carries its own weights")]:
        try:
            call()
            raise AssertionError("taken: %s" % words)
        except ValueError as e:
            check(words in str(e), "%s: %s" % (words, e))
    print("weights: (N, 4), weights= on upload and on a call; every wrong form a sentence")


def test_temporary(port):
    url = "http://127.0.0.1:%d" % port
    other = histd.Client(url)
    kept = other.upload(np.arange(30.0).reshape(10, 3))  # someone's dataset
    with histd.Client(url, expires="1h") as c:
        c.histogram(np.arange(30.0).reshape(10, 3), 5, 4, progress=False)  # the same points
        c.histogram(np.random.default_rng(1).uniform(0, 5, (20, 3)), 1, 4, progress=False)
        mine = c.upload(np.random.default_rng(2).uniform(0, 5, (20, 3)))  # not temporary
        temp = c.upload(np.random.default_rng(3).uniform(0, 5, (20, 3)), temporary=True)
        check(temp.expires_at is not None and mine.expires_at is None and
              kept.expires_at is None, "expires reaches the daemon on temporary uploads only")
        check(len(c.datasets()) == 4, "4 stored while open: %s" % c.datasets())
    left = sorted(x.id for x in other.datasets())
    check(left == sorted([kept.id, mine.id]), "after close: %s" % left)
    print("temporary uploads: deleted at close, someone else's kept; expires sent")


def test_submit_errors(c, u):
    ds = c.upload(u, temporary=True)
    plain = c.upload(np.random.default_rng(4).uniform(0, 5, (20, 3)), temporary=True)
    before = len(c.jobs())
    for data, sel, words in [
            (ds, "name:XX", "matches none of the 150 atoms: the dataset's names are OW, HW1, HW2"),
            (ds, "element:Fe", "dataset's elements are O, H"),
            (ds, "index:150-200", "matches none of the 150 atoms of a frame"),
            (ds, "colour:red", "is not all or KIND:LIST"),
            (plain, "name:OW", "topology=")]:
        try:
            c.submit(data, r_max=4, buckets=4, select_a=sel)
            raise AssertionError("%s was queued" % sel)
        except histd.HistdError as e:
            check(words in str(e), "%s: %s" % (sel, e))
    check(len(c.jobs()) == before, "no job was queued")
    for bad, words in [(dict(range=(0, 5)), "needs nbins"),
                       (dict(range=(3, 1), nbins=4), "0 <= lo < hi"),
                       (dict(range=(0, 5), nbins=4, r_max=5), "without r_max"),
                       (dict(nbins=4, buckets=4, r_max=5), "give one of them"),
                       (dict(r_max=5, buckets=4, frames=[1, 2]), "frames must be a slice")]:
        try:
            c.submit(ds, **bad)
            raise AssertionError("%s was taken" % bad)
        except ValueError as e:
            check(words in str(e), "%s: %s" % (bad, e))
    try:
        c.rdf(plain, r_max=1, buckets=4, progress=False)
        raise AssertionError("rdf without a box ran")
    except ValueError as e:
        check("rdf needs a periodic box" in str(e), e)
    print("errors at submit: selections matching nothing, names a file lacks (topology=)")


def test_ctrl_c(c):
    big = c.upload(np.random.default_rng(6).uniform(0, 23000, (200000, 3)), temporary=True)
    job = c.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        job.wait(progress=False)
        raise AssertionError("the job ended before Ctrl-C")
    except KeyboardInterrupt:
        pass
    finally:
        timer.cancel()
    check(job.status == "cancelled", "after Ctrl-C: %s" % job.status)
    check(c.job(job.id).status == "cancelled", "the daemon says %s" % c.job(job.id).status)
    print("Ctrl-C: the job is cancelled and job.status says so")


def test_readme(port):
    run_readme_example(port)
    print("api/python/README.md's example runs as pasted")


def main():
    with Daemon(exe()) as d:
        with histd.Client("http://127.0.0.1:%d" % d.port) as c:
            u, _ = test_mdanalysis(c)
            test_site_rdf(c, u)
            test_freud_corrfunc(c, u)
            test_ase(c)
            test_weights(c)
            test_submit_errors(c, u)
            test_ctrl_c(c)
        check(histd.Client("http://127.0.0.1:%d" % d.port).datasets() == [],
              "every upload of the tests was temporary")
        test_temporary(d.port)
        test_readme(d.port)
    print("test_traj: all ok")


if __name__ == "__main__":
    main()
