"""test_budgets.py -- the daemon's byte budgets (issue 15, items 6 and 7):

- --max-data-bytes: an upload that would take the data dir past it is
  refused with 507 and a sentence, streamed or buffered; a job whose result
  would ends failed with the sentence; over the budget, POST /v1/jobs
  answers 507 and /readyz 503;
- --max-buffered-bytes: request bodies held at once, for all clients, as
  their bytes arrive (a client that announces the budget and trickles holds
  only what it sent, issue #28 item 3): a body while others hold the budget
  gets 503 with Retry-After (at its headers with a Content-Length, at its
  end when chunked), a body larger than the whole budget 413; large answers
  written for clients that do not read them count too, so such clients
  cannot pile up temp files.

usage: test_budgets.py HISTD_EXE FAULTS_SO
"""
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, encode, random_points  # noqa: E402


def data_bytes(d):
    root = os.path.join(d.data_dir, "data")
    total = sum(os.path.getsize(os.path.join(root, "payloads", f))
                for f in os.listdir(os.path.join(root, "payloads")))
    return total + sum(os.path.getsize(os.path.join(root, f)) for f in ("histd.db", "histd.db-wal")
                       if os.path.exists(os.path.join(root, f)))


def test_data_budget(exe, root):
    dd = os.path.join(root, "data")
    os.makedirs(dd)
    d = Daemon(exe, data_dir=dd, args=["--workers", "1"]).start()
    try:
        pts = random_points(2000, seed=71)
        ds = d.upload(pts, "json")["id"]
        stopped(d)
        held = data_bytes(d)  # the WAL is folded into the database at a clean stop

        d.args = ["--workers", "1", "--max-data-bytes", str(held + 200 * 1024)]
        d.start()
        # 1.2 MB of points: streamed (answered at its headers), then buffered
        c = raw_connect(d)
        c.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                  b"application/x-float64\r\nContent-Length: 1200000\r\n\r\n")
        status, head, doc = read_answer(c)
        c.close()
        check(status == 507 and "--max-data-bytes" in doc["detail"] and
              doc["title"] == "Insufficient Storage", (status, doc))
        body, ctype = encode(random_points(50000, seed=72), "json")
        s, _, doc = d.json("POST", "/v1/datasets", body, {"Content-Type": ctype})
        check(s == 507 and "--max-data-bytes" in doc["detail"], (s, doc))
        small = d.wait_job(d.submit(ds, bucket_width=100, buckets=20)["id"])
        check(small["status"] == "succeeded", small)
        # a result of ~1 MB (1,999,000 pairs over 10^6 buckets) does not fit
        big = d.wait_job(d.submit(ds, bucket_width=0.002, buckets=1000000, kernel="cpu")["id"])
        check(big["status"] == "failed" and "--max-data-bytes" in big["error"] and
              "result could not be stored" in big["error"], big)
        s, _, _ = d.json("GET", "/readyz")
        check(s == 200, s)
        stopped(d)
        print("--max-data-bytes: uploads 507, a result past it fails the job: %s" % big["error"])

        d.args = ["--workers", "1", "--max-data-bytes", str(held // 2)]
        d.start()
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds, "bucket_width": 100})
        check(s == 507 and "--max-data-bytes" in doc["detail"], (s, doc))
        s, h, doc = d.json("GET", "/readyz")
        check(s == 503 and "--max-data-bytes" in doc["detail"], (s, doc))
        s, _, doc = d.json("GET", "/v1/jobs/" + small["id"])
        check(s == 200 and doc["status"] == "succeeded", "what is stored still reads")
        stopped(d)
        print("over --max-data-bytes: POST /v1/jobs 507, /readyz 503")
    finally:
        d.kill()


def test_every_byte(exe, root):
    """Weighted sums and a job's parameters count in --max-data-bytes, each
    twice (the database's log, then the database): the data dir stays under
    the budget (issue 28, item 5)."""
    dd = os.path.join(root, "every")
    os.makedirs(dd)
    d = Daemon(exe, data_dir=dd, args=["--workers", "1"]).start()
    try:
        pts = [list(p) + [0.5 + (i % 3) * 0.25] for i, p in enumerate(random_points(2000, seed=74))]
        ds = d.json("POST", "/v1/datasets", {"points": pts})[2]["id"]
        stopped(d)
        budget = data_bytes(d) + (1 << 20)
        d.args = ["--workers", "1", "--max-data-bytes", str(budget)]
        d.start()
        # 200,000 buckets, nearly all filled: a few hundred kB of counts and
        # 1.6 MB of weighted sums
        job = d.wait_job(d.submit(ds, bucket_width=0.009, buckets=200000, kernel="cpu",
                                  weights=True)["id"])
        check(job["status"] == "failed" and "--max-data-bytes" in job["error"] and
              "result could not be stored" in job["error"], (job["status"], job.get("error")))
        # 100,000 explicit edges: 1.9 MB of parameters in the job's row
        edges = [i * 0.01 for i in range(100000)]
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds, "edges": edges})
        check(s == 507 and "the job's parameters" in doc["detail"] and
              "--max-data-bytes" in doc["detail"], (s, doc))
        small = d.wait_job(d.submit(ds, bucket_width=100, buckets=20, weights=True)["id"])
        check(small["status"] == "succeeded", (small["status"], small.get("error")))
        stopped(d)
        check(data_bytes(d) <= budget, "the data dir holds %d bytes, its budget is %d"
              % (data_bytes(d), budget))
        print("--max-data-bytes counts weighted sums and parameters: %s" % job["error"])
    finally:
        d.kill()


def test_result_cap(exe, root):
    """--max-result-bytes: a job whose result could take more is refused up
    front (422, naming both sizes); sparse results of many bins are not."""
    dd = os.path.join(root, "cap")
    os.makedirs(dd)
    with Daemon(exe, data_dir=dd, args=["--workers", "1"],
                env={"HISTD_MAX_RESULT_BYTES": "1M"}) as d:
        ds = d.upload(random_points(2000, seed=75), "json")["id"]
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds, "bucket_width": 0.002,
                                                "buckets": 1000000, "kernel": "cpu"})
        check(s == 422 and "--max-result-bytes" in doc["detail"] and
              "1048576 bytes" in doc["detail"] and "up to" in doc["detail"], (s, doc))
        refused = doc["detail"]
        # 2 points, or 8 frames of 2: at most 1 or 8 cells are not zero
        two = d.upload([(0.0, 0.0, 0.0), (3.0, 4.0, 0.0)], "json")["id"]
        xyz = "".join('2\nLattice="100 0 0 0 100 0 0 0 100" pbc="T T T"\n'
                      "Ar 0 0 0\nAr %d 0 0\n" % (1 + f) for f in range(8))
        s, _, frames = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
        for job in (d.submit(two, bucket_width=1, buckets=1 << 22, kernel="cpu"),
                    d.submit(frames["id"], r_max=50, buckets=1 << 19, per_frame=True,
                             kernel="cpu")):
            deadline = time.time() + 300
            while time.time() < deadline:
                s, _, done = d.json("GET", "/v1/jobs/%s?wait=10&summary=true" % job["id"])
                if done["status"] not in ("queued", "running"):
                    break
            check(done["status"] == "succeeded", done)
        s, _, doc = d.json("GET", "/v1/jobs")
        check(len(doc["jobs"]) == 2, "the refused job was not stored")
    print("--max-result-bytes: 422: %s" % refused)


def stopped(d):
    """SIGTERM: exit status 0, or the status and the daemon's log tail."""
    rc = d.stop()
    check(rc == 0, "exit status %s after SIGTERM; the daemon's log ends:\n%s" % (rc, d.log()[-4000:]))


def raw_connect(d, rcvbuf=None):
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(60)
    s.connect(("127.0.0.1", d.port))
    return s


def read_status(s):
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n")[0].decode()
    return int(head.split()[1]), head.lower()


def read_answer(s):
    """The status, head and JSON body of an answer with a Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    head = head.decode().lower()
    length = int(head.split("content-length:")[1].split("\r\n")[0])
    while len(body) < length:
        chunk = s.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split()[1]), head, json.loads(body)


def points_json(nbytes, seed):
    """A JSON points body of exactly nbytes (padded with spaces)."""
    body = json.dumps({"points": [list(p) for p in random_points(nbytes // 70, seed=seed)]})
    check(len(body) <= nbytes, "body fits")
    return (body + " " * (nbytes - len(body))).encode()


def buffered(d):
    """The bytes the daemon holds against --max-buffered-bytes (/metrics)."""
    _, _, raw = d.request("GET", "/metrics")
    for line in raw.decode().splitlines():
        if line.startswith("histd_buffered_bytes "):
            return int(line.split()[1])
    raise AssertionError("/metrics has no histd_buffered_bytes")


def wait_buffered(d, at_least):
    deadline = time.time() + 30
    while buffered(d) < at_least and time.time() < deadline:
        time.sleep(0.05)
    check(buffered(d) >= at_least, "the daemon holds %d bytes, not %d" % (buffered(d), at_least))


def post_head(length, ctype="application/json", path="/v1/datasets"):
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %s\r\n"
            b"Content-Length: %d\r\n\r\n" % (path.encode(), ctype.encode(), length))


class Trickle:
    """Sends `first` on s, then 256 blank bytes every 0.1 s from a thread
    until closed: a body that arrives slowly, but above any minimum rate the
    tests set."""

    def __init__(self, s, first):
        self.s, self.stop = s, threading.Event()
        s.sendall(first)
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(0.1):
            try:
                self.s.sendall(b" " * 256)
            except OSError:
                return

    def alive(self):
        return self.thread.is_alive()

    def close(self):
        self.stop.set()
        self.thread.join(10)
        self.s.close()


def test_buffered_budget(exe, root):
    dd = os.path.join(root, "buffered")
    os.makedirs(dd)
    # (the trickle below, 2.5 kB/s, is 25 times --min-body-rate: never too slow)
    with Daemon(exe, data_dir=dd, args=["--max-buffered-bytes", "1M", "--min-body-rate", "100"]) as d:
        # larger than the whole budget: 413, at the headers
        s = raw_connect(d)
        s.sendall(post_head(2000000))
        status, _ = read_status(s)
        s.close()
        check(status == 413, status)

        # announcing is not holding (issue #28, item 3): a client that announces
        # most of the budget and trickles holds only what it has sent, so the
        # others' bodies are served meanwhile
        trickle = Trickle(raw_connect(d), post_head(1000000, path="/v1/jobs") + b"{")
        wait_buffered(d, 1)
        for seed, size in ((77, 700000), (78, 900000)):
            try:
                st, _, doc = d.json("POST", "/v1/datasets", points_json(size, seed=seed),
                                    {"Content-Type": "application/json"})
            except (BrokenPipeError, ConnectionResetError) as e:  # answered (503) at its headers
                st, doc = "closed", str(e)
            check(st == 201, ("a %d-byte body while another only announced the budget" % size,
                              st, doc))
        check(trickle.alive(), "the trickle was served all along")
        trickle.close()
        deadline = time.time() + 30
        while buffered(d) > 0 and time.time() < deadline:
            time.sleep(0.05)
        check(buffered(d) == 0, "all given back: %d" % buffered(d))

        # one client holds 700 kB of the budget: it has sent all but the last 1000 bytes
        body = points_json(700000, seed=73)
        hold = raw_connect(d)
        hold.sendall(post_head(len(body)) + body[:-1000])
        wait_buffered(d, len(body) - 1000)
        # a Content-Length that does not fit in what is left: 503 at the headers
        c = raw_connect(d)
        c.sendall(post_head(700000))
        st, h, doc = read_answer(c)
        c.close()
        check(st == 503 and "retry-after" in h and "--max-buffered-bytes" in doc["detail"],
              (st, doc))
        # chunked: read to its end, then 503
        conn_body = points_json(700000, seed=75)
        c = raw_connect(d)
        c.sendall(b"POST /v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        for i in range(0, len(conn_body), 65536):
            piece = conn_body[i:i + 65536]
            c.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        c.sendall(b"0\r\n\r\n")
        status, head = read_status(c)
        c.close()
        check(status == 503 and "retry-after" in head, (status, head))
        # the holder finishes: its upload works, and the budget is free again
        hold.sendall(body[-1000:])
        status, _ = read_status(hold)
        hold.close()
        check(status == 201, status)
        st, _, doc = d.json("POST", "/v1/datasets", points_json(700000, seed=76),
                            {"Content-Type": "application/json"})
        check(st == 201, (st, doc))
        print("--max-buffered-bytes: held as bodies arrive; 413 beyond it, 503 + Retry-After "
              "while others hold it")


def test_result_reads(exe, root):
    """Reading a stored result holds memory (its blob and the arrays it
    decodes into): that counts in --max-buffered-bytes too, so while other
    requests hold it, GET of the result answers 503; a summary needs none
    (issue 28, item 6)."""
    dd = os.path.join(root, "reads")
    os.makedirs(dd)
    with Daemon(exe, data_dir=dd, args=["--max-buffered-bytes", "1M", "--workers", "1"]) as d:
        # 8 frames of 2 atoms: 8 x 60,000 cells of per-frame counts, 3.8 MB
        # in memory once read (a few hundred bytes stored)
        xyz = "".join('2\nLattice="100 0 0 0 100 0 0 0 100" pbc="T T T"\n'
                      "Ar 0 0 0\nAr %d 0 0\n" % (1 + f) for f in range(8))
        s, _, frames = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
        job = d.wait_job(d.submit(frames["id"], r_max=50, buckets=60000, per_frame=True,
                                  kernel="cpu")["id"], timeout=120)
        check(job["status"] == "succeeded", job["status"])
        # a client that asks for another result's 16 MB answer and does not
        # read it holds the budget once the answer's first bytes come
        # (test_large_answers); the answer is larger than the socket buffers
        # can take (net.ipv4.tcp_wmem's largest is 4 MB), so the daemon
        # cannot hand it all to the kernel and let go of it
        two = d.upload([(0.0, 0.0, 0.0), (3.0, 4.0, 0.0)], "json")["id"]
        other = d.wait_job(d.submit(two, bucket_width=0.001, buckets=8000000)["id"], timeout=120)
        idle = raw_connect(d, rcvbuf=4096)
        idle.sendall(b"GET /v1/jobs/%s/result HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                     % other["id"].encode())
        idle.settimeout(60)
        status, head = read_status(idle)
        check(status == 200, ("the idle client's answer starts", status, head))
        wait_buffered(d, 15000000)
        for path in ("/v1/jobs/%s/result" % job["id"], "/v1/jobs/" + job["id"]):
            s, h, doc = d.json("GET", path)
            check(s == 503 and "retry-after" in h and "--max-buffered-bytes" in doc["detail"],
                  (path, s, doc if s != 200 else "a result"))
        s, _, doc = d.json("GET", "/v1/jobs/%s?summary=true" % job["id"])
        check(s == 200 and doc["result"]["total"] == 8, (s, doc))
        idle.close()  # the daemon lets go of its answer
        deadline = time.time() + 60
        while time.time() < deadline:
            s, _, doc = d.json("GET", "/v1/jobs/%s/result" % job["id"])
            if s != 503:
                break
            time.sleep(0.05)
        check(s == 200 and doc["per_frame"]["counts"][7][9600] == 1, s)
        print("reading a result holds --max-buffered-bytes: 503 while others hold it")


def test_large_answers(exe, root):
    dd = os.path.join(root, "answers")
    os.makedirs(dd)
    with Daemon(exe, data_dir=dd, args=["--max-buffered-bytes", "30M"]) as d:
        two = d.upload([(0.0, 0.0, 0.0), (3.0, 4.0, 0.0)], "json")["id"]
        job = d.submit(two, bucket_width=0.001, buckets=2000000)
        done = d.wait_job(job["id"], timeout=120)
        check(done["status"] == "succeeded", done)
        path = "/v1/jobs/%s/result" % job["id"]
        # a client that asks for ~20 MB and does not read
        idle = raw_connect(d, rcvbuf=4096)
        idle.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        # its answer exists (and holds the budget) once its first bytes come;
        # polling before that raced with it on a loaded machine: a poll's
        # answer could take the budget first and the idle client got the 503
        idle.settimeout(30)
        status, head = read_status(idle)
        check(status == 200, ("the idle client's answer starts", status, head, d.log()[-2000:]))
        deadline = time.time() + 30
        while True:  # until its answer is written and held
            s, h, doc = d.json("GET", path)
            if s == 503 or time.time() > deadline:
                break
            time.sleep(0.1)
        check(s == 503 and "retry-after" in h and "--max-buffered-bytes" in doc["detail"],
              (s, doc))
        idle.close()  # the daemon lets go of its answer
        deadline = time.time() + 60
        while time.time() < deadline:
            s, _, body = d.request("GET", path)
            if s == 200:
                break
            time.sleep(0.2)
        check(s == 200 and json.loads(body)["counts"][5000] == 1, s)
        print("large answers not read by their clients hold --max-buffered-bytes: 503 beyond")


def main():
    exe = sys.argv[1]
    root = tempfile.mkdtemp(prefix="histd-budgets-")
    try:
        test_data_budget(exe, root)
        test_every_byte(exe, root)
        test_result_cap(exe, root)
        test_buffered_budget(exe, root)
        test_large_answers(exe, root)
        test_result_reads(exe, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("test_budgets: all ok")


if __name__ == "__main__":
    main()
