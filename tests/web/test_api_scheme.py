#!/usr/bin/env python3
"""The dashboard takes only http: and https: API bases (issue #28, item 10).

A javascript: or data: URL has the origin "null": a link whose ?api= names
one made the dashboard offer to "Use null", and once used, the footer's
links (base + /v1/kernels) were script in the dashboard's origin, which
could read every token saved in its localStorage. The test checks, in
headless Chromium, against the real daemon with a token saved:
  - ?api=javascript:... and ?api=data:... are never used: the question says
    the address is not http: or https:, its "Use" button is disabled (a
    click does nothing), the footer's links stay http:, and clicking them
    runs no script;
  - a javascript: base saved in localStorage by an older page is not used;
  - the Connection form refuses such a base with a sentence, and keeps the
    one in use;
  - an https: base for another origin is still offered as before.
Exit 77 (skip) only when chromium is not installed.
"""
import os
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

TOKEN = "scheme-test-token-91f3"
EVIL = [
    "javascript:void(window.histdPwned=1);//x",
    "JavaScript:void(window.histdPwned=1);//x",
    " javascript:void(window.histdPwned=1);//x",
    "java\tscript:void(window.histdPwned=1);//x",
    "data:text/html,<script>window.opener.histdPwned=1</script>",
]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    h.log("ok -", what)


def links(b):
    return [b.js("return document.getElementById(arguments[0]).href", i)
            for i in ("link-kernels", "link-devices", "link-metrics")]


def safe_links(b, base):
    got = links(b)
    return all(u.startswith(base + "/") for u in got), got


def main():
    chromium = h.find_chromium()
    chromedriver = h.find_chromedriver()
    with h.Daemon("--token", TOKEN) as d, h.Browser(chromium, chromedriver) as b:
        h.save_token(b, d.base, TOKEN)

        for evil in EVIL:
            b.get(d.base + "/?api=" + urllib.parse.quote(evil, safe=""))
            b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15,
                   "the question for %r" % evil)
            text = b.text(b.find("#api-confirm"))
            check("not an http: or https: url" in text.lower() and "null" not in text,
                  "%r: the question says it is not an http(s) address, and offers no 'null': %r" % (evil, text))
            check(b.js("return document.getElementById('api-confirm-use').disabled") is True,
                  "%r: its Use button is disabled" % evil)
            b.js("document.getElementById('api-confirm-use').click()")  # a click anyway
            time.sleep(0.3)
            ok, got = safe_links(b, d.base)
            check(ok, "%r: the footer's links still go to the daemon: %s" % (evil, got))
            b.js("document.getElementById('link-kernels').click()")  # a javascript: link stays here
            time.sleep(0.3)
            check(not b.js("return window.histdPwned === 1"), "%r: clicking a link runs no script" % evil)
            if b.js("return location.pathname") != "/":
                b.get(d.base + "/")
                continue
            if b.js("return !document.getElementById('api-confirm').hidden"):
                b.click(b.find("#api-confirm-stay"))

        # a javascript: base an older page saved
        b.get(d.base + "/")
        b.js("localStorage.setItem('histd.apiBase', arguments[0])", EVIL[0])
        b.get(d.base + "/")
        b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15,
               "the page to connect to its own daemon, not the saved javascript: base")
        ok, got = safe_links(b, d.base)
        check(ok, "a saved javascript: base is not used: %s" % got)
        b.js("localStorage.removeItem('histd.apiBase')")

        # the Connection form
        b.js("document.getElementById('settings').open = true")
        base = b.find("#api-base")
        b.clear(base)
        b.type(base, EVIL[0])
        check("not an http: or https: url" in b.text(b.find("#token-dest")).lower(),
              "the form says such a base is not http(s): %r"
              % b.text(b.find("#token-dest")))
        b.click(b.find("#settings-form button[type=submit]"))
        b.wait(lambda: b.js("return !document.getElementById('alert').hidden"), 15, "the form's refusal")
        check("not an http: or https: url" in b.text(b.find("#alert")).lower(),
              "the refusal names http(s): %r" % b.text(b.find("#alert")))
        ok, got = safe_links(b, d.base)
        check(ok, "the form does not take it: %s" % got)
        check(b.js("return localStorage.getItem('histd.apiBase')") is None, "nor save it")

        # an https: base for another origin is still asked about, and usable
        b.get(d.base + "/?api=" + urllib.parse.quote("https://histd.example:8443", safe=""))
        b.wait(lambda: b.js("return !document.getElementById('api-confirm').hidden"), 15, "the question for https:")
        check(b.js("return document.getElementById('api-confirm-use').disabled") is False,
              "an https: base can be used")
        check("https://histd.example:8443" in b.text(b.find("#api-confirm")), "and the question names it")
        check(not b.js("return window.histdPwned === 1"), "no script ran")
        d.alive()
    h.log("PASS")


if __name__ == "__main__":
    main()
