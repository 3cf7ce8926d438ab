"""histd.mcp: a Model Context Protocol server over stdio, so that an agent
(an LLM's tool use) can drive histd: upload a file from one allowed
directory, list datasets and their atoms, compute a distance histogram, a
g(r) or pair counts, and read a result as a short text table.

    python3 -m histd.mcp --url http://127.0.0.1:8080 --allowed-dir ~/md [--token T]

MCP over stdio: JSON-RPC 2.0, one message a line on stdin and stdout
(logs on stderr); initialize, ping, tools/list and tools/call. A tool's
failure (a bad argument, a path outside the allowed directory, the
daemon's problem sentence, a failed job) is a result with isError and the
sentence; a malformed message, an unknown method or tool is a JSON-RPC
error. Nothing here reads a file outside the allowed directory: every path
is resolved (symbolic links and all) and refused unless it lies inside.
Standard library only; the daemon is reached through histd.Client.
"""
import argparse
import json
import math
import os
import re
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import __version__
from ._points import FORMATS, format_of_path
from .client import Client, Dataset, HistdError, Job

# the protocol revisions this server speaks, newest first (the tool shapes it
# uses are the same in all of them)
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

# JSON-RPC 2.0 error codes
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)

DEFAULT_ROWS = 40  # table rows a result shows unless asked for others
# seconds a tool waits for its job unless told: under the 60 s an MCP client
# commonly gives a request; a job still running is fetched by result_table
DEFAULT_WAIT = 30


class ToolError(Exception):
    """A tool's failure, told to the agent as a sentence (isError)."""


class RpcError(Exception):
    """A JSON-RPC error answer: code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---- the allowed directory ----------------------------------------------------

class Folder:
    """The one directory whose files the tools may read. A path is taken
    relative to it (or absolute, inside it); '..' is refused, and so is
    anything whose real path (every symbolic link followed) is not inside."""

    def __init__(self, path: str) -> None:
        real = os.path.realpath(os.path.expanduser(path))
        if not os.path.isdir(real):
            raise ValueError("--allowed-dir %s is not a directory" % path)
        self.root = real

    def resolve(self, path: Any, what: str = "path") -> str:
        """The real path of `path` inside the folder, which must exist;
        ToolError with a sentence otherwise."""
        if not isinstance(path, str) or path == "" or "\0" in path:
            raise ToolError("%s must name a file inside the allowed directory %s"
                            % (what, self.root))
        if ".." in re.split(r"[/\\]", path):
            raise ToolError("%s %r has a '..' in it: name files inside the allowed directory %s "
                            "without '..'" % (what, path, self.root))
        full = os.path.join(self.root, path)  # an absolute path stays as it is
        real = os.path.realpath(full)
        if os.path.commonpath([real, self.root]) != self.root:
            how = ("is outside the allowed directory %s" if os.path.commonpath(
                [os.path.abspath(full), self.root]) != self.root else
                "leads out of the allowed directory %s through a symbolic link")
            raise ToolError("%s %r %s: refused" % (what, path, how % self.root))
        if not os.path.exists(real):
            raise ToolError("%s %r: there is no such file in the allowed directory %s"
                            % (what, path, self.root))
        return real

    def file(self, path: Any, what: str = "path") -> str:
        """resolve(), and it must be a regular file."""
        real = self.resolve(path, what)
        if not os.path.isfile(real):
            raise ToolError("%s %r is not a regular file" % (what, path))
        return real

    def relative(self, real: str) -> str:
        return os.path.relpath(real, self.root)


# ---- the tools' arguments: JSON Schema, and its checking ----------------------

def _id(what: str, digits: int = 64) -> Dict[str, Any]:
    return {"type": "string", "pattern": "^[0-9a-f]{%d}$" % digits, "description": what}


def _num(what: str, **limits: Any) -> Dict[str, Any]:
    return dict({"type": "number", "description": what}, **limits)


def _int(what: str, **limits: Any) -> Dict[str, Any]:
    return dict({"type": "integer", "description": what}, **limits)


def _str(what: str, **more: Any) -> Dict[str, Any]:
    return dict({"type": "string", "description": what}, **more)


def _numbers(what: str, **limits: Any) -> Dict[str, Any]:
    return dict({"type": "array", "items": {"type": "number"}, "description": what}, **limits)


BOX = _numbers("a periodic box: [L] (a cube), [Lx, Ly, Lz], LAMMPS's [lx, ly, lz, xy, xz, yz] "
               "or GROMACS's 9 numbers, in the file's units; default: the box the dataset's file "
               "carries (each frame's own), or the one given to upload_file",
               minItems=1, maxItems=9)

# the job parameters the statistics tools share (the daemon's names: README
# "Job parameters", api/openapi.yaml JobParams)
JOB = {
    "dataset": _id("the dataset id (A), as upload_file or list_datasets show it"),
    "dataset_b": _id("a second dataset id: the pairs of A x B instead of A's own pairs"),
    "box": BOX,
    "select_a": _str("A's atoms: all, or KIND:LIST with KIND element, name, resname, type, "
                     "resid, mol or index (from 0), e.g. element:O, name:OW,HW1, index:0-99",
                     maxLength=255),
    "select_b": _str("B's atoms, the same way (of dataset_b, or of the dataset itself: "
                     "A x B of two selections)", maxLength=255),
    "exclude": _str("molecule: leave out the pairs within one molecule (residue)",
                    enum=["molecule"]),
    "pairs": _str("two selections of one dataset: distinct (default: an atom never pairs "
                  "with itself) or ordered (every (a, b), as MDAnalysis's InterRDF counts)",
                  enum=["distinct", "ordered"]),
    "frames": _str("START:STOP:STEP, the trajectory's frames to count (from 0, each part "
                   "optional: '100:', '::10')", pattern="^[0-9]*(:[0-9]*(:[0-9]*)?)?$"),
    "topology": _id("a dataset id naming the atoms of a trajectory without names (XTC, TRR, "
                    "DCD, NetCDF): a GRO or PDB of the same system; default: the topology "
                    "given to upload_file"),
    "precision": _str("exact (default: counts follow the exact contract) or fast",
                      enum=["exact", "fast"]),
    "kernel": _str("a kernel name (default auto: the fastest exact one)", maxLength=64),
    "wait": _num("seconds to wait for the job (default %d); if it is still running then, "
                 "result_table with its id waits again" % DEFAULT_WAIT, minimum=0, maximum=3600),
}
BINS = {
    "bucket_width": _num("the bin width: bin k holds the distances d with floor(d / width) = k",
                         exclusiveMinimum=0),
    "buckets": _int("the number of bins (default: enough to cover every pair)", minimum=1,
                    maximum=16777216),
    "r_max": _num("the last edge; with buckets, width = r_max / buckets", exclusiveMinimum=0),
    "edges": _numbers("explicit ascending bin edges: bin k holds E[k] <= d < E[k+1]",
                      minItems=2),
    "log_bins": _numbers("[r_min, r_max, bins]: log-spaced edges", minItems=3, maxItems=3),
    "weights": {"type": "boolean",
                "description": "also sum w_i * w_j of each pair (the dataset must carry weights)"},
}


def _schema(props: Dict[str, Any], required: List[str]) -> Dict[str, Any]:
    return {"type": "object", "properties": props, "required": required,
            "additionalProperties": False}


def _pick(table: Dict[str, Any], *names: str) -> Dict[str, Any]:
    return {n: table[n] for n in names}


ROWS = {
    "start": _int("the first bin to show (default 0)", minimum=0),
    "rows": _int("how many bins to show (default %d)" % DEFAULT_ROWS, minimum=1, maximum=10000),
}

TOOLS = [
    {"name": "list_files", "title": "List files",
     "description": "The files of the allowed directory (or of a folder inside it) that "
                    "upload_file can read, with their sizes and the format their name implies.",
     "inputSchema": _schema({"folder": _str("a folder inside the allowed directory "
                                             "(default: the allowed directory itself)")}, [])},
    {"name": "upload_file", "title": "Upload a file",
     "description": "Uploads a point set or trajectory from the allowed directory to histd "
                    "(XYZ, extended XYZ, LAMMPS dump, GRO, PDB, XTC, TRR, DCD, NetCDF, CSV, "
                    "JSON, raw float64/float32) and describes it: its id, points, frames, box "
                    "and atoms. A topology file names the atoms of a trajectory that has no "
                    "names; a box serves a file that carries none. Both are used by this "
                    "session's jobs on the dataset.",
     "inputSchema": _schema({
         "path": _str("the file, relative to the allowed directory (or absolute, inside it)"),
         "format": _str("the file's format (default: from its extension)",
                        enum=sorted(set(FORMATS.values()))),
         "name": _str("a label for people (default: the file's path)", maxLength=255),
         "topology": _str("a GRO or PDB file (in the allowed directory) of the same system, "
                          "naming the atoms of a trajectory without names"),
         "box": BOX}, ["path"])},
    {"name": "list_datasets", "title": "List datasets",
     "description": "The datasets stored in histd, newest first: id, name, format, unit, "
                    "atoms per frame, frames, box, and the atoms' elements, names, residue "
                    "names, types and molecules where the file named them (what select_a "
                    "and select_b can pick).",
     "inputSchema": _schema({"dataset": _id("only this dataset"),
                             "limit": _int("at most this many (default 20)", minimum=1,
                                           maximum=1000)}, [])},
    {"name": "histogram", "title": "Distance histogram",
     "description": "The histogram of the pair distances of a dataset (or of A x B): one "
                    "way of binning (bucket_width [with buckets], r_max with buckets, edges, "
                    "or log_bins), with selections, exclusions, frames and a periodic box "
                    "(then g(r) too). Answers the job's summary and its first bins as a table.",
     "inputSchema": _schema(dict(_pick(JOB, "dataset", "dataset_b"), **BINS, **{
         k: v for k, v in JOB.items() if k not in ("dataset", "dataset_b")}, **ROWS),
         ["dataset"])},
    {"name": "rdf", "title": "Radial distribution function g(r)",
     "description": "g(r) and the coordination number in `buckets` bins up to r_max, in the "
                    "dataset's own periodic box (each frame's) or `box`: e.g. the O-H g(r) "
                    "of water with select_a element:O, select_b element:H and exclude "
                    "molecule. g follows LAMMPS's compute rdf. `blocks` cuts the frames into "
                    "blocks for error bars (g_sem). Answers the summary and a table of r, "
                    "counts, g and coordination.",
     "inputSchema": _schema(dict(
         _pick(JOB, "dataset"),
         r_max=_num("the largest distance (at most half the box's shortest width)",
                    exclusiveMinimum=0),
         buckets=_int("the number of bins", minimum=1, maximum=16777216),
         blocks=_int("error bars: the frames cut into this many blocks; the table adds "
                     "g's standard error", minimum=2, maximum=1000),
         **{k: v for k, v in JOB.items() if k != "dataset"}, **ROWS),
         ["dataset", "r_max", "buckets"])},
    {"name": "pair_counts", "title": "Pairs within a distance",
     "description": "How many pairs of a dataset (or of A x B, or of two selections) lie "
                    "within a distance R (d <= R; 0: exact collisions), with selections, "
                    "exclusions, frames and a periodic box.",
     "inputSchema": _schema(dict(
         _pick(JOB, "dataset"),
         within=_num("the distance R", minimum=0),
         weights=BINS["weights"],
         **{k: v for k, v in JOB.items() if k != "dataset"}), ["dataset", "within"])},
    {"name": "result_table", "title": "A result as a table",
     "description": "A job's result: its summary and its bins as a text table (r_lo, r_hi, "
                    "count, and where the result has them weighted sums, g, g's standard "
                    "error and the coordination number), `rows` bins from `start`. Waits "
                    "for a job still running.",
     "inputSchema": _schema(dict(job=_id("the job id a statistics tool answered", 32),
                                 wait=JOB["wait"], **ROWS), ["job"])},
]
TOOL_BY_NAME = {t["name"]: t for t in TOOLS}

PATTERN_NAMES = {"^[0-9a-f]{64}$": "a dataset id (64 hex digits)",
                 "^[0-9a-f]{32}$": "a job id (32 hex digits)",
                 JOB["frames"]["pattern"]: "START:STOP:STEP ('1:', '::10', '0:100:5')"}
TYPE_NAMES = {"string": "a string", "number": "a number", "integer": "a whole number",
              "boolean": "true or false", "array": "a list", "object": "an object"}


def _shown(v: Any) -> str:
    """A value as a sentence names it."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "the string %s" % json.dumps(v[:60] + ("..." if len(v) > 60 else ""))
    if isinstance(v, (int, float)):
        return "the number %s" % json.dumps(v)
    return "a list" if isinstance(v, list) else "an object"


def _problem(spec: Dict[str, Any], v: Any) -> Optional[str]:
    """Why v does not fit spec (the subset of JSON Schema the tools use), or None."""
    t = spec.get("type")
    ok = {"string": isinstance(v, str),
          "number": isinstance(v, (int, float)) and not isinstance(v, bool),
          "integer": (isinstance(v, int) and not isinstance(v, bool)) or
                     (isinstance(v, float) and v.is_integer()),
          "boolean": isinstance(v, bool), "array": isinstance(v, list),
          "object": isinstance(v, dict)}.get(t, True)
    if not ok:
        return "must be %s, got %s" % (TYPE_NAMES[t], _shown(v))
    if "enum" in spec and v not in spec["enum"]:
        return "must be one of %s, got %s" % (", ".join(spec["enum"]), _shown(v))
    if t == "string":
        if "pattern" in spec and not re.search(spec["pattern"], v):
            return "must be %s, got %s" % (PATTERN_NAMES[spec["pattern"]], _shown(v))
        if len(v) > spec.get("maxLength", len(v)):
            return "must be at most %d characters" % spec["maxLength"]
    if t in ("number", "integer"):
        if not math.isfinite(v):
            return "must be a finite number"
        if "minimum" in spec and v < spec["minimum"]:
            return "must be at least %s, got %s" % (spec["minimum"], json.dumps(v))
        if "maximum" in spec and v > spec["maximum"]:
            return "must be at most %s, got %s" % (spec["maximum"], json.dumps(v))
        if "exclusiveMinimum" in spec and v <= spec["exclusiveMinimum"]:
            return "must be more than %s, got %s" % (spec["exclusiveMinimum"], json.dumps(v))
    if t == "array":
        if len(v) < spec.get("minItems", 0):
            return "must hold at least %d numbers, got %d" % (spec["minItems"], len(v))
        if len(v) > spec.get("maxItems", len(v)):
            return "must hold at most %d numbers, got %d" % (spec["maxItems"], len(v))
        for i, x in enumerate(v):
            why = _problem(spec["items"], x)
            if why:
                return "element %d %s" % (i, why)
    return None


def check_arguments(tool: Dict[str, Any], args: Any) -> Dict[str, Any]:
    """The arguments as the tool's inputSchema allows them (null is the same
    as leaving an argument out; whole numbers as ints), or ToolError naming
    every problem."""
    name, schema = tool["name"], tool["inputSchema"]
    props = schema["properties"]
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError("the arguments of %s must be an object, got %s" % (name, _shown(args)))
    problems = ["%s has no argument %r" % (name, k) for k in args if k not in props]
    args = {k: v for k, v in args.items() if v is not None and k in props}
    problems += ["%s needs the argument %r (%s)" % (name, k, props[k]["description"])
                 for k in schema["required"] if k not in args]
    for k, v in args.items():
        why = _problem(props[k], v)
        if why:
            problems.append("argument %r of %s %s" % (k, name, why))
        elif props[k]["type"] == "integer":
            args[k] = int(v)
    if problems:
        raise ToolError("; ".join(problems) + ". %s takes %s." % (name, ", ".join(props)))
    return args


# ---- text ------------------------------------------------------------------------

def _g(v: Any) -> str:
    """A number for a table: integers exactly, others to 6 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return str(v) if isinstance(v, int) else "%.6g" % v


def _box(b: Any) -> str:
    return "[%s]" % ", ".join(_g(x) for x in b) if b else "none"


def _counts(d: Dict[str, Any]) -> str:
    return ", ".join("%s %s" % (k, v) for k, v in d.items())


def describe_dataset(doc: Dict[str, Any], extra: Optional[Dict[str, Any]] = None) -> str:
    """A dataset in a few lines: what the agent needs to pick selections."""
    atoms = doc.get("atoms") or {}
    frames = int(doc.get("frames") or 1)
    per_frame = atoms.get("per_frame", int(doc.get("n", 0)) // frames)
    name = json.dumps(doc["name"]) if doc.get("name") else "(none)"
    lines = ["dataset %s  name %s  format %s  unit %s" % (
        doc["id"], name, doc.get("format", "?"), doc.get("unit", "not named by the format"))]
    lines.append("  %s atoms a frame x %d frame%s%s  box %s" % (
        per_frame, frames, "" if frames == 1 else "s",
        ", weighted" if doc.get("weighted") else "", _box(doc.get("box"))))
    for key, label in (("elements", "elements"), ("names", "names"), ("resnames", "residues"),
                       ("types", "types")):
        if atoms.get(key):
            lines.append("  %s: %s" % (label, _counts(atoms[key])))
    if atoms.get("molecules"):
        lines.append("  molecules: %s" % atoms["molecules"])
    if doc.get("error"):
        lines.append("  error: %s" % doc["error"])
    for k, v in (extra or {}).items():
        lines.append("  this session's jobs on it use %s %s unless given" % (
            k, _box(v) if k == "box" else v))
    return "\n".join(lines)


SUMMARY_KEYS = ("statistic", "n", "n_b", "select_a", "select_b", "pairing", "exclude",
                "excluded", "frames", "unit", "box_source", "volume", "radius", "within",
                "weighted_within", "total", "below", "overflow", "blocks", "kernel", "device")


def describe_result(job: Dict[str, Any], result: Dict[str, Any], start: int = 0,
                    rows: int = DEFAULT_ROWS) -> str:
    """A job's result: a summary line, then its bins as a table."""
    took = (job.get("timing_ms") or {}).get("total")
    head = "job %s %s%s" % (job["id"], job["status"],
                            " in %.1f ms" % took if isinstance(took, (int, float)) else "")
    summary = "  ".join("%s %s" % (k, _g(result[k])) for k in SUMMARY_KEYS if k in result)
    lines = [head, summary]
    edges, counts = result.get("edges"), result.get("counts")
    if not edges or counts is None:
        lines.append("(no bins: a %s result)" % result.get("statistic", "?"))
        return "\n".join(lines)
    k = len(counts)
    columns: List[Tuple[str, List[Any]]] = [
        ("bin", list(range(k))), ("r_lo", edges[:-1]), ("r_hi", edges[1:]), ("count", counts)]
    for name, values in (("weighted", result.get("weighted")), ("g", result.get("g")),
                         ("g_sem", (result.get("block") or {}).get("g_sem")),
                         ("coordination", result.get("coordination"))):
        if isinstance(values, list) and len(values) == k:
            columns.append((name, values))
    stop = min(k, start + rows)
    if start >= k:
        lines.append("(start %d is past the last bin, %d)" % (start, k - 1))
        return "\n".join(lines)
    cells = [[name] + [_g(v) for v in values[start:stop]] for name, values in columns]
    widths = [max(len(c) for c in col) for col in cells]
    for r in range(stop - start + 1):
        lines.append("  ".join(col[r].rjust(w) for col, w in zip(cells, widths)).rstrip())
    if start > 0 or stop < k:
        lines.append("(bins %d to %d of %d; result_table with start and rows shows others)"
                     % (start, stop - 1, k))
    return "\n".join(lines)


# ---- the server ------------------------------------------------------------------

class Server:
    """The MCP server: one client of histd, one allowed folder, and what
    this session was told of its uploads (a box, a topology)."""

    def __init__(self, client: Client, folder: Folder) -> None:
        self.client = client
        self.folder = folder
        self.version: Optional[str] = None  # the protocol revision initialize agreed
        self.defaults: Dict[str, Dict[str, Any]] = {}  # dataset id -> {box, topology}
        self.tools: Dict[str, Callable[[Dict[str, Any]], str]] = {
            "list_files": self.list_files, "upload_file": self.upload_file,
            "list_datasets": self.list_datasets, "histogram": self.histogram,
            "rdf": self.rdf, "pair_counts": self.pair_counts,
            "result_table": self.result_table}

    # -- JSON-RPC --

    def handle_line(self, line: bytes) -> Any:
        """One line of stdin: the answer to write (None for notifications)."""
        try:
            msg = json.loads(line.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError) as e:
            return _error(None, PARSE_ERROR, "not JSON: %s" % e)
        if isinstance(msg, list):  # a batch (protocol revision 2025-03-26)
            if not msg:
                return _error(None, INVALID_REQUEST, "an empty batch")
            answers = [a for a in (self.handle(m) for m in msg) if a is not None]
            return answers or None
        return self.handle(msg)

    def handle(self, msg: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return _error(msg.get("id") if isinstance(msg, dict) else None, INVALID_REQUEST,
                          'a message must be a JSON-RPC 2.0 object ("jsonrpc": "2.0")')
        if "method" not in msg:
            return None  # an answer to a request of ours: this server sends none
        method, rid, params = msg["method"], msg.get("id"), msg.get("params")
        notification = "id" not in msg
        if notification:
            return None  # initialized, cancelled, progress, roots: nothing to answer
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            return _error(None, INVALID_REQUEST, "a request's id must be a string or an integer")
        if not isinstance(method, str):
            return _error(rid, INVALID_REQUEST, "method must be a string")
        if params is not None and not isinstance(params, dict):
            return _error(rid, INVALID_PARAMS, "params must be an object")
        params = params or {}
        try:
            if method == "initialize":
                return _answer(rid, self.initialize(params))
            if method == "ping":
                return _answer(rid, {})
            if method not in ("tools/list", "tools/call"):
                raise RpcError(METHOD_NOT_FOUND, "method %r is not offered: this server "
                               "answers initialize, ping, tools/list and tools/call" % method)
            if self.version is None:
                raise RpcError(INVALID_REQUEST, "send initialize first")
            if method == "tools/list":
                return _answer(rid, {"tools": TOOLS})
            return _answer(rid, self.call(params))
        except RpcError as e:
            return _error(rid, e.code, str(e))
        except Exception as e:  # a bug of ours: say so, keep serving
            log("internal error on %s: %r" % (method, e))
            return _error(rid, INTERNAL_ERROR, "internal error: %s" % e)

    def initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        asked = params.get("protocolVersion")
        self.version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": self.version,
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "histd", "title": "histd pair statistics",
                           "version": __version__},
            "instructions": (
                "histd computes pair-distance statistics (histograms, g(r), pair counts) "
                "of point sets and MD trajectories, exactly. Files come only from the "
                "allowed directory %s: list_files shows them, upload_file sends one and "
                "answers its dataset id and atoms (list_datasets shows stored ones). Then "
                "histogram, rdf or pair_counts; result_table shows more of a result. "
                "Distances are in the file's units." % self.folder.root)}

    def call(self, params: Dict[str, Any]) -> Dict[str, Any]:
        name = params.get("name")
        tool = TOOL_BY_NAME.get(name) if isinstance(name, str) else None
        if tool is None:
            raise RpcError(INVALID_PARAMS, "unknown tool %s: the tools are %s" % (
                json.dumps(name), ", ".join(TOOL_BY_NAME)))
        try:
            args = check_arguments(tool, params.get("arguments"))
            text, failed = self.tools[name](args), False
        except ToolError as e:
            text, failed = str(e), True
        except HistdError as e:
            text, failed = "histd: %s" % e, True
        except (OSError, ValueError) as e:
            text, failed = str(e), True
        return {"content": [{"type": "text", "text": text}], "isError": failed}

    # -- the tools --

    def list_files(self, args: Dict[str, Any]) -> str:
        folder = self.folder.resolve(args.get("folder", "."), "folder")
        if not os.path.isdir(folder):
            raise ToolError("folder %r is not a folder" % args["folder"])
        lines = ["files in %s:" % folder]
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            real = os.path.realpath(entry.path)
            if os.path.commonpath([real, self.folder.root]) != self.folder.root:
                lines.append("  %s  (a link out of the allowed directory: refused)" % entry.name)
            elif os.path.isdir(real):
                lines.append("  %s/" % entry.name)
            elif os.path.isfile(real):
                fmt = FORMATS.get(os.path.splitext(entry.name)[1].lower(), "format= needed")
                lines.append("  %s  %d bytes  %s" % (entry.name, os.path.getsize(real), fmt))
        return "\n".join(lines) if len(lines) > 1 else lines[0] + " (empty)"

    def upload_file(self, args: Dict[str, Any]) -> str:
        path = self.folder.file(args["path"])
        topology = self.folder.file(args["topology"], "topology") if "topology" in args else None
        box = args.get("box")
        if box is not None and len(box) not in (1, 3, 6, 9):
            raise ToolError("box takes 1, 3, 6 or 9 numbers ([L], [Lx, Ly, Lz], LAMMPS's 6, "
                            "GROMACS's 9), got %d" % len(box))
        fmt = format_of_path(path, args.get("format"))
        name = args.get("name", self.folder.relative(path))
        ds = self.client.upload(path, format=fmt, name=name)
        extra = dict(self.defaults.get(ds.id, {}))
        if topology is not None:
            tfmt = format_of_path(topology, None)
            extra["topology"] = self.client.upload(topology, format=tfmt,
                                                   name=self.folder.relative(topology)).id
        if box is not None:
            extra["box"] = box
        if extra:
            self.defaults[ds.id] = extra
        return "uploaded %s\n%s" % (self.folder.relative(path), describe_dataset(ds.doc, extra))

    def list_datasets(self, args: Dict[str, Any]) -> str:
        if "dataset" in args:
            docs = [self.client.dataset(args["dataset"]).doc]
        else:
            docs = [d.doc for d in self.client.datasets()][:args.get("limit", 20)]
        if not docs:
            return "no datasets are stored: upload_file sends one"
        return "\n".join(describe_dataset(d, self.defaults.get(d["id"])) for d in docs)

    def _run(self, args: Dict[str, Any], start: int = 0, rows: int = DEFAULT_ROWS) -> str:
        """Submits a job of the arguments, waits, and describes its result."""
        params = dict(args)
        wait = params.pop("wait", DEFAULT_WAIT)
        a = params.pop("dataset")
        b = params.pop("dataset_b", None)
        for k, v in self.defaults.get(a, {}).items():
            params.setdefault(k, v)
        if "topology" in params:  # ids only: never a file name the client would read
            params["topology"] = Dataset(self.client, {"id": params["topology"]})
        job = self.client.submit(Dataset(self.client, {"id": a}),
                                 Dataset(self.client, {"id": b}) if b else None, **params)
        return self._result(job, wait, start, rows)

    def _result(self, job: Job, wait: float, start: int, rows: int) -> str:
        deadline = time.monotonic() + wait
        while not job.done and time.monotonic() < deadline:
            job.refresh(wait=min(10.0, deadline - time.monotonic()))
        if not job.done:
            return ("job %s is still %s (%.0f%% done) after %gs: result_table with job %s "
                    "waits for it" % (job.id, job.status, 100 * job.progress, wait, job.id))
        if job.status != "succeeded":
            raise ToolError("job %s %s: %s" % (job.id, job.status,
                                               job.doc.get("error") or job.status))
        result = self.client._call("GET", "/v1/jobs/%s/result" % job.id)
        return describe_result(job.doc, result, start, rows)

    def histogram(self, args: Dict[str, Any]) -> str:
        start, rows = args.pop("start", 0), args.pop("rows", DEFAULT_ROWS)
        return self._run(args, start, rows)

    def rdf(self, args: Dict[str, Any]) -> str:
        start, rows = args.pop("start", 0), args.pop("rows", DEFAULT_ROWS)
        if "box" not in args and "box" not in self.defaults.get(args["dataset"], {}):
            if not self.client.dataset(args["dataset"]).doc.get("box"):
                raise ToolError("rdf needs a periodic box: dataset %s's file carries none; "
                                "pass box" % args["dataset"])
        return self._run(args, start, rows)

    def pair_counts(self, args: Dict[str, Any]) -> str:
        return self._run(args)

    def result_table(self, args: Dict[str, Any]) -> str:
        job = self.client.job(args["job"])
        return self._result(job, args.get("wait", DEFAULT_WAIT), args.get("start", 0),
                            args.get("rows", DEFAULT_ROWS))


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def _answer(rid: Any, result: Any) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def _error(rid: Any, code: int, message: str) -> Dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def log(text: str) -> None:
    sys.stderr.write("histd.mcp: %s\n" % text)
    sys.stderr.flush()


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m histd.mcp",
        description="An MCP server (stdio) giving agents histd's statistics over the files "
                    "of one directory.")
    ap.add_argument("--url", default=os.environ.get("HISTD_URL", "http://127.0.0.1:8080"),
                    help="the histd daemon (default $HISTD_URL or http://127.0.0.1:8080)")
    ap.add_argument("--allowed-dir", required=True,
                    help="the only directory whose files the tools may read")
    ap.add_argument("--token", default=os.environ.get("HISTD_TOKEN"),
                    help="the daemon's bearer token (default $HISTD_TOKEN)")
    opts = ap.parse_args(argv)
    try:
        server = Server(Client(opts.url, token=opts.token), Folder(opts.allowed_dir))
    except ValueError as e:
        ap.error(str(e))
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the protocol only; a stray print goes to stderr
    log("serving %s over stdio, files from %s" % (opts.url, server.folder.root))
    try:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            answer = server.handle_line(line)
            if answer is not None:
                out.write(json.dumps(answer).encode() + b"\n")
                out.flush()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
