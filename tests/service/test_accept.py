"""test_accept.py -- content negotiation (issue #28, item 11): the routes
that offer several representations (GET /v1/jobs/{id}/result and
POST /v1/histogram: JSON, CSV, NPZ) choose by the Accept header's weights
(RFC 9110 12.5.1), in one place:

- the representation with the highest q wins; a q of 0 refuses one; the
  most specific range that names a type gives its weight (text/csv over
  text/* over */*); ties go to JSON, then CSV, then NPZ;
- no Accept, or an empty one, is JSON; "*" alone (Java's default) is
  */*; an element whose q is not a number from 0 to 1 is ignored;
- nothing acceptable is 406 with a problem+json sentence that lists what is
  offered; ?format= wins over Accept;
- every negotiated answer says Vary: Accept.

usage: test_accept.py HISTD_EXE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402

JSON, CSV, NPZ = "application/json", "text/csv", "application/x-npz"

CASES = [
    # (Accept, the type answered, or 406)
    (None, JSON),
    ("", JSON),
    ("application/json", JSON),
    ("text/csv", CSV),
    ("TEXT/CSV", CSV),
    ("application/x-npz", NPZ),
    ("text/csv;q=0, application/json", JSON),
    ("text/csv;q=0.5, application/json;q=0.4", CSV),
    ("application/json;q=0.4,text/csv;q=0.5", CSV),
    ("*/*;q=0.1, text/csv", CSV),
    ("text/*", CSV),
    ("application/*", JSON),
    ("application/*;q=0.9, application/x-npz", NPZ),
    ("application/json;q=0, */*", CSV),
    ("*/*;q=0.5, text/csv;q=0", JSON),
    ("*", JSON),
    ("text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2", JSON),
    ("text/csv;q=abc, application/json;q=0.1", JSON),
    ("text/csv; charset=utf-8", CSV),
    ("image/png", 406),
    ("application/json;q=0", 406),
    ("text/csv;q=0, application/json;q=0, application/x-npz;q=0", 406),
    ("*/*;q=0", 406),
]


def main(exe):
    with Daemon(exe, args=["--workers", "1"]) as d:
        ds = d.upload([(0.0, 0.0, 0.0), (3.0, 4.0, 0.0), (6.0, 8.0, 0.0)], "json")["id"]
        job = d.wait_job(d.submit(ds, bucket_width=5, buckets=4)["id"])
        check(job["status"] == "succeeded", job)
        result = "/v1/jobs/%s/result" % job["id"]
        sync = {"points": [[0, 0, 0], [3, 4, 0], [6, 8, 0]], "bucket_width": 5, "buckets": 4}
        for accept, want in CASES:
            headers = {} if accept is None else {"Accept": accept}
            for method, path, body in (("GET", result, None), ("POST", "/v1/histogram", sync)):
                s, h, data = d.request(method, path, body, headers)
                ctype = h.get("content-type", "")
                what = "%s %s, Accept %r" % (method, path.split("/")[-1], accept)
                if want == 406:
                    check(s == 406 and ctype.startswith("application/problem+json"),
                          "%s: 406, got %d %s %r" % (what, s, ctype, data[:200]))
                    for t in (JSON, CSV, NPZ):
                        check(t.encode() in data, "%s: the 406 names %s: %r" % (what, t, data))
                else:
                    check(s == 200 and ctype.startswith(want),
                          "%s: %s, got %d %s %r" % (what, want, s, ctype, data[:120]))
                check("accept" in h.get("vary", "").lower(), "%s: Vary: Accept, got %r" % (what, h))
            print("ok - Accept %r: %s" % (accept, want))
        s, h, data = d.request("GET", result + "?format=csv", None, {"Accept": "image/png"})
        check(s == 200 and h["content-type"].startswith(CSV), "?format= wins over Accept: %d %r" % (s, h))
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "the daemon is alive")
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
