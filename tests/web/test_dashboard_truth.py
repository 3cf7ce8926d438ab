#!/usr/bin/env python3
"""The dashboard says what was computed (issue 33, section 4), in headless
Chromium against the real daemon, on a GRO trajectory of waters made here:
4 frames of 30 molecules (OW, HW1, HW2) in a 2 nm box that the file
carries.

1. The dataset's line gives atoms, frames and pairs a frame (not atoms x
   frames as points); the box field says the file's box will be used
   (not "open space"), or the box typed there.
2. An O-H g(r) without the bonded pairs, with error bars over 2 blocks,
   through the form: the summary gives atoms a frame (30 x 60), frames,
   pairs per frame (30 x 60 - 60, counted here from the file's make-up),
   the excluded pairs (60 a frame) and the box from the file; the x axis
   and the bins are in nm; log scale is disabled for g(r) with a reason;
   the blocks' error band is g +/- the API's g_sem at each bin; the
   exported SVG's caption names the file's box, the frames, the selections
   and the excluded pairs, and never "open boundaries".
3. Partials by atom name: a g(r) line a species pair, labelled a-b as the
   API's partial.a and partial.b, through the API's partial g values.
4. A histogram per point (OW sites against every atom): a g(r) line for
   each of the first 8 sites, labelled by the API's index, the first
   through the API's point.g, and the legend counting the sites not drawn.
5. A refusal shows beside the Compute button, in view, with the page
   scrolled to the button.

Exit 77 (skip) only when chromium is not installed.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

left = h.deadline(80)
check = h.check
MOLECULES, FRAMES, L = 30, 4, 2.0

def write_gro(path, seed):
    """FRAMES frames of MOLECULES waters, each frame with its box line."""
    rnd = random.Random(seed)
    out = []
    for f in range(FRAMES):
        out.append("waters t=%d\n%5d\n" % (f, 3 * MOLECULES))
        k = 0
        for m in range(MOLECULES):
            o = [rnd.uniform(0, L) for _ in range(3)]
            for name, off in (("OW", (0, 0, 0)), ("HW1", (0.1, 0, 0)), ("HW2", (0, 0.1, 0))):
                k += 1
                x = [(o[i] + off[i]) % L for i in range(3)]
                out.append("%5d%-5s%5s%5d%8.3f%8.3f%8.3f\n" % (m + 1, "SOL", name, k, *x))
        out.append("%10.5f%10.5f%10.5f\n" % (L, L, L))
    with open(path, "w") as f:
        f.write("".join(out))


def summary(b):
    return b.js("const o = {}; for (const dt of document.querySelectorAll('#summary dt'))"
                " o[dt.textContent] = dt.nextElementSibling.textContent; return o;")


def run(chromium, chromedriver, work):
    gro = os.path.join(work, "waters.gro")
    write_gro(gro, 11)
    with h.Daemon(workdir=work) as d, h.Browser(chromium, chromedriver) as b:
        h.open_dashboard(b, d.base, min(15, left()))
        b.js(h.CAPTURE_BLOBS)
        ds = h.upload(b, gro, 3 * MOLECULES * FRAMES, min(20, left()))
        check("90 atoms × 4 frames" in b.text(b.find("#upload-status")), "the upload line says atoms and frames")
        info = b.text(b.find("#dataset-info"))
        check(info.startswith("90 atoms × 4 frames, {:,} pairs a frame".format(90 * 89 // 2)),
              "the dataset line: atoms, frames, pairs a frame: %r" % info)

        # 1. the box field says what will be used
        hint = b.text(b.find("#box-hint"))
        place = b.attr(b.find("#box"), "placeholder")
        check("file's own box, 2 × 2 × 2 nm" in hint and "open space" not in hint, "the box hint: %r" % hint)
        check("file's box (2 × 2 × 2 nm)" in place, "the box placeholder: %r" % place)
        h.set_value(b, "#box", "2.5")
        check("Uses the box typed here, not the file's" in b.text(b.find("#box-hint")), "a typed box is said to win")
        h.set_value(b, "#box", "")

        # 2. O-H without the bonded pairs, 2 blocks of frames
        b.js("document.getElementById('atoms-more').open = true")
        h.choose(b, "binning", "rmax")
        h.set_value(b, "#r-max", 0.9)
        h.set_value(b, "#rmax-buckets", 9)
        h.set_value(b, "#select-a", "name:OW")
        h.set_value(b, "#select-b", "name:HW1,HW2")
        b.click(b.find("#exclude"))
        h.set_value(b, "#blocks", 2)
        status, jid = h.submit_and_wait(b, min(15, left()), min(40, left()))
        check(status == "succeeded", "the O-H job succeeded")
        job = h.get_json(d.base, "/v1/jobs/" + jid)
        res = job["result"]
        per_frame = MOLECULES * 2 * MOLECULES - 2 * MOLECULES  # 30 O x 60 H, less each O's own two H
        s = summary(b)
        check(s.get("atoms") == "30 × 60 (A × B) a frame", "summary atoms: %r" % s.get("atoms"))
        check(s.get("frames") == "4 frames", "summary frames: %r" % s.get("frames"))
        check(s.get("pairs per frame") == "{:,}".format(per_frame), "summary pairs per frame: %r (want %d)"
              % (s.get("pairs per frame"), per_frame))
        check(s.get("excluded pairs", "").startswith("240 (60 a frame)"), "summary excluded: %r" % s.get("excluded pairs"))
        check(s.get("box") == "periodic box from the file, 2 × 2 × 2 nm in its first frame, each frame its own",
              "summary box: %r" % s.get("box"))
        check("points" not in s, "no 'points' row for a trajectory")
        check(s.get("buckets", "").endswith(" nm"), "the bins are in nm: %r" % s.get("buckets"))
        xlab = b.js("return document.querySelector('#chart g.axis.x text.label').textContent")
        check(xlab.startswith("r (nm;"), "the x axis is in nm: %r" % xlab)
        check(b.js("return document.getElementById('logy').disabled") and
              "g(r)" in b.attr(b.find("#logy-label"), "title"), "log scale is disabled on g(r), with the reason")

        # the error band: g +/- g_sem at each bin, on the g axis (fit from the g points)
        sem = res["block"]["g_sem"]
        g = res["g"]
        pts = b.js("return [...document.querySelectorAll('#chart circle.gpt')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])")
        known = [(g[i], pts[i][1]) for i in range(len(g)) if g[i] is not None]
        (ga, ya), (gb, yb) = min(known), max(known)
        y_of = lambda v: ya + (yb - ya) / (gb - ga) * (v - ga)
        band = b.js("const p = document.querySelector('#chart path.gband'); return p && [p.getAttribute('d'), p.dataset.blocks]")
        check(band and band[1] == "2", "a band for 2 blocks")
        coords = [[float(v) for v in seg.split()] for seg in band[0].rstrip("Z").replace("M", "L")[1:].split("L")]
        n = len(g)
        upper, lower = coords[:n], coords[n:][::-1]
        check(all(abs(upper[i][0] - pts[i][0]) < 0.01 and abs(upper[i][1] - y_of(g[i] + sem[i])) < 0.05 and
                  abs(lower[i][1] - y_of(max(0, g[i] - sem[i]))) < 0.05 for i in range(n)),
              "the band is g +/- g_sem at every bin centre")

        # the caption of the exported figure
        b.click(b.find("#dl-svg"))
        text = b.wait(lambda: b.js_async(h.READ_LAST_BLOB), min(10, left()), "the SVG")["text"]
        cap = text[text.index('data-caption="1"'):]
        cap = cap[cap.index(">") + 1:cap.index("</text>")].replace("&gt;", ">").replace("&amp;", "&")
        for want in ("periodic box from the file, 2 × 2 × 2 nm in its first frame, each frame its own",
                     "30 × 60 (A × B) a frame", "4 frames", "A = name:OW", "B = name:HW1,HW2",
                     "leaving out 240 pairs within a molecule", " nm"):
            check(want in cap, "the caption says %r" % want)
        check("open boundaries" not in cap, "and not 'open boundaries': %r" % cap)

        # 3. partials by atom name, frames 1 on
        for css in ("#select-a", "#select-b", "#blocks"):
            h.set_value(b, css, "")
        b.click(b.find("#exclude"))
        h.choose(b, "partials", "name")
        h.set_value(b, "#frames", "1:")
        status, pid = h.submit_and_wait(b, min(15, left()), min(40, left()))
        check(status == "succeeded", "the partials job succeeded")
        part = h.get_json(d.base, "/v1/jobs/" + pid)["result"]["partial"]
        labels = [a + "–" + c for a, c in zip(part["a"], part["b"])]
        lines = b.js("return [...document.querySelectorAll('#chart path.pline')].map(p => [p.dataset.partial, p.getAttribute('d')])")
        check([l[0] for l in lines] == labels, "a line a species pair, labelled as the API's a-b: %s" % labels)
        keys = b.js("return [...document.querySelectorAll('#chart g.partial-key text')].map(t => t.textContent)")
        check(keys == ["g(r) " + l for l in labels], "the legend names them: %s" % keys)
        g = h.get_json(d.base, "/v1/jobs/" + pid)["result"]["g"]
        pts = b.js("return [...document.querySelectorAll('#chart circle.gpt')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])")
        known = [(g[i], pts[i][1]) for i in range(len(g)) if g[i] is not None]
        (ga, ya), (gb, yb) = min(known), max(known)
        y_of = lambda v: ya + (yb - ya) / (gb - ga) * (v - ga)
        for (label, dpath), row in zip(lines, part["g"]):
            xy = [[float(v) for v in seg.split()] for seg in dpath.replace("M", "L")[1:].split("L")]
            want = [(pts[i][0], y_of(v)) for i, v in enumerate(row) if v is not None]
            check(len(xy) == len(want) and all(abs(a[0] - w[0]) < 0.01 and abs(a[1] - w[1]) < 0.05 for a, w in zip(xy, want)),
                  "the %s line goes through the API's partial g" % label)

        b.js("document.getElementById('result').scrollIntoView()")
        h.log("screenshot:", b.screenshot(os.path.join(h.OUT, "dashboard-partials.png")))

        # 4. a histogram per point: OW sites against every atom
        h.choose(b, "partials", "")
        h.choose(b, "statistic", "per_point_histogram")
        h.set_value(b, "#select-a", "name:OW")
        status, sid = h.submit_and_wait(b, min(15, left()), min(40, left()))
        check(status == "succeeded", "the per-point histogram job succeeded")
        res = h.get_json(d.base, "/v1/jobs/" + sid)["result"]
        labels = ["site %d" % i for i in res["index"][:8]]
        lines = b.js("return [...document.querySelectorAll('#chart path.pline')].map(p => [p.dataset.partial, p.getAttribute('d')])")
        check([l[0] for l in lines] == labels, "a line for each of the first 8 sites: %s" % [l[0] for l in lines])
        more = b.js("const t = document.querySelector('#chart text.partial-more'); return t && t.textContent")
        check(more == "and %d more sites (in the downloads)" % (len(res["index"]) - 8), "the rest counted: %r" % more)
        g = res["g"]
        pts = b.js("return [...document.querySelectorAll('#chart circle.gpt')].map(c => [+c.getAttribute('cx'), +c.getAttribute('cy')])")
        known = [(g[i], pts[i][1]) for i in range(len(g)) if g[i] is not None]
        (ga, ya), (gb, yb) = min(known), max(known)
        y_of = lambda v: ya + (yb - ya) / (gb - ga) * (v - ga)
        xy = [[float(v) for v in seg.split()] for seg in lines[0][1].replace("M", "L")[1:].split("L")]
        want = [(pts[i][0], y_of(v)) for i, v in enumerate(res["point"]["g"][0]) if v is not None]
        check(len(xy) == len(want) and all(abs(a[0] - w[0]) < 0.01 and abs(a[1] - w[1]) < 0.05 for a, w in zip(xy, want)),
              "the first site's line goes through the API's point.g")
        h.choose(b, "statistic", "histogram")

        # 5. a refusal beside Compute, in view
        h.set_value(b, "#r-max", 5)
        b.set_window(1280, 700)
        b.js("document.getElementById('submit').scrollIntoView({block: 'center'})")
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return !document.getElementById('job-error').hidden"), min(10, left()), "the refusal")
        box = b.js("const r = document.getElementById('job-error').getBoundingClientRect();"
                   "return [r.top, r.bottom, innerHeight]")
        check(0 <= box[0] and box[1] <= box[2], "the refusal is in view: %s" % box)
        check("half the periodic box" in b.text(b.find("#job-error-detail")), "with the daemon's sentence")
        d.alive()


if __name__ == "__main__":
    h.main(run, "histd-web-truth-")
