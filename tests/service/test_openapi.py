"""test_openapi.py -- api/openapi.yaml and the daemon agree: the routes the
daemon serves (histd --print-routes, the table the dispatcher uses) are
exactly the spec's paths and methods, and live responses -- successes and
errors -- validate against the spec's schemas for their status codes.

usage: test_openapi.py HISTD_EXE OPENAPI_YAML
"""
import math
import os
import subprocess
import sys

import jsonschema
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, encode, random_points  # noqa: E402

METHODS = ("get", "post", "put", "patch", "delete")


def deref(spec, obj):
    while isinstance(obj, dict) and "$ref" in obj:
        node = spec
        for part in obj["$ref"].lstrip("#/").split("/"):
            node = node[part]
        obj = node
    return obj


class Validator:
    def __init__(self, spec):
        self.spec = spec
        self.resolver = jsonschema.RefResolver.from_schema(spec)
        self.seen = set()

    def schema_valid(self, schema, instance, what):
        v = jsonschema.Draft202012Validator(schema, resolver=self.resolver)
        errors = sorted(v.iter_errors(instance), key=lambda e: list(e.path))
        check(not errors, "%s: %s" % (what, "; ".join(
            "%s at %s" % (e.message[:200], list(e.absolute_path)) for e in errors[:3])))

    def response(self, method, template, status, headers, doc, raw):
        op = self.spec["paths"][template][method.lower()]
        responses = op["responses"]
        what = "%s %s -> %d" % (method, template, status)
        check(str(status) in responses, what + ": status not in the spec")
        resp = deref(self.spec, responses[str(status)])
        self.seen.add((method, template, status))
        content = resp.get("content")
        ctype = headers.get("content-type", "").split(";")[0].strip()
        if not content:
            check(raw == b"", what + ": the spec says no body")
            return
        check(ctype in content or "*/*" in content, what + ": content-type %s not in %s" %
              (ctype, list(content)))
        schema = content.get(ctype, content.get("*/*"))["schema"]
        if doc is not None:
            self.schema_valid(schema, doc, what)

    def request_body(self, method, template, ctype, doc):
        op = self.spec["paths"][template][method.lower()]
        schema = op["requestBody"]["content"][ctype]["schema"]
        self.schema_valid(schema, doc, "request %s %s" % (method, template))


def test_routes(exe, spec):
    out = subprocess.run([exe, "--print-routes"], check=True, capture_output=True,
                         text=True, timeout=10).stdout
    served = {tuple(line.split(" ", 1)) for line in out.splitlines() if line.strip()}
    documented = {(m.upper(), p) for p, item in spec["paths"].items() for m in item
                  if m in METHODS}
    check(served == documented, "routes differ from the spec:\n  served only: %s\n"
          "  documented only: %s" % (sorted(served - documented), sorted(documented - served)))
    print("routes: the daemon's %d routes are the spec's" % len(served))


def test_samples(exe, spec):
    v = Validator(spec)
    with Daemon(exe, args=["--cors-origin", "*"]) as d:
        def call(method, template, path, body=None, headers=None, want=None):
            s, h, raw = d.request(method, path, body, headers)
            doc = None
            if raw and "json" in h.get("content-type", ""):
                import json
                doc = json.loads(raw)
            if want is not None:
                check(s == want, "%s %s: wanted %d, got %d %r" % (method, path, want, s, raw[:200]))
            v.response(method, template, s, h, doc, raw)
            return s, doc

        pts = random_points(120, seed=51)
        body, ctype = encode(pts, "json")
        import json
        v.request_body("POST", "/v1/datasets", "application/json", json.loads(body))
        _, ds = call("POST", "/v1/datasets", "/v1/datasets?name=s", body,
                     {"Content-Type": ctype}, 201)
        call("POST", "/v1/datasets", "/v1/datasets", encode(pts, "csv")[0],
             {"Content-Type": "text/csv"}, 200)
        call("POST", "/v1/datasets", "/v1/datasets", "1,2\n", {"Content-Type": "text/csv"}, 400)
        call("POST", "/v1/datasets", "/v1/datasets", "1,2,3\n", {"Content-Type": "image/gif"}, 415)
        call("GET", "/v1/datasets", "/v1/datasets", want=200)
        call("GET", "/v1/datasets/{id}", "/v1/datasets/" + ds["id"], want=200)
        call("GET", "/v1/datasets/{id}", "/v1/datasets/" + "f" * 64, want=404)

        # a growing dataset: its upload, appends, a following job (running and
        # ended), its events, the seal, and their refusals
        json_ct = {"Content-Type": ctype}
        _, grow = call("POST", "/v1/datasets", "/v1/datasets?growing=true", body, json_ct, 201)
        frames_path = "/v1/datasets/%s/frames"
        call("POST", "/v1/datasets/{id}/frames", frames_path % grow["id"], body, json_ct, 200)
        call("POST", "/v1/datasets/{id}/frames", frames_path % ds["id"], body, json_ct, 409)
        call("POST", "/v1/datasets/{id}/frames", frames_path % ("f" * 64), body, json_ct, 404)
        call("POST", "/v1/datasets/{id}/frames", frames_path % grow["id"],
             encode(pts[:5], "json")[0], json_ct, 422)
        call("POST", "/v1/datasets", "/v1/datasets?growing=yes", body, json_ct, 400)
        freq = {"dataset": grow["id"], "bucket_width": 50, "buckets": 40, "follow": True}
        v.request_body("POST", "/v1/jobs", "application/json", freq)
        _, fjob = call("POST", "/v1/jobs", "/v1/jobs", freq, None, 202)
        call("POST", "/v1/jobs", "/v1/jobs", dict(freq, dataset=ds["id"]), None, 422)
        import time
        t0 = time.time()
        while d.request("GET", "/v1/jobs/%s/result" % fjob["id"])[0] != 200 and \
                time.time() - t0 < 10:
            time.sleep(0.01)
        call("GET", "/v1/jobs/{id}", "/v1/jobs/" + fjob["id"], want=200)
        call("GET", "/v1/jobs/{id}", "/v1/jobs/%s?summary=true" % fjob["id"], want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result" % fjob["id"], want=200)
        call("POST", "/v1/datasets/{id}/seal", "/v1/datasets/%s/seal" % grow["id"], want=200)
        call("POST", "/v1/datasets/{id}/seal", "/v1/datasets/%s/seal" % ds["id"], want=409)
        call("POST", "/v1/datasets/{id}/frames", frames_path % grow["id"], body, json_ct, 409)
        d.wait_job(fjob["id"])
        call("GET", "/v1/jobs/{id}/events", "/v1/jobs/%s/events" % fjob["id"], want=200)
        call("GET", "/v1/jobs/{id}/events", "/v1/jobs/%s/events" % ("0" * 32), want=404)
        call("GET", "/v1/datasets/{id}", "/v1/datasets/" + grow["id"], want=200)

        req = {"dataset": ds["id"], "bucket_width": 50, "buckets": 40, "kernel": "cpu",
               "precision": "exact", "devices": []}
        v.request_body("POST", "/v1/jobs", "application/json", req)
        _, job = call("POST", "/v1/jobs", "/v1/jobs", req, None, 202)
        d.wait_job(job["id"])
        call("GET", "/v1/jobs/{id}", "/v1/jobs/" + job["id"], want=200)
        call("GET", "/v1/jobs/{id}", "/v1/jobs/%s?wait=1" % job["id"], want=200)
        call("GET", "/v1/jobs", "/v1/jobs", want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result" % job["id"], want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result?format=csv" % job["id"], want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result?format=npz" % job["id"], want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result" % job["id"],
             headers={"Accept": "application/x-npz"}, want=200)
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result?format=xml" % job["id"], want=400)
        _, summ = call("GET", "/v1/jobs/{id}", "/v1/jobs/%s?summary=true" % job["id"], want=200)
        check("counts" not in summ["result"] and summ["result"]["total"] == 120 * 119 // 2,
              "summary=true: the result without its arrays")
        call("GET", "/v1/jobs/{id}", "/v1/jobs/%s?summary=yes" % job["id"], want=400)
        call("DELETE", "/v1/jobs/{id}", "/v1/jobs/" + job["id"], want=200)
        call("POST", "/v1/jobs", "/v1/jobs", {"dataset": ds["id"], "bucket_width": 0}, None, 422)
        call("POST", "/v1/jobs", "/v1/jobs", {"dataset": ds["id"], "bucket_width": 1, "x": 1},
             None, 400)
        call("POST", "/v1/jobs", "/v1/jobs", {"dataset": "e" * 64, "bucket_width": 1}, None, 404)
        # A failed and a cancelled job validate too.
        big = d.upload(random_points(100000, seed=52), "f64")["id"]
        running = d.json("POST", "/v1/jobs", {"dataset": big, "bucket_width": 1,
                                              "kernel": "cpu-reference"})[2]
        queued = d.json("POST", "/v1/jobs", {"dataset": big, "bucket_width": 1,
                                             "kernel": "cpu-reference"})[2]
        call("GET", "/v1/jobs/{id}/result", "/v1/jobs/%s/result" % running["id"], want=409)
        call("DELETE", "/v1/jobs/{id}", "/v1/jobs/" + queued["id"], want=200)
        import time
        t0 = time.time()
        while d.json("GET", "/v1/jobs/" + running["id"])[2]["status"] == "queued" and \
                time.time() - t0 < 10:
            time.sleep(0.02)
        call("DELETE", "/v1/jobs/{id}", "/v1/jobs/" + running["id"], want=202)
        d.wait_job(running["id"])
        call("GET", "/v1/jobs/{id}", "/v1/jobs/" + running["id"], want=200)
        call("GET", "/v1/jobs", "/v1/jobs?limit=10", want=200)
        call("DELETE", "/v1/datasets/{id}", "/v1/datasets/" + big, want=204)
        call("DELETE", "/v1/datasets/{id}", "/v1/datasets/" + big, want=404)

        hreq = {"points": [list(p) for p in pts[:50]], "bucket_width": 100}
        v.request_body("POST", "/v1/histogram", "application/json", hreq)
        call("POST", "/v1/histogram", "/v1/histogram", hreq, None, 200)
        call("POST", "/v1/histogram", "/v1/histogram?format=npz", hreq, None, 200)
        call("POST", "/v1/histogram", "/v1/histogram", {"points": [[0, 0, 0]], "bucket_width": -1},
             None, 422)
        call("POST", "/v1/histogram", "/v1/histogram", {"points": [], "bucket_width": 1},
             None, 400)
        call("GET", "/v1/kernels", "/v1/kernels", want=200)
        call("GET", "/v1/devices", "/v1/devices", want=200)
        call("GET", "/healthz", "/healthz", want=200)
        call("GET", "/readyz", "/readyz", want=200)
        call("GET", "/metrics", "/metrics", want=200)
        call("GET", "/{asset}", "/no-such-file.js", want=404)
        call("POST", "/v1/datasets", "/v1/datasets", b"x" * 10,
             {"Content-Type": "text/csv", "Content-Length": "99999999999"}, 413)
    print("samples: %d (route, status) pairs validated against the spec" % len(v.seen))

    # The byte budgets' answers: 507 (--max-data-bytes), 503 (--max-buffered-bytes).
    with Daemon(exe, args=["--max-data-bytes", "1", "--max-buffered-bytes", "64k"]) as d:
        import json
        for method, template, path, body, want in (
                ("POST", "/v1/datasets", "/v1/datasets", encode(pts, "json")[0], 507),
                ("POST", "/v1/jobs", "/v1/jobs", {"dataset": "e" * 64, "bucket_width": 1}, 404),
                ("GET", "/readyz", "/readyz", None, 503)):
            s, h, raw = d.request(method, path, body, {"Content-Type": "application/json"}
                                  if body is not None else None)
            check(s == want, (path, s, raw[:200]))
            v.response(method, template, s, h, json.loads(raw), raw)
        s, h, raw = d.request("POST", "/v1/datasets", "x" * 70000,
                              {"Content-Type": "application/json"})
        check(s == 413, s)
        v.response("POST", "/v1/datasets", s, h, json.loads(raw), raw)
    print("budgets: 507, 503 and 413 validated against the spec")

    with Daemon(exe, env={"HISTD_TOKEN": "t"}) as d:
        s, h, raw = d.request("GET", "/v1/jobs")
        import json
        v.response("GET", "/v1/jobs", s, h, json.loads(raw), raw)
        check(s == 401, s)


# What the examples' results may differ in from a live run: the machine's
# choice of kernel and threads, and the clock.
VARIES = {"kernel", "kernel_reason", "block_size", "threads", "device", "timing_ms",
          "refined_pairs"}


def media_examples(spec):
    """Every (where, schema, name, value) of an `examples` map under a
    media type in the spec."""
    out = []
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            places = [("request", op.get("requestBody", {}).get("content", {}))]
            for status, resp in op.get("responses", {}).items():
                places.append((status, deref(spec, resp).get("content", {})))
            for where, content in places:
                for ctype, media in content.items():
                    for name, ex in media.get("examples", {}).items():
                        out.append(("%s %s %s %s" % (method.upper(), path, where, ctype),
                                    media.get("schema", {}), name, ex["value"]))
    return out


def test_examples(exe, spec):
    """Every example validates against its schema, and the examples of
    POST /v1/jobs, run on the points their comment names, give the results
    of GET /v1/jobs/{id}/result's examples of the same names."""
    v = Validator(spec)
    examples = media_examples(spec)
    for where, schema, name, value in examples:
        v.schema_valid(schema, value, "example %s of %s" % (name, where))
    requests = {n: val for w, _, n, val in examples if w.startswith("POST /v1/jobs request")}
    results = {n: val for w, _, n, val in examples
               if w.startswith("GET /v1/jobs/{id}/result 200 application/json")}
    check(set(requests) == set(results) and
          {"per_point", "nearest", "pairs", "per_point_histogram", "rp_pi"} <= set(requests),
          "every job example has its result: %s, %s" % (sorted(requests), sorted(results)))
    with Daemon(exe) as d:
        # the four points, and the brute force of the contract on them
        pts = [(0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (0.0, 2.0, 0.0), (3.0, 0.0, 0.0)]
        ds = d.upload(pts, "json")["id"]
        dist = {(i, j): math.sqrt((pts[i][0] - pts[j][0]) ** 2 + (pts[i][1] - pts[j][1]) ** 2
                                  + (pts[i][2] - pts[j][2]) ** 2)
                for i in range(4) for j in range(4) if i != j}
        for name, req in sorted(requests.items()):
            check(req["dataset"] == ds, "example %s names the four points' dataset %s: %s"
                  % (name, ds, req["dataset"]))
            job = d.wait_job(d.submit(**dict(req))["id"], timeout=60)
            check(job["status"] == "succeeded", (name, job))
            s, _, live = d.json("GET", "/v1/jobs/%s/result" % job["id"])
            want = results[name]
            for key in set(want) | set(live):
                if key not in VARIES:
                    check(live.get(key) == want.get(key),
                          "example %s: %s is %r live, %r in the spec"
                          % (name, key, live.get(key), want.get(key)))
        # and the examples say what the definition says
        r = requests["per_point"]["within"]
        check(results["per_point"]["neighbours"]
              == [sum(dist[i, j] <= r for j in range(4) if j != i) for i in range(4)],
              "per_point example by brute force")
        near = [min((dist[i, j], j) for j in range(4) if j != i) for i in range(4)]
        check(results["nearest"]["nearest"] == [j for _, j in near]
              and results["nearest"]["nearest_d"] == [x for x, _ in near],
              "nearest example by brute force")
        r = requests["pairs"]["pairs_within"]
        pairs = [(i, j, dist[i, j]) for i in range(4) for j in range(i + 1, 4) if dist[i, j] <= r]
        got = results["pairs"]
        check(list(zip(got["i"], got["j"], got["d"])) == pairs, "pairs example by brute force")
        req = requests["per_point_histogram"]
        w = req["r_max"] / req["buckets"]
        rows = [[sum(int(dist[i, j] // w) == k for j in range(4) if j != i)
                 for k in range(req["buckets"])] for i in range(4)]
        check(results["per_point_histogram"]["point"]["counts"] == rows and
              results["per_point_histogram"]["counts"] == [sum(c) for c in zip(*rows)],
              "per_point_histogram example by brute force")
        req = requests["rp_pi"]  # every point at z = 0: pi = 0, r_p = d
        e, n2 = req["rp_edges"], req["pi_bins"]
        rows = [[sum(e[k] <= dist[i, j] < e[k + 1] for i in range(4) for j in range(i + 1, 4))
                 if b == 0 else 0 for b in range(n2)] for k in range(len(e) - 1)]
        check(results["rp_pi"]["counts"] == rows and
              results["rp_pi"]["overflow"] == sum(dist[i, j] >= e[-1] for i in range(4)
                                                  for j in range(i + 1, 4)),
              "rp_pi example by brute force")
    print("ok - %d examples valid; %d job examples reproduced live and by brute force"
          % (len(examples), len(requests)))


def main():
    exe, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = yaml.safe_load(f)
    check(spec["openapi"].startswith("3.1"), "OpenAPI 3.1")
    jsonschema.Draft202012Validator.check_schema(spec["components"]["schemas"]["Job"])
    test_routes(exe, spec)
    test_samples(exe, spec)
    test_examples(exe, spec)
    print("test_openapi: all ok")


if __name__ == "__main__":
    main()
