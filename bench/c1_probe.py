#!/usr/bin/env python3
"""c1_probe.py -- where C1's time goes (issue 30): sdh (on the GPU: kernel
auto) on C1's shapes of set, N clumped points (D) and N uniform ones (R) in
the periodic 1000 box, self pairs, in variants of the statistic, bins and
weights; each variant's kernel and total ms (median of ROUNDS runs), the
fraction of pairs in range and sdh's device line (the grid's cells, span
and filter). ENVS="VAR=value ..." also runs each variant under each
setting, and says whether its counts (and weighted sums) match the first
(the engine's A/B settings: HISTD_GRID_SPAN=K, the span; HISTD_GRID_WGLOBAL=K,
the weighted partials' layout tried first, kernels/grid_engine.c).

    SDH=... [N=1000000 ROUNDS=3 SETS="D R" VARIANTS="name;name" ENVS=...
        DIR=reuse-the-points] python3 bench/c1_probe.py"""
import statistics
import json, os, random, subprocess, sys, tempfile
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corrfunc_compare as cc
sdh = os.environ["SDH"]
n = int(float(os.environ.get("N", 1e6)))
work = os.environ.get("DIR") or tempfile.mkdtemp()
os.makedirs(work, exist_ok=True)
rng = random.Random(1)
d = os.path.join(work, "D.csv")
r = os.path.join(work, "R.csv")
if not os.path.exists(r):
    cc.write_points(d, cc.clump_points(n, 1000.0, rng), [0.5 + rng.random() for _ in range(n)])
    cc.write_points(r, cc.uniform_points(n, 1000.0, rng), [0.5 + rng.random() for _ in range(n)])
sets = [(x, [y]) for x, y in (("D", d), ("R", r)) if x in os.environ.get("SETS", "D R").split()]
lin = ",".join(repr(200.0 * k / 25) for k in range(1, 26))
base = ["--periodic", "1000"]
V = [
    ("rp_pi W log", ["--statistic", "rp_pi", "--rp-log-bins", "0.1,200,25", "--pi-max", "40", "--pi-bins", "40", "--weighted"]),
    ("rp_pi log", ["--statistic", "rp_pi", "--rp-log-bins", "0.1,200,25", "--pi-max", "40", "--pi-bins", "40"]),
    ("rp_pi lin", ["--statistic", "rp_pi", "--rp-edges", "0," + lin, "--pi-max", "40", "--pi-bins", "40"]),
    ("rp_pi 1 pi bin", ["--statistic", "rp_pi", "--rp-log-bins", "0.1,200,25", "--pi-max", "40", "--pi-bins", "1"]),
    ("s_mu W log", ["--statistic", "s_mu", "--log-bins", "0.1,200,25", "--mu-bins", "50", "--weighted"]),
    ("s_mu log", ["--statistic", "s_mu", "--log-bins", "0.1,200,25", "--mu-bins", "50"]),
    ("d log 200", ["--log-bins", "0.1,200,25"]),
    ("d W log 200", ["--log-bins", "0.1,200,25", "--weighted"]),
    ("d width 200", ["--r-max", "200", "--buckets", "25"]),
    ("d width 100", ["--r-max", "100", "--buckets", "25"]),
    ("d width 40", ["--r-max", "40", "--buckets", "25"]),
]
print("| set | variant | kernel ms | total ms | in range | vs first | device |")
ref = {}
def flat(x):
    return [z for y in x for z in flat(y)] if isinstance(x, list) else [x]
keep = os.environ.get("VARIANTS")
if keep:
    V = [v for v in V if v[0] in keep.split(";")]
envs = [("", {})] + [(" " + e, {e.split("=")[0]: e.split("=")[1]}) for e in os.environ.get("ENVS", "").split()]
for setname, f in sets:
    for (name0, a) in V:
      for tag, extra in envs:
        name = name0 + tag
        ms = []
        for _ in range(int(os.environ.get("ROUNDS", 3))):
            p = subprocess.run([sdh, *f, *base, *a, "--format", "json"], capture_output=True, text=True, env=dict(os.environ, **extra))
            if p.returncode:
                print(name, p.stderr[-500:]); break
            res = json.loads(p.stdout)
            ms.append(res["timing_ms"])
        if not ms: continue
        tm = {key: statistics.median(m[key] for m in ms) for key in ("kernel", "total")}
        c = res.get("counts"); tot = 0
        def s(x):
            return sum(s(y) for y in x) if isinstance(x, list) else x
        tot = s(c)
        key = (setname, name0)
        got = (c, res.get("below"), res.get("overflow"), res.get("weighted"))
        same = "first" if key not in ref else ("same" if ref[key][:3] == got[:3] else "COUNTS DIFFER")
        if key in ref and got[3] is not None:
            worst = max(abs(x - y) / max(abs(y), 1e-300) for x, y in zip(flat(got[3]), flat(ref[key][3])))
            same += " w %.1e" % worst
        ref.setdefault(key, got)
        print("| %s | %s | %.1f | %.1f | %.4g | %s | %s |" % (setname, name, tm.get("kernel", -1), tm.get("total", -1),
              tot / (n * (n - 1) / 2), same, res.get("device", "")[:150]), flush=True)
