"""test_lammps_rdf.py -- histd's g(r) and coordination number against
LAMMPS's `compute rdf`, on a Lennard-Jones liquid LAMMPS made.

tests/cli/lammps/ holds what Debian's LAMMPS wrote from in.lj (500 atoms
melted from an fcc lattice, periodic cube): snapshot.dump (the positions,
%.17g) and rdf.txt (compute rdf 100 bins to 3.0 sigma: bin centre, g,
coordination; %.17g). sdh computes the same histogram of the same points
(--periodic L --r-max 3 --buckets 100, and the dump itself, whose box sdh
reads from the file); every bin's g and coordination must
match LAMMPS's to 1e-9 relative (LAMMPS counts each pair twice and divides
by N(N-1); histd counts it once and divides by N(N-1)/2).

Several frames: frames.dump holds three frames of the same liquid (NVE,
in.frames.lj) and rdf_frames.txt LAMMPS's compute rdf averaged over them
by fix ave/time (the mean of each frame's g and coordination). With the
same atoms and volume in every frame that mean is histd's normalisation
by the frames' total, so sdh on the whole dump must match it to 1e-9 as
well, and its counts must be the sums of sdh's counts frame by frame.

A DCD: frames.dcd holds the same three frames as a DCD trajectory
(tests/io/data/make_dcd.py: MDAnalysis's DCDWriter, float32 coordinates,
the cell written from MDAnalysis's float32 dimensions). sdh on it must give
the dump's counts exactly (no pair moves across a bin edge when its
coordinates are rounded to float32) and LAMMPS's coordination to 1e-9;
with the job's box (--periodic L, L the dump's) LAMMPS's g to 1e-9 too,
and with the file's own box g scaled by the ratio of the volumes (the
DCD's cell, read here from its bytes, is L rounded to float32).

Every image: rdf_images.txt is LAMMPS's compute rdf of the same liquid to
6 sigma, past half its 8.4-sigma box, with ghost atoms to 6.5 sigma
(in.images.lj), so that every periodic image within reach counts, an
atom's own too. sdh --all-images (images "all") must match its g and
coordination to 1e-9 in every bin, and without the option be refused with
a sentence that names it.

usage: test_lammps_rdf.py SDH_EXE
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lammps")


def main():
    sdh = sys.argv[1]
    lines = open(os.path.join(HERE, "snapshot.dump")).read().splitlines()
    n = int(lines[3])
    lo, hi = (float(v) for v in lines[5].split())
    assert lines[8].split()[2:] == ["id", "x", "y", "z"], lines[8]
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("x,y,z\n")
        for row in lines[9:9 + n]:
            f.write(",".join(row.split()[1:4]) + "\n")
        csv = f.name
    try:
        out = subprocess.run([sdh, csv, "--periodic", repr(hi - lo), "--r-max", "3",
                              "--buckets", "100", "-f", "json"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(csv)
    doc = json.loads(out)
    # the dump itself, its box read from the file: the same document
    direct = subprocess.run([sdh, os.path.join(HERE, "snapshot.dump"), "--r-max", "3",
                             "--buckets", "100", "-f", "json"],
                            check=True, capture_output=True, text=True).stdout
    for key in ("counts", "g", "coordination", "volume", "total"):
        assert json.loads(direct)[key] == doc[key], "reading the dump directly: %s differs" % key
    lammps = [l.split() for l in open(os.path.join(HERE, "rdf.txt"))
              if l.strip() and not l.startswith("#")][1:]
    assert len(lammps) == 100 and doc["buckets"] == 100, (len(lammps), doc["buckets"])
    bad = []
    for k, row in enumerate(lammps):
        for name, want, got in (("g", float(row[2]), doc["g"][k]),
                                ("coordination", float(row[3]), doc["coordination"][k])):
            if abs(got - want) > 1e-9 * abs(want) + (1e-300 if want == 0 else 0):
                bad.append("bin %d %s: histd %.17g, LAMMPS %.17g" % (k, name, got, want))
    bad += frames_check(sdh)
    bad += dcd_check(sdh)
    bad += partials_check(sdh)
    bad += images_check(sdh)
    for b in bad[:10]:
        print("FAIL:", b)
    if bad:
        sys.exit(1)
    nonzero = sum(1 for row in lammps if float(row[2]) > 0)
    print("test_lammps_rdf: g and coordination of %d atoms match LAMMPS in all 100 bins "
          "(%d non-zero) to 1e-9, on one frame and averaged over three, from the dump and "
          "from a DCD; the binary liquid's 3 type partials in one job match LAMMPS's 1-1, "
          "1-2, 2-1 and 2-2 in one run; every image to 6 sigma (past half the box) matches "
          "LAMMPS's ghosts in all 120 bins" % (n, nonzero))


def images_check(sdh):
    """Past half the box, every image, against LAMMPS's ghosts."""
    path = os.path.join(HERE, "snapshot.dump")
    args = [sdh, path, "--r-max", "6", "--buckets", "120", "-f", "json"]
    refused = subprocess.run(args, capture_output=True, text=True)
    bad = []
    if refused.returncode == 0 or "images" not in refused.stderr:
        bad.append("r_max past half the box without --all-images: %r" % refused.stderr)
    doc = json.loads(subprocess.run(args + ["--all-images"], check=True, capture_output=True,
                                    text=True).stdout)
    rows = [l.split() for l in open(os.path.join(HERE, "rdf_images.txt"))
            if l.strip() and not l.startswith("#")][1:]
    if doc.get("images") != "all" or len(rows) != 120 or doc["buckets"] != 120:
        return bad + ["images: %s, %d LAMMPS rows" % (doc.get("images"), len(rows))]
    for k, row in enumerate(rows):
        for name, want, got in (("g", float(row[2]), doc["g"][k]),
                                ("coordination", float(row[3]), doc["coordination"][k])):
            if abs(got - want) > 1e-9 * abs(want) + (1e-300 if want == 0 else 0):
                bad.append("images bin %d %s: histd %.17g, LAMMPS %.17g" % (k, name, got, want))
    return bad


def partials_check(sdh):
    """partials.dump, a binary LJ liquid (in.partials.lj): one job with
    --partials type against LAMMPS's compute rdf of the pairs 1-1, 1-2, 2-1,
    2-2 in one run (rdf_partials.txt: r, then g and coord of each pair): the
    partials' g, their coordination both ways (1-2's ab is LAMMPS's 2s
    around a 1, its ba LAMMPS's 2-1), and their counts adding up to the
    plain histogram's of every pair."""
    path = os.path.join(HERE, "partials.dump")
    doc = json.loads(subprocess.run([sdh, path, "--partials", "type", "--r-max", "3",
                                     "--buckets", "100", "-f", "json"],
                                    check=True, capture_output=True, text=True).stdout)
    plain = sdh_json(sdh, path)
    bad = []
    p = doc.get("partial", {})
    if doc.get("species") != "1,2" or p.get("a") != ["1", "1", "2"] or \
            p.get("b") != ["1", "2", "2"]:
        return ["partials.dump: species %s, pairs %s %s" % (doc.get("species"), p.get("a"),
                                                            p.get("b"))]
    if [sum(c[k] for c in p["counts"]) for k in range(100)] != plain["counts"] or \
            doc["counts"] != plain["counts"]:
        bad.append("partials.dump: the partials' counts do not add up to every pair's")
    rows = [[float(v) for v in l.split()] for l in open(os.path.join(HERE, "rdf_partials.txt"))
            if l.strip() and not l.startswith("#")][1:]
    # columns: row, r, then (g, coord) for 1-1, 1-2, 2-1, 2-2
    want = {0: ((2, 3), (2, 3)), 1: ((4, 5), (6, 7)), 2: ((8, 9), (8, 9))}
    for k, ((g_col, ab_col), (g2_col, ba_col)) in want.items():
        for b, row in enumerate(rows):
            for name, w, got in (("g", row[g_col], p["g"][k][b]), ("g", row[g2_col], p["g"][k][b]),
                                 ("coordination_ab", row[ab_col], p["coordination_ab"][k][b]),
                                 ("coordination_ba", row[ba_col], p["coordination_ba"][k][b])):
                if abs(got - w) > 1e-9 * abs(w) + (1e-300 if w == 0 else 0):
                    bad.append("partial %s-%s bin %d %s: histd %.17g, LAMMPS %.17g"
                               % (p["a"][k], p["b"][k], b, name, got, w))
    return bad


def sdh_json(sdh, path):
    return json.loads(subprocess.run([sdh, path, "--r-max", "3", "--buckets", "100", "-f", "json"],
                                     check=True, capture_output=True, text=True).stdout)


def frames_check(sdh):
    """The three-frame dump against LAMMPS's average, and against sdh frame by frame."""
    path = os.path.join(HERE, "frames.dump")
    doc = sdh_json(sdh, path)
    bad = []
    if doc["frames"] != 3 or doc["box_source"] != "dataset":
        bad.append("frames.dump: %s frames, box from the %s" % (doc["frames"], doc["box_source"]))
    lines = open(path).read().splitlines(True)
    starts = [i for i, l in enumerate(lines) if l.startswith("ITEM: TIMESTEP")] + [len(lines)]
    counts = [0] * 100
    for a, b in zip(starts, starts[1:]):
        with tempfile.NamedTemporaryFile("w", suffix=".dump", delete=False) as f:
            f.writelines(lines[a:b])
        try:
            one = sdh_json(sdh, f.name)
        finally:
            os.unlink(f.name)
        counts = [x + y for x, y in zip(counts, one["counts"])]
    if counts != doc["counts"]:
        bad.append("frames.dump: the counts are not the sums of each frame's")
    lammps = [l.split() for l in open(os.path.join(HERE, "rdf_frames.txt"))
              if l.strip() and not l.startswith("#")][1:]
    for k, row in enumerate(lammps):
        for name, want, got in (("g", float(row[2]), doc["g"][k]),
                                ("coordination", float(row[3]), doc["coordination"][k])):
            if abs(got - want) > 1e-9 * abs(want) + (1e-300 if want == 0 else 0):
                bad.append("frames.dump bin %d %s: histd %.17g, LAMMPS %.17g" % (k, name, got, want))
    return bad


def lammps_rdf_frames():
    return [[float(v) for v in l.split()] for l in open(os.path.join(HERE, "rdf_frames.txt"))
            if l.strip() and not l.startswith("#")][1:]


def dcd_check(sdh):
    """frames.dcd (the three frames as a DCD) against the dump and LAMMPS."""
    lines = open(os.path.join(HERE, "frames.dump")).read().splitlines()
    lo, hi = (float(v) for v in lines[5].split())
    length = hi - lo
    raw = open(os.path.join(HERE, "frames.dcd"), "rb").read()
    head = 4 + 84 + 4 + 4 + struct.unpack_from("<i", raw, 92)[0] + 4 + 12
    cell = struct.unpack_from("<6d", raw, head + 4)  # A gamma B beta alpha C
    bad = []
    if abs(cell[0] - length) > 1e-6 * length or not cell[0] == cell[2] == cell[5]:
        bad.append("frames.dcd: first cell %r, the dump's box %.17g" % (cell, length))
    dump = sdh_json(sdh, os.path.join(HERE, "frames.dump"))
    own = sdh_json(sdh, os.path.join(HERE, "frames.dcd"))
    job = json.loads(subprocess.run([sdh, os.path.join(HERE, "frames.dcd"), "--periodic",
                                     repr(length), "--r-max", "3", "--buckets", "100", "-f",
                                     "json"], check=True, capture_output=True, text=True).stdout)
    if own["frames"] != 3 or own["box_source"] != "dataset" or job["box_source"] != "job":
        bad.append("frames.dcd: %s frames, box from the %s" % (own["frames"], own["box_source"]))
    piped = json.loads(subprocess.run([sdh, "-", "-i", "dcd", "--r-max", "3", "--buckets", "100",
                                       "-f", "json"], input=raw, check=True,
                                      capture_output=True).stdout)
    if piped["g"] != own["g"]:
        bad.append("frames.dcd on standard input (-i dcd): another g")
    if own["counts"] != dump["counts"] or job["counts"] != dump["counts"]:
        bad.append("frames.dcd: its counts are not the dump's")
    scale = cell[0] ** 3 / length ** 3  # g grows with the volume
    for k, row in enumerate(lammps_rdf_frames()):
        for name, want, got in (("g (job's box)", row[2], job["g"][k]),
                                ("g (file's box)", row[2] * scale, own["g"][k]),
                                ("coordination", row[3], own["coordination"][k])):
            if abs(got - want) > 1e-9 * abs(want) + (1e-300 if want == 0 else 0):
                bad.append("frames.dcd bin %d %s: histd %.17g, LAMMPS %.17g" % (k, name, got, want))
    return bad


if __name__ == "__main__":
    main()
