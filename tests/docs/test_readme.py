"""test_readme.py -- the README's shell examples, run as pasted.

Takes every ```sh, ```bash, ```shell and ```console block of README.md, in
order, except those right after an HTML comment <!-- not run: REASON -->
(the few that cannot run here: a daemon in the foreground, docker,
kubectl, systemd, a GPU), and runs them one after another in ONE bash
process, as a person pasting them into one terminal would: variables the
examples set ($H, $DATASET, $JOB) and files they write carry over. The
commands run verbatim; between two commands the test only redirects the
output to files of its own and records the exit status.

The setting is a fresh checkout: bash runs in an empty temporary directory
holding `build` (a link to this build's root, so build/src/cli/sdh is the
sdh built here), with HISTD_URL pointing at a daemon this test starts on a
free loopback port (the examples read it as ${HISTD_URL:-http://...:8080},
so a person pasting them gets the default), Debian's /usr/bin first in
PATH, an empty HOME (no ~/.curlrc) and no other HISTD_* variables.

Each command must exit 0 and must not answer an error (a problem+json
document, or an HTTP status line >= 400 from curl -i) unless the README
shows that error as its output. Where the README shows what a command
prints, the real output must have its shape and the numbers it shows:

  * a comment that starts with { or [ after the command, on its last line
    (`curl -s $H/healthz   # {"status":"ok",...}  prose`) or on the next
    line: the command's output;
  * a fenced block (no language, json, text, csv, http) right after a run
    block, with only blank lines between: the whole block's output;
  * in a ```console block, the lines after a `$ command` line.

JSON shapes: every key shown must be there, recursively, with a value of
the same type (null stands for anything; a list's first element shown is
the shape of every element). `...` or `…` elides: `{...}`, `[...]`,
`, ...` and `…` inside a string. Numbers: each number the README shows is
histd's, to the digits it shows (an integer exactly, 1.02 anything that
rounds to it); a list's elements shown before an elision are histd's first
ones and those after it histd's last ones. Keys that vary from run to run
(times, clocks, sizes, thread counts: VARYING) are held to their shape
only. HTTP responses: the same status code, every header shown, and the
body's shape and numbers. Anything else is compared line by line after
numbers become N and long hex ids become ID, with runs of identical lines
counted once; a line `...` or `…` matches any lines; where the README shows
the output line for line, its numbers are checked too (lines naming a
time, size or id excepted: VARYING_LINE).

Every example that talks to the daemon must do it through HISTD_URL (a
literal localhost:8080 would reach whatever listens there, not the test's
daemon). Everything is time-bound: the daemon's start, the whole run
(HISTD_DOCS_TIMEOUT seconds, default 240) and the daemon's stop.

usage: test_readme.py README.md BUILD_ROOT HISTD_EXE
Exit status 77 (skipped) where the tools the examples need (curl, jq,
python3-numpy: deploy/install-deps.sh --test) are missing.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "service"))
from daemon import Daemon  # noqa: E402

RUN_LANGS = {"sh", "bash", "shell", "console"}
OUTPUT_LANGS = {"", "json", "text", "txt", "csv", "http", "output"}
FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+-]*)[^`]*$")
NOT_RUN = re.compile(r"^<!--\s*not run\b\s*:?\s*(.*?)\s*-->$")
DEBIAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Failure(Exception):
    pass


# ---- the README's blocks ---------------------------------------------------------

def read_blocks(path):
    """Fenced blocks in order: dict(lang, lines, first, last, skip) where
    first/last are the 1-based lines of the fences and skip is the reason
    given by a <!-- not run: ... --> just before the opening fence."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2).lower()
        j = i + 1
        while j < len(lines) and not (lines[j].startswith(fence[0] * len(fence))
                                      and lines[j].strip(fence[0] + " ") == ""):
            j += 1
        if j == len(lines):
            raise Failure("README line %d: a code block that never ends" % (i + 1))
        prev = i - 1
        while prev >= 0 and lines[prev].strip() == "":
            prev -= 1
        skip = None
        if prev >= 0:
            nm = NOT_RUN.match(lines[prev].strip())
            if nm:
                skip = nm.group(1)
                if not skip:
                    raise Failure("README line %d: <!-- not run --> needs a reason "
                                  "(<!-- not run: why -->)" % (prev + 1))
        blocks.append({"lang": lang, "lines": lines[i + 1:j], "first": i + 1, "last": j + 1,
                       "skip": skip, "between_blank": None})
        if len(blocks) > 1:
            gap = lines[blocks[-2]["last"]:i]
            blocks[-1]["between_blank"] = all(g.strip() == "" for g in gap)
        i = j + 1
    return blocks


def complete(text):
    """Whether text is whole shell commands (bash -n accepts it, without
    the warning an unfinished here-document gives, and no trailing \\)."""
    if text.rstrip().endswith("\\"):
        return False
    r = subprocess.run(["bash", "-n"], input=text + "\n", capture_output=True, text=True,
                       timeout=30)
    return r.returncode == 0 and r.stderr.strip() == ""


TRAILING_DOC = re.compile(r"\s#\s*([\[{].*)$")


def sh_commands(block):
    """Splits a sh block into commands: dict(text, line, docs)."""
    cmds, buf, start = [], [], 0
    for k, line in enumerate(block["lines"]):
        n = block["first"] + 1 + k
        if not buf:
            s = line.strip()
            if s == "":
                continue
            if s.startswith("#"):  # a comment line: the previous command's output?
                m = re.match(r"#\s*([\[{].*)$", s)
                if m and cmds:
                    cmds[-1]["docs"].append((n, m.group(1)))
                continue
            start = n
        buf.append(line)
        text = "\n".join(buf)
        if complete(text):
            docs = []
            m = TRAILING_DOC.search(buf[-1])
            if m:
                docs.append((n, m.group(1)))
            cmds.append({"text": text, "line": start, "docs": docs, "console_doc": None})
            buf = []
    if buf:
        raise Failure("README line %d: the command never ends:\n%s" % (start, "\n".join(buf)))
    return cmds


def console_commands(block):
    """`$ command` lines (and their continuations); the lines after, up to the
    next `$ `, are its documented output."""
    cmds, buf, k = [], [], 0
    lines = block["lines"]
    while k < len(lines):
        line = lines[k]
        if not line.startswith("$ "):
            if cmds:
                cmds[-1]["console_doc"].append(line)
            elif line.strip():
                raise Failure("README line %d: console output before any `$ ` command"
                              % (block["first"] + 1 + k))
            k += 1
            continue
        start = block["first"] + 1 + k
        buf = [line[2:]]
        while not complete("\n".join(buf)):
            k += 1
            if k == len(lines):
                raise Failure("README line %d: the command never ends" % start)
            buf.append(lines[k])
        cmds.append({"text": "\n".join(buf), "line": start, "docs": [], "console_doc": []})
        k += 1
    return cmds


def plan(blocks):
    """The run blocks with their commands and documented outputs: the output
    blocks that follow a run block (each after only blank lines)."""
    runs, skipped, owner = [], [], None
    for b in blocks:
        if b["lang"] in RUN_LANGS:
            owner = None
            if b["skip"]:
                skipped.append(b)
                continue
            b["cmds"] = console_commands(b) if b["lang"] == "console" else sh_commands(b)
            b["output_docs"] = []
            runs.append(b)
            owner = b
        elif owner is not None and b["lang"] in OUTPUT_LANGS and b["between_blank"]:
            owner["output_docs"].append(b)
        else:
            owner = None
    return runs, skipped


# ---- documented shapes -------------------------------------------------------------

ELLIPSIS = r"(?:\.\.\.|…)"


def json_prefix(text):
    """The balanced {...} or [...] at the start of text (strings respected)."""
    depth, in_str, esc = 0, False, False
    for i, c in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return text[:i + 1]
    return None


ELIDED = "\u2026elided"  # where a list's elements were elided ([1, 2, ..., 9])


def mark_list_elisions(t):
    """Each ... inside a list (not inside a string or an object) as the
    string ELIDED, so that the elements shown after it can be matched to the
    end of histd's list."""
    out, stack, i, in_str = [], [], 0, False
    while i < len(t):
        c = t[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(t[i + 1:i + 2])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif c in "[{":
            stack.append(c)
            out.append(c)
        elif c in "]}":
            stack and stack.pop()
            out.append(c)
        else:
            m = re.match(ELLIPSIS, t[i:])
            if m and stack and stack[-1] == "[":
                out.append(json.dumps(ELIDED))
                i += m.end()
                continue
            out.append(c)
        i += 1
    return "".join(out)


def doc_json(text, where):
    """A documented JSON value with its elisions removed (a list's marked:
    mark_list_elisions)."""
    t = mark_list_elisions(text.strip())
    t = re.sub(r"\[\s*" + re.escape(json.dumps(ELIDED)) + r"\s*\]", "[]", t)  # [...]
    t = re.sub(r"(?<=[\[{])\s*" + ELLIPSIS + r"\s*(?=[\]}])", "", t)     # {...}
    t = re.sub(r",\s*" + ELLIPSIS + r"\s*(?=[\]}])", "", t)              # , ...}
    t = re.sub(r"(?<=[\[{])\s*" + ELLIPSIS + r"\s*,", "", t)            # {..., x}
    t = re.sub(r",\s*" + ELLIPSIS + r"\s*,", ",", t)                     # x, ..., y
    t = re.sub(r":\s*" + ELLIPSIS + r"\s*(?=[,}])", ":null", t)          # "k": ...
    try:
        return json.loads(t)
    except ValueError as e:
        raise Failure("%s: the documented output is not JSON once its ... are dropped (%s):\n%s"
                      % (where, e, text))


def kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


# Keys whose numbers differ from run to run (times, clocks, sizes of a
# machine, queue positions): their shape is checked, not their value.
VARYING = re.compile(r"(^|[_.$])(ms|s|seconds|time|timing|uptime|created|started|finished|updated|"
                     r"ts|at|pid|port|bytes|rss|load|progress|position|elapsed|rate|"
                     r"pairs_per_s|per_s|threads|cores|cpus|workers|devices|memory)($|[_.\[])|"
                     r"timing|_ms\b|mtime|expires", re.I)


# A line of text output that shows something that varies from run to run.
VARYING_LINE = re.compile(r"\b(ms|s|sec|seconds|time|took|elapsed|uptime|pid|port|bytes|[KMG]i?B|"
                          r"threads|cores|load|rate|/s|date|at)\b|\d{4}-\d\d-\d\d|:\d\d:", re.I)


def same_number(doc, real, shown):
    """Whether real, printed with shown's digits, is shown: integers exactly,
    a decimal to the digits the README gives (1.02 stands for [1.015, 1.025])."""
    if isinstance(doc, bool) or isinstance(real, bool):
        return doc == real
    if isinstance(doc, int) and "." not in shown and "e" not in shown.lower():
        return real == doc
    digits = len(shown.split(".")[1].split("e")[0].split("E")[0]) if "." in shown else 0
    exp = int(shown.lower().split("e")[1]) if "e" in shown.lower() else 0
    half = 0.5 * 10.0 ** (exp - digits)
    return abs(real - doc) <= half * (1 + 1e-9) + 1e-300


def same_json_shape(doc, real, path="$", values=True):
    """Problems, as strings, where real does not have doc's shape, or a number
    shown is not histd's (to the digits shown; keys that vary excepted). A
    list's elements shown are compared one for one; the rest (elided) take
    the first's shape."""
    if doc is None:
        return []
    if kind(doc) != kind(real):
        return ["%s: the README shows %s %s, histd gave %s %s"
                % (path, kind(doc), json.dumps(doc)[:60], kind(real), json.dumps(real)[:60])]
    if values and kind(doc) == "number" and not VARYING.search(path):
        shown = repr(doc) if isinstance(doc, float) else str(doc)
        if not same_number(doc, real, shown):
            return ["%s: the README shows %s, histd gave %s" % (path, shown, json.dumps(real))]
    if isinstance(doc, dict):
        out = []
        for k, v in doc.items():
            if k not in real:
                out.append("%s: no key %r (histd gave %s)" % (path, k, sorted(real)))
            else:
                out += same_json_shape(v, real[k], "%s.%s" % (path, k), values)
        return out
    if isinstance(doc, list):
        # the elements shown before an elision match histd's first ones, those
        # after it its last ones; the rest take the first's shape
        cut = doc.index(ELIDED) if ELIDED in doc else len(doc)
        head, tail = doc[:cut], [d for d in doc[cut + 1:] if d != ELIDED]
        if not head and not tail:
            return []
        out = []
        for i, r in enumerate(real):
            if values and i < len(head):
                d, shown = head[i], True
            elif values and tail and i >= len(real) - len(tail) and cut < len(doc):
                d, shown = tail[i - (len(real) - len(tail))], True
            else:
                d, shown = (head or tail)[0], False
            out += same_json_shape(d, r, "%s[%d]" % (path, i), shown)
            if out:
                break
        return out
    return []


NUM = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])")
HEXID = re.compile(r"\b[0-9a-f]{16,}\b")


def line_shapes(text):
    shapes = []
    for line in text.rstrip("\n").split("\n"):
        s = line.rstrip()
        shapes.append("..." if s.strip() in ("...", "…") else NUM.sub("N", HEXID.sub("ID", s)))
    return shapes


def collapsed(shapes):
    return [s for i, s in enumerate(shapes) if i == 0 or s != shapes[i - 1]]


def lines_match(doc, real):
    """doc's line shapes against real's: each doc line matches a run of one
    or more real lines of its shape (so 3 rows shown match 80 rows), and a
    doc line "..." matches any lines, or none."""
    # ok[i][j]: doc[i:] matches real[j:]
    ok = [[False] * (len(real) + 1) for _ in range(len(doc) + 1)]
    ok[len(doc)][len(real)] = True
    for i in range(len(doc) - 1, -1, -1):
        for j in range(len(real), -1, -1):
            if doc[i] == "...":
                ok[i][j] = ok[i + 1][j] or (j < len(real) and ok[i][j + 1])
            else:
                ok[i][j] = j < len(real) and doc[i] == real[j] and (ok[i + 1][j + 1] or ok[i][j + 1])
    return ok[0][0]


def split_http(text):
    text = text.replace("\r\n", "\n")
    head, _, body = text.partition("\n\n")
    # curl -i after a 100 Continue shows two heads
    while body.startswith("HTTP/") and head.split()[1:2] == ["100"]:
        head, _, body = body.partition("\n\n")
    status = head.split("\n")[0].split()
    headers = {h.split(":", 1)[0].strip().lower() for h in head.split("\n")[1:] if ":" in h}
    return (int(status[1]) if len(status) > 1 and status[1].isdigit() else None), headers, body


def compare(doc_text, real, where):
    """Problems where real does not have the shape of doc_text."""
    d = doc_text.strip()
    if d.startswith("HTTP/"):
        if not real.startswith("HTTP/"):
            return ["%s: the README shows an HTTP response, histd's output is %r"
                    % (where, real[:80])]
        dcode, dheaders, dbody = split_http(d)
        rcode, rheaders, rbody = split_http(real)
        out = []
        if dcode != rcode:
            out.append("%s: HTTP status %s, the README shows %s" % (where, rcode, dcode))
        for h in sorted(dheaders - rheaders):
            out.append("%s: no %s header" % (where, h))
        if dbody.strip():
            out += compare(dbody, rbody, where)
        return out
    if d[:1] in "{[":
        doc = doc_json(d, where)
        try:
            value = json.loads(real)
        except ValueError:
            return ["%s: the README shows JSON, histd's output is not JSON: %r"
                    % (where, real[:200])]
        return ["%s: %s" % (where, p) for p in same_json_shape(doc, value)]
    ds, rs = line_shapes(d), line_shapes(real)
    if not lines_match(ds, rs):
        return ["%s: the output's lines do not have the README's shape\nREADME:\n  %s\n"
                "real (shapes):\n  %s\nreal:\n%s" % (where, "\n  ".join(ds),
                                                     "\n  ".join(collapsed(rs)[:20]), real[:1500])]
    return same_line_numbers(d, real, where)


def same_line_numbers(doc_text, real, where):
    """Where the README shows the output line for line (as many lines, none
    elided), each number it shows must be histd's to the digits shown; a
    line that names something that varies (a time, a size, an id) is left
    to its shape."""
    dl, rl = doc_text.rstrip("\n").split("\n"), real.rstrip("\n").split("\n")
    if len(dl) != len(rl) or any(l.strip() in ("...", "…") for l in dl):
        return []
    out = []
    for k, (a, b) in enumerate(zip(dl, rl)):
        if VARYING_LINE.search(a):
            continue
        for x, y in zip(NUM.findall(HEXID.sub("ID", a)), NUM.findall(HEXID.sub("ID", b))):
            dv, rv = float(x), float(y)
            if not same_number(int(dv) if dv == int(dv) and "." not in x and "e" not in x.lower()
                               else dv, rv, x.lstrip("+")):
                out.append("%s: line %d shows %s, histd printed %s:\n  %s\n  %s"
                           % (where, k + 1, x, y, a, b))
                break
    return out


def error_answer(text):
    """An HTTP status >= 400 that text is (problem+json, or a curl -i head)."""
    t = text.strip()
    if t.startswith("HTTP/"):
        code = split_http(t)[0]
        return code if code and code >= 400 else None
    try:
        v = json.loads(t)
    except ValueError:
        return None
    if (isinstance(v, dict) and isinstance(v.get("status"), int) and v["status"] >= 400
            and "title" in v):
        return v["status"]
    return None


# ---- running -------------------------------------------------------------------------

FIXED_ADDRESS = re.compile(r"(?:localhost|127\.0\.0\.1|\[::1\]|0\.0\.0\.0):\d+")


def check_addresses(runs):
    for b in runs:
        for c in b["cmds"]:
            code = re.sub(r"\$\{HISTD_URL:-[^}]*\}", "", c["text"])
            code = "\n".join(re.sub(r"(^|\s)#(\s.*)?$", "", l) for l in code.split("\n"))
            m = FIXED_ADDRESS.search(code)
            if m:
                raise Failure("README line %d: %s is a fixed address; examples reach histd "
                              "through $H or ${HISTD_URL:-http://127.0.0.1:8080}:\n%s"
                              % (c["line"], m.group(0), c["text"]))


def script(runs, outdir):
    """The bash script: the README's commands, verbatim, each between two
    lines of the test's own (redirect its output; record its status)."""
    parts = ["# generated by tests/docs/test_readme.py from README.md"]
    n = 0
    for b in runs:
        for c in b["cmds"]:
            c["id"] = n
            base = "%s/%d" % (outdir, n)
            parts.append("printf '%%s\\n' %d >'%s/current'; exec >'%s.out' 2>'%s.err' </dev/null"
                         % (n, outdir, base, base))
            parts.append("# README line %d" % c["line"])
            parts.append(c["text"])
            parts.append("__histd_docs_rc=$?; printf '%%s\\n' \"$__histd_docs_rc\" >'%s.rc'; "
                         "[ \"$__histd_docs_rc\" -eq 0 ] || exit 3" % base)
            n += 1
    return "\n".join(parts) + "\n", n


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def run(runs, work, outdir, env, timeout):
    text, count = script(runs, outdir)
    path = os.path.join(outdir, "readme.sh")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    t0 = time.monotonic()
    p = subprocess.Popen(["bash", path], cwd=work, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         start_new_session=True)
    try:
        p.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        timed_out = True
    return timed_out, time.monotonic() - t0, count


def show(c):
    return "README line %d:\n    %s" % (c["line"], c["text"].replace("\n", "\n    "))


def documented(text):
    """A documented output as compare() takes it: a comment's JSON without
    the prose after it."""
    return json_prefix(text) if text.strip()[:1] in "[{" else text


def evaluate(runs, outdir, timed_out, timeout):
    problems = []
    for b in runs:
        block_out, errors = [], []
        for c in b["cmds"]:
            base = os.path.join(outdir, str(c["id"]))
            out, err, rc = read(base + ".out"), read(base + ".err"), read(base + ".rc")
            if out is None:
                return problems + ["%s\n  never ran" % show(c)]
            if rc is None:
                what = ("still running after %ds (HISTD_DOCS_TIMEOUT)" % timeout
                        if timed_out else "did not finish")
                return problems + ["%s\n  %s\n  stdout: %s\n  stderr: %s"
                                   % (show(c), what, out[-800:], err[-800:])]
            rc = int(rc)
            print("line %4d  exit %d  %s" % (c["line"], rc, out.strip().replace("\n", " | ")[:110]))
            if rc != 0:
                return problems + ["%s\n  exit status %d\n  stdout: %s\n  stderr: %s"
                                   % (show(c), rc, out[-1500:], err[-1500:])]
            docs = [("README line %d" % n, documented(t)) for n, t in c["docs"]]
            if c["console_doc"]:
                docs.append(("README line %d (its output)" % c["line"],
                             "\n".join(c["console_doc"])))
            for where, t in docs:
                if t is None:
                    problems.append("%s: unbalanced JSON in the documented output" % where)
                else:
                    problems += ["%s\n  %s" % (show(c), p) for p in compare(t, out, where)]
            code = error_answer(out)
            if code and not any(t and error_answer(t) == code for _, t in docs):
                errors.append((code, c, out))
            block_out.append(out)
        real = "".join(block_out)
        shown = set()
        for d in b["output_docs"]:
            where = "README lines %d-%d (the output of lines %d-%d)" % (
                d["first"], d["last"], b["first"], b["last"])
            text = "\n".join(d["lines"])
            problems += compare(text, real, where)
            shown.add(error_answer(text))
        for code, c, out in errors:
            if code not in shown:
                problems.append("%s\n  answered an error (%d) that the README does not show:\n  %s"
                                % (show(c), code, out[:600]))
    return problems


def tools_missing():
    missing = [t for t in ("curl", "jq", "bash") if shutil.which(t, path=DEBIAN_PATH) is None]
    if not os.path.exists("/usr/bin/python3"):
        missing.append("python3")
    elif subprocess.run(["/usr/bin/python3", "-c", "import numpy"],
                        capture_output=True, timeout=60).returncode != 0:
        missing.append("python3-numpy")
    return missing


def main():
    readme, build_root, histd = sys.argv[1], sys.argv[2], sys.argv[3]
    timeout = float(os.environ.get("HISTD_DOCS_TIMEOUT", "240"))
    try:
        runs, skipped = plan(read_blocks(readme))
        check_addresses(runs)
    except Failure as e:
        print("FAIL: %s" % e)
        return 1
    for b in skipped:
        print("not run: README line %d (```%s): %s" % (b["first"], b["lang"], b["skip"]))
    ncmd = sum(len(b["cmds"]) for b in runs)
    ndoc = sum(len(c["docs"]) + bool(c["console_doc"]) for b in runs for c in b["cmds"]) + \
        sum(len(b["output_docs"]) for b in runs)
    print("%d blocks to run (%d commands, %d documented outputs), %d not run"
          % (len(runs), ncmd, ndoc, len(skipped)))
    if not runs:
        print("FAIL: no runnable ```sh block in %s" % readme)
        return 1
    missing = tools_missing()
    if missing:
        print("SKIP: the README's examples need %s (deploy/install-deps.sh --test installs them)"
              % ", ".join(missing))
        return 77

    top = tempfile.mkdtemp(prefix="histd-readme-")
    work, outdir, home = (os.path.join(top, d) for d in ("work", "out", "home"))
    for d in (work, outdir, home):
        os.mkdir(d)
    os.symlink(os.path.abspath(build_root), os.path.join(work, "build"))
    ok = False
    daemon = Daemon(histd, data_dir=os.path.join(top, "daemon"))
    os.mkdir(daemon.data_dir)
    try:
        daemon.start(timeout=60)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("HISTD_") and k not in ("H", "DATASET", "JOB", "STATUS",
                                                          "CURL_HOME", "BASH_ENV", "ENV")}
        env.update({"HISTD_URL": "http://127.0.0.1:%d" % daemon.port, "HOME": home,
                    "PATH": "/usr/bin:/bin:" + os.environ.get("PATH", DEBIAN_PATH)})
        timed_out, elapsed, count = run(runs, work, outdir, env, timeout)
        problems = evaluate(runs, outdir, timed_out, timeout)
        rc = daemon.stop(timeout=60)
        if rc != 0:
            problems.append("histd exited %s after the examples (SIGTERM)" % rc)
        print("ran the README's %d commands in %.1f s against histd on port %s"
              % (count, elapsed, daemon.port))
        if problems:
            print("\nFAIL: %d problem(s)%s:\n" % (len(problems), ", the first 10" * (len(problems) > 10)))
            print("\n\n".join(problems[:10]))
            print("\n---- daemon log (tail) ----\n" + daemon.log()[-3000:])
            print("(kept for a look: %s)" % top)
            return 1
        ok = True
        print("test_readme: all ok")
        return 0
    finally:
        daemon.kill()
        if ok:
            shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
