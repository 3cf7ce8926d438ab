"""test_smuggling.py -- a request whose body two HTTP parsers could frame
differently is refused, and its connection closed, so nothing after it on
the connection is read as another request.

Framing rules (RFC 9112 section 6): one Content-Length at most; never
Content-Length beside Transfer-Encoding; "chunked" the only coding. What
breaks them is answered 400 (501 for an unknown coding) as problem+json with
Connection: close, and no second response follows on that connection.

usage: test_smuggling.py HISTD_EXE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402
from rawhttp import exchange, problem, responses  # noqa: E402

SMUGGLED = b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def head(*lines):
    return ("POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
            "".join(line + "\r\n" for line in lines) + "\r\n").encode()


CASES = [
    # (what, bytes, status)
    ("two different Content-Lengths", head("Content-Length: 2", "Content-Length: %d" % (2 + len(SMUGGLED)))
     + b"{}" + SMUGGLED, 400),
    ("the same Content-Length twice", head("Content-Length: 2", "Content-Length: 2") + b"{}" + SMUGGLED, 400),
    ("Content-Length and chunked", head("Content-Length: 2", "Transfer-Encoding: chunked")
     + b"2\r\n{}\r\n0\r\n\r\n" + SMUGGLED, 400),
    ("chunked and Content-Length", head("Transfer-Encoding: chunked", "Content-Length: 60")
     + b"2\r\n{}\r\n0\r\n\r\n" + SMUGGLED, 400),
    ("Transfer-Encoding twice", head("Transfer-Encoding: chunked", "Transfer-Encoding: chunked")
     + b"2\r\n{}\r\n0\r\n\r\n" + SMUGGLED, 400),
    ("an unknown transfer coding", head("Transfer-Encoding: gzip") + b"{}" + SMUGGLED, 501),
    ("a GET with two Content-Lengths", b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n"
     b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(SMUGGLED) + SMUGGLED, 400),
]


def main(exe):
    with Daemon(exe) as d:
        for what, data, status in CASES:
            out, closed = exchange(d.port, data)
            got = responses(out)
            check(len(got) == 1, "%s: one response, not %d: %r" % (what, len(got), out[:400]))
            check(got[0][0] == status, "%s: status %d, wanted %d: %r" % (what, got[0][0], status, out[:300]))
            check(problem(got[0]) is not None, "%s: a problem+json with a sentence: %r" % (what, out[:300]))
            check(got[0][1].get("connection", "").lower() == "close", "%s: Connection: close" % what)
            check(closed, "%s: the daemon closed the connection" % what)
            print("ok - %s: %d, closed" % (what, status))
        # a well-framed request on a kept-alive connection still gets both answers
        ok = head("Content-Length: 2") + b"{}" + SMUGGLED
        out, _ = exchange(d.port, ok, quiet=0.5)
        got = responses(out)
        check([r[0] for r in got] == [400, 200], "two honest requests, two answers: %r" % [r[0] for r in got])
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "the daemon is alive")
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
