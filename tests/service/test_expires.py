"""test_expires.py -- temporary uploads: POST /v1/datasets?expires=SECONDS
makes the daemon delete the dataset that long after it is stored.

- every malformed value (0, negative, not a number, past 100 years, an
  unknown unit, empty) is 400 with a sentence naming expires, on the
  buffered path and on the streamed f64 path (at the headers), and
  nothing is stored;
- a dataset with expires=1 answers expires_at about a second after its
  upload and is gone (404, not listed) within a few seconds; one without
  expires says null and stays;
- the same points uploaded again keep the later time, and for ever when
  either upload had none (a temporary upload never shortens a kept one);
- expiry is durable: across a restart a dataset keeps its expires_at, and
  one whose time came while the daemon was stopped is deleted at the start.

usage: test_expires.py HISTD_EXE [openapi.yaml]
"""
import calendar
import json
import struct
import sys
import time

from daemon import Daemon, random_points


def rfc3339(text):
    """Seconds since the epoch of "2026-11-21T07:40:01.123Z"."""
    whole, _, frac = text.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) + float("0." + (frac or "0"))


def upload(d, points, query="", fmt="json"):
    if fmt == "json":
        body, ctype = json.dumps({"points": points}), "application/json"
    else:
        body, ctype = b"".join(struct.pack("<3d", *p) for p in points), "application/x-float64"
    return d.json("POST", "/v1/datasets" + query, body, {"Content-Type": ctype})


def gone_within(d, ids, seconds):
    """Whether every id answers 404 within `seconds` (polled)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if all(d.json("GET", "/v1/datasets/" + i)[0] == 404 for i in ids):
            return True
        time.sleep(0.1)
    return False


def main():
    exe = sys.argv[1]
    with Daemon(exe) as d:
        # refused values, with a sentence, and nothing stored
        for bad in ["0", "-5", "abc", "1e99", "5x", "", "nan", "inf", "101y"]:
            for fmt in ("json", "f64"):
                s, _, doc = upload(d, random_points(3, 1), "?expires=" + bad, fmt)
                assert s == 400 and "expires must be" in doc["detail"] and \
                    ("\"%s\"" % bad) in doc["detail"], (bad, fmt, s, doc)
        s, _, doc = d.json("GET", "/v1/datasets")
        assert doc["datasets"] == [], doc

        # expires=1 goes; no expires stays, and says null
        t0 = time.time()
        s, _, short = upload(d, random_points(5, 2), "?expires=1")
        assert s == 201 and short["expires_at"] is not None, (s, short)
        at = rfc3339(short["expires_at"])
        assert t0 + 0.5 < at < time.time() + 1.5, (t0, short["expires_at"])
        s, _, streamed = upload(d, random_points(4, 3), "?expires=1s", fmt="f64")
        assert s == 201 and streamed["format"] == "f64" and streamed["expires_at"], streamed
        s, _, kept = upload(d, random_points(6, 4))
        assert s == 201 and kept["expires_at"] is None, kept
        assert gone_within(d, [short["id"], streamed["id"]], 6), "expired datasets stayed"
        listed = [x["id"] for x in d.json("GET", "/v1/datasets")[2]["datasets"]]
        assert listed == [kept["id"]], listed
        assert "expired and was deleted" in d.log(), d.log()[-2000:]

        # the same points again: the later time wins; for ever wins over any time
        pts = random_points(7, 5)
        s, _, a = upload(d, pts, "?expires=1h")
        s2, _, b = upload(d, pts, "?expires=2h")
        assert s == 201 and s2 == 200 and rfc3339(b["expires_at"]) - rfc3339(a["expires_at"]) > \
            3500, (a, b)
        s, _, c = upload(d, pts, "?expires=10m")
        assert s == 200 and c["expires_at"] == b["expires_at"], (b, c)
        s, _, c = upload(d, pts)
        assert s == 200 and c["expires_at"] is None, c
        s, _, c = upload(d, pts, "?expires=1")
        assert s == 200 and c["expires_at"] is None, c
        s, _, c = upload(d, random_points(6, 4), "?expires=1")  # `kept` again
        assert s == 200 and c["expires_at"] is None, c

        # durable: kept across a restart; one that expires while stopped goes at the start
        s, _, hour = upload(d, random_points(8, 6), "?expires=3600")
        s, _, soon = upload(d, random_points(9, 7), "?expires=1")
        d.stop()
        while time.time() <= rfc3339(soon["expires_at"]):
            time.sleep(0.05)
        d.start()
        s, _, again = d.json("GET", "/v1/datasets/" + hour["id"])
        assert s == 200 and again["expires_at"] == hour["expires_at"], (s, again, hour)
        assert gone_within(d, [soon["id"]], 3), "a dataset that expired while stopped stayed"
        assert d.json("GET", "/v1/datasets/" + kept["id"])[0] == 200
    print("test_expires: refused values, expiry, re-uploads and a restart ok")


if __name__ == "__main__":
    main()
