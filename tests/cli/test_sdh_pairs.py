"""test_sdh_pairs.py -- sdh's pair list (--pairs-within R), per-point
counts (--within R --per-point) and nearest neighbours (--nearest) against
a brute force of the contract in numpy (tests/python/common.py's dmatrix:
binary64, dx = xi - xj, the minimum image dx - L * nearbyint(dx / L),
s = (dx*dx + dy*dy) + dz*dz, d = sqrt(s); a pair listed when d <= R).

selections: tests/io/data/water.gro (176 SPC waters, nm), --select-a
  name:OW --select-b all without --with: A and B are selections of one
  file, and a point never meets itself (README "A value per point, a record
  per pair"): no (i, i, 0) record, no point its own neighbour or nearest.

a long list in bounded memory: 16,000 points uniform in a unit cube and
  --pairs-within 0.9, more than 10^8 pairs (16 bytes each in sdh's
  temporary file, 24 in the npz). sdh's npz is read from its stdout as it
  is written, never stored: the records' count, each point's degree
  (bincount of i plus of j) and the d's below a few thresholds are checked
  against a numpy count of the definition by blocks of rows, and sdh's peak
  RSS (wait4's ru_maxrss, RUNNER) must stay below a quarter of the list's
  16 bytes a pair (it is printed: about 13 MB).

usage: test_sdh_pairs.py SDH_EXE
"""
import ast
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WATER = os.path.join(HERE, "..", "io", "data", "water.gro")
# the contract's distances and the GRO reader, written once for the tests
# (tests/python/common.py; it skips, 77, without numpy)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from common import check, dmatrix, np, read_gro  # noqa: E402


def sdh_npz(sdh, args, tmp):
    path = os.path.join(tmp, "out.npz")
    with open(path, "wb") as out:
        p = subprocess.run([sdh] + args + ["-f", "npz"], stdout=out, stderr=subprocess.PIPE,
                           timeout=60)
    check(p.returncode == 0, "sdh %s: %d %s" % (" ".join(args), p.returncode, p.stderr.decode()))
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_selections(sdh, tmp):
    names, pos, box = read_gro(WATER)
    a = np.array([k for k, s in enumerate(names) if s == "OW"])
    dm = dmatrix(pos[a], pos, box)
    dm[a[:, None] == np.arange(len(pos))[None, :]] = np.inf  # never itself
    r = 0.32
    sel = [WATER, "--select-a", "name:OW", "--select-b", "all"]
    # selections that share atoms list every (a, b) of distinct atoms only when
    # asked ("pairs": "ordered"); by default such a list is refused, saying so
    p = subprocess.run([sdh] + sel + ["--pairs-within", str(r), "-f", "npz"], capture_output=True,
                       timeout=60)
    check(p.returncode != 0 and b"share" in p.stderr and b"ordered" in p.stderr,
          "a pair list of OW x all without --pairs ordered: %d %s" % (p.returncode, p.stderr))
    z = sdh_npz(sdh, sel + ["--pairs", "ordered", "--pairs-within", str(r)], tmp)
    gi, gj = z["i"].astype(np.int64), z["j"].astype(np.int64)
    check(not np.any(gi == gj), "a point of A met itself: %d records (i, i)"
          % np.count_nonzero(gi == gj))
    wi, wj = np.nonzero(dm <= r)
    want = set(zip(a[wi].tolist(), wj.tolist()))
    got = set(zip(gi.tolist(), gj.tolist()))
    check(len(got) == len(gi) == int(z["pairs"]), "pairs %d, records %d, distinct %d"
          % (int(z["pairs"]), len(gi), len(got)))
    check(got == want, "OW x all: %d pairs, the definition %d; %d only in sdh's, %d only in"
          " the definition's" % (len(got), len(want), len(got - want), len(want - got)))
    dd = dm[np.searchsorted(a, gi), gj]
    check(np.array_equal(z["d"], dd), "d differs from the definition's")
    z = sdh_npz(sdh, sel + ["--within", str(r), "--per-point"], tmp)
    check(np.array_equal(z["neighbours"].ravel(), np.count_nonzero(dm <= r, axis=1)),
          "neighbours of each OW within %g" % r)
    z = sdh_npz(sdh, sel + ["--nearest"], tmp)
    near = np.argmin(dm, axis=1)
    check(np.array_equal(z["nearest"].ravel(), near), "nearest: %s, the definition %s"
          % (z["nearest"].ravel()[:8], near[:8]))
    check(np.array_equal(z["nearest_d"].ravel(), dm[np.arange(len(a)), near]), "nearest_d")
    print("selections of one file (OW x all, %d OW): %d pairs within %g nm, none of a point with"
          " itself; neighbours and nearest as the definition" % (len(a), len(got), r))


N_BIG, R_BIG, SEED = 16000, 0.9, 11
THRESHOLDS = (0.2, 0.45, 0.7)
# sdh's peak RSS, measured apart from this process's: a child's ru_maxrss
# includes the memory of the process it was forked from until its exec
# (this one holds numpy's blocks), so a small Python forks sdh and reports
# wait4's ru_maxrss of it (an upper bound: that Python's few MB included)
RUNNER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, ru = os.wait4(pid, 0)
sys.stderr.write("maxrss_kb %d\\n" % ru.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def peak_rss_kb(err):
    lines = err.decode(errors="replace").splitlines()
    check(lines and lines[-1].startswith("maxrss_kb "), "no maxrss: %r" % lines[-3:])
    return int(lines[-1].split()[1]), "\n".join(lines[:-1])


def definition_counts(pts, r):
    """Each point's neighbours within r and the pairs with d <= t for each
    threshold, the self pairs i < j by blocks of rows (the contract, open
    space)."""
    n = len(pts)
    deg = np.zeros(n, dtype=np.int64)
    below = np.zeros(len(THRESHOLDS), dtype=np.int64)
    rows = 256
    for i0 in range(0, n, rows):
        i1 = min(n, i0 + rows)
        dm = dmatrix(pts[i0:i1], pts[i0:])
        dm[np.tril(np.ones((i1 - i0, n - i0), dtype=bool))] = np.inf  # j <= i
        keep = dm <= r
        deg[i0:i1] += keep.sum(axis=1)
        deg[i0:] += keep.sum(axis=0)
        for k, t in enumerate(THRESHOLDS):
            below[k] += np.count_nonzero(dm <= t)
    return deg, below


def read_exact(f, n):
    b = f.read(n)
    check(len(b) == n, "the npz ends early (%d of %d bytes)" % (len(b), n))
    return b


def stream_npz(f, on_array):
    """Reads a .npz of stored entries from a pipe, entry by entry: each
    array's header, then its data handed to on_array(name, dtype, shape,
    chunk) in chunks; returns the small entries read whole."""
    small = {}
    while True:
        sig = read_exact(f, 4)
        if sig != b"PK\x03\x04":
            check(sig == b"PK\x01\x02", "not a zip entry: %r" % sig)
            f.read()  # the central directory
            return small
        h = struct.unpack("<HHHHHIIIHH", read_exact(f, 26))
        method, size, nlen, xlen = h[2], h[6], h[8], h[9]
        check(method == 0 and not h[1] & 8, "a stored entry with its sizes: %s" % (h,))
        name = read_exact(f, nlen).decode()
        extra = read_exact(f, xlen)
        while extra:  # ZIP64: the sizes in the extra field
            tag, ln = struct.unpack("<HH", extra[:4])
            if tag == 1 and size == 0xFFFFFFFF:
                size = struct.unpack("<Q", extra[12:20])[0]
            extra = extra[4 + ln:]
        magic = read_exact(f, 8)
        check(magic[:6] == b"\x93NUMPY", "%s: not an .npy" % name)
        hl = struct.unpack("<H" if magic[6] == 1 else "<I",
                           read_exact(f, 2 if magic[6] == 1 else 4))[0]
        head = ast.literal_eval(read_exact(f, hl).decode("latin1"))
        dtype = np.dtype(head["descr"])
        left = size - 8 - (2 if magic[6] == 1 else 4) - hl
        key = name[:-4] if name.endswith(".npy") else name
        if left <= 1 << 16:
            small[key] = np.frombuffer(read_exact(f, left), dtype=dtype).reshape(head["shape"])
            continue
        step = (1 << 22) * dtype.itemsize
        while left > 0:
            chunk = read_exact(f, min(step, left))
            left -= len(chunk)
            on_array(key, np.frombuffer(chunk, dtype=dtype))


def test_long_list(sdh, tmp):
    pts = np.random.default_rng(SEED).uniform(0.0, 1.0, (N_BIG, 3))
    path = os.path.join(tmp, "big.f64")
    pts.astype("<f8").tofile(path)
    deg, below = definition_counts(pts, R_BIG)
    pairs = int(deg.sum()) // 2
    check(pairs > 10 ** 8, "the case is meant to hold more than 1e8 pairs: %d" % pairs)
    got = {"i": np.zeros(N_BIG, dtype=np.int64), "j": np.zeros(N_BIG, dtype=np.int64)}
    seen = {"i": 0, "j": 0, "d": 0, "over": 0, "neg": 0}
    got_below = np.zeros(len(THRESHOLDS), dtype=np.int64)

    def on_array(name, chunk):
        if name in ("i", "j"):
            check(len(chunk) == 0 or int(chunk.max()) < N_BIG, "%s past the points" % name)
            got[name] += np.bincount(chunk.astype(np.int64), minlength=N_BIG)
        elif name == "d":
            seen["over"] += np.count_nonzero(chunk > R_BIG)
            seen["neg"] += np.count_nonzero(~(chunk >= 0))
            for k, t in enumerate(THRESHOLDS):
                got_below[k] += np.count_nonzero(chunk <= t)
        else:
            raise AssertionError("a large array %s" % name)
        seen[name] += len(chunk)

    floor_kb, _ = peak_rss_kb(subprocess.run([sys.executable, "-S", "-c", RUNNER, "/bin/true"],
                                             stderr=subprocess.PIPE, timeout=30).stderr)
    p = subprocess.Popen([sys.executable, "-S", "-c", RUNNER, sdh, path, "--pairs-within",
                          str(R_BIG), "-f", "npz"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        small = stream_npz(p.stdout, on_array)
        err = p.stderr.read()
    finally:
        p.stdout.close()
        rc = p.wait(timeout=60)
    rss_kb, err = peak_rss_kb(err)
    check(rc == 0, "sdh: %d %s" % (rc, err))
    check(int(small["pairs"]) == pairs, "pairs %d, the definition %d" % (int(small["pairs"]), pairs))
    check(seen["i"] == seen["j"] == seen["d"] == pairs, "records %s for %d pairs" % (seen, pairs))
    check(seen["over"] == 0 and seen["neg"] == 0, "d outside [0, R]: %s" % seen)
    check(np.array_equal(got["i"] + got["j"], deg), "each point's degree in the list differs"
          " from the definition's at %d points" % np.count_nonzero(got["i"] + got["j"] != deg))
    check(np.array_equal(got_below, below), "pairs with d <= %s: %s, the definition %s"
          % (THRESHOLDS, got_below, below))
    list_bytes = 16 * pairs
    check(rss_kb * 1024 < list_bytes / 4, "sdh's peak RSS %d kB, the list %d bytes"
          % (rss_kb, list_bytes))
    print("a long list: %d points, %d pairs within %g (%.2f GB at 16 bytes a pair), streamed"
          " as npz; sdh's peak RSS %.1f MB (/bin/true's by the same fork: %.1f MB)"
          % (N_BIG, pairs, R_BIG, list_bytes / 1e9, rss_kb / 1024.0, floor_kb / 1024.0))


def main():
    sdh = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="histd-test-pairs-") as tmp:
        test_selections(sdh, tmp)
        test_long_list(sdh, tmp)
    print("test_sdh_pairs: all ok")


if __name__ == "__main__":
    main()
