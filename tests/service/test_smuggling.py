"""test_smuggling.py -- a request whose body two HTTP parsers could frame
differently is refused, and its connection closed, so nothing after it on
the connection is read as another request.

Framing rules (RFC 9112 section 6): one Content-Length at most; never
Content-Length beside Transfer-Encoding; "chunked" the only coding. What
breaks them is answered 400 (501 for an unknown coding) as problem+json with
Connection: close, and no second response follows on that connection.

Header lines (RFC 9112 sections 3.2, 5.1, 5.2): a field name is a token, with
no blank before its colon; a line folded onto the next (obs-fold) is
refused; Host, and the other fields histd reads as one value (Content-Type,
Authorization, Origin), appear once. libmicrohttpd 0.9.75 drops or mangles
such lines without a word (a "Content-Length : N" is not a Content-Length
to it), so each of them would serve its body as the next request.

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
    # (what, bytes, status[, a word the sentence names])
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
    ("a blank before the colon", head("Content-Length : %d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("a tab before the colon", head("Content-Length\t: %d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("a folded line after a field", head("X-Note: a", " Content-Length: %d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("a folded Content-Length", head("Content-Length:", " %d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("a folded line of tokens only", head("X-Note:", "\tContent-Length%d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("a value after 300 blanks", head("X-Note:" + " " * 300 + "a", "Content-Length: 2") + b"{}", 400, "blanks"),
    ("a blank inside a field name", head("Content Length: %d" % len(SMUGGLED)) + SMUGGLED, 400),
    ("two Host headers", b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n", 400),
    ("two Content-Types", head("Content-Type: text/plain", "Content-Length: 2") + b"{}", 400, "Content-Type"),
    ("two Authorizations", b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer a\r\n"
     b"Authorization: Bearer b\r\n\r\n", 400),
    ("two Origins", head("Origin: http://127.0.0.1", "Origin: http://evil.example", "Content-Length: 2") + b"{}",
     400, "Origin"),
    ("a GET with two Content-Lengths", b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\n"
     b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(SMUGGLED) + SMUGGLED, 400),
]


def main(exe):
    with Daemon(exe) as d:
        for what, data, status, *says in CASES:
            out, closed = exchange(d.port, data)
            got = responses(out)
            check(len(got) == 1, "%s: one response, not %d: %r" % (what, len(got), out[:400]))
            check(got[0][0] == status, "%s: status %d, wanted %d: %r" % (what, got[0][0], status, out[:300]))
            check(problem(got[0]) is not None, "%s: a problem+json with a sentence: %r" % (what, out[:300]))
            check(not says or says[0] in problem(got[0])["detail"], "%s: the sentence names %s: %r"
                  % (what, says and says[0], out[:300]))
            check(got[0][1].get("connection", "").lower() == "close", "%s: Connection: close" % what)
            check(closed, "%s: the daemon closed the connection" % what)
            print("ok - %s: %d, closed" % (what, status))
        # a well-framed request on a kept-alive connection still gets both answers
        ok = head("Content-Length: 2") + b"{}" + SMUGGLED
        out, _ = exchange(d.port, ok, quiet=0.5)
        got = responses(out)
        check([r[0] for r in got] == [400, 200], "two honest requests, two answers: %r" % [r[0] for r in got])
        # what stays allowed: blanks around a value, an empty value, a list field twice
        fine = (b"GET /v1/kernels HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Empty:\r\nX-Blanks: \t a b \t\r\n"
                b"Accept: application/json\r\nAccept: */*\r\nConnection: close\r\n\r\n")
        got = responses(exchange(d.port, fine)[0])
        check([r[0] for r in got] == [200], "well-formed lines are served: %r" % [r[:2] for r in got])
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "the daemon is alive")
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
