"""test_import.py -- datasets imported by reference (issue 12, item 6):
POST /v1/datasets?path=REL reads a file under --import-dir where it lies.

- a file under the import dir (and in a subdirectory) becomes the same
  dataset, id and all, as uploading its bytes; its format comes from its
  name or ?format=; ?name= labels it;
- the refusals, each with a sentence and nothing stored: imports off
  (no --import-dir), an absolute path, "..", a symlink that leads out of the
  dir, a missing file, a directory, a body with a path, a file whose format
  cannot be told, a malformed file (400 naming its line).

usage: test_import.py HISTD_EXE OPENAPI_YAML
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, random_points  # noqa: E402


def xyz(points):
    return "%d\nimported\n" % len(points) + "".join("Ar %r %r %r\n" % p for p in points)


def test_import(exe):
    top = tempfile.mkdtemp(prefix="histd-import-")
    try:
        imports = os.path.join(top, "imports")
        os.makedirs(os.path.join(imports, "run1"))
        pts = random_points(50, seed=3, box=10.0)
        with open(os.path.join(imports, "run1", "argon.xyz"), "w") as f:
            f.write(xyz(pts))
        with open(os.path.join(imports, "argon.data"), "w") as f:
            f.write(xyz(pts))
        with open(os.path.join(imports, "bad.xyz"), "w") as f:
            f.write("3\n\nAr 0 0 0\nAr 1 x 0\n")
        with open(os.path.join(top, "secret.xyz"), "w") as f:
            f.write(xyz(pts))
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
    test_import(sys.argv[1])
    print("test_import: all ok")


if __name__ == "__main__":
    main()
