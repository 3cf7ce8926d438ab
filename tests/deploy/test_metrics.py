#!/usr/bin/env python3
"""Scrapes /metrics the way Prometheus would and checks it.

Starts histd on a free loopback port, uploads points and runs a job, then
parses the text exposition format (version 0.0.4) strictly: HELP and TYPE
once per family and before its samples, valid names and labels, float
values, histograms with cumulative buckets ending in +Inf == _count. Checks
the families a deployment alerts on (jobs by status, queue depth, job
duration, pairs computed, bytes uploaded, device memory) and that they
count what was just done.
"""
import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "web"))
import harness as h  # noqa: E402
from checks import check, finish  # noqa: E402

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_labels(text):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError("bad labels {%s}" % text)
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def parse(text):
    """{family: {"type", "help", "samples": [(name, labels, value)]}}"""
    fams, current = {}, None
    for no, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not NAME.match(name):
                    raise ValueError("line %d: bad metric name %r" % (no, name))
                f = fams.setdefault(name, {"type": None, "help": None, "samples": []})
                key = parts[1].lower()
                if f[key] is not None:
                    raise ValueError("line %d: second %s for %s" % (no, parts[1], name))
                if f["samples"]:
                    raise ValueError("line %d: %s for %s after its samples" % (no, parts[1], name))
                f[key] = parts[3] if len(parts) > 3 else ""
                if key == "type" and f["type"] not in ("counter", "gauge", "histogram", "summary", "untyped"):
                    raise ValueError("line %d: unknown type %r" % (no, f["type"]))
                current = name
            continue
        m = SAMPLE.match(line)
        if not m:
            raise ValueError("line %d: not a sample: %r" % (no, line))
        name, labels, value = m.group(1), parse_labels(m.group(3) or ""), m.group(4)
        v = float(value.replace("Inf", "inf"))  # raises on garbage
        fam = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[: -len(suffix)] in fams:
                fam = name[: -len(suffix)]
        if fam not in fams:
            fams[fam] = {"type": None, "help": None, "samples": []}
        elif fam != current:
            raise ValueError("line %d: %s's samples are not together" % (no, fam))
        fams[fam]["samples"].append((name, labels, v))
        current = fam
    return fams


def value(fams, fam, name=None, **labels):
    total = None
    for n, lab, v in fams.get(fam, {}).get("samples", []):
        if n == (name or fam) and all(lab.get(k) == str(x) for k, x in labels.items()):
            total = (total or 0) + v
    return total


def check_histogram(fams, fam):
    f = fams[fam]
    series = {}
    for n, lab, v in f["samples"]:
        key = tuple(sorted((k, x) for k, x in lab.items() if k != "le"))
        series.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if n == fam + "_bucket":
            series[key]["buckets"].append((float(lab["le"].replace("Inf", "inf")), v))
        elif n == fam + "_sum":
            series[key]["sum"] = v
        elif n == fam + "_count":
            series[key]["count"] = v
    for key, s in series.items():
        b = s["buckets"]
        check(b and b[-1][0] == math.inf, "%s%s: buckets end in +Inf" % (fam, dict(key) or ""))
        check(all(b[i][0] < b[i + 1][0] and b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)),
              "%s: bucket bounds rise and counts are cumulative" % fam)
        check(s["count"] is not None and b and b[-1][1] == s["count"], "%s: +Inf bucket == _count" % fam)
        check(s["sum"] is not None and s["sum"] >= 0, "%s: has _sum" % fam)


def main():
    pts = [[i * 1.5, (i * 7) % 13, (i * 3) % 5] for i in range(100)]
    with h.Daemon() as d:
        body = ('{"points": %s}' % pts).encode()
        r = h.http("POST", d.base + "/v1/datasets", body, {"Content-Type": "application/json"})
        check(r.status == 201, "upload 100 points")
        ds = r.json()["id"]
        r = h.http("POST", d.base + "/v1/jobs", {"dataset": ds, "bucket_width": 2.0})
        check(r.status == 202, "submit a job")
        job = r.json()["id"]
        r = h.http("GET", d.base + "/v1/jobs/%s?wait=20" % job)
        check(r.json()["status"] == "succeeded", "the job succeeded")

        r = h.http("GET", d.base + "/metrics")
        check(r.status == 200, "GET /metrics")
        ctype = r.header("Content-Type") or ""
        check(ctype.startswith("text/plain") and "0.0.4" in ctype,
              "Content-Type is the exposition format (%s)" % ctype)
        try:
            fams = parse(r.body.decode())
        except ValueError as e:
            check(False, "the text parses: %s" % e)
            fams = {}
        check(bool(fams), "%d metric families parse" % len(fams))
        for name, f in fams.items():
            check(f["type"] is not None and f["help"], "%s has HELP and TYPE" % name)
            if f["type"] == "counter":
                check(name.endswith("_total"), "counter %s ends in _total" % name)
            if f["type"] == "histogram":
                check_histogram(fams, name)

        by_type = {n: f["type"] for n, f in fams.items()}
        jobs = [n for n, t in by_type.items() if t == "gauge" and n.endswith("jobs")
                and any("status" in lab for _, lab, _ in fams[n]["samples"])]
        check(bool(jobs), "jobs by status: %s" % jobs)
        if jobs:
            check((value(fams, jobs[0], status="succeeded") or 0) >= 1, "%s{status=succeeded} >= 1" % jobs[0])
            statuses = {lab.get("status") for _, lab, _ in fams[jobs[0]]["samples"]}
            check({"queued", "running", "succeeded", "failed", "cancelled"} <= statuses,
                  "every status is exported, zeros too")
        queue = [n for n in by_type if "queue" in n and by_type[n] == "gauge"]
        check(bool(queue) and value(fams, queue[0]) is not None, "queue depth: %s" % queue)
        dur = [n for n, t in by_type.items() if t == "histogram" and "duration" in n]
        check(bool(dur), "a job-duration histogram: %s" % dur)
        if dur:
            check((value(fams, dur[0], dur[0] + "_count") or 0) >= 1, "it counted the job")
        pairs = [n for n in by_type if "pairs" in n and by_type[n] == "counter"]
        check(bool(pairs) and (value(fams, pairs[0]) or 0) >= 100 * 99 // 2,
              "pairs computed >= 4950: %s" % [(p, value(fams, p)) for p in pairs])
        up = [n for n in by_type if "upload" in n and "bytes" in n and by_type[n] == "counter"]
        check(bool(up) and (value(fams, up[0]) or 0) >= len(body),
              "bytes uploaded >= %d: %s" % (len(body), [(u, value(fams, u)) for u in up]))
        mem = [n for n in by_type if "memory" in n and "device" in n]
        check(bool(mem), "device memory families are declared: %s" % mem)
        devices = h.http("GET", d.base + "/v1/devices").json().get("devices") or []
        for n in mem:
            gpus = {lab.get("device") or lab.get("gpu") or lab.get("index") for _, lab, _ in fams[n]["samples"]}
            check(len(gpus - {None}) == len(devices), "%s has one series per GPU (%d)" % (n, len(devices)))
        d.alive()

    finish()


if __name__ == "__main__":
    main()
