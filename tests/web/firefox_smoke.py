#!/usr/bin/env python3
"""A manual smoke check of the dashboard in headless Firefox (not in CI:
Debian packages no geckodriver, so this speaks Firefox's own Marionette
protocol over TCP). Uploads points by a drop, runs a job, checks the bars
against the API, hovers one, and saves a screenshot.

    apt-get install firefox-esr
    HISTD_BIN=build/src/service/histd python3 tests/web/firefox_smoke.py /tmp/firefox.png
"""
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


class Marionette:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf = b""
        self.id = 0
        self._read()  # the server's hello

    def _read(self):
        while b":" not in self.buf:
            self.buf += self.sock.recv(65536)
        n, _, rest = self.buf.partition(b":")
        n = int(n)
        while len(rest) < n:
            rest += self.sock.recv(65536)
        self.buf = rest[n:]
        return json.loads(rest[:n])

    def cmd(self, name, params=None):
        self.id += 1
        msg = json.dumps([0, self.id, name, params or {}]).encode()
        self.sock.sendall(str(len(msg)).encode() + b":" + msg)
        while True:
            r = self._read()
            if r[0] == 1 and r[1] == self.id:
                if r[2]:
                    raise RuntimeError("%s: %s" % (name, r[2]))
                return r[3]

    def js(self, script, *args):
        return self.cmd("WebDriver:ExecuteScript", {"script": script, "args": list(args)}).get("value")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "firefox.png"
    ff = shutil.which("firefox-esr") or shutil.which("firefox")
    if not ff:
        h.skip("no firefox here")
    profile = tempfile.mkdtemp(prefix="histd-firefox-")
    port = h.free_port()
    with open(os.path.join(profile, "user.js"), "w") as f:
        f.write('user_pref("marionette.port", %d);\n' % port)
        for k in ("app.update.enabled", "browser.shell.checkDefaultBrowser", "datareporting.policy.dataSubmissionEnabled",
                  "toolkit.telemetry.enabled", "browser.safebrowsing.malware.enabled", "network.captive-portal-service.enabled"):
            f.write('user_pref("%s", false);\n' % k)
    proc = None
    try:
        with h.Daemon() as d:
            proc = subprocess.Popen([ff, "--headless", "--marionette", "--no-remote", "--profile", profile,
                                     "--width", "1280", "--height", "1000"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            m = h.wait_for(lambda: Marionette(port), 60, "Firefox's Marionette port", interval=0.3)
            m.cmd("WebDriver:NewSession", {"capabilities": {}})
            m.cmd("WebDriver:Navigate", {"url": d.base + "/"})
            h.wait_for(lambda: "ok" in m.js("return document.getElementById('engine').className"), 20, "the page")
            m.js("""
                const pts = []; for (let i = 0; i < 200; i++) pts.push([i % 10 * 3.1, (i * 7) % 13, (i * 5) % 11]);
                const file = new File([JSON.stringify({points: pts})], 'ff.json', {type: 'application/json'});
                const dt = new DataTransfer(); dt.items.add(file);
                document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
            """)
            h.wait_for(lambda: "200 points" in m.js("return document.getElementById('upload-status').textContent"), 20, "upload")
            m.js("const w = document.getElementById('width'); w.value = '2'; document.getElementById('submit').click();")
            h.wait_for(lambda: m.js("return document.getElementById('job-status').dataset.status") == "succeeded", 30, "job")
            job = m.js("return decodeURIComponent(location.hash.slice(5))")
            counts = h.http("GET", d.base + "/v1/jobs/%s/result" % job).json()["counts"]
            bars = m.js("return [...document.querySelectorAll('#chart rect.bar')].map(r => +r.dataset.count)")
            widths = m.js("return [...document.querySelectorAll('#chart rect.bar')].map(r => r.getBBox().width)")
            assert bars == counts, (bars, counts)
            assert all(w > 1 for w in widths), widths
            print("ok - Firefox draws %d bars equal to the API's counts" % len(bars))
            el = m.cmd("WebDriver:FindElement", {"using": "css selector", "value": '#chart rect.bar[data-bucket="5"]'})["value"]
            m.cmd("WebDriver:PerformActions", {"actions": [{"type": "pointer", "id": "mouse", "actions": [
                {"type": "pointerMove", "duration": 0, "origin": el, "x": 0, "y": 0}]}]})
            tip = h.wait_for(lambda: m.js("const t = document.getElementById('tip'); return t.hidden ? null : t.textContent"),
                             5, "the tooltip")
            assert "bucket 5" in tip, tip
            print("ok - the tooltip reads %r" % tip)
            time.sleep(0.2)
            png = base64.b64decode(m.cmd("WebDriver:TakeScreenshot", {"full": True})["value"])
            with open(out, "wb") as f:
                f.write(png)
            print("screenshot:", out)
            m.cmd("WebDriver:DeleteSession")
    finally:
        if proc and proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
