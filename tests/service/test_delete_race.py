"""test_delete_race.py -- DELETE /v1/datasets/{id} while the same points are
uploaded again: whatever order they end in, a dataset the daemon lists has
its payload file (a delete used to unlink the file that the concurrent
upload had just stored, leaving a row without a file behind a 201).

The shim faults.so (LD_PRELOAD) makes the delete's unlink of the
payload slow, so the upload lands between the delete's row and its file.

usage: test_delete_race.py HISTD_EXE FAULTS_SO
"""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, random_points  # noqa: E402


def main():
    exe, shim = sys.argv[1], sys.argv[2]
    env = {"LD_PRELOAD": shim, "HISTD_TEST_SLOW_UNLINK_MS": "600",
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    pts = random_points(50, seed=5)
    with Daemon(exe, env=env) as d:
        ds = d.upload(pts, "f64")
        answers = {}

        def delete():
            answers["delete"] = d.json("DELETE", "/v1/datasets/" + ds["id"])[0]

        t = threading.Thread(target=delete)
        t.start()
        time.sleep(0.2)  # the row is gone, the file not yet
        again = d.upload(pts, "f64")
        t.join(10)
        check(again["id"] == ds["id"], again)
        check(answers.get("delete") == 204, answers)
        s, _, doc = d.json("GET", "/v1/datasets/" + ds["id"])
        if s == 200:
            check("error" not in doc, "the dataset is listed but its payload is gone: %s" % doc)
            job = d.wait_job(d.submit(ds["id"], bucket_width=100)["id"])
            check(job["status"] == "succeeded", job)
        else:
            check(s == 404, (s, doc))
        check(d.stop() == 0, "exit 0")
    print("test_delete_race: all ok")


if __name__ == "__main__":
    main()
