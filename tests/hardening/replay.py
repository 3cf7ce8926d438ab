#!/usr/bin/env python3
"""replay.py -- the hardening suite: replays every hostile request of
corpus/ (raw bytes over a loopback socket, one connection each) against one
histd and checks, for each, what corpus/EXPECT says:

    problem   a 4xx/5xx answer, application/problem+json, whose status
              matches the line's and whose detail is a sentence (10+ chars);
    library   a 4xx/5xx answer from libmicrohttpd itself, one of the
              statuses api/openapi.yaml documents for it (400, 413, 414,
              431, 500, 505);
    closed    no answer, and the connection closed within 10 s.

After every request the daemon must still be running and answer
GET /healthz with 200, and no request may leave a dataset or a job behind.
Runs under the ASan build too (meson picks up the suite in every build
dir). Prints one line per request and a summary.

usage: replay.py HISTD_EXE [CORPUS_DIR]
"""
import json
import os
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "service"))
from daemon import Daemon  # noqa: E402

LIBRARY_STATUSES = {400, 413, 414, 431, 500, 505}


def exchange(port, data, timeout=10.0):
    """(bytes back, closed): reads until one whole response is in, the
    daemon closes, or `timeout` passes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out, closed = b"", False
    try:
        try:
            s.sendall(data)
        except OSError:
            pass  # the daemon may answer (and close) before taking all of it
        deadline = time.time() + timeout
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                c = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                closed = True
                break
            if not c:
                closed = True
                break
            out += c
            head, sep, rest = out.partition(b"\r\n\r\n")
            if sep:
                n = None
                for line in head.split(b"\r\n")[1:]:
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        n = int(v.strip())
                if n is not None and len(rest) >= n:
                    break
    finally:
        s.close()
    return out, closed


def parse(out):
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        headers[k.strip().lower().decode()] = v.strip().decode(errors="replace")
    return status, headers, body


def judge(expect, out, closed):
    """None when the answer is what `expect` says, else why not."""
    if expect == "closed":
        if out:
            return "wanted no answer, got %r" % out[:120]
        return None if closed else "the connection stayed open"
    if not out.startswith(b"HTTP/1."):
        return "no answer (%s)" % ("closed" if closed else "silence")
    status, headers, body = parse(out)
    if not 400 <= status <= 599:
        return "status %d is not an error" % status
    ctype = headers.get("content-type", "")
    if expect == "library":
        if ctype.startswith("application/problem+json"):
            return None  # histd got to answer it itself: better still
        return None if status in LIBRARY_STATUSES else "library status %d is not documented" % status
    if not ctype.startswith("application/problem+json"):
        return "%d with Content-Type %r, not problem+json: %r" % (status, ctype, body[:120])
    try:
        doc = json.loads(body)
    except ValueError:
        return "the problem is not JSON: %r" % body[:120]
    if doc.get("status") != status or doc.get("type") != "about:blank" or not doc.get("title"):
        return "the problem's fields do not match: %r" % doc
    if not isinstance(doc.get("detail"), str) or len(doc["detail"]) < 10:
        return "no sentence in the detail: %r" % doc
    return None


def main(exe, corpus):
    with open(os.path.join(corpus, "CONFIG.json")) as f:
        cfg = json.load(f)
    with open(os.path.join(corpus, "EXPECT")) as f:
        cases = [line.split() for line in f if line.strip()]
    if len(cases) < 200:
        raise SystemExit("the corpus has %d requests; the suite wants at least 200" % len(cases))
    auth = {"Authorization": "Bearer " + cfg["token"]}
    failures = []
    with Daemon(exe, args=["--token", cfg["token"], "--cors-origin", cfg["cors_origin"]] + cfg["limits"]) as d:
        for name, expect in cases:
            with open(os.path.join(corpus, name + ".http"), "rb") as f:
                data = f.read()
            t0 = time.time()
            out, closed = exchange(d.port, data)
            why = judge(expect, out, closed)
            status = out.split(b" ", 2)[1].decode(errors="replace") if out.startswith(b"HTTP/") else "-"
            if d.proc.poll() is not None:
                why = "the daemon died (exit %s)" % d.proc.returncode
            else:
                try:
                    s, _, _ = d.request("GET", "/healthz", timeout=10)
                    if s != 200:
                        why = why or "/healthz answered %d afterwards" % s
                except OSError as e:
                    why = why or "/healthz failed afterwards: %s" % e
            print("%s %-28s %-8s %-4s %.2fs%s" % ("ok  " if why is None else "FAIL", name, expect, status,
                                               time.time() - t0, "" if why is None else "  " + why), flush=True)
            if why is not None:
                failures.append((name, why))
            if d.proc.poll() is not None:
                break
        # nothing hostile was stored
        s, _, doc = d.json("GET", "/v1/datasets", headers=auth)
        if s != 200 or doc["datasets"]:
            failures.append(("datasets", "left behind: %s" % doc))
        s, _, doc = d.json("GET", "/v1/jobs", headers=auth)
        if s != 200 or doc["jobs"]:
            failures.append(("jobs", "left behind: %s" % doc))
    print("\n%d requests, %d failed" % (len(cases), len(failures)))
    for name, why in failures:
        print("  %s: %s" % (name, why))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "corpus"))
