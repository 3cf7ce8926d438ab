"""test_shutdown.py -- SIGTERM while clients keep POSTing /v1/histogram on
keep-alive connections: the daemon exits 0, and nothing it frees on the way
out is still reachable from an HTTP thread (the asan build catches a use
after free; the sync pool used to be freed before libmicrohttpd stopped).

usage: test_shutdown.py HISTD_EXE
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402

BODY = json.dumps({"points": [[0, 0, 0], [1, 1, 1], [2, 2, 2]], "bucket_width": 1}).encode()


def hammer(port, stop, answers):
    while not stop.is_set():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            while not stop.is_set():
                c.request("POST", "/v1/histogram", BODY, {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                answers.append(r.status)
        except (OSError, http.client.HTTPException):
            time.sleep(0.001)


def main():
    exe = sys.argv[1]
    for rnd in range(3):
        d = Daemon(exe)
        d.start()
        try:
            stop, answers = threading.Event(), []
            threads = [threading.Thread(target=hammer, args=(d.port, stop, answers))
                       for _ in range(8)]
            for t in threads:
                t.start()
            time.sleep(0.3)
            rc = d.stop(timeout=30)
            stop.set()
            for t in threads:
                t.join(15)
            log = d.log()
            check("AddressSanitizer" not in log, "round %d: %s" % (rnd, log[-3000:]))
            check(rc == 0, "round %d: exit status %s\n%s" % (rnd, rc, log[-3000:]))
            check(set(answers) <= {200, 503}, "round %d: answers %s" % (rnd, set(answers)))
            check(answers, "round %d: no request was answered" % rnd)
        finally:
            d.__exit__(None, None, None)
    print("test_shutdown: all ok")


if __name__ == "__main__":
    main()
