#!/usr/bin/env python3
"""Writes the hardening corpus: one file of raw request bytes per hostile
request, in corpus/, and corpus/EXPECT, one line per file:

    NAME problem      histd answers 4xx/5xx application/problem+json with a detail
    NAME library      libmicrohttpd answers by itself (documented in api/openapi.yaml)
    NAME closed       the connection is closed without an answer (documented too)

Run it again after changing it; the files are kept in git so that the
suite replays the same bytes everywhere. The daemon the suite starts uses
TOKEN, ORIGIN and LIMITS.
"""
import json
import os
import shutil

TOKEN = "hardening-token-0f3a"
ORIGIN = "https://lab.example.org"
# the daemon's limits, small so that the requests over them stay small
LIMITS = ["--max-upload-bytes", "256k", "--max-points", "1000", "--max-sync-points", "1000",
          "--connection-memory", "16k", "--header-timeout", "2", "--min-body-rate", "1000"]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
AUTH = "Authorization: Bearer " + TOKEN
cases = []


def add(name, data, expect="problem"):
    if isinstance(data, str):
        data = data.encode("latin-1")
    cases.append((name, data, expect))


def req(method, path, body=b"", headers=(), host="127.0.0.1", auth=True, ctype=None, cl=True, close=True):
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: " + host]
    if auth:
        lines.append(AUTH)
    if ctype:
        lines.append("Content-Type: " + ctype)
    lines += list(headers)
    if isinstance(body, str):
        body = body.encode("latin-1")
    if cl and (body or method in ("POST",)):
        lines.append("Content-Length: %d" % len(body))
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


DS = "a" * 64
JOB = "b" * 32

# ---- request lines -------------------------------------------------------------------
add("line-garbage", "GARBAGE\r\n\r\n", "closed")
add("line-garbage-no-crlf", "GARBAGE", "closed")
add("line-binary", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(64)), "closed")
add("line-nuls", b"\x00" * 64 + b"\r\n\r\n", "closed")
add("line-method-only", "GET\r\n\r\n", "closed")
add("line-http09", "GET /\r\n\r\n", "library")
add("line-version-9.9", "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-version-2.0", "GET /healthz HTTP/2.0\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-version-0.9", "GET /healthz HTTP/0.9\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-version-short", "GET /healthz HTTP/1\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-version-lower", "GET /healthz http/1.1\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-version-junk", "GET /healthz HTTP/1.1x\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-h2-preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "library")
add("line-uri-huge", "GET /" + "a" * 40000 + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "library")
add("line-lower-method", req("get", "/v1/kernels"))
add("line-unknown-method", req("FROB", "/v1/kernels"))
add("line-trace", req("TRACE", "/v1/kernels"))
add("line-connect", req("CONNECT", "127.0.0.1:22"))
add("line-patch", req("PATCH", "/v1/jobs/" + JOB, "{}", ctype="application/json"))
add("line-put", req("PUT", "/v1/datasets/" + DS, "1,2,3\n", ctype="text/csv"))
add("line-absolute-uri", req("GET", "http://evil.example/v1/kernels"))
add("line-asterisk", req("OPTIONS", "*"))
add("line-nul-in-path", req("GET", "/v1/jobs/%00"))
add("line-raw-nul-in-path", b"GET /v1/jobs/a\x00b HTTP/1.1\r\nHost: 127.0.0.1\r\n" + AUTH.encode() + b"\r\n\r\n")
add("line-tab-separated", "GET\t/healthz\tHTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "closed")

# ---- paths and queries -----------------------------------------------------------------
for i, path in enumerate(["/nowhere", "/v1", "/v1/", "/v2/jobs", "/v1/jobs/" + JOB + "/result/x",
                          "/v1/datasets/" + "f" * 64, "/v1/datasets/not-hex", "/v1/datasets/" + "A" * 64,
                          "/v1/jobs/" + JOB, "/v1/jobs/" + "z" * 500, "/v1/datasets/" + "a" * 127,
                          "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/static/../../etc/passwd",
                          "/..%2f..%2fetc%2fpasswd", "/v1/jobs/../../etc/passwd", "/index.html/..",
                          "//etc/passwd", "/%00", "/%ff%fe", "/v1/jobs/%ff/result",
                          "/v1/datasets/" + "a" * 64 + "%00", "/.git/config", "/app.js.map"]):
    add("path-%02d" % i, req("GET", path))
for i, q in enumerate(["wait=-1", "wait=nan", "wait=inf", "wait=1e999", "wait=abc", "wait=",
                       "wait=0x10"]):
    add("query-wait-%d" % i, req("GET", "/v1/jobs/%s?%s" % (JOB, q)))
for i, q in enumerate(["limit=0", "limit=-5", "limit=100001", "limit=1e3", "limit=abc",
                       "limit=99999999999999999999999", "limit=", "limit=10%00"]):
    add("query-limit-datasets-%d" % i, req("GET", "/v1/datasets?" + q))
    add("query-limit-jobs-%d" % i, req("GET", "/v1/jobs?" + q.replace("100001", "10001")))
for i, q in enumerate(["format=xml", "format=", "format=CSV%00", "format=json&format=csv"]):
    add("query-format-%d" % i, req("GET", "/v1/jobs/%s/result?%s" % (JOB, q)))
add("query-upload-format", req("POST", "/v1/datasets?format=png", "1,2,3\n"))
add("query-upload-name-long", req("POST", "/v1/datasets?name=" + "n" * 300, "1,2,3\n", ctype="text/csv"))
add("query-upload-name-utf8", req("POST", "/v1/datasets?name=%ff%fe", "1,2,3\n", ctype="text/csv"))
add("query-upload-name-nul", req("POST", "/v1/datasets?name=a%00b", "1,2,3\n", ctype="text/csv"))

# ---- headers ---------------------------------------------------------------------------
add("hdr-no-colon", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nthis is not a header\r\n\r\n", "library")
add("hdr-space-before-colon", "GET /v1/kernels HTTP/1.1\r\nHost : 127.0.0.1\r\n%s\r\n\r\n" % AUTH)
add("hdr-empty-name", "GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n: empty\r\n\r\n")
add("hdr-huge-value", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + "v" * 40000 + "\r\n\r\n", "library")
add("hdr-many", "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + "".join("X-%d: %d\r\n" % (i, i) for i in range(3000)) + "\r\n", "library")
add("hdr-obs-fold", "GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n evil.example\r\n%s\r\n\r\n" % AUTH)
# (a raw NUL inside a header line: libmicrohttpd cuts the value there, unseen by histd)
add("hdr-nul-in-value", b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Nul: a\x00b\r\n\r\n")
add("hdr-bare-cr", "GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\rX-A: b\r\n\r\n")
for i, host in enumerate(["evil.example", "evil.example:8080", "", "a b", "127.0.0.1.nip.io",
                          "localhost.evil.example", "user@127.0.0.1", "[::1", "127.0.0.1:8080:80",
                          "xn--80ak6aa92e.com", "evil.example.", "%31%32%37.0.0.1",
                          "0x7f.0.0.1", "2130706433", "::ffff:7f00:1"]):
    add("hdr-host-%02d" % i, req("GET", "/v1/kernels", host=host))
add("hdr-host-missing", "GET /v1/kernels HTTP/1.1\r\n%s\r\n\r\n" % AUTH)
add("hdr-host-twice", "GET /v1/kernels HTTP/1.1\r\nHost: evil.example\r\nHost: 127.0.0.1\r\n%s\r\n\r\n" % AUTH)
add("hdr-expect-bad", req("POST", "/v1/jobs", '{"dataset":"%s","bucket_width":1}' % DS, ctype="application/json",
                          headers=["Expect: 200-ok"]))

# ---- framing (smuggling) ---------------------------------------------------------------
SMUG = "GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
for i, (hdrs, body) in enumerate([
        (["Content-Length: 2", "Content-Length: 60"], "{}" + SMUG),
        (["Content-Length: 2", "Content-Length: 2"], "{}" + SMUG),
        (["Content-Length: 2", "Transfer-Encoding: chunked"], "2\r\n{}\r\n0\r\n\r\n" + SMUG),
        (["Transfer-Encoding: chunked", "Content-Length: 2"], "2\r\n{}\r\n0\r\n\r\n" + SMUG),
        (["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"], "2\r\n{}\r\n0\r\n\r\n"),
        (["Transfer-Encoding: gzip"], "{}"),
        (["Transfer-Encoding: gzip, chunked"], "2\r\n{}\r\n0\r\n\r\n"),
        (["Transfer-Encoding: chunked, identity"], "2\r\n{}\r\n0\r\n\r\n"),
        (["Transfer-Encoding: xchunked"], "2\r\n{}\r\n0\r\n\r\n"),
        (["Transfer-Encoding:  identity"], "{}"),
        (["Content-Length: 2", "Content-length: 3"], "{}x"),
        (["Content-Length: 2", "Transfer-Encoding: identity"], "{}"),
]):
    add("smuggle-%02d" % i, req("POST", "/v1/jobs", body, ctype="application/json", headers=hdrs, cl=False))
for i, cl in enumerate(["-1", "abc", "1e3", "+5", "0x10", "5, 5", " ", "18446744073709551616",
                        "99999999999999999999999999"]):
    add("cl-%d" % i, req("POST", "/v1/jobs", "{}", ctype="application/json", headers=["Content-Length: " + cl],
                         cl=False), "library")
add("cl-over-limit", req("POST", "/v1/datasets", "", ctype="text/csv", headers=["Content-Length: 5000000"], cl=False))
add("cl-truncated", req("POST", "/v1/jobs", '{"dataset"', ctype="application/json",
                        headers=["Content-Length: 500"], cl=False), "closed")
for i, body in enumerate(["zz\r\n{}\r\n0\r\n\r\n", "2\r\n{}0\r\n\r\n", "ffffffffffffffffff\r\n{}\r\n0\r\n\r\n",
                          "-2\r\n{}\r\n0\r\n\r\n", "2;\x00ext\r\n{}\r\n0\r\n\r\n"]):
    add("chunk-%d" % i, req("POST", "/v1/jobs", body, ctype="application/json",
                            headers=["Transfer-Encoding: chunked"], cl=False), "library")
add("chunk-over-limit", req("POST", "/v1/datasets", "".join("4000\r\n" + "1" * 0x4000 + "\r\n" for _ in range(20))
                            + "0\r\n\r\n", ctype="text/csv", headers=["Transfer-Encoding: chunked"], cl=False))

# ---- auth --------------------------------------------------------------------------------
for i, a in enumerate([None, "Bearer", "Bearer ", "Bearer wrong", "Basic aGk6aG8=", "bearer " + TOKEN + "x",
                       "Bearer " + TOKEN[:-1], "Bearer " + "t" * 5000, "Token " + TOKEN,
                       "Bearer " + TOKEN + " extra", "Bearer %s%%00" % TOKEN, "Digest username=x"]):
    hdrs = ["Authorization: " + a] if a is not None else []
    add("auth-%02d" % i, req("GET", "/v1/datasets", headers=hdrs, auth=False))
add("auth-post-no-token", req("POST", "/v1/jobs", '{"dataset":"%s","bucket_width":1}' % DS,
                              ctype="application/json", auth=False))
add("auth-delete-no-token", req("DELETE", "/v1/datasets/" + DS, auth=False))
add("auth-metrics-no-token", req("GET", "/metrics", auth=False))

# ---- CORS probes ---------------------------------------------------------------------------
for i, origin in enumerate(["http://evil.example", "null", ORIGIN + ".evil.example", "HTTPS://LAB.EXAMPLE.ORG",
                            "https://lab.example.org:443.evil", "file://", "http://127.0.0.1.evil.example",
                            "https://evil.example, " + ORIGIN]):
    add("cors-post-%d" % i, req("POST", "/v1/datasets", "1,2,3\n", ctype="text/plain", headers=["Origin: " + origin]))
    add("cors-delete-%d" % i, req("DELETE", "/v1/jobs/" + JOB, headers=["Origin: " + origin]))
add("cors-form-post", req("POST", "/v1/jobs", "dataset=x&bucket_width=1", ctype="application/x-www-form-urlencoded",
                          headers=["Origin: http://evil.example"], auth=False))

# ---- content types ----------------------------------------------------------------------------
for i, ct in enumerate(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                        "application/jsonx", "json", ""]):
    add("ctype-jobs-%d" % i, req("POST", "/v1/jobs", '{"dataset":"%s","bucket_width":1}' % DS, ctype=ct or None))
    add("ctype-hist-%d" % i, req("POST", "/v1/histogram", '{"points":[[0,0,0],[1,1,1]],"bucket_width":1}',
                                 ctype=ct or None))
for i, ct in enumerate(["image/png", "application/x-www-form-urlencoded", "text/html", "application/xml"]):
    add("ctype-upload-%d" % i, req("POST", "/v1/datasets", "1,2,3\n", ctype=ct))

# ---- JSON bodies ------------------------------------------------------------------------------
J = "application/json"
for i, body in enumerate([
        "", "{", "}", "[]", "null", "42", '"str"', "{}", "{,}", '{"a":}', "{'a':1}", '{"dataset":1}',
        '{"dataset":"%s"}' % DS, '{"dataset":"%s","bucket_width":"1"}' % DS,
        '{"dataset":"%s","bucket_width":1e400}' % DS, '{"dataset":"%s","bucket_width":-1}' % DS,
        '{"dataset":"%s","bucket_width":0}' % DS, '{"dataset":"%s","bucket_width":NaN}' % DS,
        '{"dataset":"%s","bucket_width":Infinity}' % DS, '{"dataset":"%s","bucket_width":1,"buckets":1e20}' % DS,
        '{"dataset":"%s","bucket_width":1,"buckets":-1}' % DS, '{"dataset":"%s","bucket_width":1,"buckets":1.5}' % DS,
        '{"dataset":"%s","bucket_width":1,"block_size":-32}' % DS,
        '{"dataset":"%s","bucket_width":1,"kernel":"%s"}' % (DS, "k" * 10000),
        '{"dataset":"%s","bucket_width":1,"kernel":"cpu\\u0000x"}' % DS,
        '{"dataset":"%s\\u0000","bucket_width":1}' % DS,
        '{"dataset":"%s","bucket_width":1,"devices":[999]}' % DS,
        '{"dataset":"%s","bucket_width":1,"devices":"all"}' % DS,
        '{"dataset":"%s","bucket_width":1,"precision":"exactish"}' % DS,
        '{"dataset":"%s","bucket_width":1,"extra":true}' % DS,
        '{"dataset":"%s","bucket_width":1,"bucket_width":2}' % "0" * 1,
        "[" * 20000 + "]" * 20000, '{"a":' * 10000 + "1" + "}" * 10000,
        '{"dataset":"\\ud800","bucket_width":1}', '{"dataset":"\xff\xfe","bucket_width":1}',
        '\xef\xbb\xbf{"dataset":"%s","bucket_width":1}' % DS, '{"dataset":"%s","bucket_width":1} trailing' % DS,
        '{"dataset":"%s","bucket_width":1}\x00' % DS, '{"dataset":"%s","bucket_width":' % DS + "9" * 5000 + "}",
        '{"dataset":"' + "d" * 20000 + '","bucket_width":1}',
]):
    add("json-jobs-%02d" % i, req("POST", "/v1/jobs", body, ctype=J))
for i, body in enumerate([
        '{"points":[],"bucket_width":1}', '{"points":[[0,0]],"bucket_width":1}',
        '{"points":[[0,0,0,0,0]],"bucket_width":1}', '{"points":[["a",0,0]],"bucket_width":1}',
        '{"points":[[1e400,0,0],[0,0,0]],"bucket_width":1}', '{"points":[[NaN,0,0],[0,0,0]],"bucket_width":1}',
        '{"points":[[0,0,0],[1,1,1]]}', '{"points":[[0,0,0],[1,1,1]],"bucket_width":1,"x":[1]}',
        '{"x":[0,1],"y":[0,1],"bucket_width":1}', '{"x":[0,1],"y":[0,1],"z":[0],"bucket_width":1}',
        '{"x":[0,1],"y":[0,1],"z":[0,1],"\\u0070oints":[[5,5,5]],"bucket_width":1}',
        '{"points":[[0,0,0],[1,1,1]],"points":[[0,0,0]],"bucket_width":1}',
        '{"points":' + "[[0,0,0]," * 1001 + "[0,0,0]" + "]" + ',"bucket_width":1}',
        '{"points":[[0,0,0],[1,1,1]],"bucket_width":1,"kernel":"cpu\\u0000"}',
        '{"points":[[0,0,0],[1,1,1]],"bucket_width":1e-320}',
        '{"points":[[0,0,0],[1e308,1e308,1e308]],"bucket_width":1e-300,"buckets":16777217}',
        '{"points":[[0,0,0],[1,1,1]],"bucket_width":1,"threads":100000}',
        '{"points":[[0,0,0],[1,1,1]' + ']' * 20 + "}",
        '{"points":[[0,0,0],[1,1,1]],"bucket_width":1,"kernel":"naive"}',
        '{"p\\oints":[[0,0,0],[1,1,1]],"bucket_width":1}',
]):
    add("json-hist-%02d" % i, req("POST", "/v1/histogram", body, ctype=J))

# ---- uploads ------------------------------------------------------------------------------------
for i, (ct, body) in enumerate([
        (J, '{"points":[[0,0]]}'), (J, '{"points":[]}'), (J, '{"x":[1],"y":[1]}'), (J, '{"pts":[[0,0,0]]}'),
        (J, '{"points":[[1e999,0,0]]}'), (J, '{"points":[[0,0,0]]'), (J, '{"points":[[0,0,0]],"x":[1],"y":[1],"z":[1]}'),
        (J, '{"\\u0070oints":[[0,0,0]],"x":[1],"y":[1],"z":[1]}'), (J, '{"points":[[0,0,0]],"points":[[1,1,1]]}'),
        (J, '{"points":' + "[" * 1000 + "]" * 1000 + "}"),
        ("text/csv", "1,2\n"), ("text/csv", "1,2,3,4,5\n"), ("text/csv", "nan,1,2\n"), ("text/csv", "inf,1,2\n"),
        ("text/csv", "1e999,0,0\n"), ("text/csv", "a,b,c\nd,e,f\n"), ("text/csv", "\x00\x00\x00"), ("text/csv", ""),
        ("text/csv", "1,2,3\n" * 1001), ("text/csv", "\xff\xfe1,2,3\n"),
        ("chemical/x-xyz", "5\ncomment\nC 0 0 0\n"), ("chemical/x-xyz", "x\n\nC 0 0 0\n"),
        ("chemical/x-xyz", "-1\n\n"), ("chemical/x-xyz", "99999999999999999999\n\nC 0 0 0\n"),
        ("application/x-float64", "\x00" * 23), ("application/x-float64", "\x00" * 25),
        ("application/x-float64", "\x00\x00\x00\x00\x00\x00\xf8\x7f" * 3),
        ("application/x-float32", "\x00\x00\xc0\x7f" * 3), ("application/x-float32", "\x00" * 13),
        ("application/x-float64", "\x00" * (24 * 1001)),
]):
    add("upload-%02d" % i, req("POST", "/v1/datasets", body, ctype=ct))

# ---- deletes and job routes on things that do not exist --------------------------------------------
add("delete-dataset-missing", req("DELETE", "/v1/datasets/" + DS))
add("delete-job-missing", req("DELETE", "/v1/jobs/" + JOB))
add("result-missing", req("GET", "/v1/jobs/%s/result" % JOB))
add("delete-collection", req("DELETE", "/v1/datasets"))
add("post-kernels", req("POST", "/v1/kernels", "{}", ctype=J))
add("post-healthz", req("POST", "/healthz", "{}", ctype=J))
add("delete-root", req("DELETE", "/"))


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    names = set()
    with open(os.path.join(OUT, "EXPECT"), "w") as f:
        for name, data, expect in cases:
            assert name not in names, name
            names.add(name)
            with open(os.path.join(OUT, name + ".http"), "wb") as g:
                g.write(data)
            f.write("%s %s\n" % (name, expect))
    with open(os.path.join(OUT, "CONFIG.json"), "w") as f:
        json.dump({"token": TOKEN, "cors_origin": ORIGIN, "limits": LIMITS}, f)
    print("%d requests in %s" % (len(cases), OUT))


if __name__ == "__main__":
    main()
