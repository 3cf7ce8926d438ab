"""test_import.py -- datasets imported by reference (issue 12, item 6):
POST /v1/datasets?path=REL reads a file under --import-dir.

- a file under the import dir (and in a subdirectory) becomes the same
  dataset, id and all, as uploading its bytes; its format comes from its
  name or ?format=; ?name= labels it;
- the refusals, each with a sentence and nothing stored: imports off
  (no --import-dir), an absolute path, "..", a symlink that leads out of the
  dir, a missing file, a directory, a body with a path, a file whose format
  cannot be told, a malformed file (400 naming its line, never quoting the
  file's bytes);
- a user who can write in the import dir cannot make the daemon read
  outside it, block, or crash (issue #28, item 4): a directory on the path
  swapped for a symlink that leads out, a file swapped for a FIFO, a file
  shortened while it is read, each raced against a stream of imports (the
  racer flips them as fast as it can; the unfixed daemon lost every one of
  these races within the test's imports). Every import is answered, with
  the file's own points or a refusal that quotes nothing from outside;
- the same refusals where the kernel has no openat2 (faults.so's
  HISTD_TEST_NO_OPENAT2): the openat walk follows no symlink at all.

usage: test_import.py HISTD_EXE FAULTS_SO
"""
import ctypes
import os
import shutil
import socket
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, random_points  # noqa: E402


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def xyz(points):
    return "%d\nimported\n" % len(points) + "".join("Ar %r %r %r\n" % p for p in points)


SECRET = "SECRET_TOKEN=hunter2-7c1d"
RENAME_EXCHANGE = 2
_libc = ctypes.CDLL(None, use_errno=True)


def exchange(a, b):
    """renameat2(a, b, RENAME_EXCHANGE): the two names swap, atomically."""
    if _libc.renameat2(-100, a.encode(), -100, b.encode(), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


class Racer:
    """Runs step() in a loop on a thread until stopped."""

    def __init__(self, step):
        self.step, self.stop_flag, self.count = step, threading.Event(), 0
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop_flag.is_set():
            self.step()
            self.count += 1

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop_flag.set()
        self.thread.join(10)


def import_answers(d, path, tries):
    """POSTs ?path= up to `tries` times; [(status, detail or id)], ending
    with ("hung", None) for an import not answered within 30 s (an HTTP
    thread blocked in open())."""
    got = []
    for _ in range(tries):
        try:
            s, _, doc = d.json("POST", "/v1/datasets?path=" + path, timeout=30)
            got.append((s, (doc or {}).get("detail") or (doc or {}).get("id")))
        except (socket.timeout, TimeoutError):
            got.append(("hung", None))
            break
    return got


def test_races(exe, top):
    imports = os.path.join(top, "races")
    outside = os.path.join(top, "outside")
    os.makedirs(os.path.join(imports, "sub"))
    os.makedirs(outside)
    pts = random_points(40, seed=5, box=10.0)
    for where in (os.path.join(imports, "sub"), outside):
        write(os.path.join(where, "pts.xyz"), xyz(pts) if where != outside else SECRET + "\n")
    os.symlink("../outside", os.path.join(imports, "evil"))
    write(os.path.join(imports, "real.xyz"), xyz(pts))
    os.mkfifo(os.path.join(imports, "fifo.xyz"))
    big = xyz(random_points(60000, seed=6, box=10.0))
    write(os.path.join(imports, "shrinks.xyz"), big)
    with Daemon(exe, args=["--workers", "1", "--import-dir", imports, "--http-threads", "4"]) as d:
        s, _, doc = d.json("POST", "/v1/datasets?path=sub/pts.xyz")
        check(s == 201, (s, doc))
        inside = doc["id"]
        # 1. a directory on the path swapped for a symlink that leads out
        sub, evil = os.path.join(imports, "sub"), os.path.join(imports, "evil")
        with Racer(lambda: exchange(sub, evil)) as r:
            got = import_answers(d, "sub/pts.xyz", 300)
        check(r.count > 1000, "the racer swapped %d times" % r.count)
        leaks = [g for g in got if "hunter2" in str(g[1]) or (g[0] in (200, 201) and g[1] != inside)]
        check(not leaks, "a swapped symlink never leads the daemon out: %s" % leaks[:3])
        check(all(g[0] in (200, 201, 403, 404, 409) for g in got), sorted(set(g[0] for g in got)))
        print("ok - symlink swap: %s" % {k: sum(1 for g in got if g[0] == k) for k in set(g[0] for g in got)})
        # 2. a file swapped for a FIFO
        real, fifo = os.path.join(imports, "real.xyz"), os.path.join(imports, "fifo.xyz")
        with Racer(lambda: exchange(real, fifo)) as r:
            got = import_answers(d, "real.xyz", 300)
        check(all(g[0] != "hung" for g in got), "no import blocks on a FIFO: %d hung"
              % sum(1 for g in got if g[0] == "hung"))
        check(all(g[0] in (200, 201, 400) for g in got), sorted(set(str(g[0]) for g in got)))
        print("ok - FIFO swap: %s" % {k: sum(1 for g in got if g[0] == k) for k in set(g[0] for g in got)})
        # 3. a file shortened (and written again) while it is read
        shrinks = os.path.join(imports, "shrinks.xyz")

        def shorten():
            with open(shrinks, "r+") as f:
                f.truncate(len(big) // 3)
                f.seek(0, 2)
                f.write(big[len(big) // 3:])
        with Racer(shorten) as r:
            got = import_answers(d, "shrinks.xyz", 60)
        check(d.proc.poll() is None, "the daemon survives a file shortened under it: %s" % d.log()[-500:])
        check(all(g[0] in (200, 201, 400, 409) for g in got), sorted(set(str(g[0]) for g in got)))
        print("ok - shortened file: %s" % {k: sum(1 for g in got if g[0] == k) for k in set(g[0] for g in got)})
        s, _, _ = d.request("GET", "/healthz", timeout=10)
        check(s == 200, "the daemon is alive")


def test_no_openat2(exe, faults, top):
    imports = os.path.join(top, "walk")
    os.makedirs(os.path.join(imports, "run1"))
    pts = random_points(30, seed=8, box=10.0)
    write(os.path.join(imports, "run1", "a.xyz"), xyz(pts))
    write(os.path.join(top, "secret.xyz"), xyz(pts))
    os.symlink("run1", os.path.join(imports, "inner"))
    os.symlink(os.path.join(top, "secret.xyz"), os.path.join(imports, "escape.xyz"))
    os.symlink("../../secret.xyz", os.path.join(imports, "run1", "up.xyz"))
    os.mkfifo(os.path.join(imports, "fifo.xyz"))
    for walk in (False, True):
        env = {"LD_PRELOAD": faults, "HISTD_TEST_NO_OPENAT2": "1",
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"
               } if walk else {}
        with Daemon(exe, args=["--workers", "1", "--import-dir", imports], env=env) as d:
            s, _, doc = d.json("POST", "/v1/datasets?path=run1/./a.xyz")
            check(s == 201, ("walk" if walk else "openat2", s, doc))
            cases = [("escape.xyz", 403), ("run1/up.xyz", 403), ("fifo.xyz", 400), ("run1", 400),
                     ("run1/a.xyz/x", 404), ("nothing/a.xyz", 404),
                     ("inner/a.xyz", 403 if walk else 200)]
            for path, status in cases:
                s, _, doc = d.json("POST", "/v1/datasets?path=" + path, timeout=30)
                check(s == status, ("walk" if walk else "openat2", path, s, status, doc))
            print("ok - %s: %s" % ("the openat walk (no openat2)" if walk else "openat2", cases))


def test_import(exe):
    top = tempfile.mkdtemp(prefix="histd-import-")
    try:
        imports = os.path.join(top, "imports")
        os.makedirs(os.path.join(imports, "run1"))
        pts = random_points(50, seed=3, box=10.0)
        write(os.path.join(imports, "run1", "argon.xyz"), xyz(pts))
        write(os.path.join(imports, "argon.data"), xyz(pts))
        write(os.path.join(imports, "bad.xyz"), "3\n\nAr 0 0 0\nAr 1 x 0\n")
        write(os.path.join(imports, "notes.xyz"), SECRET + "\n")
        write(os.path.join(imports, "notes.json"), '{"%s": 1}' % SECRET)
        write(os.path.join(top, "secret.xyz"), xyz(pts))
        os.symlink(os.path.join(top, "secret.xyz"), os.path.join(imports, "escape.xyz"))
        with Daemon(exe, args=["--workers", "1", "--import-dir", imports]) as d:
            s, h, doc = d.json("POST", "/v1/datasets?path=run1/argon.xyz&name=argon")
            check(s == 201 and doc["n"] == 50 and doc["name"] == "argon", (s, doc))
            check(h["location"] == "/v1/datasets/" + doc["id"], h)
            s, _, up = d.json("POST", "/v1/datasets", xyz(pts), {"Content-Type": "chemical/x-xyz"})
            check(s == 200 and up["id"] == doc["id"], ("the upload of the same bytes", s, up))
            s, _, other = d.json("POST", "/v1/datasets?path=argon.data&format=xyz")
            check(s == 200 and other["id"] == doc["id"], ("?format= names it", s, other))
            refusals = [
                ("/v1/datasets?path=/etc/passwd", 403, "relative to the import dir"),
                ("/v1/datasets?path=../secret.xyz", 403, "without \"..\""),
                ("/v1/datasets?path=run1/../../secret.xyz", 403, "without \"..\""),
                ("/v1/datasets?path=escape.xyz", 403, "leads out of the import dir"),
                ("/v1/datasets?path=missing.xyz", 404, "no file"),
                ("/v1/datasets?path=run1", 400, "not a regular file"),
                ("/v1/datasets?path=argon.data", 400, "cannot tell the format"),
                ("/v1/datasets?path=bad.xyz", 400, "line 4"),
            ]
            for url, status, says in refusals:
                s, _, doc2 = d.json("POST", url)
                check(s == status and says in doc2.get("detail", ""), (url, s, doc2))
            for url, says in (("notes.xyz", "line 1"), ("notes.json", "unknown key")):
                s, _, doc2 = d.json("POST", "/v1/datasets?path=" + url)
                check(s == 400 and says in doc2["detail"] and "hunter2" not in doc2["detail"],
                      ("a 400 about a file never quotes it", url, s, doc2))
            s, _, doc2 = d.json("POST", "/v1/datasets?path=run1/argon.xyz", "3\n\nAr 0 0 0\n",
                                {"Content-Type": "chemical/x-xyz"})
            check(s == 400 and "takes no body" in doc2["detail"], (s, doc2))
            s, _, listed = d.json("GET", "/v1/datasets")
            check(len(listed["datasets"]) == 1, ("nothing else stored", listed))
        with Daemon(exe, args=["--workers", "1"]) as d:
            s, _, doc2 = d.json("POST", "/v1/datasets?path=run1/argon.xyz")
            check(s == 403 and "--import-dir" in doc2["detail"], (s, doc2))
    finally:
        shutil.rmtree(top, ignore_errors=True)


def main():
    exe, faults = sys.argv[1], sys.argv[2]
    test_import(exe)
    top = tempfile.mkdtemp(prefix="histd-import-")
    try:
        test_no_openat2(exe, faults, top)
        test_races(exe, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    print("test_import: all ok")


if __name__ == "__main__":
    main()
