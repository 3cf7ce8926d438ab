"""test_big_upload.py -- a big trajectory upload holds no copy of itself in
the daemon's memory (issue 12, item 6).

A DCD of SIZE MB (default 100: 32,000 atoms a frame, 262 frames, 8.4
million points; HISTD_BIG_UPLOAD_MB=2048 for the 2 GB run) is uploaded
with a Content-Length: the daemon spools the body to a temp file, parses
it from that file's mapping into the payload file (histd_parse_to_fd) and
stores it from there. While it does, this test samples the daemon's
anonymous memory (RssAnon in /proc/PID/status, every 10 ms) and requires
its peak to stay within a fixed allowance (64 MiB + 2 frames' float64)
above its level before the upload, whatever the size: the buffered path
would hold the body (SIZE) and the points (2 x SIZE) at once.

The stored dataset must be the one the buffered parser makes of the same
file (an import by path parses it on the heap): the same id, so the same
points, frames and boxes. A spooled body that is cut short is refused
with 400 naming the frame, and leaves no temp file in the data dir.

Weights past the spool size: a weighted CSV and a weighted sky-CSV with
regions, each a little over 32 MiB, uploaded with a Content-Length (so
spooled and parsed into the payload file, whose points the parse does not
own) are stored, and are the datasets their import by path makes (the id
covers the weights, the sky columns and the labels). They were refused
with "no room for the weights" before.

usage: test_big_upload.py HISTD_EXE OPENAPI_YAML
"""
import http.client
import os
import shutil
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402

ATOMS = 32000


def record(payload):
    return struct.pack("<i", len(payload)) + payload + struct.pack("<i", len(payload))


def write_dcd(path, frames, atoms=ATOMS, side=70.0):
    """A CHARMM DCD (little-endian, a unit cell each frame), coordinates
    that move a little from frame to frame."""
    icntrl = [frames, 0, 1] + [0] * 6 + [0] + [1, 0] + [0] * 7 + [24]
    hdr = b"CORD" + struct.pack("<9i", *icntrl[:9]) + struct.pack("<f", 0.002) + \
        struct.pack("<10i", *icntrl[10:])
    with open(path, "wb") as f:
        f.write(record(hdr))
        f.write(record(struct.pack("<i", 1) + b"histd big upload".ljust(80)))
        f.write(record(struct.pack("<i", atoms)))
        base = [(i * 7919 % 1000) * side / 1000.0 for i in range(atoms)]
        cell = record(struct.pack("<6d", side, 90.0, side, 90.0, 90.0, side))
        try:
            import numpy as np
            arr = np.array(base, dtype=np.float64)
        except ImportError:
            np = None
        for t in range(frames):
            f.write(cell)
            for axis in range(3):
                shift = 0.01 * t + axis
                if np is not None:
                    f.write(record(((arr + shift) % side).astype("<f4").tobytes()))
                else:
                    f.write(record(struct.pack("<%df" % atoms, *[(v + shift) % side for v in base])))


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def rss_anon_kb(pid):
    return status_kb(pid, "RssAnon")


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, False

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, rss_anon_kb(self.pid))
            time.sleep(0.01)


def sanitized(exe):
    with open(exe, "rb") as f:
        data = f.read()
    return b"__tsan_init" in data or b"__asan_init" in data


def post_file(d, path, query, ctype="application/x-dcd"):
    size = os.path.getsize(path)
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=600)
    try:
        conn.putrequest("POST", "/v1/datasets?" + query)
        conn.putheader("Content-Type", ctype)
        conn.putheader("Content-Length", str(size))
        conn.endheaders()
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                conn.send(chunk)
        resp = conn.getresponse()
        import json
        return resp.status, json.loads(resp.read() or b"null")
    finally:
        conn.close()


def test_big_upload(exe):
    size_mb = int(os.environ.get("HISTD_BIG_UPLOAD_MB", "100"))
    frame_bytes = 3 * (4 * ATOMS + 8) + 56
    frames = max(2, size_mb * 1000000 // frame_bytes)
    top = tempfile.mkdtemp(prefix="histd-big-")
    try:
        imports = os.path.join(top, "imports")
        os.makedirs(imports)
        path = os.path.join(imports, "big.dcd")
        write_dcd(path, frames)
        points = frames * ATOMS
        args = ["--workers", "1", "--import-dir", imports, "--max-points", str(points + 1),
                "--max-upload-bytes", str(os.path.getsize(path) + 1)]
        with Daemon(exe, args=args) as d:
            before = rss_anon_kb(d.pid())
            sampler = Sampler(d.pid())
            sampler.start()
            t0 = time.time()
            s, doc = post_file(d, path, "name=big")
            seconds = time.time() - t0
            sampler.stop = True
            sampler.join()
            check(s == 201 and doc["n"] == points and doc["frames"] == frames, (s, doc))
            growth_mb = (sampler.peak - before) / 1024.0
            allowance_mb = 64 + 2 * ATOMS * 24 / 1e6
            print("upload of %.0f MB (%d frames, %d points, payload %.0f MB): %.1f s, daemon's "
                  "RssAnon %.0f MB before, peak %.0f MB (+%.1f MB; allowance %.0f MB); its peak "
                  "RSS with the file pages it mapped (the page cache's) %.0f MB"
                  % (os.path.getsize(path) / 1e6, frames, points, 24 * points / 1e6, seconds,
                     before / 1024.0, sampler.peak / 1024.0, growth_mb, allowance_mb,
                     status_kb(d.pid(), "VmHWM") / 1024.0))
            if sanitized(exe):  # ASan and TSan keep shadow memory of every page touched
                print("note: a sanitizer build; its shadow memory is not the daemon's own, so "
                      "the memory bound is not checked here")
            else:
                check(growth_mb <= allowance_mb,
                      "the daemon's anonymous memory grew by %.1f MB (allowed %.0f)"
                      % (growth_mb, allowance_mb))
            # the buffered parser, on the same file: the same dataset (it holds the
            # points on the heap: only at sizes this machine's memory takes)
            if size_mb <= 512:
                s2, _, imported = d.json("POST", "/v1/datasets?path=big.dcd")
                check(s2 == 200 and imported["id"] == doc["id"], ("the same dataset", s2, imported))
            # cut short: refused, nothing left behind
            cut = os.path.join(top, "cut.dcd")
            with open(path, "rb") as f, open(cut, "wb") as g:
                g.write(f.read(os.path.getsize(path) - 1000))
            s3, problem = post_file(d, cut, "name=cut")
            check(s3 == 400 and "frame %d" % frames in problem["detail"], (s3, problem))
            payloads = os.path.join(d.data_dir, "data", "payloads")
            left = [f for f in os.listdir(payloads) if f.endswith(".tmp")]
            check(left == [], "no temp file left behind: %s" % left)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def test_big_weighted(exe):
    top = tempfile.mkdtemp(prefix="histd-bigw-")
    try:
        imports = os.path.join(top, "imports")
        os.makedirs(imports)
        spool = 32 << 20
        plain, sky = os.path.join(imports, "w.csv"), os.path.join(imports, "sky.csv")
        with open(plain, "w") as f:
            f.write("x,y,z,w\n")
            i = 0
            while f.tell() < spool + (1 << 20):
                f.write("%.15f,%.15f,%.15f,%.15f\n" % (i * 1e-6, (i % 977) * 0.5, (i % 89) * 3.25,
                                                     0.5 + (i % 13) / 7.0))
                i += 1
        with open(sky, "w") as f:
            f.write("ra,dec,dist,w,region\n")
            i = 0
            while f.tell() < spool + (1 << 20):
                f.write("%.12f,%.12f,%.12f,%.12f,%d\n" % ((i * 0.000137) % 360.0, (i % 1801) * 0.1 - 90,
                                                        100 + (i % 997), 1 + (i % 5) / 4.0, i % 7))
                i += 1
        args = ["--workers", "1", "--import-dir", imports]
        with Daemon(exe, args=args) as d:
            for path, fmt, ctype in ((plain, "csv", "text/csv"), (sky, "sky-csv", "text/csv")):
                s, doc = post_file(d, path, "format=" + fmt, ctype)
                check(s == 201 and doc["weighted"], "a weighted %s of %.1f MB with a "
                      "Content-Length: %s %s" % (fmt, os.path.getsize(path) / 1e6, s, doc))
                s2, _, imported = d.json("POST", "/v1/datasets?format=%s&path=%s"
                                         % (fmt, os.path.basename(path)))
                check(s2 == 200 and imported["id"] == doc["id"],
                      ("the same dataset, weights included", fmt, s2, imported))
                print("ok - a weighted %s of %.1f MB spooled and stored (%d points)"
                      % (fmt, os.path.getsize(path) / 1e6, doc["n"]))
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    test_big_weighted(sys.argv[1])
    test_big_upload(sys.argv[1])
    print("test_big_upload: all ok")


if __name__ == "__main__":
    main()
