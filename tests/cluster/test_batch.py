#!/usr/bin/python3
"""test_batch.py -- `histd batch plan / run / merge` end to end, on files.

Five jobs on random points (a plain histogram, a weighted one, a periodic
g(r), the same on the grid, an A x B), each planned into K shards, every
index run (one twice, one by $SLURM_ARRAY_TASK_ID, one by
$JOB_COMPLETION_INDEX), merged, and held to:
  * an independent definition computed here with numpy, operation by
    operation as the contract says (float64; d = sqrt((dx*dx + dy*dy) +
    dz*dz); bin = floor(d / width); periodic: dx -= L * rint(dx / L));
    weighted sums within 1e-12 relative of the bin's sum of |w_i w_j|,
    against math.fsum;
  * sdh on the same files (counts, overflow, total, g identical).
Then the refusals: a missing shard (named), a corrupted and a truncated
partial, an input changed after the plan, an index out of range, an
unknown JOB.json member. And a larger periodic job, one of whose tasks is
SIGKILLed while it runs (no partial left), then run again and merged.

usage: test_batch.py HISTD SDH
"""
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

from batch_checks import check, failures  # noqa: E402

HISTD, SDH = sys.argv[1], sys.argv[2]


def histd(*args, env=None, timeout=60):
    e = dict(os.environ)
    for k in ("SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "SLURM_CPUS_PER_TASK"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([HISTD, "batch"] + [str(a) for a in args], capture_output=True,
                          text=True, env=e, timeout=timeout)


def sdh(*args):
    r = subprocess.run([SDH] + [str(a) for a in args] + ["--format", "json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise RuntimeError("sdh %s: %s" % (args, r.stderr))
    return json.loads(r.stdout)


def write_csv(path, pts, w=None):
    cols = pts if w is None else np.column_stack([pts, w])
    with open(path, "w") as f:
        for row in cols:
            f.write(",".join(repr(float(v)) for v in row) + "\n")


# ---- the definition -------------------------------------------------------------

def definition(a, b, width, buckets, box=None, wa=None, wb=None):
    """counts[buckets], overflow, total and (weights) the bins' products:
    a list of arrays, one a bin, for math.fsum. b None: self pairs i < j."""
    counts = np.zeros(buckets, dtype=np.int64)
    overflow = total = 0
    prods = [[] for _ in range(buckets)] if wa is not None else None
    for i in range(len(a)):
        other = a[i + 1:] if b is None else b
        wo = (wa[i + 1:] if b is None else wb) if wa is not None else None
        if len(other) == 0:
            continue
        dx = a[i, 0] - other[:, 0]
        dy = a[i, 1] - other[:, 1]
        dz = a[i, 2] - other[:, 2]
        if box is not None:
            dx = dx - box * np.rint(dx / box)
            dy = dy - box * np.rint(dy / box)
            dz = dz - box * np.rint(dz / box)
        d = np.sqrt((dx * dx + dy * dy) + dz * dz)
        k = np.floor(d / width).astype(np.int64)
        inside = k < buckets
        counts += np.bincount(k[inside], minlength=buckets)
        overflow += int((~inside).sum())
        total += len(other)
        if prods is not None:
            p = wa[i] * wo
            for kk in np.unique(k[inside]):
                prods[kk].append(p[inside][k[inside] == kk])
    return counts, overflow, total, prods


# ---- one job, sharded --------------------------------------------------------------

def plan(work, job, shards, name="D"):
    path = os.path.join(work, "JOB-%s.json" % name)
    with open(path, "w") as f:
        json.dump(job, f)
    out = os.path.join(work, name)
    r = histd("plan", path, "--shards", shards, "--out", out)
    if not check(r.returncode == 0 and r.stdout.strip().isdigit(),
                 "%s: plan into %d shards (%s)" % (name, shards, (r.stdout + r.stderr).strip()[:200])):
        raise SystemExit(1)
    count = int(r.stdout)
    check(1 <= count <= shards, "%s: the plan's count %d is within 1..%d" % (name, count, shards))
    check(os.path.isdir(os.path.join(out, "partials")), "%s: DIR/partials made" % name)
    with open(os.path.join(out, "plan.json")) as f:
        p = json.load(f)
    check(p["shards"]["count"] == count and all(len(v["sha256"]) == 64 and os.path.isabs(v["path"])
                                                 for v in p["inputs"].values()),
          "%s: plan.json records the count and the inputs' absolute paths and hashes" % name)
    return out, count


def run_all(out, count, name):
    for i in range(count):
        if i == 1:
            r = histd("run", out, env={"SLURM_ARRAY_TASK_ID": str(i), "SLURM_CPUS_PER_TASK": "2"})
        elif i == 2:
            r = histd("run", out, env={"JOB_COMPLETION_INDEX": str(i)})
        else:
            r = histd("run", out, "--index", i)
        check(r.returncode == 0, "%s: run shard %d/%d %s" % (name, i, count, r.stderr.strip()[-160:]))


def merge(out, name, *extra):
    r = histd("merge", out, *extra)
    check(r.returncode == 0, "%s: merge %s" % (name, r.stderr.strip()[-200:]))
    return json.loads(r.stdout) if r.returncode == 0 and not extra else r


def compare(name, got, ref, width, buckets, via_sdh):
    counts, overflow, total, prods = ref
    check(got["counts"] == counts.tolist() and got["overflow"] == overflow
          and got["total"] == total,
          "%s: merged counts, overflow, total are the definition's (%d pairs)" % (name, total))
    check(got["counts"] == via_sdh["counts"] and got["overflow"] == via_sdh["overflow"]
          and got["total"] == via_sdh["total"], "%s: merged counts identical to sdh's" % name)
    if prods is not None:
        worst = 0.0
        for k in range(buckets):
            parts = np.concatenate(prods[k]) if prods[k] else np.zeros(0)
            exact = math.fsum(parts.tolist())
            scale = math.fsum(np.abs(parts).tolist())
            err = abs(got["weighted"][k] - exact)
            worst = max(worst, err / scale if scale else err)
        check(worst <= 1e-12, "%s: weighted sums within 1e-12 of the sum of |w_i w_j| (%.2g)"
              % (name, worst))
    if "g" in via_sdh:
        check(np.allclose(got["g"], via_sdh["g"], rtol=1e-12, atol=0) and
              got["volume"] == via_sdh["volume"], "%s: g(r) and the volume are sdh's" % name)


def main():
    rng = np.random.default_rng(20261123)
    work = tempfile.mkdtemp(prefix="histd-batch-")
    ok = False
    try:
        t0 = time.monotonic()
        # 1. the plain histogram, K = 7 (one index run twice, the refusals)
        pts = rng.random((3000, 3)) * 100.0
        write_csv(os.path.join(work, "pts.csv"), pts)
        out, count = plan(work, {"dataset": "pts.csv", "bucket_width": 5}, 7, "plain")
        run_all(out, count, "plain")
        part = os.path.join(out, "partials", "0")
        before = os.stat(part).st_mtime_ns
        r = histd("run", out, "--index", 0)
        check(r.returncode == 0 and "already done" in r.stderr and
              os.stat(part).st_mtime_ns == before,
              "plain: a shard run again finds its partial and leaves it (%s)" % r.stderr.strip())
        got = merge(out, "plain")
        buckets = got["buckets"]
        ref = definition(pts, None, 5.0, buckets)
        compare("plain", got, ref, 5.0, buckets, sdh(os.path.join(work, "pts.csv"), "--width", 5))
        refusals(work, out, count)

        # 2. weighted
        pw, w = rng.random((1500, 3)) * 50.0, rng.normal(1.0, 0.5, 1500)
        write_csv(os.path.join(work, "weighted.csv"), pw, w)
        out, count = plan(work, {"dataset": "weighted.csv", "bucket_width": 4, "buckets": 20,
                                 "weights": True}, 5, "weighted")
        run_all(out, count, "weighted")
        got = merge(out, "weighted")
        ref = definition(pw, None, 4.0, 20, wa=w, wb=w)
        compare("weighted", got, ref, 4.0, 20,
                sdh(os.path.join(work, "weighted.csv"), "--width", 4, "--buckets", 20, "--weighted"))

        # 3. periodic g(r), L = 20, r < 10
        L = 20.0
        pp = rng.random((2500, 3)) * L
        write_csv(os.path.join(work, "box.csv"), pp)
        out, count = plan(work, {"dataset": "box.csv", "box": [L], "bucket_width": 0.25,
                                 "buckets": 40, "kernel": "cpu-reference"}, 3, "periodic")
        run_all(out, count, "periodic")
        got = merge(out, "periodic")
        ref = definition(pp, None, 0.25, 40, box=L)
        compare("periodic", got, ref, 0.25, 40,
                sdh(os.path.join(work, "box.csv"), "--periodic", L, "--width", 0.25,
                    "--buckets", 40))

        # 3b. the same box on the grid, to L/4
        out, count = plan(work, {"dataset": "box.csv", "box": [L], "bucket_width": 0.25,
                                 "buckets": 20, "kernel": "grid"}, 4, "grid")
        run_all(out, count, "grid")
        got = merge(out, "grid")
        compare("grid", got, definition(pp, None, 0.25, 20, box=L), 0.25, 20,
                sdh(os.path.join(work, "box.csv"), "--periodic", L, "--width", 0.25,
                    "--buckets", 20))

        killed(work, rng)

        # 4. A x B, B in another folder, its format named
        a, b = rng.random((1200, 3)) * 60.0, rng.random((900, 3)) * 60.0 + 10.0
        write_csv(os.path.join(work, "a.csv"), a)
        os.mkdir(os.path.join(work, "other"))
        write_csv(os.path.join(work, "other", "b.points"), b)
        out, count = plan(work, {"dataset": "a.csv", "dataset_b": "other/b.points",
                                 "format_b": "csv", "bucket_width": 3}, 6, "cross")
        run_all(out, count, "cross")
        got = merge(out, "cross")
        buckets = got["buckets"]
        shutil.copy(os.path.join(work, "other", "b.points"), os.path.join(work, "b.csv"))
        compare("cross", got, definition(a, b, 3.0, buckets), 3.0, buckets,
                sdh(os.path.join(work, "a.csv"), "--with", os.path.join(work, "b.csv"),
                    "--width", 3, "--buckets", buckets))
        # the other writers, through --out
        for fmt in ("csv", "text", "npz"):
            dest = os.path.join(work, "cross." + fmt)
            r = histd("merge", out, "--format", fmt, "--out", dest)
            check(r.returncode == 0 and os.path.getsize(dest) > 0 and
                  not [n for n in os.listdir(work) if n.startswith(".cross")],
                  "cross: merge --format %s --out FILE" % fmt)
        with np.load(os.path.join(work, "cross.npz")) as z:
            check(z["counts"].tolist() == got["counts"], "cross: the npz's counts are the JSON's")
        print("took %.1f s" % (time.monotonic() - t0))
        ok = not failures
    finally:
        if ok:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("(kept for a look: %s)" % work)
    if failures:
        print("\n%d failure(s):\n  %s" % (len(failures), "\n  ".join(failures)))
        return 1
    print("test_batch: all ok")
    return 0


def killed(work, rng):
    """A task SIGKILLed while it runs leaves no partial (not even half of
    one) under its name; run again, it is whole. The points are many enough
    (the largest shard about 36M pairs on cpu-reference, 0.7 s here) that the
    kill lands mid-run; its exit status says it did."""
    L = 40.0
    pk = rng.random((12000, 3)) * L
    write_csv(os.path.join(work, "kill.csv"), pk)
    out, count = plan(work, {"dataset": "kill.csv", "box": [L], "bucket_width": 0.25,
                             "buckets": 80, "kernel": "cpu-reference"}, 3, "killed")
    with open(os.path.join(out, "plan.json")) as f:
        pairs = [int(p) for p in json.load(f)["shards"]["pairs"]]
    s = pairs.index(max(pairs))
    e = {k: v for k, v in os.environ.items() if k not in ("SLURM_ARRAY_TASK_ID",
                                                          "JOB_COMPLETION_INDEX")}
    p = subprocess.Popen([HISTD, "batch", "run", out, "--index", str(s)], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.25)
    p.send_signal(signal.SIGKILL)
    p.wait()
    names = os.listdir(os.path.join(out, "partials"))
    if p.returncode == -signal.SIGKILL:
        check(str(s) not in names and not names,
              "killed: shard %d SIGKILLed 0.25 s into its %d pairs left no partial (%s)"
              % (s, pairs[s], names))
    else:  # it ran to the end in 0.1 s: nothing was tested
        check(False, "killed: shard %d ended (status %s) in less than 0.25 s; give it more "
              "pairs" % (s, p.returncode))
    run_all(out, count, "killed")
    got = merge(out, "killed")
    ref = sdh(os.path.join(work, "kill.csv"), "--periodic", L, "--width", 0.25,
              "--buckets", 80)
    n = len(pk)
    check(got["counts"] == ref["counts"] and got["overflow"] == ref["overflow"] and
          got["total"] == ref["total"] == n * (n - 1) // 2,
          "killed: run again, the merged counts are sdh's, %d pairs" % (n * (n - 1) // 2))


def refusals(work, out, count):
    parts = os.path.join(out, "partials")
    # a missing shard, named
    keep = os.path.join(work, "keep")
    shutil.move(os.path.join(parts, "3"), keep)
    r = histd("merge", out)
    check(r.returncode == 1 and "missing" in r.stderr and ": 3 " in r.stderr and r.stdout == "",
          "merge with shard 3 missing fails naming it (%s)" % r.stderr.strip())
    shutil.move(keep, os.path.join(parts, "3"))
    # a corrupted partial (a count's byte flipped) and a truncated one
    p2 = os.path.join(parts, "2")
    with open(p2, "rb") as f:
        good = f.read()
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x10
    for what, data in (("corrupted", bytes(bad)), ("truncated", good[:len(good) - 9])):
        with open(p2, "wb") as f:
            f.write(data)
        r = histd("merge", out)
        check(r.returncode == 1 and "partials/2" in r.stderr and r.stdout == "",
              "merge refuses a %s partial (%s)" % (what, r.stderr.strip()))
    r = histd("run", out, "--index", 2)
    check(r.returncode == 0 and "again" in r.stderr and os.path.getsize(p2) == len(good),
          "run computes a bad partial again and replaces it (%s)" % r.stderr.strip()[:160])
    # an index out of range
    r = histd("run", out, "--index", count)
    check(r.returncode == 2 and "out of range" in r.stderr,
          "run --index %d (of %d) is refused, exit 2 (%s)" % (count, count, r.stderr.strip()))
    r = histd("run", out, env={"SLURM_ARRAY_TASK_ID": str(count + 5)})
    check(r.returncode == 2 and "SLURM_ARRAY_TASK_ID" in r.stderr,
          "an index out of range from $SLURM_ARRAY_TASK_ID is refused, exit 2")
    # an input changed after the plan
    os.remove(os.path.join(parts, "4"))
    src = os.path.join(work, "pts.csv")
    with open(src, "rb") as f:
        orig = f.read()
    with open(src, "wb") as f:
        f.write(orig.replace(b"1", b"2", 1))
    r = histd("run", out, "--index", 4)
    check(r.returncode == 1 and "changed since the plan" in r.stderr and
          not os.path.exists(os.path.join(parts, "4")),
          "run refuses an input changed since the plan (%s)" % r.stderr.strip())
    with open(src, "wb") as f:
        f.write(orig)
    r = histd("run", out, "--index", 4)
    check(r.returncode == 0, "the input restored, the shard runs")
    # an unknown member of JOB.json
    bad_job = os.path.join(work, "bad.json")
    with open(bad_job, "w") as f:
        json.dump({"dataset": "pts.csv", "bucket_width": 5, "bucket_widht": 5}, f)
    r = histd("plan", bad_job, "--shards", 2, "--out", os.path.join(work, "bad"))
    check(r.returncode == 2 and '"bucket_widht"' in r.stderr and "unknown" in r.stderr and
          not os.path.exists(os.path.join(work, "bad")),
          "plan refuses an unknown JOB.json member (%s)" % r.stderr.strip()[:120])
    r = histd("plan", os.path.join(work, "JOB-plain.json"), "--shards", 2, "--out", out)
    check(r.returncode == 1 and "already holds a plan" in r.stderr,
          "plan refuses a DIR that holds a plan")
    r = histd("--help")
    check(r.returncode == 0 and "histd batch plan" in r.stdout, "histd batch --help")


if __name__ == "__main__":
    sys.exit(main())
