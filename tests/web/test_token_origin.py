#!/usr/bin/env python3
"""The dashboard sends its bearer token only to the origin it was saved for.

histd runs with --token on one loopback origin; a recording server on
another loopback origin stands for whatever `?api=` a link might name (it
answers every request, CORS preflights included, and keeps each request's
Authorization header). The test checks, in headless Chromium:
  - the token saved on the daemon's own page works there;
  - a link whose ?api= names another origin shows a question that says
    where requests would go, and sends nothing anywhere until it is
    answered;
  - "Use" talks to the other origin without the token; "Stay" keeps the
    daemon and its token; the recording server never sees the token;
  - under Connection, typing another base shows the token's destination
    and empties the token field (no token is saved for that origin), so
    saving it there cannot carry the daemon's token along.
Exit 77 (skip) only when chromium is not installed.
"""
import http.server
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

TOKEN = "origin-test-token-5c2e"


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    h.log("ok -", what)


class Recorder:
    """An HTTP server that answers anything and remembers what it was sent."""

    def __init__(self):
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self):
                seen.append((self.command, self.path, self.headers.get("Authorization")))
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(n)
                body = b'{"kernels":[],"engine":"cpu","devices":[],"datasets":[],"jobs":[]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
                self.send_header("Access-Control-Allow-Headers", "Authorization, Content-Type")
                self.send_header("Access-Control-Allow-Methods", "GET, POST, DELETE")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = do_OPTIONS = answer

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        return False

    def tokens(self):
        return [a for _, _, a in self.seen if a]


def main():
    chromium = h.find_chromium()
    chromedriver = h.find_chromedriver()
    with h.Daemon("--token", TOKEN) as d, Recorder() as evil, h.Browser(chromium, chromedriver) as b:
        # 1. the token, saved on the daemon's own page
        h.save_token(b, d.base, TOKEN)

        # 2. a link naming another origin: nothing sent until the user answers
        b.get(d.base + "/?api=" + evil.base)
        time.sleep(1.5)
        check(evil.tokens() == [], "a link's ?api= does not get the token: %s" % evil.seen)
        check(evil.seen == [], "nothing reaches %s before the user answers: %s" % (evil.base, evil.seen))
        b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15, "the question")
        text = b.text(b.find("#api-confirm"))
        check(evil.base in text, "the question shows where requests would go: %r" % text)
        check("No token" in text, "and that no token goes with them: %r" % text)
        saved = json.loads(b.js("return localStorage.getItem('histd.tokens')") or "{}")
        check(saved == {d.base: TOKEN}, "the token is kept for its origin only: %s" % saved)

        # 3. "Use": the other origin, without the token
        b.click(b.find("#api-confirm-use"))
        b.wait(lambda: len(evil.seen) >= 2, 15, "the page to talk to the other origin")
        time.sleep(0.5)
        check(evil.tokens() == [], "the other origin never gets the token: %s" % evil.seen)

        # 4. "Stay": the daemon, with its token
        b.get(d.base + "/?api=" + evil.base)
        b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15, "the question again")
        b.click(b.find("#api-confirm-stay"))
        b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the page to stay with the daemon")

        # 5. the Connection form: a new base shows where the token would go, and no token for it
        b.js("document.getElementById('settings').open = true")
        base = b.find("#api-base")
        check(d.base in b.text(b.find("#token-dest")), "the form says where the token goes: %r"
              % b.text(b.find("#token-dest")))
        b.clear(base)
        b.type(base, evil.base)
        check(b.attr(b.find("#token"), "value") in ("", None) and b.js("return document.getElementById('token').value") == "",
              "typing another base empties the token field")
        check(evil.base in b.text(b.find("#token-dest")), "and the form names the new destination: %r"
              % b.text(b.find("#token-dest")))
        b.click(b.find("#settings-form button[type=submit]"))
        b.wait(lambda: len(evil.seen) >= 4, 15, "the page to use the new base")
        time.sleep(0.5)
        check(evil.tokens() == [], "saving another base does not send the daemon's token there: %s" % evil.seen)
        saved = json.loads(b.js("return localStorage.getItem('histd.tokens')") or "{}")
        check(saved.get(d.base) == TOKEN and evil.base not in saved,
              "the daemon's token is still kept for the daemon only: %s" % saved)
        d.alive()
    h.log("PASS")


if __name__ == "__main__":
    main()
