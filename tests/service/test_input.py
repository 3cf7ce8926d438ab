"""test_input.py -- input the daemon must read as written, or refuse.

- A NUL in a JSON body (the escape \\u0000, or a raw 0 byte) is refused with
  400, in any field or key of any JSON route: "cpu\\u0000x" is not "cpu";
  so is %00 in a path or query parameter ("/%00" is not "/").
  An escaped backslash before "u0000" is text, not a NUL.
- Keys are read with their escapes decoded: in POST /v1/histogram,
  "\\u0070oints" is "points" (so beside x, y and z it is refused, and alone
  it is the points), and "\\u0078" is "x".
- ?limit= outside its range is 400 with a sentence on every list route
  (datasets: 1 to 100000; jobs: 1 to 10000), never silently clamped.

usage: test_input.py HISTD_EXE
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402

PTS = [[0, 0, 0], [1, 0, 0], [0, 2, 0], [3, 3, 3]]


def counts(pts, width, buckets):
    """The definition: binary64, floor(sqrt((dx*dx + dy*dy) + dz*dz) / width)."""
    c = [0] * buckets
    for i in range(len(pts)):
        for j in range(i + 1, len(pts)):
            dx, dy, dz = (pts[i][k] - pts[j][k] for k in range(3))
            b = math.floor(math.sqrt((dx * dx + dy * dy) + dz * dz) / width)
            if b < buckets:
                c[b] += 1
    return c


def post(d, path, text):
    s, h, raw = d.request("POST", path, text.encode() if isinstance(text, str) else text,
                          {"Content-Type": "application/json"})
    doc = json.loads(raw) if raw else None
    return s, h, doc


def refused(d, path, text, status, words, what):
    s, h, doc = post(d, path, text)
    check(s == status and h.get("content-type", "").startswith("application/problem+json"),
          "%s: wanted a %d problem, got %d %r" % (what, status, s, doc))
    check(all(w in doc["detail"] for w in words), "%s: %r names %s" % (what, doc["detail"], words))
    print("ok - %s: %d %s" % (what, s, doc["detail"]))


def test_nul(d, ds):
    pts = json.dumps(PTS)
    for what, text in [
        ("kernel \"cpu\\u0000x\"", '{"points":%s,"bucket_width":1,"kernel":"cpu\\u0000x"}' % pts),
        ("precision \"exact\\u0000\"", '{"points":%s,"bucket_width":1,"precision":"exact\\u0000"}' % pts),
        ("a key \"kernel\\u0000\"", '{"points":%s,"bucket_width":1,"kernel\\u0000":"cpu"}' % pts),
    ]:
        refused(d, "/v1/histogram", text, 400, ["NUL"], "POST /v1/histogram with " + what)
    refused(d, "/v1/jobs", '{"dataset":"%s\\u0000","bucket_width":1}' % ds, 400, ["NUL"],
            "POST /v1/jobs with a dataset id ending in \\u0000")
    refused(d, "/v1/jobs", '{"dataset":"%s","bucket_width":1,"kernel":"cpu\\u0000x"}' % ds, 400, ["NUL"],
            "POST /v1/jobs with kernel \"cpu\\u0000x\"")
    refused(d, "/v1/jobs", b'{"dataset":"' + ds.encode() + b'","bucket_width":1,"kernel":"cpu\x00"}', 400,
            ["NUL"], "POST /v1/jobs with a raw NUL byte")
    # %00 in the path or a query parameter would cut it short ("/%00" read as "/")
    for method, path, body in (("GET", "/%00", None), ("GET", "/v1/datasets/" + ds + "%00", None),
                               ("POST", "/v1/datasets?name=a%00b", "1,2,3\n")):
        s, h, raw = d.request(method, path, body, {"Content-Type": "text/csv"} if body else None)
        check(s == 400 and "%00" in json.loads(raw)["detail"], "%s %s: 400, got %d %r" % (method, path, s, raw[:200]))
    print("ok - %00 in a path or query parameter is 400")
    # an escaped backslash, then the text u0000: no NUL, just an unknown kernel
    s, _, doc = post(d, "/v1/histogram", '{"points":%s,"bucket_width":1,"kernel":"cpu\\\\u0000"}' % pts)
    check(s == 422 and "kernel" in doc["detail"], "\\\\u0000 is text, not a NUL: %d %r" % (s, doc))
    print("ok - an escaped backslash before u0000 is text: 422 %s" % doc["detail"])
    s, _, doc = post(d, "/v1/jobs", '{"dataset":"%s","bucket_width":1,"kernel":"cpu"}' % ds)
    check(s == 202, "the same job without a NUL is accepted: %d %r" % (s, doc))


def test_keys(d):
    width, buckets = 1.0, 6
    want = counts(PTS, width, buckets)
    xs, ys, zs = ([p[k] for p in PTS] for k in range(3))
    s, _, doc = post(d, "/v1/histogram", '{"x":%s,"y":%s,"z":%s,"\\u0070oints":[[50,50,50],[60,60,60]],'
                     '"bucket_width":1,"buckets":6}' % (xs, ys, zs))
    check(s == 400 and "not both" in doc["detail"],
          "\\u0070oints beside x, y and z is points beside them: %d %r" % (s, doc))
    print("ok - \\u0070oints beside x, y, z: 400 %s" % doc["detail"])
    s, _, doc = post(d, "/v1/histogram", '{"\\u0070oints":%s,"bucket_width":1,"buckets":6}' % json.dumps(PTS))
    check(s == 200 and doc["counts"] == want, "\\u0070oints alone are the points: %d %r, want %s" % (s, doc, want))
    s, _, doc = post(d, "/v1/histogram", '{"\\u0078":%s,"y":%s,"\\u007a":%s,"bucket_width":1,"buckets":6}'
                     % (xs, ys, zs))
    check(s == 200 and doc["counts"] == want, "\\u0078 is x: %d %r, want %s" % (s, doc, want))
    s, _, doc = post(d, "/v1/histogram", '{"p\\oints":%s,"bucket_width":1}' % json.dumps(PTS))
    check(s == 400, "a bad escape in a key is a 400: %d %r" % (s, doc))
    # the upload parser decodes keys the same way
    s, _, doc = post(d, "/v1/datasets", '{"x":%s,"y":%s,"z":%s,"\\u0070oints":[[5,5,5]]}' % (xs, ys, zs))
    check(s == 400 and "points" in doc["detail"], "an upload with \\u0070oints beside x, y, z: %d %r" % (s, doc))
    print("ok - escaped keys decoded in /v1/histogram and /v1/datasets")


def test_limits(d):
    for path, top in (("/v1/datasets", 100000), ("/v1/jobs", 10000)):
        s, _, _ = d.request("GET", "%s?limit=%d" % (path, top))
        check(s == 200, "%s?limit=%d is in range" % (path, top))
        for bad in (str(top + 1), "0", "-1", "1e3", "ten", "99999999999999999999999", ""):
            s, h, raw = d.request("GET", "%s?limit=%s" % (path, bad))
            doc = json.loads(raw)
            check(s == 400 and h["content-type"].startswith("application/problem+json") and
                  ("1 to %d" % top) in doc["detail"],
                  "%s?limit=%s: wanted 400 naming the range, got %d %r" % (path, bad, s, doc))
        print("ok - %s?limit= outside 1..%d is 400" % (path, top))


def main(exe):
    with Daemon(exe) as d:
        ds = d.upload([tuple(p) for p in PTS])["id"]
        test_nul(d, ds)
        test_keys(d)
        test_limits(d)
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
