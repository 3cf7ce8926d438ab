#!/usr/bin/env python3
"""The dashboard, in headless Chromium, against a stand-in for histd (this
file answers the dashboard's files and the few routes it calls on load)
that serves a job no small test could make for real: counts above 2^53.

JSON.parse reads numbers into doubles, which round integers above 2^53;
histd writes exact 64-bit counts. The dashboard reads every answer through
the JavaScript client, whose parseJSON (api/js/exact-json.js) keeps such
integers as BigInts.

1. The parser alone, in the page: integers beyond Number.MAX_SAFE_INTEGER
   become BigInts with every digit (2^53 + 1, 2^64 - 1, negatives), the
   rest stay Numbers (2^53 - 1, floats, exponents), digits inside strings
   are untouched, and the result equals JSON.parse's otherwise.
2. The dashboard end to end: a stand-in for histd (the dashboard's files
   and the few routes it calls on load, answered here) serves a job whose
   counts, overflow and total are above 2^53 (a real histogram needs
   > 134 million points to get there); the summary, the bars' data-count
   and the bins table show every digit.
3. The plot exported for a paper: the SVG and PNG buttons give a
   standalone figure (styles inlined, white background) with the axes'
   labels and units and a caption line: dataset, N, box, bins, kernel,
   date. The PNG is the SVG drawn at 3x.
4. Overlay: a pinned result is drawn over the next one shown, as a step
   line with a legend entry; never over itself; Clear removes it.

Exit 77 (skip) only when chromium is not installed.
"""
import http.server
import json
import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

BIG = [2 ** 53 + 1, 12345678901234567891, 7]
OVERFLOW = 2 ** 53 + 3
TOTAL = sum(BIG) + OVERFLOW  # < 2^64
JOB_ID = "b" * 32
JOB2 = "d" * 32  # a small histogram, to overlay the big one on
DASH = os.path.join(h.ROOT, "api", "dashboard")
JS = os.path.join(h.ROOT, "api", "js")  # the client, js/ beside the page


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    h.log("ok -", what)


def job_text(job_id=JOB_ID, counts=BIG, overflow=OVERFLOW):
    """The job document as histd writes it: exact integers, no rounding."""
    total = sum(counts) + overflow
    result = ('{"n":200000000,"statistic":"histogram","bins":"width","bucket_width":1,'
              '"buckets":3,"edges":[0,1,2,3],"counts":[%s],"below":0,"overflow":%d,'
              '"total":%d,"kernel":"cpu","block_size":0,"precision":"exact","exact":true,'
              '"device":"cpu: 12345678901234567890 threads","timing_ms":{"queue":0,"parse":1,'
              '"transfer":0,"kernel":2,"total":3}}' % (",".join(map(str, counts)), overflow, total))
    return ('{"id":"%s","status":"succeeded","dataset":"%s","n":200000000,'
            '"params":{"bucket_width":1,"buckets":3,"kernel":"cpu","precision":"exact"},'
            '"progress":1,"created_at":"2026-01-01T00:00:00.000Z",'
            '"started_at":"2026-01-01T00:00:00.000Z","finished_at":"2026-01-01T00:00:01.000Z",'
            '"timing_ms":{"queue":0,"parse":1,"transfer":0,"kernel":2,"total":3},'
            '"device":"cpu","result":%s}' % (job_id, "c" * 64, result))


ROUTES = {
    "/v1/kernels": '{"kernels":[{"name":"auto","summary":"auto","engine":"any","available":true},'
                   '{"name":"cpu","summary":"cpu","engine":"cpu","available":true}]}',
    "/v1/devices": '{"engine":"cpu","cpu":{"threads":2},"devices":[]}',
    "/v1/datasets": '{"datasets":[]}',
    "/v1/jobs": '{"jobs":[]}',
    "/v1/jobs/" + JOB_ID: None,
    "/v1/jobs/" + JOB2: job_text(JOB2, [5, 10, 3], 0),
}
TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


class StandIn(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?")[0]
        if path in ROUTES:
            body, ctype = (ROUTES[path] or job_text()).encode(), "application/json"
        else:
            name = "index.html" if path == "/" else path.lstrip("/")
            full = os.path.join(JS, name[3:]) if name.startswith("js/") else os.path.join(DASH, name)
            if "/" in name.removeprefix("js/") or not os.path.isfile(full):
                self.send_error(404)
                return
            with open(full, "rb") as f:
                body = f.read()
            ctype = TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


PARSER_CASES = r"""
const finish = arguments[arguments.length - 1];
import('./js/exact-json.js').then(({ parseJSON: P }) => {
const out = {};
const a = P('{"c":[9007199254740993,18446744073709551615,-9007199254740993,9007199254740991,' +
            '1.5e300,1e20,12345678901234567890.5,0],"s":"12345678901234567890","e":"\\"9007199254740993"}');
out.types = a.c.map((v) => typeof v);
out.values = a.c.map(String);
out.s = a.s;
out.e = a.e;
const plain = '{"x":[1,2.5,null,true,"a\\u0000b"],"y":{"z":-3e-7}}';
out.same = JSON.stringify(P(plain)) === JSON.stringify(JSON.parse(plain));
let threw = false;
try { P('{"x": 9007199254740993'); } catch (e) { threw = e instanceof SyntaxError; }
out.threw = threw;
finish(out);
}, (e) => finish({ error: String(e) }));
"""


def export_figures(b):
    import base64
    import struct
    b.js(h.CAPTURE_BLOBS)
    b.click(b.find("#dl-svg"))
    b.wait(lambda: b.js("return window.__blobs.length") >= 1, 10, "the SVG export")
    fig = b.js_async(h.READ_LAST_BLOB)
    text = fig["text"]
    check(fig["type"] == "image/svg+xml" and text.startswith("<svg") and
          'xmlns="http://www.w3.org/2000/svg"' in text, "SVG: a standalone svg document")
    check('fill="#ffffff"' in text and "style=" in text and "class=" not in text,
          "SVG: a white background, the page's CSS inlined")
    for want in ("dataset " + "c" * 8, "N = 200,000,000", "open boundaries", "bins 1 × 3",
                 "kernel cpu, exact", "2026-01-01", "input units", "pairs"):
        check(want in text, "SVG: caption and axes say %r" % want)
    vb = [float(v) for v in text.split('viewBox="', 1)[1].split('"', 1)[0].split()]
    n = b.js("return window.__blobs.length")
    b.click(b.find("#dl-png"))
    b.wait(lambda: b.js("return window.__blobs.length") >= n + 2, 10, "the PNG export")
    png = b.js_async(h.READ_LAST_BLOB)
    head = base64.b64decode(png["head"])
    w, hgt = struct.unpack(">II", head[16:24])
    check(png["type"] == "image/png" and head[:8] == b"\x89PNG\r\n\x1a\n" and
          (w, hgt) == (int(vb[2]) * 3, int(vb[3]) * 3),
          "PNG: %dx%d, the SVG (%gx%g) at 3x" % (w, hgt, vb[2], vb[3]))


def overlay(b):
    """Pin the big result, show the small one: the big one is drawn over
    it, as a line with a legend entry; Clear removes it."""
    b.click(b.find("#overlay-add"))
    b.wait(lambda: not b.js("return document.getElementById('overlay-clear').hidden"), 5,
           "the overlay holds a result")
    check(b.js("return document.getElementById('overlay-add').disabled"),
          "a result is pinned once")
    b.js("location.hash = '#job=%s'" % JOB2)
    b.wait(lambda: b.attr(b.find("#chart .bar"), "data-count") == "5", 15, "the small job")
    paths = b.find_all("#chart path.overlay")
    check(len(paths) == 1 and b.attr(paths[0], "data-job") == JOB_ID and
          b.attr(paths[0], "d").count("L") >= 5, "the pinned result is drawn as a step line")
    legend = [b.text(e) for e in b.find_all("#chart .overlay-legend text")]
    check(len(legend) == 2 and "(shown)" in legend[0] and "job dddddddd" in legend[0] and
          "job bbbbbbbb" in legend[1], "a legend names both: %s" % legend)
    b.click(b.find("#overlay-add"))
    check(len(b.find_all("#chart path.overlay")) == 1, "the one on show is not drawn over itself")
    b.click(b.find("#overlay-clear"))
    check(len(b.find_all("#chart path.overlay")) == 0 and
          b.js("return document.getElementById('overlay-clear').hidden"), "Clear removes them")


def main():
    chromium = h.find_chromium()
    chromedriver = h.find_chromedriver()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d" % server.server_address[1]
    try:
        with h.Browser(chromium, chromedriver) as b:
            b.get(base + "/")
            b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the page connects")
            r = b.js_async(PARSER_CASES)
            check("error" not in r, "the client's exact-json.js loads in the page: %s" % r.get("error"))
            check(r["types"] == ["bigint", "bigint", "bigint", "number", "number", "number",
                                 "number", "number"], "BigInts only beyond 2^53: %s" % r["types"])
            check(r["values"][:4] == ["9007199254740993", "18446744073709551615",
                                      "-9007199254740993", "9007199254740991"],
                  "every digit kept: %s" % r["values"][:4])
            check(r["s"] == "12345678901234567890" and r["e"] == '"9007199254740993',
                  "digits inside strings are not numbers")
            check(r["same"], "small numbers, floats, null, booleans, escapes: as JSON.parse")
            check(r["threw"], "malformed JSON still throws SyntaxError")

            b.get(base + "/#job=" + JOB_ID)
            b.wait(lambda: len(b.find_all("#chart .bar")) == 3, 15, "the job's three bars")
            counts = [b.attr(e, "data-count") for e in b.find_all("#chart .bar")]
            check(counts == [str(c) for c in BIG], "bars' data-count exact: %s" % counts)
            summary = b.text(b.find("#summary"))
            fmt = "{:,}".format
            for what, v in (("total", TOTAL), ("overflow", OVERFLOW)):
                check(fmt(v) in summary, "the summary shows %s %s exactly" % (what, fmt(v)))
            page = b.js("return document.getElementById('counts').textContent")
            for c in BIG[:2]:
                check(fmt(c) in page, "the bins table shows %s" % fmt(c))
            check(not b.js("return !document.getElementById('alert').hidden"), "no error shown")
            ticks = [b.text(e) for e in b.find_all("#chart .axis.y text:not(.label)")]
            check(ticks[-1] == "1.25e19" and all(len(t) <= 8 for t in ticks),
                  "the y axis reads counts beyond 10^15 in exponent form: %s" % ticks)
            export_figures(b)
            overlay(b)
    finally:
        server.shutdown()
    h.log("PASS")


if __name__ == "__main__":
    main()
