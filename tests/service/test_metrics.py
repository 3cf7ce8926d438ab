"""test_metrics.py -- /metrics parses as Prometheus text format 0.0.4 and its
numbers follow what the daemon did.

usage: test_metrics.py HISTD_EXE
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, encode, random_points  # noqa: E402

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*)?\})? (\S+)$')


def parse(text):
    """Returns {name: {labels-tuple: value}} and checks HELP/TYPE lines."""
    types, helps, samples = {}, set(), {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("# HELP "):
            helps.add(line.split()[2])
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            check(kind in ("counter", "gauge", "histogram", "summary", "untyped"), line)
            check(name not in types, "TYPE twice: " + name)
            types[name] = kind
            continue
        check(not line.startswith("#"), "stray comment: " + line)
        m = SAMPLE.match(line)
        check(m, "not a sample line: %r" % line)
        name, labels, value = m.group(1), m.group(3) or "", m.group(5)
        v = float(value)  # raises on garbage; +Inf/NaN parse too
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        family = name if name in types else base
        check(family in types, "sample before its TYPE: " + name)
        check(family in helps, "no HELP for " + family)
        samples.setdefault(name, {})[tuple(sorted(re.findall(r'(\w+)="([^"]*)"', labels)))] = v
    return types, samples


def scrape(d):
    s, h, body = d.request("GET", "/metrics")
    check(s == 200 and h["content-type"].startswith("text/plain; version=0.0.4"), h)
    return parse(body.decode())


def main():
    exe = sys.argv[1]
    with Daemon(exe) as d:
        types, m0 = scrape(d)
        for name, kind in (("histd_jobs", "gauge"), ("histd_queue_depth", "gauge"),
                           ("histd_job_duration_seconds", "histogram"),
                           ("histd_pairs_computed_total", "counter"),
                           ("histd_upload_bytes_total", "counter"),
                           ("histd_device_memory_used_bytes", "gauge")):
            check(types.get(name) == kind, "%s should be a %s" % (name, kind))
        check(set(dict(k)["status"] for k in m0["histd_jobs"]) ==
              {"queued", "running", "succeeded", "failed", "cancelled"}, m0["histd_jobs"])
        body, ctype = encode(random_points(100, seed=41), "csv")
        s, _, ds = d.json("POST", "/v1/datasets", body, {"Content-Type": ctype})
        for _ in range(3):
            d.wait_job(d.submit(ds["id"], bucket_width=100)["id"])
        s, _, _ = d.json("POST", "/v1/jobs", {"dataset": ds["id"], "bucket_width": -1})
        types, m1 = scrape(d)
        val = lambda m, n, **l: m[n][tuple(sorted(l.items()))]  # noqa: E731
        check(val(m1, "histd_jobs", status="succeeded") == 3, m1["histd_jobs"])
        check(val(m1, "histd_queue_depth") == 0, "queue empty")
        check(val(m1, "histd_upload_bytes_total") == len(body), m1["histd_upload_bytes_total"])
        check(val(m1, "histd_pairs_computed_total") == 3 * 4950, m1["histd_pairs_computed_total"])
        buckets = sorted(((float(dict(k)["le"]), v) for k, v in
                          m1["histd_job_duration_seconds_bucket"].items()))
        check(buckets[-1][0] == float("inf"), buckets)
        check(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), "cumulative buckets")
        check(buckets[-1][1] == val(m1, "histd_job_duration_seconds_count") == 3, buckets)
        check(val(m1, "histd_job_duration_seconds_sum") >= 0, "sum")
        s, _, dev = d.json("GET", "/v1/devices")
        got = {dict(k)["device"] for k in m1.get("histd_device_memory_used_bytes", {})}
        check(got == {str(x["index"]) for x in dev["devices"]}, "one memory gauge per GPU")
        print("metrics: %d families, all parsed" % len(types))
    print("test_metrics: all ok")


if __name__ == "__main__":
    main()
