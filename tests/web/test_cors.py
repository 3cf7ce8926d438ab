#!/usr/bin/env python3
"""CORS and the bearer token, from a dashboard hosted on another origin.

histd runs with --cors-origin http://127.0.0.1:<A> and --token. The dashboard's
static files are served by a separate little server at origin A, and the page
is pointed at the daemon with ?api=. The test checks:
  - the CORS headers on simple requests, preflights and errors, over HTTP;
  - that the page first says it needs a token, and works once it is given
    one: upload, job, chart, across origins;
  - that the user's guide's fetch() example, run verbatim (but for its
    address and token) in a page at origin A, gets the counts it promises;
  - that a page at an origin not on the list cannot read the API.
Exit 77 (skip) only when chromium is not installed.
"""
import functools
import http.server
import os
import re
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

GUIDE = os.path.join(h.ROOT, "README.md")
TOKEN = "web-test-token-8d1f"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    h.log("ok -", what)


class StaticServer:
    """The dashboard's files on another loopback origin (a thread of ours)."""

    def __init__(self, directory):
        handler = functools.partial(Quiet, directory=directory)
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        return False


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def header_list(v):
    return {x.strip().lower() for x in (v or "").split(",") if x.strip()}


def check_headers(d, origin, other):
    auth = {"Authorization": "Bearer " + TOKEN}
    r = h.http("GET", d.base + "/v1/kernels", headers=dict(auth, Origin=origin))
    check(r.status == 200 and r.header("Access-Control-Allow-Origin") in (origin, "*"),
          "GET with Origin %s: Access-Control-Allow-Origin %r" % (origin, r.header("Access-Control-Allow-Origin")))
    if r.header("Access-Control-Allow-Origin") == origin:
        check("origin" in header_list(r.header("Vary")), "Vary: Origin, for caches")

    for path, method in (("/v1/jobs", "POST"), ("/v1/datasets", "POST"), ("/v1/jobs/some-job", "DELETE")):
        r = h.http("OPTIONS", d.base + path, headers={
            "Origin": origin, "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": "authorization,content-type"})
        check(200 <= r.status < 300, "the preflight of %s %s needs no token and answers %d" % (method, path, r.status))
        check(r.header("Access-Control-Allow-Origin") in (origin, "*"), "the preflight allows the origin")
        methods = header_list(r.header("Access-Control-Allow-Methods"))
        check(method.lower() in methods, "the preflight allows %s: %s" % (method, sorted(methods)))
        allowed = header_list(r.header("Access-Control-Allow-Headers"))
        check({"authorization", "content-type"} <= allowed or "*" in allowed,
              "the preflight allows Authorization and Content-Type: %s" % sorted(allowed))

    r = h.http("GET", d.base + "/v1/jobs/no-such-job", headers=dict(auth, Origin=origin))
    check(r.status == 404 and r.header("Access-Control-Allow-Origin") in (origin, "*"),
          "errors carry CORS headers too (404)")
    check((r.header("Content-Type") or "").startswith("application/problem+json"), "errors are problem+json")
    r = h.http("GET", d.base + "/v1/kernels", headers={"Origin": origin})
    check(r.status == 401 and r.header("Access-Control-Allow-Origin") in (origin, "*"),
          "a missing token gets 401 with CORS headers, so the page can say why")

    r = h.http("GET", d.base + "/v1/kernels", headers=dict(auth, Origin=other))
    check(r.header("Access-Control-Allow-Origin") not in (other, "*"),
          "an origin not on the list is not allowed (%r)" % r.header("Access-Control-Allow-Origin"))


def guide_example():
    """The JavaScript block that follows <!-- test: cors-fetch --> in the guide."""
    with open(GUIDE, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- test: cors-fetch -->\s*```(?:js|javascript)\n(.*?)```", text, re.S)
    if not m:
        raise AssertionError("no <!-- test: cors-fetch --> JavaScript block in " + GUIDE)
    code = m.group(1)
    want = re.search(r"//\s*(\[[\d,\s]+\])\s*$", code.strip())
    if not want:
        raise AssertionError("the guide's example should end with '// [expected counts]'")
    return code, [int(x) for x in re.findall(r"\d+", want.group(1))]


def main():
    chromium = h.find_chromium()
    chromedriver = h.find_chromedriver()
    code, want = guide_example()
    with StaticServer(os.path.join(h.ROOT, "api", "dashboard")) as site:
        origin = "http://127.0.0.1:%d" % site.port
        other = "http://localhost:%d" % site.port  # the same server, another origin
        with h.Daemon("--cors-origin", origin, "--token", TOKEN) as d:
            check_headers(d, origin, other)
            with h.Browser(chromium, chromedriver) as b:
                run_browser(b, d, origin, other, code, want)
            d.alive()
    h.log("PASS")


def run_browser(b, d, origin, other, code, want):
    page = "%s/?api=%s" % (origin, d.base)
    b.get(page)
    # ?api= names another origin than the page's: the page asks first
    b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15, "the page to ask about ?api=")
    check(d.base in b.text(b.find("#api-confirm-to")), "it shows where requests would go")
    b.click(b.find("#api-confirm-use"))
    b.wait(lambda: b.text(b.find("#engine")) == "token needed", 15, "the page to ask for a token")
    check(b.js("return document.getElementById('settings').open"), "the Connection panel opens by itself")
    b.type(b.find("#token"), TOKEN)
    b.click(b.find("#settings-form button[type=submit]"))
    b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the page to connect with the token")
    check(b.js("return JSON.parse(localStorage.getItem('histd.tokens'))[arguments[0]]", d.base) == TOKEN,
          "the token is kept in localStorage, for the daemon's origin")

    # a whole job across origins: upload by a drop, submit, chart
    b.js("""
        const pts = []; for (let i = 0; i < 50; i++) pts.push([i * 7 % 31, i * 13 % 17, i * 3 % 11]);
        const file = new File([JSON.stringify({points: pts})], 'cross.json', {type: 'application/json'});
        const dt = new DataTransfer(); dt.items.add(file);
        document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
    """)
    b.wait(lambda: "50 points" in b.text(b.find("#upload-status")), 15, "the cross-origin upload")
    w = b.find("#width")
    b.clear(w)
    b.type(w, "4")
    b.click(b.find("#submit"))
    b.wait(lambda: b.js("return document.getElementById('job-status').dataset.status") in
           ("succeeded", "failed", "cancelled"), 30, "the cross-origin job")
    check(b.js("return document.getElementById('job-status').dataset.status") == "succeeded",
          "a job runs from a page on another origin, with the token")
    nbars = b.js("return document.querySelectorAll('#chart rect.bar').length")
    check(nbars > 0 and nbars == int(b.js("return document.getElementById('chart').dataset.buckets")),
          "its chart is drawn (%d bars)" % nbars)

    # the guide's fetch() example, as written, but for where the daemon is
    snippet = re.sub(r'(const HISTD\s*=\s*)"[^"]*"', r'\1"%s"' % d.base, code)
    snippet = re.sub(r'(const TOKEN\s*=\s*)"[^"]*"', r'\1"%s"' % TOKEN, snippet)
    got = b.js_async("""
        const done = arguments[arguments.length - 1];
        console.log = (x) => done({value: x});
        window.addEventListener('unhandledrejection', (e) => done({error: String(e.reason)}));
        try { (0, eval)(arguments[0]); } catch (e) { done({error: String(e)}); }
    """, snippet)
    check(got.get("value") == want, "the guide's fetch() example prints %s (wanted %s)" % (got, want))

    # a page on an origin not on the list cannot read the API
    b.get("%s/?api=%s" % (other, d.base))
    b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15, "the other page to ask about ?api=")
    b.click(b.find("#api-confirm-use"))
    b.wait(lambda: b.text(b.find("#engine")) in ("offline", "token needed"), 15, "the page on the other origin to fail")
    check(b.text(b.find("#engine")) == "offline", "a page at %s cannot reach the API" % other)


if __name__ == "__main__":
    main()
