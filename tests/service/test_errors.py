"""test_errors.py -- every error path: 413 before the body, 400, 401, 404,
405, 409, 415, 422, 503; problem+json bodies with a sentence; CORS headers
on errors and preflights; the token; nothing stored by a bad request;
bad flags and environment values.

usage: test_errors.py HISTD_EXE
"""
import json
import random
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, encode, random_points  # noqa: E402

ORIGIN = "https://lab.example.org"


def problem(d, method, path, body=None, headers=None, status=None, contains=None):
    headers = dict(headers or {})
    headers.setdefault("Origin", ORIGIN)
    s, h, raw = d.request(method, path, body, headers)
    check(s == status, "%s %s: wanted %s, got %s: %r" % (method, path, status, s, raw[:300]))
    check(h.get("content-type", "").startswith("application/problem+json"), h)
    doc = json.loads(raw)
    check(doc["status"] == status and doc["type"] == "about:blank" and doc["title"], doc)
    check(len(doc["detail"]) > 10, doc)
    if contains:
        check(contains in doc["detail"], "%r not in %r" % (contains, doc["detail"]))
    check(h.get("access-control-allow-origin") == ORIGIN, "CORS on a %d: %s" % (status, h))
    return doc, h


def payload_files(d):
    return sorted(os.listdir(os.path.join(d.data_dir, "data", "payloads")))


def raw_exchange(port, head, body=b"", timeout=5):
    """Sends raw bytes, returns (seconds to first response byte, response)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    t0 = time.time()
    s.sendall(head + body)
    data = b""
    try:
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    return time.time() - t0, data


def test_sizes(exe):
    with Daemon(exe, args=["--max-upload-bytes", "4096", "--max-points", "100",
                           "--cors-origin", ORIGIN]) as d:
        # 413 from Content-Length alone: the body is never sent.
        took, resp = raw_exchange(
            d.port, b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
                    b"Content-Length: 10000000000\r\nOrigin: " + ORIGIN.encode() + b"\r\n\r\n")
        check(resp.startswith(b"HTTP/1.1 413"), resp[:100])
        check(b"access-control-allow-origin: " + ORIGIN.encode() in resp.lower(), resp)
        check(took < 3, "413 took %.1fs" % took)
        # Expect: 100-continue with too large a body: 413, no 100.
        took, resp = raw_exchange(
            d.port, b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
                    b"Expect: 100-continue\r\nContent-Length: 5000\r\n\r\n")
        check(resp.startswith(b"HTTP/1.1 413"), resp[:100])
        # A chunked body that outgrows the limit.
        chunk = b"1,2,3\n" * 200
        head = (b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/csv\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n")
        body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(5)) + b"0\r\n\r\n"
        took, resp = raw_exchange(d.port, head, body)
        check(resp.startswith(b"HTTP/1.1 413"), resp[:100])
        # A raw float64 body over --max-points: 413 at the headers.
        took, resp = raw_exchange(
            d.port, b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-float64"
                    b"\r\nContent-Length: 2424\r\n\r\n")
        check(resp.startswith(b"HTTP/1.1 413") and took < 3, resp[:100])
        # Too many points (under the byte limit): 413 with the limit named.
        problem(d, "POST", "/v1/datasets", "1,2,3\n" * 101, {"Content-Type": "text/csv"},
                413, "100 points")
        check(payload_files(d) == [], "nothing stored: %s" % payload_files(d))
        # The daemon still works.
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, s)
    print("413s: ok")


def test_bad_requests(exe):
    with Daemon(exe, args=["--cors-origin", "http://a.example, " + ORIGIN]) as d:
        good = d.upload(random_points(50, seed=7))
        files = payload_files(d)
        ds = good["id"]
        # Uploads that cannot be read: 400 or 415, and nothing is stored.
        problem(d, "POST", "/v1/datasets", "1,2\n3,4,5\n", {"Content-Type": "text/csv"}, 400,
                "line 1")
        problem(d, "POST", "/v1/datasets", '{"points": [[1,2,3], [4,5]]}',
                {"Content-Type": "application/json"}, 400)
        problem(d, "POST", "/v1/datasets", '{"points": [[1,2,3]', {"Content-Type": "application/json"}, 400)
        problem(d, "POST", "/v1/datasets", b"\x00" * 25, {"Content-Type": "application/x-float64"}, 400)
        problem(d, "POST", "/v1/datasets", "1,2,3\n", {"Content-Type": "image/png"}, 415)
        problem(d, "POST", "/v1/datasets?format=parquet", "1,2,3\n", {"Content-Type": "text/csv"}, 400)
        problem(d, "POST", "/v1/datasets", "1,2,nan\n", {"Content-Type": "text/csv"}, 400)
        problem(d, "POST", "/v1/datasets?name=%ff%fe", "1,2,3\n", {"Content-Type": "text/csv"},
                400, "UTF-8")
        problem(d, "POST", "/v1/datasets?name=" + "n" * 256, "1,2,3\n",
                {"Content-Type": "text/csv"}, 400, "255")
        problem(d, "POST", "/v1/datasets", "", {"Content-Type": "text/csv"}, 400)
        # Raw float64 streams to disk as it arrives: a NaN in the middle, a
        # length that is no multiple of 24, a client that leaves half-way.
        raw = bytearray(encode(random_points(5000, seed=8), "f64")[0])
        raw[24 * 3000 + 8:24 * 3000 + 16] = struct.pack("<d", float("nan"))
        problem(d, "POST", "/v1/datasets", bytes(raw), {"Content-Type": "application/x-float64"},
                400, "point 3001: y is not a finite number")
        raw[24 * 3000 + 8:24 * 3000 + 16] = struct.pack("<d", 1.0)
        raw[24 * 4999 + 16:] = struct.pack("<d", float("-inf"))
        problem(d, "POST", "/v1/datasets", bytes(raw), {"Content-Type": "application/x-float64"},
                400, "point 5000: z is not a finite number")
        problem(d, "POST", "/v1/datasets", bytes(raw[:-5]),
                {"Content-Type": "application/x-float64"}, 400)
        # It announced 10,000,000 points (240 MB) and sent 2,083: the disk
        # reserved for it follows what came, not what was announced.
        sock = socket.create_connection(("127.0.0.1", d.port), timeout=5)
        sock.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/x-float64\r\nContent-Length: 240000000\r\n\r\n" +
                     bytes(raw[:50000]))
        time.sleep(0.3)
        pay = os.path.join(d.data_dir, "data", "payloads")
        temps = [os.stat(os.path.join(pay, f)) for f in os.listdir(pay) if f.endswith(".tmp")]
        check(len(temps) == 1 and temps[0].st_blocks * 512 < (8 << 20),
              ("disk held by a stalled upload", [t.st_blocks * 512 for t in temps]))
        sock.close()
        deadline = time.time() + 5
        while payload_files(d) != files and time.time() < deadline:
            time.sleep(0.05)
        check(payload_files(d) == files, "bad uploads stored nothing: %s" % payload_files(d))
        s, _, doc = d.json("GET", "/v1/datasets")
        check(len(doc["datasets"]) == 1, doc)

        # Jobs: malformed (400), missing things (404), impossible values (422).
        J = "/v1/jobs"
        problem(d, "POST", J, "{not json", {"Content-Type": "application/json"}, 400, "JSON")
        problem(d, "POST", J, "[1,2]", {"Content-Type": "application/json"}, 400, "object")
        problem(d, "POST", J, "", {"Content-Type": "application/json"}, 400, "empty")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "colour": "red"}, None, 400,
                "colour")
        problem(d, "POST", J, {"dataset": ds}, None, 400, "bucket_width")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": "500"}, None, 400, "number")
        problem(d, "POST", J, {"dataset": 12, "bucket_width": 5}, None, 400, "dataset")
        problem(d, "POST", J, {"bucket_width": 5}, None, 400, "dataset")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 5, "buckets": "ten"}, None, 400)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 5, "kernel": 3}, None, 400)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 5, "devices": 0}, None, 400)
        problem(d, "POST", J, {"dataset": "0" * 64, "bucket_width": 5}, None, 404, "dataset")
        problem(d, "POST", J, {"dataset": "nope", "bucket_width": 5}, None, 404)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 0}, None, 422, "bucket_width")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": -3}, None, 422, "bucket_width")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1e-300}, None, 422)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "buckets": -1}, None, 422)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "buckets": 2.5}, None, 422)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "buckets": 1e12}, None, 422,
                "buckets")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "buckets": 16777217}, None, 422)
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "kernel": "quantum"}, None, 422,
                "quantum")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "precision": "sloppy"}, None,
                422, "precision")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "block_size": 33}, None, 422,
                "block_size")
        problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "devices": [7]}, None, 422,
                "GPU")
        # NaN and Infinity are not JSON: malformed.
        problem(d, "POST", J, '{"dataset": "%s", "bucket_width": NaN}' % ds,
                {"Content-Type": "application/json"}, 400)
        # A CUDA kernel on a daemon without GPU: 422 with a sentence (when
        # the registry has CUDA kernels in this build).
        s, _, kd = d.json("GET", "/v1/kernels")
        cuda = [k["name"] for k in kd["kernels"] if k["engine"] == "cuda"]
        s, _, dev = d.json("GET", "/v1/devices")
        if cuda and not dev["devices"]:
            problem(d, "POST", J, {"dataset": ds, "bucket_width": 1, "kernel": cuda[0]}, None,
                    422, "GPU")
        s, _, doc = d.json("GET", "/v1/jobs")
        check(doc["jobs"] == [], "no job was stored: %s" % doc)

        # /v1/histogram
        H = "/v1/histogram"
        problem(d, "POST", H, {"points": [[1, 2, 3]], "bucket_width": 0}, None, 422)
        problem(d, "POST", H, {"points": [[1, 2]], "bucket_width": 1}, None, 400,
                "points[0]: expected 3 numbers (x, y, z) or 4 (x, y, z, w), found 2")
        problem(d, "POST", H, {"points": [[1, 2, 3]]}, None, 400, "bucket_width")
        problem(d, "POST", H, {"x": [1], "y": [2], "bucket_width": 1}, None, 400)
        problem(d, "POST", H, {"points": [[0, 0, 0]] * 20001, "bucket_width": 1}, None, 413,
                "POST /v1/datasets")

        # Unknown things: 404; wrong methods: 405 with Allow.
        problem(d, "GET", "/v1/nothing", None, None, 404)
        problem(d, "POST", "/nothing", "x", None, 404)
        problem(d, "GET", "/v1/jobs/0123456789abcdef0123456789abcdef", None, None, 404)
        problem(d, "DELETE", "/v1/jobs/0123456789abcdef0123456789abcdef", None, None, 404)
        problem(d, "GET", "/v1/jobs/nope/result", None, None, 404)
        problem(d, "GET", "/v1/datasets/nope", None, None, 404)
        problem(d, "DELETE", "/v1/datasets/" + "a" * 64, None, None, 404)
        _, h = problem(d, "PUT", "/v1/jobs", "{}", None, 405)
        check(set(h["allow"].split(", ")) == {"GET", "HEAD", "POST", "OPTIONS"}, h["allow"])
        _, h = problem(d, "POST", "/v1/kernels", "{}", None, 405)
        check("GET" in h["allow"], h)
        _, h = problem(d, "PATCH", "/v1/datasets/" + ds, "{}", None, 405)
        check("DELETE" in h["allow"] and "GET" in h["allow"], h)
        problem(d, "GET", "/v1/jobs?limit=zero", None, None, 400, "limit")
        problem(d, "GET", "/v1/jobs/abc?wait=soon", None, None, 400, "wait")

        # 409: a result before the job succeeded; deleting a busy dataset.
        big = d.upload(random_points(200000, seed=11), "f64")["id"]
        job = d.submit(big, bucket_width=10, kernel="cpu-reference")
        problem(d, "GET", "/v1/jobs/%s/result" % job["id"], None, None, 409)
        problem(d, "DELETE", "/v1/datasets/" + big, None, None, 409, "cancel")
        s, _, doc = d.json("DELETE", "/v1/jobs/" + job["id"])
        check(s in (200, 202), s)
        done = d.wait_job(job["id"], timeout=10)
        check(done["status"] == "cancelled", done)
        problem(d, "GET", "/v1/jobs/%s/result" % job["id"], None, None, 409, "cancelled")
        s, _, _ = d.request("DELETE", "/v1/datasets/" + big)
        check(s == 204, s)

        # CORS: preflight for a listed origin, none for others, on success too.
        s, h, body = d.request("OPTIONS", "/v1/jobs", headers={
            "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type"})
        check(s == 204 and h["access-control-allow-origin"] == ORIGIN, (s, h))
        check("POST" in h["access-control-allow-methods"], h)
        check("authorization" in h["access-control-allow-headers"].lower(), h)
        check("origin" in h.get("vary", "").lower(), h)
        s, h, _ = d.request("GET", "/v1/kernels", headers={"Origin": "http://a.example"})
        check(h.get("access-control-allow-origin") == "http://a.example", h)
        s, h, _ = d.request("GET", "/v1/kernels", headers={"Origin": "https://evil.example"})
        check("access-control-allow-origin" not in h, h)
        s, h, _ = d.request("OPTIONS", "/v1/nothing", headers={"Origin": ORIGIN})
        check(s == 404 and h["access-control-allow-origin"] == ORIGIN, (s, h))
    print("400/404/405/409/415/422 and CORS: ok")


def test_conflicting_fields(exe):
    """A key given twice in any object of a JSON body is refused (400), in
    every body the daemon parses; so are per_frame with within, and
    topology on /v1/histogram (no stored dataset to name); nothing is
    stored."""
    with Daemon(exe, args=["--cors-origin", ORIGIN]) as d:
        ds = d.upload(random_points(20, seed=12))["id"]
        J, H = "/v1/jobs", "/v1/histogram"
        ctype = {"Content-Type": "application/json"}
        for path, body in (
                (J, '{"dataset": "%s", "bucket_width": 1, "bucket_width": 2}' % ds),
                (J, '{"dataset": "%s", "bucket_width": 1, "bucket\\u005fwidth": 2}' % ds),
                (J, '{"dataset": "%s", "dataset": "%s", "bucket_width": 1}' % (ds, ds)),
                (J, '{"dataset": "%s", "bucket_width": 1, "box": [{"L": 1, "L": 2}]}' % ds),
                (H, '{"points": [[0,0,0],[1,1,1]], "bucket_width": 1, "kernel": "cpu", '
                    '"kernel": "cpu-reference"}'),
                (H, '{"points": [[0,0,0],[1,1,1]], "bucket_width": 1, "edges": [{"a": [], '
                    '"a": 1}]}')):
            doc, _ = problem(d, "POST", path, body, ctype, 400, "twice")
        # fields that cannot go together, or not on this route: 400 too
        pts = [[0, 0, 0], [1, 1, 1]]
        problem(d, "POST", J, {"dataset": ds, "within": 5, "per_frame": True}, None, 400,
                "per_frame")
        problem(d, "POST", H, {"points": pts, "within": 5, "per_frame": True}, None, 400,
                "per_frame")
        problem(d, "POST", H, {"points": pts, "bucket_width": 1, "topology": ds}, None, 400,
                "topology")
        s, _, doc = d.json("GET", "/v1/jobs")
        check(s == 200 and doc["jobs"] == [], "no job was stored: %s" % doc)
    print("a key given twice, per_frame with within, topology on /v1/histogram: 400")


def test_delete_in_use(exe):
    """A dataset that a queued job reads as dataset_b or as topology cannot
    be deleted (409), as for its dataset; once the jobs are gone, 204."""
    with Daemon(exe, args=["--workers", "1", "--cors-origin", ORIGIN]) as d:
        big = d.upload(random_points(200000, seed=13), "f64")["id"]
        pts = random_points(30, seed=14)
        a = d.upload(pts, "f64")["id"]
        b = d.upload(random_points(31, seed=15), "f64")["id"]
        xyz = "30\nnames\n" + "".join("O %r %r %r\n" % p for p in pts)
        s, _, names = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
        check(s == 201, (s, names))
        # one worker, busy for minutes: the jobs behind it stay queued
        blocker = d.submit(big, bucket_width=10, kernel="cpu-reference")
        d.wait_running(blocker["id"])
        cross = d.submit(a, dataset_b=b, bucket_width=10, buckets=10)
        named = d.submit(a, bucket_width=10, buckets=10, select_a="element:O",
                         topology=names["id"])
        for used in (b, names["id"]):
            problem(d, "DELETE", "/v1/datasets/" + used, None, None, 409, "cancel")
        for j in (cross, named):
            s, _, doc = d.json("DELETE", "/v1/jobs/" + j["id"])
            check(s == 200 and doc["status"] == "cancelled", (s, doc))
        d.cancel_running(blocker["id"])
        for used in (b, names["id"], a, big):
            s, _, _ = d.request("DELETE", "/v1/datasets/" + used)
            check(s == 204, (used, s))
    print("a dataset a queued job reads as dataset_b or topology: 409")


def test_garbage(exe):
    """Mutated bodies and raw garbage: every answer is a problem or a
    result, and the daemon lives on."""
    rng = random.Random(5)
    with Daemon(exe) as d:
        ds = d.upload(random_points(30, seed=9))["id"]
        hist = json.dumps({"points": [list(p) for p in random_points(40, seed=10)],
                           "bucket_width": 100, "buckets": 20})
        soa = json.dumps({"x": [1, 2, 3], "y": [4, 5, 6], "z": [7, 8, 9], "bucket_width": 1})
        job = json.dumps({"dataset": ds, "bucket_width": 100, "kernel": "cpu"})
        seen = {}
        for i in range(400):
            path, base = [("/v1/histogram", hist), ("/v1/histogram", soa), ("/v1/jobs", job),
                          ("/v1/datasets", hist)][i % 4]
            b = bytearray(base.encode())
            for _ in range(rng.randint(1, 4)):
                op, at = rng.randrange(3), rng.randrange(len(b))
                if op == 0:
                    b[at] = rng.choice(b'{}[],:"\\0123456789.eE+-nulltrue \x00\xff')
                elif op == 1:
                    del b[at:at + rng.randint(1, 8)]
                else:
                    b[at:at] = bytes(rng.choice(b'{}[],:"0123456789') for _ in range(rng.randint(1, 4)))
            s, h, raw = d.request("POST", path, bytes(b), {"Content-Type": "application/json"})
            seen[s] = seen.get(s, 0) + 1
            check(s in (200, 201, 202, 400, 404, 413, 422), (path, s, raw[:200], bytes(b)[:200]))
            if s >= 400:
                check(json.loads(raw)["detail"], raw)
        for _ in range(50):
            sock = socket.create_connection(("127.0.0.1", d.port), timeout=5)
            sock.sendall(bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))) + b"\r\n\r\n")
            try:
                sock.recv(4096)
            except OSError:
                pass
            sock.close()
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, s)
        s, _, doc = d.json("GET", "/v1/jobs?limit=1000")
        check(all(j["status"] in ("queued", "running", "succeeded") for j in doc["jobs"]), doc)
        check(d.stop() == 0, "exit 0")
    print("garbage: ok (statuses %s)" % dict(sorted(seen.items())))


def test_token_and_queue(exe):
    with Daemon(exe, args=["--cors-origin", "*", "--queue-limit", "2", "--workers", "1"],
                env={"HISTD_TOKEN": "s3cret-token"}) as d:
        auth = {"Authorization": "Bearer s3cret-token"}
        s, h, _ = d.request("GET", "/healthz")
        check(s == 200 and h["access-control-allow-origin"] == "*", (s, h))
        for path in ("/v1/kernels", "/v1/datasets", "/v1/jobs", "/metrics", "/readyz"):
            doc, h = problem(d, "GET", path, None, {"Origin": ORIGIN}, 401) if False else (None, None)
            s, h, raw = d.request("GET", path, headers={"Origin": ORIGIN})
            check(s == 401 and h["access-control-allow-origin"] == "*", (path, s, h))
            check("bearer" in h["www-authenticate"].lower(), h)
            s, _, _ = d.request("GET", path, headers={"Authorization": "Bearer wrong"})
            check(s == 401, (path, s))
            s, _, _ = d.request("GET", path, headers=auth)
            check(s == 200, (path, s))
        # Preflights carry no credentials and must pass.
        s, h, _ = d.request("OPTIONS", "/v1/jobs", headers={"Origin": ORIGIN})
        check(s == 204, s)
        # Queue full: 503 with Retry-After.
        body, ctype = encode(random_points(200000, seed=12), "f64")
        s, _, doc = d.json("POST", "/v1/datasets", body, dict(auth, **{"Content-Type": ctype}))
        big = doc["id"]
        ids = []
        for _ in range(3):
            s, h, doc = d.json("POST", "/v1/jobs",
                               {"dataset": big, "bucket_width": 10, "kernel": "cpu-reference"}, auth)
            check(s == 202, (s, doc))
            ids.append(doc["id"])
            time.sleep(0.3)  # the first one starts running
        s, h, doc = d.json("POST", "/v1/jobs",
                           {"dataset": big, "bucket_width": 10, "kernel": "cpu-reference"}, auth)
        check(s == 503 and h["retry-after"].isdigit(), (s, h, doc))
        check(h["access-control-allow-origin"] == "*", h)
        for i in ids:
            s, _, _ = d.request("DELETE", "/v1/jobs/" + i, headers=auth)
            check(s in (200, 202), s)
        check(d.stop() == 0, "exit 0")
    print("token, 503 queue full: ok")


def test_flags(exe):
    """Bad flags and environment values: exit 2 with a sentence, nothing served."""
    cases = [
        (["--max-upload-bytes", str(2**64 - 1)], {}, "--max-upload-bytes"),
        (["--max-upload-bytes", "2T"], {}, "at most 1T"),
        (["--max-points", "0"], {}, "must be positive"),
        (["--workers", "many"], {}, "whole number"),
        (["--listen", "127.0.0.1:99999"], {}, "listen"),
        ([], {"HISTD_QUEUE_LIMIT": "-3"}, "HISTD_QUEUE_LIMIT"),
        (["--job-retention", "5x"], {}, "duration"),
        ([], {"HISTD_JOB_RETENTION": "-1d"}, "HISTD_JOB_RETENTION"),
    ]
    for args, env, want in cases:
        with tempfile.TemporaryDirectory() as tmp:
            e = {k: v for k, v in os.environ.items() if not k.startswith("HISTD_")}
            e.update(env)
            p = subprocess.run([exe, "--data-dir", tmp] + args, env=e, capture_output=True,
                               timeout=10)
            err = p.stderr.decode()
            check(p.returncode == 2 and want in err, (args, env, p.returncode, err))
            check(os.listdir(tmp) == [], (args, "created files", os.listdir(tmp)))
    print("bad flags: ok")


def main():
    exe = sys.argv[1]
    test_flags(exe)
    test_sizes(exe)
    test_bad_requests(exe)
    test_conflicting_fields(exe)
    test_delete_in_use(exe)
    test_garbage(exe)
    test_token_and_queue(exe)
    print("test_errors: all ok")


if __name__ == "__main__":
    main()
