"""test_cross_site.py -- a web page cannot drive a daemon on localhost.

- DNS rebinding: a request whose Host is not a name the daemon answers to
  (loopback names, the --listen host, --allowed-hosts) gets 421, whatever
  its route; loopback names with any port pass.
- Cross-site writes: a POST or DELETE whose Origin is neither the daemon's
  own nor allowed by --cors-origin gets 403, with or without a token, even
  as a "simple" text/plain request that needs no preflight. Reads are
  governed by CORS headers and stay 200.
- Bodies say what they are: JSON routes want application/json, uploads one
  of the point types (or none with ?format=); a form's types get 415.

Every refusal is problem+json with a sentence, and stores nothing.

usage: test_cross_site.py HISTD_EXE
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402
from rawhttp import exchange, problem, request, responses  # noqa: E402

CSV = b"1,2,3\n4,5,6\n7,8,9\n"
EVIL = "http://evil.example"


def one(port, data):
    out, _ = exchange(port, data)
    got = responses(out)
    check(len(got) == 1, "one response: %r" % out[:300])
    return got[0]


def refused(port, data, status, word, what):
    r = one(port, data)
    doc = problem(r)
    check(r[0] == status and doc is not None, "%s: wanted a %d problem, got %d %r" % (what, status, r[0], r[2][:200]))
    check(word.lower() in doc["detail"].lower(), "%s: the sentence names the %s: %r" % (what, word, doc["detail"]))
    print("ok - %s: %d %s" % (what, status, doc["detail"]))


def accepted(port, data, what, status=(200, 201, 202, 204)):
    r = one(port, data)
    check(r[0] in status, "%s: wanted %s, got %d %r" % (what, status, r[0], r[2][:200]))
    print("ok - %s: %d" % (what, r[0]))
    return r


def datasets(d):
    return d.json("GET", "/v1/datasets")[2]["datasets"]


def test_hosts(exe):
    with Daemon(exe, args=["--allowed-hosts", "histd.lab.example, other.example"]) as d:
        p = d.port
        for host in ("evil.example", "evil.example:%d" % p, "127.0.0.1.evil.example", "localhost.evil.example"):
            refused(p, request("GET", "/v1/datasets", host=host), 421, "host", "GET with Host %s" % host)
        refused(p, request("POST", "/v1/datasets", CSV, [("Content-Type", "text/csv")], host="evil.example"),
                421, "host", "an upload with a rebound Host")
        refused(p, request("GET", "/", host="evil.example"), 421, "host", "the dashboard with a rebound Host")
        check(datasets(d) == [], "nothing was stored")
        for host in ("127.0.0.1:%d" % p, "localhost:%d" % p, "LOCALHOST", "[::1]:%d" % p, "127.0.0.2",
                     "app.localhost:8080", "histd.lab.example", "other.example:443"):
            accepted(p, request("GET", "/v1/kernels", host=host), "Host %s" % host)
        # HTTP/1.1 needs a Host; 1.0 has none to check
        refused(p, b"GET /v1/kernels HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "host", "HTTP/1.1 without Host")
        accepted(p, b"GET /v1/kernels HTTP/1.0\r\n\r\n", "HTTP/1.0 without Host")


def test_wildcard_listen(exe):
    # listening on every address: its addresses are names too (an IP in Host
    # cannot be a rebound name); other names still are not
    with Daemon(exe, args=["--token", "t0k", "--listen", "0.0.0.0:0"]) as d:
        auth = [("Authorization", "Bearer t0k")]
        accepted(d.port, request("GET", "/v1/kernels", headers=auth, host="10.1.2.3:8080"), "Host 10.1.2.3 on 0.0.0.0")
        refused(d.port, request("GET", "/v1/kernels", headers=auth, host="evil.example"), 421, "host",
                "a name on 0.0.0.0")


def test_origins(exe):
    lab = "https://lab.example.org"
    with Daemon(exe, args=["--cors-origin", lab]) as d:
        p = d.port
        own = "http://127.0.0.1:%d" % p
        # a simple request (no preflight) from a foreign page: refused before the body counts
        refused(p, request("POST", "/v1/datasets", CSV, [("Content-Type", "text/plain"), ("Origin", EVIL)]),
                403, "origin", "text/plain upload from %s" % EVIL)
        refused(p, request("POST", "/v1/datasets?format=csv", CSV,
                           [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", EVIL)]),
                403, "origin", "form upload from %s" % EVIL)
        refused(p, request("POST", "/v1/jobs", b'{"dataset":"x","bucket_width":1}',
                           [("Content-Type", "application/json"), ("Origin", EVIL)]), 403, "origin",
                "a job from %s" % EVIL)
        refused(p, request("POST", "/v1/histogram", b'{"points":[[0,0,0],[1,1,1]],"bucket_width":1}',
                           [("Content-Type", "text/plain"), ("Origin", "null")]), 403, "origin",
                "a histogram from a sandboxed page (Origin: null)")
        check(datasets(d) == [], "nothing was stored")
        r = accepted(p, request("POST", "/v1/datasets", CSV, [("Content-Type", "text/csv"), ("Origin", own)],
                                host="127.0.0.1:%d" % p),
                     "an upload from the daemon's own page")
        doc = json.loads(r[2])
        refused(p, request("DELETE", "/v1/datasets/" + doc["id"], headers=[("Origin", EVIL)]), 403, "origin",
                "DELETE from %s" % EVIL)
        check(len(datasets(d)) == 1, "the dataset is still there")
        accepted(p, request("POST", "/v1/datasets", CSV + b"1,1,1\n", [("Content-Type", "text/csv"), ("Origin", lab)]),
                 "an upload from the --cors-origin page")
        accepted(p, request("GET", "/v1/datasets", headers=[("Origin", EVIL)]), "a read from %s (CORS decides)" % EVIL)
        accepted(p, request("OPTIONS", "/v1/jobs", headers=[("Origin", EVIL), ("Access-Control-Request-Method", "POST")]),
                 "a preflight from %s (answered without allowing it)" % EVIL)
        refused(p, request("DELETE", "/v1/datasets/" + doc["id"], headers=[("Origin", own)],
                           host="localhost:%d" % p), 403, "origin", "DELETE from another loopback origin")
        accepted(p, request("DELETE", "/v1/datasets/" + doc["id"], headers=[("Origin", own)],
                            host="127.0.0.1:%d" % p),
                 "DELETE from the daemon's own page")
    # a token does not make a foreign page's write acceptable
    with Daemon(exe, args=["--token", "s3cret"]) as d:
        refused(d.port, request("POST", "/v1/datasets", CSV, [("Content-Type", "text/csv"), ("Origin", EVIL),
                                                             ("Authorization", "Bearer s3cret")]),
                403, "origin", "a foreign page's upload with the token")
    with Daemon(exe, args=["--cors-origin", "*"]) as d:
        accepted(d.port, request("POST", "/v1/datasets", CSV, [("Content-Type", "text/csv"), ("Origin", EVIL)]),
                 "any origin with --cors-origin '*'")


def test_content_types(exe):
    with Daemon(exe) as d:
        p = d.port
        job = b'{"dataset":"%s","bucket_width":1}' % (b"0" * 64)
        for ct in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None):
            hdrs = [("Content-Type", ct)] if ct else []
            refused(p, request("POST", "/v1/jobs", job, hdrs), 415, "application/json",
                    "POST /v1/jobs as %s" % ct)
            refused(p, request("POST", "/v1/histogram", b'{"points":[[0,0,0],[1,1,1]],"bucket_width":1}', hdrs),
                    415, "application/json", "POST /v1/histogram as %s" % ct)
        for ct in ("application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "image/gif"):
            refused(p, request("POST", "/v1/datasets?format=csv", CSV, [("Content-Type", ct)]), 415,
                    "Content-Type", "an upload with ?format=csv as %s" % ct)
            refused(p, request("POST", "/v1/datasets", CSV, [("Content-Type", ct)]), 415,
                    "Content-Type", "an upload as %s" % ct)
        check(datasets(d) == [], "nothing was stored")
        accepted(p, request("POST", "/v1/jobs", job, [("Content-Type", "application/json; charset=utf-8")]),
                 "POST /v1/jobs as application/json; charset=utf-8 reaches the route", status=(404,))
        accepted(p, request("POST", "/v1/datasets?format=csv", CSV), "an upload with ?format=csv and no type")
        accepted(p, request("POST", "/v1/datasets", CSV + b"0,0,0\n", [("Content-Type", "text/csv")]),
                 "an upload as text/csv")


if __name__ == "__main__":
    exe = sys.argv[1]
    test_hosts(exe)
    test_wildcard_listen(exe)
    test_origins(exe)
    test_content_types(exe)
    print("PASS")
