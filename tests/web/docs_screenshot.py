#!/usr/bin/env python3
"""Makes the user's guide's screenshot (not a test): the dashboard after a
job on the seed reports' workload shape (points uniform in [0, 23000)^3,
bucket width 500), uploaded as raw float64 through the file picker.

    HISTD_BIN=build/src/service/histd python3 tests/web/docs_screenshot.py api/screenshot.png
"""
import os
import random
import shutil
import struct
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "dashboard.png")
    n = int(os.environ.get("POINTS", "10000"))
    work = tempfile.mkdtemp(prefix="histd-shot-")
    try:
        shoot(out, n, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(out)


def shoot(out, n, work):
    rnd = random.Random(2024)
    path = os.path.join(work, "uniform-%dk.f64" % (n // 1000))
    with open(path, "wb") as f:
        for _ in range(n):
            f.write(struct.pack("<3d", rnd.uniform(0, 23000), rnd.uniform(0, 23000), rnd.uniform(0, 23000)))
    small = os.path.join(work, "water-box.csv")
    with open(small, "w") as f:
        f.write("x,y,z\n")
        for _ in range(3000):
            f.write("%.3f,%.3f,%.3f\n" % (rnd.gauss(0, 9), rnd.gauss(0, 9), rnd.gauss(0, 9)))
    with h.Daemon(workdir=work) as d, h.Browser() as b:
        b.get(d.base + "/")
        b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the page")
        b.type(b.find("#file"), small)
        b.wait(lambda: "3,000 points" in b.text(b.find("#upload-status")), 20, "the small upload")
        w = b.find("#width")
        b.clear(w)
        b.type(w, "1")
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return document.getElementById('job-status').dataset.status") == "succeeded", 60, "job 1")
        b.type(b.find("#file"), path)
        b.wait(lambda: "%s points" % "{:,}".format(n) in b.text(b.find("#upload-status")), 30, "the upload")
        b.clear(w)
        b.type(w, "500")
        first = b.js("return location.hash")
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return location.hash") != first, 10, "job 2 to start")
        b.wait(lambda: b.js("return document.getElementById('job-status').dataset.status") == "succeeded", 120, "job 2")
        b.js("window.scrollTo(0, 0)")
        height = b.js("return document.documentElement.scrollHeight")
        inner = b.js("return window.innerHeight")
        b.set_window(1280, height + (b.rect_window()["height"] - inner))
        time.sleep(0.4)  # the chart redraws 100 ms after a resize
        b.hover(b.find('#chart rect.bar[data-bucket="21"]'))
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), 5, "the tooltip")
        b.screenshot(out)


if __name__ == "__main__":
    main()
