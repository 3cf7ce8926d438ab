"""test_mcp.py -- the MCP server (api/python/histd/mcp.py) in a scripted
JSON-RPC session over its stdio, against the real daemon, started as the
README's client configuration starts it: initialize, tools/list, an upload
from the allowed directory, g(r) with selections, an exclusion and frames
(counts, g and the coordination number against numpy's brute force over the
GRO file's own numbers), the same result paged by result_table, pair counts
within R, a raw trajectory named by a topology file, arguments refused with
a sentence, paths out of the allowed directory refused (.., an absolute
path, a symbolic link to a file and to a folder outside) with nothing
uploaded, and the protocol's errors (unknown method, unknown tool, not JSON).

usage: test_mcp.py HISTD_EXE
"""
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

from common import ROOT, Daemon, check, dmatrix, edge_counts, exe, np

L = 1.6          # the cubic box, nm
WATERS = 40      # molecules of OW, HW1, HW2
R_MAX, BUCKETS = 0.8, 16


def write_gro(path, frames):
    """Waters in a periodic cube, one residue each, as GROMACS writes a GRO;
    returns every frame's coordinates as histd reads them (the %8.3f text's
    float64 values)."""
    out, read = [], []
    for f, pos in enumerate(frames):
        out += ["waters t= %d" % f, "%5d" % len(pos)]
        for i, p in enumerate(pos):
            out.append("%5d%-5s%5s%5d%8.3f%8.3f%8.3f" % (i // 3 + 1, "SOL",
                                                        ("OW", "HW1", "HW2")[i % 3], i + 1, *p))
        out.append("%10.5f%10.5f%10.5f" % (L, L, L))
        read.append(np.array([[float("%8.3f" % x) for x in p] for p in pos]))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    return read


def waters(rng):
    o = rng.uniform(0, L, (WATERS, 1, 3))
    h = o + rng.uniform(-0.1, 0.1, (WATERS, 2, 3))
    return np.concatenate([o, h], axis=1).reshape(-1, 3)


class Session:
    """The server as a subprocess; rpc() writes one line and reads the answer."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.next_id = 0

    def send(self, line):
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def read(self, timeout=30):
        r, _, _ = select.select([self.proc.stdout], [], [], timeout)
        check(r, "no answer within %ss; stderr: %s" % (timeout, self.stderr()))
        line = self.proc.stdout.readline()
        check(line.endswith(b"\n"), "the server closed stdout: %s" % self.stderr())
        return json.loads(line)

    def rpc(self, method, params=None, notify=False):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if notify:
            self.send(json.dumps(msg))
            return None
        self.next_id += 1
        msg["id"] = self.next_id
        self.send(json.dumps(msg))
        answer = self.read()
        check(answer.get("id") == self.next_id and answer.get("jsonrpc") == "2.0",
              "the answer to %s: %s" % (method, answer))
        return answer

    def tool(self, name, **args):
        """(text, isError) of a tools/call."""
        a = self.rpc("tools/call", {"name": name, "arguments": args})
        check("result" in a, "%s: %s" % (name, a))
        content = a["result"]["content"]
        check(len(content) == 1 and content[0]["type"] == "text", a)
        return content[0]["text"], a["result"].get("isError", False)

    def ok(self, name, **args):
        text, err = self.tool(name, **args)
        check(not err, "%s failed: %s" % (name, text))
        return text

    def refused(self, name, words, **args):
        text, err = self.tool(name, **args)
        check(err, "%s %s was not refused: %s" % (name, args, text))
        for w in words:
            check(w in text, "%s %s: the sentence does not name %r: %s" % (name, args, w, text))
        return text

    def stderr(self):
        if self.proc.poll() is None:
            return "(running)"
        return self.proc.stderr.read().decode(errors="replace")[-2000:]

    def close(self):
        self.proc.stdin.close()
        try:
            rc = self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise AssertionError("the server did not exit at the end of stdin")
        check(rc == 0, "the server exited %s: %s" % (rc, self.stderr()))


def table(text):
    """The rows of a result's table: {column: [values]}."""
    lines = text.splitlines()
    k = next(i for i, l in enumerate(lines) if l.split()[:1] == ["bin"])
    names = lines[k].split()
    rows = []
    for l in lines[k + 1:]:
        if l.startswith("("):
            break
        rows.append(l.split())
    return {n: [float(r[c]) for r in rows] for c, n in enumerate(names)}


def readme_config():
    """The README's MCP client configuration: the command's arguments."""
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    configs = [json.loads(b) for b in blocks if '"mcpServers"' in b]
    check(len(configs) == 1, "README: one json block with mcpServers, got %d" % len(configs))
    server = configs[0]["mcpServers"]["histd"]
    check(server["args"][:2] == ["-m", "histd.mcp"], server)
    return server["args"]


def main():
    rng = np.random.default_rng(33)
    tmp = tempfile.mkdtemp(prefix="histd-mcp-")
    try:
        allowed, outside = os.path.join(tmp, "allowed"), os.path.join(tmp, "outside")
        os.makedirs(os.path.join(allowed, "sub"))
        os.makedirs(outside)
        frames = write_gro(os.path.join(allowed, "water.gro"), [waters(rng), waters(rng)])
        frames[1].astype("<f8").tofile(os.path.join(allowed, "sub", "frame1.f64"))
        with open(os.path.join(outside, "secret.csv"), "w") as f:
            f.write("0,0,0\n1,2,3\n4,5,6\n")
        os.symlink(os.path.join(outside, "secret.csv"), os.path.join(allowed, "link.csv"))
        os.symlink(outside, os.path.join(allowed, "outdir"))
        os.symlink("water.gro", os.path.join(allowed, "inside.gro"))  # stays inside: fine

        with Daemon(exe()) as d:
            args = readme_config()
            args[args.index("--url") + 1] = "http://127.0.0.1:%d" % d.port
            args[args.index("--allowed-dir") + 1] = allowed
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "api", "python"))
            env.pop("HISTD_TOKEN", None)
            s = Session([sys.executable] + args, env)
            t0 = time.monotonic()
            try:
                session(s, d, frames, allowed, outside)
            finally:
                if s.proc.poll() is None and not s.proc.stdin.closed:
                    s.close()
        print("test_mcp: a session of %.1f s" % (time.monotonic() - t0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def session(s, d, frames, allowed, outside):
    # ---- the protocol ----
    a = s.rpc("tools/list")
    check(a.get("error", {}).get("code") == -32600, "tools/list before initialize: %s" % a)
    a = s.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test_mcp", "version": "1"}})["result"]
    check(a["protocolVersion"] == "2025-06-18" and "tools" in a["capabilities"]
          and a["serverInfo"]["name"] == "histd", a)
    later = s.rpc("initialize", {"protocolVersion": "2099-01-01", "capabilities": {},
                                 "clientInfo": {"name": "test_mcp", "version": "1"}})["result"]
    check(later["protocolVersion"] == "2025-11-25", "an unknown revision: the newest, %s" % later)
    s.rpc("notifications/initialized", notify=True)  # no answer: the next line answers ping
    check(s.rpc("ping")["result"] == {}, "ping")
    tools = {t["name"]: t for t in s.rpc("tools/list")["result"]["tools"]}
    check(set(tools) == {"list_files", "upload_file", "list_datasets", "histogram", "rdf",
                         "pair_counts", "result_table"}, sorted(tools))
    for t in tools.values():
        sch = t["inputSchema"]
        check(sch["type"] == "object" and t["description"] and
              set(sch["required"]) <= set(sch["properties"]), t)
        check(all("description" in p and "type" in p for p in sch["properties"].values()), t)
    check(tools["rdf"]["inputSchema"]["required"] == ["dataset", "r_max", "buckets"],
          tools["rdf"]["inputSchema"]["required"])
    a = s.rpc("resources/read", {"uri": "file:///etc/passwd"})
    check(a.get("error", {}).get("code") == -32601 and "resources/read" in a["error"]["message"],
          "an unknown method: %s" % a)
    a = s.rpc("tools/call", {"name": "read_file", "arguments": {}})
    check(a.get("error", {}).get("code") == -32602 and "read_file" in a["error"]["message"], a)
    s.send("{not json")
    a = s.read()
    check(a.get("id") is None and a.get("error", {}).get("code") == -32700, a)

    # ---- the allowed directory ----
    text = s.ok("list_files")
    check("water.gro" in text and "sub/" in text, text)
    check(re.search(r"link\.csv .*refused", text) and "secret" not in text, text)
    before = len(d.json("GET", "/v1/datasets")[2]["datasets"])
    s.refused("upload_file", [".."], path="../outside/secret.csv")
    s.refused("upload_file", [".."], path="sub/../../outside/secret.csv")
    s.refused("upload_file", ["outside the allowed directory", "refused"],
              path=os.path.join(outside, "secret.csv"))
    s.refused("upload_file", ["symbolic link", "refused"], path="link.csv")
    s.refused("upload_file", ["symbolic link", "refused"], path="outdir/secret.csv")
    s.refused("upload_file", ["topology", "symbolic link"], path="water.gro",
              topology="outdir/secret.csv")
    s.refused("list_files", ["symbolic link"], folder="outdir")
    s.refused("upload_file", ["no such file"], path="nothing.gro")
    s.refused("upload_file", ["not a regular file"], path="sub")
    check(len(d.json("GET", "/v1/datasets")[2]["datasets"]) == before,
          "a refused path uploaded something")

    # ---- upload, g(r), the table ----
    text = s.ok("upload_file", path="water.gro")
    ds = re.search(r"dataset ([0-9a-f]{64})", text).group(1)
    for want in ("120 atoms a frame x 2 frames", "elements: O 40, H 80", "molecules: 40",
                 "unit nm"):
        check(want in text, "upload_file's answer lacks %r: %s" % (want, text))
    check(ds in s.ok("list_datasets"), "list_datasets does not show the upload")
    check(s.ok("upload_file", path="inside.gro").count(ds) == 1, "a link inside: the same dataset")

    o, h = frames[1][0::3], np.concatenate([frames[1][1::3], frames[1][2::3]])
    mol_o, mol_h = np.arange(WATERS), np.concatenate([np.arange(WATERS)] * 2)
    r = dmatrix(o, h, [L, L, L])[mol_o[:, None] != mol_h[None, :]]  # not one's own H
    edges = np.linspace(0, R_MAX, BUCKETS + 1)
    counts, below, _ = edge_counts(r, edges)
    pairs = WATERS * 2 * WATERS - 2 * WATERS
    g = counts / (pairs * 4 / 3 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3) / L ** 3)
    coord = (below + np.cumsum(counts)) / WATERS

    def check_table(text, start, rows):
        t = table(text)
        k = slice(start, start + rows)
        check(t["bin"] == list(range(start, start + rows)), text)
        check(np.array_equal(np.array(t["count"]), counts[k]),
              "counts %s != numpy's %s" % (t["count"], counts[k]))
        check(np.allclose(t["r_lo"], edges[:-1][k], rtol=1e-5, atol=0), text)
        check(np.allclose(t["g"], g[k], rtol=1e-5, atol=1e-12), "g %s != numpy's %s"
              % (t["g"], g[k]))
        check(np.allclose(t["coordination"], coord[k], rtol=1e-5, atol=1e-12),
              "coordination %s != numpy's %s" % (t["coordination"], coord[k]))

    text = s.ok("rdf", dataset=ds, r_max=R_MAX, buckets=BUCKETS, select_a="element:O",
                select_b="element:H", exclude="molecule", frames="1:", rows=BUCKETS)
    check(counts.sum() > 100, "the test's g(r) has too few pairs: %d" % counts.sum())
    check_table(text, 0, BUCKETS)
    for want in ("excluded %d" % (2 * WATERS), "frames 1", "total %d" % pairs):
        check(want in text, "rdf's summary lacks %r: %s" % (want, text))
    job = re.search(r"job ([0-9a-f]{32}) succeeded", text).group(1)
    text = s.ok("result_table", job=job, start=5, rows=4)
    check_table(text, 5, 4)
    check("bins 5 to 8 of 16" in text, text)

    # pairs within R: the O-O pairs of frame 0
    oo = dmatrix(frames[0][0::3], frames[0][0::3], [L, L, L])[np.triu_indices(WATERS, 1)]
    text = s.ok("pair_counts", dataset=ds, within=0.5, select_a="name:OW",
                select_b="name:OW", frames="0:1")
    check(re.search(r"\bwithin %d\b" % np.count_nonzero(oo <= 0.5), text),
          "within: numpy counts %d: %s" % (np.count_nonzero(oo <= 0.5), text))

    # a raw trajectory named by a topology file, boxed at upload: frame 1's g(r)
    text = s.ok("upload_file", path="sub/frame1.f64", topology="water.gro", box=[L, L, L])
    raw = re.search(r"dataset ([0-9a-f]{64})", text).group(1)
    check("use box [1.6, 1.6, 1.6]" in text and "use topology" in text, text)
    text = s.ok("rdf", dataset=raw, r_max=R_MAX, buckets=BUCKETS, select_a="element:O",
                select_b="element:H", exclude="molecule", rows=BUCKETS)
    check_table(text, 0, BUCKETS)

    # ---- arguments refused with a sentence ----
    s.refused("rdf", ["no argument 'bins'", "rdf takes"], dataset=ds, r_max=0.8, buckets=4,
              bins=4)
    s.refused("rdf", ["'r_max'", "must be a number", "the string"], dataset=ds, r_max="0.8",
              buckets=4)
    s.refused("rdf", ["needs the argument 'buckets'"], dataset=ds, r_max=0.8)
    s.refused("rdf", ["'dataset'", "dataset id"], dataset="water.gro", r_max=0.8, buckets=4)
    s.refused("histogram", ["'exclude'", "one of molecule"], dataset=ds, bucket_width=0.1,
              exclude="residue")
    s.refused("pair_counts", ["'within'", "at least 0"], dataset=ds, within=-1)
    s.refused("upload_file", ["box takes 1, 3, 6 or 9 numbers"], path="water.gro",
              box=[1, 2])
    s.refused("rdf", ["histd:", "half"], dataset=ds, r_max=5, buckets=4)  # the daemon's
    s.refused("rdf", ["failed", "name:XX"], dataset=ds, r_max=0.8, buckets=4,
              select_a="name:XX")
    s.refused("rdf", ["periodic box"], dataset=d.upload([[0, 0, 0], [1, 1, 1]])["id"],
              r_max=0.5, buckets=4)
    a = s.rpc("tools/call", {"name": "rdf", "arguments": [1, 2]})
    check(a["result"]["isError"] and "must be an object" in a["result"]["content"][0]["text"], a)
    s.close()


if __name__ == "__main__":
    main()
