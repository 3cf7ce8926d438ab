#!/usr/bin/env python3
"""The dashboard in a real headless Chromium, against the real daemon.

Starts histd on a free loopback port with a temporary data dir, loads /,
uploads point files through the file picker and by a drop, runs jobs, and
checks that the chart has one bar per bucket whose data-count equals the
API's result for that job (fetched separately) and the definition of the
histogram (computed here, in binary64, pair by pair). Also checks the hover
tooltip, the problem+json detail of a bad upload, the CSV download, and the
job list. Saves a screenshot as $HISTD_WEB_OUT/dashboard.png.

Exit 77 (skip) only when chromium is not installed.
"""
import math
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

OUT = h.OUT


def points(n, seed, box=1000.0):
    rnd = random.Random(seed)
    return [(rnd.uniform(0, box), rnd.uniform(0, box), rnd.uniform(0, box)) for _ in range(n)]


def definition(pts, width, buckets):
    """The exactness contract, literally (Python floats are binary64, no FMA)."""
    counts = [0] * buckets
    overflow = 0
    for i in range(len(pts)):
        xi, yi, zi = pts[i]
        for j in range(i + 1, len(pts)):
            dx = xi - pts[j][0]
            dy = yi - pts[j][1]
            dz = zi - pts[j][2]
            b = math.floor(math.sqrt((dx * dx + dy * dy) + dz * dz) / width)
            if b < buckets:
                counts[b] += 1
            else:
                overflow += 1
    return counts, overflow


check = h.check


wait_job_done = h.wait_job_done


def run(chromium, chromedriver, work):
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)

    width, buckets = 100.0, 14
    pts = points(400, seed=5)
    csv_path = os.path.join(work, "cluster.csv")
    with open(csv_path, "w") as f:
        for p in pts:
            f.write("%r,%r,%r\n" % p)
    bad_path = os.path.join(work, "broken.csv")
    with open(bad_path, "w") as f:
        f.write("1,2,3\n4,five,6\n")

    with h.Daemon(workdir=work) as d, h.Browser(chromium, chromedriver) as b:
        h.allow_downloads(b, downloads)  # into our temp dir
        b.get(d.base + "/")
        b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the engine badge")
        kernels = [k["name"] for k in d_json(d, "/v1/kernels")["kernels"]]
        options = b.js("return [...document.querySelectorAll('#kernel option')].map(o => o.value)")
        check(set(kernels) | {"auto"} == set(options), "kernel menu lists /v1/kernels: %s" % options)

        # 1. a JSON file dropped on the drop zone
        small = points(60, seed=9)
        b.js("""
            const pts = arguments[0];
            const file = new File([JSON.stringify({points: pts})], 'dropped.json', {type: 'application/json'});
            const dt = new DataTransfer(); dt.items.add(file);
            document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
        """, [list(p) for p in small])
        b.wait(lambda: "ok" in (b.attr(b.find("#upload-status"), "class") or ""), 15, "the dropped upload")
        check("60 points" in b.text(b.find("#upload-status")), "dropped JSON uploaded with 60 points")

        # 2. a bad file: the alert shows the daemon's problem+json detail
        b.type(b.find("#file"), bad_path)
        b.wait(lambda: b.js("return !document.getElementById('alert').hidden"), 15, "the error alert")
        shown = b.text(b.find("#alert-detail"))
        with open(bad_path, "rb") as f:
            p = h.http("POST", d.base + "/v1/datasets?name=broken.csv", f.read(), {"Content-Type": "text/csv"})
        check(400 <= p.status < 500, "the API rejects the broken CSV (%d)" % p.status)
        check(p.json().get("detail") and p.json()["detail"] == shown,
              "the alert shows the problem detail: %r" % shown)
        b.click(b.find("#alert-close"))

        # 3. the CSV through the file picker, then a job on it
        b.type(b.find("#file"), csv_path)
        b.wait(lambda: "400 points" in b.text(b.find("#upload-status")), 20, "the CSV upload")
        ds_id = b.js("return document.getElementById('dataset').value")
        meta = d_json(d, "/v1/datasets/" + ds_id)
        check(meta["n"] == 400, "the picked file became dataset %s with 400 points" % ds_id[:8])

        kernel = "cpu" if "cpu" in kernels else "auto"
        b.js("const s = document.getElementById('kernel'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));", kernel)
        w = b.find("#width")
        b.clear(w)
        b.type(w, "100")
        b.type(b.find("#buckets"), str(buckets))
        b.click(b.find("#submit"))
        status = wait_job_done(b)
        check(status == "succeeded", "the job succeeded in the page")
        job_id = b.js("return decodeURIComponent(location.hash.replace('#job=', ''))")

        bars = b.js("return [...document.querySelectorAll('#chart rect.bar')].map(r => "
                    "({i: +r.dataset.bucket, c: r.dataset.count, lo: +r.dataset.lo, hi: +r.dataset.hi}))")
        check(len(bars) == buckets, "the chart has %d bars" % len(bars))
        result = d_json(d, "/v1/jobs/%s/result" % job_id)
        api_counts = [int(c) for c in result["counts"]]
        busiest = max(range(buckets), key=lambda i: api_counts[i])
        check(int(bars[busiest]["c"]) == api_counts[busiest],
              "bar %d shows %s pairs, as the API says" % (busiest, bars[busiest]["c"]))
        check([int(x["c"]) for x in bars] == api_counts, "every bar's count equals the API's")
        want_counts, want_overflow = definition(pts, width, buckets)
        check(api_counts == want_counts and int(result["overflow"]) == want_overflow,
              "the counts equal the definition (overflow %d)" % want_overflow)
        check(all(x["lo"] == busiest_edge for x, busiest_edge in
                  zip(bars, [float(e) for e in result["edges"][:-1]])), "bars carry the bucket edges")

        # 4. hover the busiest bar: the tooltip says its range and count
        bar_el = b.find('#chart rect.bar[data-bucket="%d"]' % busiest)
        b.hover(bar_el)
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), 5, "the tooltip")
        tip = b.text(b.find("#tip"))
        lo, hi = busiest * width, (busiest + 1) * width
        check(("[%g, %g)" % (lo, hi)) in tip and "{:,}".format(api_counts[busiest]) in tip,
              "the tooltip reads %r" % tip.replace("\n", " / "))

        # 5. the timing table and the device
        timing = b.text(b.find("#timing"))
        check("kernel" in timing and "total" in timing, "the timing breakdown is shown")
        summary = b.text(b.find("#summary"))
        check("device" in summary and "{:,}".format(400 * 399 // 2) in summary, "the summary shows pairs and device")

        # 6. the job list has both jobs? (one so far) and the dataset list both datasets
        rows = b.js("return [...document.querySelectorAll('#jobs tbody tr[data-job]')].map(r => r.dataset.job)")
        check(job_id in rows, "the job is in the history list")
        b.click(b.find("#tab-datasets"))
        drows = b.js("return document.querySelectorAll('#datasets tbody tr[data-dataset]').length")
        check(drows == 2, "the dataset list shows both uploads")
        b.click(b.find("#tab-jobs"))

        # 7. download the counts as CSV: the file equals the API's CSV
        api_csv = h.http("GET", d.base + "/v1/jobs/%s/result?format=csv" % job_id).body
        h.check_download(b, "#dl-csv", os.path.join(downloads, "histd-%s.csv" % job_id), api_csv, 10,
                         "the downloaded CSV equals GET /result?format=csv")

        # 8. a second job on the dropped set, then back to the first one by a click
        b.js("document.getElementById('dataset').value = arguments[0]; "
             "document.getElementById('dataset').dispatchEvent(new Event('change'));",
             b.js("return [...document.querySelectorAll('#dataset option')].find(o => o.textContent.startsWith('dropped.json')).value"))
        b.clear(b.find("#buckets"))
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return location.hash") != "#job=" + job_id, 10, "the second job")
        check(wait_job_done(b) == "succeeded", "the second job succeeded")
        b.click(b.find('#jobs tr[data-job="%s"]' % job_id))
        b.wait(lambda: b.js("return document.querySelectorAll('#chart rect.bar').length") == buckets
               and b.js("return location.hash") == "#job=" + job_id, 10, "the first job again")
        check(True, "clicking a job in the list shows it again")

        b.hover(b.find('#chart rect.bar[data-bucket="%d"]' % busiest))
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), 5, "the tooltip")
        # 9. a long job: the progress bar moves, then Cancel stops it
        b.js("""
            const n = 60000, a = new Float64Array(3 * n);
            let s = 12345; for (let i = 0; i < a.length; i++) { s = (s * 1103515245 + 12345) % 2147483648; a[i] = s / 93.0; }
            const file = new File([a.buffer], 'long.f64', {type: 'application/octet-stream'});
            const dt = new DataTransfer(); dt.items.add(file);
            document.getElementById('drop').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
        """)
        b.wait(lambda: "60,000 points" in b.text(b.find("#upload-status")), 20, "the binary upload")
        check(d_json(d, "/v1/datasets/" + b.js("return document.getElementById('dataset').value"))["format"] == "f64",
              "a .f64 file is sent as float64 triples")
        b.js("const s = document.getElementById('kernel'); s.value = 'cpu-reference'; s.dispatchEvent(new Event('change'));")
        b.clear(b.find("#buckets"))
        before = b.js("return location.hash")
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return location.hash") != before, 10, "the long job")
        long_id = b.js("return decodeURIComponent(location.hash.replace('#job=', ''))")
        b.wait(lambda: b.js("return !document.getElementById('cancel').hidden"), 10, "the Cancel button")
        seen = b.wait(lambda: b.js("const p = document.getElementById('job-progress');"
                                   "return !p.hidden && p.value > 0 ? p.value : null"), 20, "progress to move")
        check(0 < seen < 1, "the progress bar moves (%.0f%%)" % (100 * seen))
        b.click(b.find("#cancel"))
        check(wait_job_done(b, 15) == "cancelled", "Cancel stops the running job")
        check(d_json(d, "/v1/jobs/" + long_id)["status"] == "cancelled", "the API says cancelled too")
        check(b.js("return document.getElementById('cancel').hidden && document.getElementById('dl-csv').disabled"),
              "no Cancel and no downloads on a cancelled job")
        b.click(b.find('#jobs tr[data-job="%s"]' % job_id))
        b.wait(lambda: b.js("return document.querySelectorAll('#chart rect.bar').length") == buckets, 10, "job 1")

        # the whole page in one picture, scrolled to the top
        b.js("window.scrollTo(0, 0)")
        height = b.js("return document.documentElement.scrollHeight")
        inner = b.js("return window.innerHeight")
        outer = b.rect_window()["height"]
        b.set_window(1280, height + (outer - inner))
        b.wait(lambda: b.js("return window.innerHeight") >= height, 5, "the window to grow")
        time.sleep(0.4)  # the chart redraws 100 ms after a resize
        b.hover(b.find('#chart rect.bar[data-bucket="%d"]' % busiest))
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), 5, "the tooltip")
        shot = b.screenshot(os.path.join(OUT, "dashboard.png"))
        h.log("screenshot:", shot)
        d.alive()


def d_json(d, path):
    r = h.http("GET", d.base + path)
    if r.status != 200:
        raise AssertionError("GET %s -> %d %s" % (path, r.status, r.body[:300]))
    return r.json()


if __name__ == "__main__":
    h.main(run, "histd-web-test-")
