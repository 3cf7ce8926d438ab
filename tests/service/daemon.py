"""daemon.py -- start the real histd on a loopback port and talk HTTP to it.

Shared by the service suite's tests (run with /usr/bin/python3, which has
python3-yaml and python3-jsonschema). The daemon listens on 127.0.0.1:0
and prints the port it got; nothing here ever leaves loopback. Every wait
is bounded, and Daemon.__exit__ kills what it started.
"""
import datetime
import http.client
import json
import math
import os
import random
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time


class Daemon:
    def __init__(self, exe, data_dir=None, args=(), env=None):
        self.exe = exe
        self.own_dir = data_dir is None
        self.data_dir = data_dir or tempfile.mkdtemp(prefix="histd-test-")
        self.args = list(args)
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("HISTD_"):
                del self.env[k]
        self.env.update(env or {})
        self.proc = None
        self.port = None
        self.log_path = os.path.join(self.data_dir, "daemon.log")

    def start(self, timeout=15):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.exe, "--listen", "127.0.0.1:0", "--data-dir",
             os.path.join(self.data_dir, "data"), "--access-log"] + self.args,
            stdout=subprocess.PIPE, stderr=log, env=self.env)
        log.close()
        deadline = time.time() + timeout
        line = b""
        while time.time() < deadline and not line.endswith(b"\n"):
            r, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if r:
                ch = os.read(self.proc.stdout.fileno(), 1)
                if not ch:
                    break
                line += ch
            elif self.proc.poll() is not None:
                break
        if b"listening on http://" not in line:
            self.kill()
            raise RuntimeError("histd did not start: %r\n%s" % (line, self.log()))
        self.port = int(line.strip().rsplit(b":", 1)[1])
        return self

    def log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Sends sig and waits; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("histd did not stop within %ss after %s" % (timeout, sig))
        self.proc.stdout.close()
        self.proc = None
        return rc

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(5)
            self.proc.stdout.close()
            self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.kill()
        if self.own_dir and exc[0] is None:
            shutil.rmtree(self.data_dir, ignore_errors=True)
        elif exc[0] is not None:
            sys.stderr.write("---- daemon log ----\n" + self.log())

    def pid(self):
        return self.proc.pid

    def status_kb(self, key):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    # ---- HTTP ----

    def request(self, method, path, body=None, headers=None, timeout=60):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
                headers = dict(headers or {})
                headers.setdefault("Content-Type", "application/json")
            elif isinstance(body, str):
                body = body.encode()
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
        finally:
            conn.close()

    def json(self, method, path, body=None, headers=None, timeout=60):
        status, hdrs, data = self.request(method, path, body, headers, timeout)
        ctype = hdrs.get("content-type", "")
        doc = json.loads(data) if data and "json" in ctype else None
        return status, hdrs, doc

    def upload(self, points, fmt="json", name=None):
        body, ctype = encode(points, fmt)
        path = "/v1/datasets" + ("?name=" + name if name else "")
        status, hdrs, doc = self.json("POST", path, body, {"Content-Type": ctype})
        assert status in (200, 201), (status, doc)
        return doc

    def submit(self, dataset, **params):
        params["dataset"] = dataset
        status, hdrs, doc = self.json("POST", "/v1/jobs", params)
        assert status == 202, (status, doc)
        assert hdrs["location"] == "/v1/jobs/" + doc["id"], hdrs
        return doc

    def wait_running(self, job_id, timeout=30):
        """Until the job runs and its progress has moved; its last document."""
        deadline = time.time() + timeout
        doc = None
        while time.time() < deadline:
            _, _, doc = self.json("GET", "/v1/jobs/" + job_id)
            if doc["status"] == "running" and doc["progress"] > 0:
                return doc
            time.sleep(0.02)
        raise AssertionError("job %s never ran: %s" % (job_id, doc))

    def cancel_running(self, job_id, timeout=10):
        """DELETEs a running job (202) and polls until it stops; returns the
        seconds that took and the job's last document."""
        t0 = time.time()
        s, _, doc = self.json("DELETE", "/v1/jobs/" + job_id)
        assert s == 202 and doc["status"] == "running", (s, doc)
        while time.time() - t0 < timeout:
            _, _, doc = self.json("GET", "/v1/jobs/" + job_id)
            if doc["status"] != "running":
                break
            time.sleep(0.02)
        return time.time() - t0, doc

    def wait_job(self, job_id, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, _, doc = self.json("GET", "/v1/jobs/%s?wait=10" % job_id)
            assert status == 200, (status, doc)
            if doc["status"] not in ("queued", "running"):
                return doc
        raise AssertionError("job %s did not finish within %ss" % (job_id, timeout))


# ---- point sets and the definition ----

def random_points(n, seed, box=1000.0):
    rng = random.Random(seed)
    return [(rng.uniform(0, box), rng.uniform(0, box), rng.uniform(0, box)) for _ in range(n)]


def lattice_points(side):
    """Integer lattice: many pair distances land exactly on bucket edges."""
    return [(float(i), float(j), float(k))
            for i in range(side) for j in range(side) for k in range(side)]


def definition(points, width, buckets):
    """The exactness contract, written out: binary64, no FMA (Python floats
    never fuse), correctly rounded sqrt and division."""
    counts = [0] * buckets
    overflow = 0
    n = len(points)
    for i in range(n):
        xi, yi, zi = points[i]
        for j in range(i + 1, n):
            xj, yj, zj = points[j]
            dx = xi - xj
            dy = yi - yj
            dz = zi - zj
            s = (dx * dx + dy * dy) + dz * dz
            b = math.floor(math.sqrt(s) / width)
            if b < buckets:
                counts[b] += 1
            else:
                overflow += 1
    return counts, overflow, n * (n - 1) // 2


def image_d(a, b, box):
    """The contract's distance in an orthorhombic box: per axis dx - L *
    nearbyint(dx / L) (Python's round is round-half-even, as nearbyint)."""
    s = 0.0
    parts = []
    for k in range(3):
        dx = a[k] - b[k]
        dx = dx - box[k] * round(dx / box[k])
        parts.append(dx * dx)
    s = (parts[0] + parts[1]) + parts[2]
    return math.sqrt(s)


def encode(points, fmt):
    if fmt == "json":
        return json.dumps({"points": [list(p) for p in points]}), "application/json"
    if fmt == "json-xyz":
        return (json.dumps({"x": [p[0] for p in points], "y": [p[1] for p in points],
                            "z": [p[2] for p in points]}), "application/json")
    if fmt == "csv":
        return "x,y,z\n" + "".join("%r,%r,%r\n" % p for p in points), "text/csv"
    if fmt == "xyz":
        return ("%d\ntest frame\n" % len(points) +
                "".join("C %r %r %r\n" % p for p in points), "chemical/x-xyz")
    if fmt == "f64":
        return b"".join(struct.pack("<3d", *p) for p in points), "application/x-float64"
    if fmt == "f32":
        return b"".join(struct.pack("<3f", *p) for p in points), "application/x-float32"
    raise ValueError(fmt)


def csv_table(body, section=None):
    """A CSV result's table: its lines without the "# name: value" lines of
    the result's scalars (the schema's CSV output puts them first), up to
    the first "# [name]" section; or that section's table (section="name")."""
    text = body.decode() if isinstance(body, bytes) else body
    out, current = [], None
    for line in text.splitlines():
        if line.startswith("# [") and line.endswith("]"):
            current = line[3:-1]
        elif not line.startswith("#") and current == section:
            out.append(line)
    return out


def csv_scalars(body):
    """A CSV result's "# name: value" lines, as a dict of strings."""
    text = body.decode() if isinstance(body, bytes) else body
    return dict(l[2:].split(": ", 1) for l in text.splitlines() if l.startswith("# ") and ": " in l)


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def long_poll(d, jid):
    """GET /v1/jobs/{jid}?wait=60 until the job has ended (each call comes
    back at the end or at the daemon's cap); the last answer, and how many
    seconds after the job's finished_at it came."""
    while True:
        t0 = time.time()
        s, _, doc = d.json("GET", "/v1/jobs/%s?wait=60" % jid, timeout=90)
        now = time.time()
        check(s == 200, doc)
        if doc["status"] not in ("queued", "running"):
            end = datetime.datetime.strptime(doc["finished_at"], "%Y-%m-%dT%H:%M:%S.%fZ")
            end = end.replace(tzinfo=datetime.timezone.utc).timestamp()
            return doc, now - end
        check(now - t0 >= 25, "a long-poll on a running job came back after %.1f s, before "
              "the daemon's 30 s cap" % (now - t0))


def free_port_unused():
    """A loopback port nobody listens on (for connection-refused checks)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
