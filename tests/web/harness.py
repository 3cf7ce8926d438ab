"""Shared helpers for the web tests: a W3C WebDriver client over urllib
(chromedriver + Debian's chromium, no selenium needed), a histd daemon on a
free loopback port with a temporary data dir, and small HTTP helpers.

Only the standard library; every process started here is stopped by the
context managers, whatever happens in between.
"""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Flags that keep Chromium off the (closed) network and quick to start.
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
    "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--disable-dev-shm-usage", "--mute-audio",
    "--no-default-browser-check", "--password-store=basic",
    "--window-size=1280,1000", "--lang=en-US",
]


def log(*args):
    print(*args, flush=True)


def skip(why):
    log("SKIP:", why)
    sys.exit(SKIP)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, timeout, what, interval=0.05):
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # keep trying until the deadline
            last = e
        time.sleep(interval)
    raise TimeoutError("timed out after %ss waiting for %s%s"
                       % (timeout, what, " (last error: %s)" % last if last else ""))


# ---- HTTP ---------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def json(self):
        return json.loads(self.body.decode())

    def header(self, name):
        return self.headers.get(name)


def http(method, url, body=None, headers=None, timeout=30):
    """One request; answers a Response whatever the status."""
    data = body
    hdrs = dict(headers or {})
    if isinstance(body, (dict, list)):
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Response(r.status, r.headers, r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, e.headers, e.read())


# ---- the daemon -----------------------------------------------------------

def histd_binary():
    path = os.environ.get("HISTD_BIN") or os.path.join(ROOT, "build", "src", "service", "histd")
    if not os.access(path, os.X_OK):
        raise SystemExit("histd binary not found at %s (set HISTD_BIN)" % path)
    return path


class Daemon:
    """histd on 127.0.0.1:<free port> with a temporary data dir, serving
    static_dir (the dashboard by default)."""

    def __init__(self, *extra, workdir=None, static_dir=None):
        self.extra = list(extra)
        self.static_dir = static_dir or os.path.join(ROOT, "api", "dashboard")
        self.port = free_port()
        self.base = "http://127.0.0.1:%d" % self.port
        self.own_dir = workdir is None
        self.dir = workdir or tempfile.mkdtemp(prefix="histd-web-")
        self.proc = None

    def __enter__(self):
        data = os.path.join(self.dir, "data")
        os.makedirs(data, exist_ok=True)
        self.logpath = os.path.join(self.dir, "histd.log")
        cmd = [histd_binary(), "--listen", "127.0.0.1:%d" % self.port, "--data-dir", data,
               "--static-dir", self.static_dir, "--workers", "1"] + self.extra
        env = {k: v for k, v in os.environ.items() if not k.startswith("HISTD_")}
        self.logf = open(self.logpath, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT, env=env)
        try:
            wait_for(lambda: self.alive() and http("GET", self.base + "/healthz", timeout=2).status == 200,
                     20, "histd /healthz")
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def alive(self):
        if self.proc.poll() is not None:
            raise RuntimeError("histd exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
        return True

    def log_tail(self, n=4000):
        try:
            with open(self.logpath, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.logf.close()
        try:
            if exc and exc[0] is not None:
                log("---- histd log ----\n" + self.log_tail())
        finally:
            if self.own_dir:
                shutil.rmtree(self.dir, ignore_errors=True)
        return False


# ---- WebDriver ---------------------------------------------------------------

class WebDriverError(Exception):
    pass


ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class Browser:
    """A chromedriver + headless chromium session, spoken to in W3C WebDriver."""

    def __init__(self, chromium=None, chromedriver=None):
        self.chromium = chromium or find_chromium()
        self.chromedriver = chromedriver or find_chromedriver()
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.profile = tempfile.mkdtemp(prefix="histd-chromium-")
        self.driver = None
        self.session = None

    def __enter__(self):
        self.driver = subprocess.Popen(
            [self.chromedriver, "--port=%d" % self.port, "--allowed-ips=127.0.0.1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(lambda: self._raw("GET", "/status").get("value", {}).get("ready"), 15, "chromedriver")
            caps = {"capabilities": {"alwaysMatch": {
                "browserName": "chrome",
                "pageLoadStrategy": "normal",
                "goog:chromeOptions": {
                    "binary": self.chromium,
                    "args": CHROMIUM_FLAGS + ["--user-data-dir=" + self.profile],
                },
                "timeouts": {"script": 30000, "pageLoad": 30000, "implicit": 0},
            }}}
            v = self._raw("POST", "/session", caps, timeout=45)["value"]
            self.session = v["sessionId"]
        except Exception:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.session:
            try:
                self._raw("DELETE", "/session/" + self.session, timeout=10)
            except Exception:
                pass
        if self.driver and self.driver.poll() is None:
            # chromedriver leads its own process group; chromium lives in it too
            try:
                os.killpg(self.driver.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.driver.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.driver.pid, signal.SIGKILL)
                self.driver.wait()
        shutil.rmtree(self.profile, ignore_errors=True)
        return False

    def _raw(self, method, path, body=None, timeout=30):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return json.loads(r.read().decode() or "{}")
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                v = json.loads(text)["value"]
                raise WebDriverError("%s: %s" % (v.get("error"), v.get("message", "")[:500])) from None
            except (ValueError, KeyError, TypeError):
                raise WebDriverError("HTTP %s: %s" % (e.code, text[:500])) from None

    def cmd(self, method, path, body=None, timeout=60):
        return self._raw(method, "/session/%s%s" % (self.session, path), body, timeout)["value"]

    # navigation and scripts
    def get(self, url):
        self.cmd("POST", "/url", {"url": url})

    def js(self, script, *args):
        return self.cmd("POST", "/execute/sync", {"script": script, "args": list(args)})

    def js_async(self, script, *args):
        return self.cmd("POST", "/execute/async", {"script": script, "args": list(args)})

    # elements
    def find(self, css):
        return self.cmd("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def find_all(self, css):
        return [e[ELEMENT] for e in self.cmd("POST", "/elements", {"using": "css selector", "value": css})]

    def click(self, el):
        self.cmd("POST", "/element/%s/click" % el, {})

    def type(self, el, text):
        self.cmd("POST", "/element/%s/value" % el, {"text": text})

    def clear(self, el):
        self.cmd("POST", "/element/%s/clear" % el, {})

    def attr(self, el, name):
        return self.cmd("GET", "/element/%s/attribute/%s" % (el, name))

    def text(self, el):
        return self.cmd("GET", "/element/%s/text" % el)

    def rect(self, el):
        return self.cmd("GET", "/element/%s/rect" % el)

    def hover(self, el, dx=0, dy=0):
        """Moves the real pointer to the element's centre (plus an offset)."""
        self.cmd("POST", "/actions", {"actions": [{
            "type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
            "actions": [{"type": "pointerMove", "duration": 0, "origin": {ELEMENT: el}, "x": dx, "y": dy}],
        }]})

    def rect_window(self):
        return self.cmd("GET", "/window/rect")

    def set_window(self, width, height):
        self.cmd("POST", "/window/rect", {"width": width, "height": height})

    def screenshot(self, path):
        png = base64.b64decode(self.cmd("GET", "/screenshot"))
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(png)
        return path

    def wait(self, pred, timeout, what):
        return wait_for(pred, timeout, what, interval=0.1)


def find_chromium():
    for c in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
              shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if c and os.access(c, os.X_OK):
            return c
    skip("no chromium here (Debian: apt-get install chromium chromium-driver)")


def find_chromedriver():
    for c in (os.environ.get("CHROMEDRIVER"), "/usr/bin/chromedriver", shutil.which("chromedriver")):
        if c and os.access(c, os.X_OK):
            return c
    # chromium without its driver is a broken install, not a reason to skip
    raise SystemExit("chromium is here but chromedriver is not (Debian: apt-get install chromium-driver)")


def save_token(b, base, token):
    """Opens the dashboard at base, which asks for a token, saves `token`
    under Connection, and waits until the page connects with it."""
    b.get(base + "/")
    b.wait(lambda: b.text(b.find("#engine")) == "token needed", 15, "the page to ask for a token")
    b.type(b.find("#token"), token)
    b.click(b.find("#settings-form button[type=submit]"))
    b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), 15, "the page to connect with the token")


def get_json(base, path):
    """GET base + path, which must answer 200, as JSON."""
    r = http("GET", base + path)
    if r.status != 200:
        raise AssertionError("GET %s -> %d %s" % (path, r.status, r.body[:300]))
    return r.json()


# ---- the dashboard's job form ---------------------------------------------------

def set_value(b, css, value):
    """Types value into the input at css (empty: leaves it cleared)."""
    el = b.find(css)
    b.clear(el)
    if value != "":
        b.type(el, str(value))


def choose(b, sel_id, value):
    """Sets the <select> #sel_id to value as a user would (a change event)."""
    b.js("const s = document.getElementById(arguments[0]); s.value = arguments[1];"
         "s.dispatchEvent(new Event('change'));", sel_id, value)


def open_dashboard(b, base, timeout):
    """Loads the dashboard at base and waits until it has connected."""
    b.get(base + "/")
    b.wait(lambda: "ok" in b.attr(b.find("#engine"), "class"), timeout, "the engine badge")


def upload(b, path, n, timeout):
    """Uploads the file at path through the page's file picker and waits
    until the page says it holds n points; answers the new dataset's id
    (which the form has selected)."""
    name = os.path.basename(path)
    b.type(b.find("#file"), path)
    b.wait(lambda: "Uploaded %s: %s points" % (name, "{:,}".format(n)) in b.text(b.find("#upload-status")),
           timeout, "the upload of " + name)
    return b.js("return document.getElementById('dataset').value")


def allow_downloads(b, folder):
    """Has the browser save downloads into folder (a DevTools command,
    through chromedriver); a note where it cannot."""
    try:
        b.cmd("POST", "/goog/cdp/execute", {"cmd": "Browser.setDownloadBehavior",
                                            "params": {"behavior": "allow", "downloadPath": folder}})
    except WebDriverError as e:
        log("note: cannot set the download dir:", e)


def check_download(b, button, path, want, timeout, what):
    """Clicks the button at css `button` and checks that the browser saves
    exactly the bytes `want` at path; a note, and no check, where this
    browser saves no downloads (allow_downloads)."""
    b.click(b.find(button))
    try:
        b.wait(lambda: os.path.exists(path) and os.path.getsize(path) == len(want), timeout, what)
    except TimeoutError:
        log("note: the browser did not save the download here; skipping that check")
        return
    with open(path, "rb") as f:
        check(f.read() == want, what)


# Scripts that keep every Blob the page makes a URL for (the downloads and
# figures it saves), and read the last one back: its type, size, first 64
# bytes (base64) and, for SVG, its text.
CAPTURE_BLOBS = """
window.__blobs = [];
const create = URL.createObjectURL;
URL.createObjectURL = function (blob) { window.__blobs.push(blob); return create.call(URL, blob); };
"""
READ_LAST_BLOB = """
const done = arguments[arguments.length - 1];
const blob = window.__blobs[window.__blobs.length - 1];
if (!blob) return done(null);
blob.arrayBuffer().then((buf) => {
  const bytes = new Uint8Array(buf);
  let bin = '';
  for (let i = 0; i < Math.min(bytes.length, 64); i++) bin += String.fromCharCode(bytes[i]);
  done({type: blob.type, size: bytes.length, head: btoa(bin), text: blob.type.includes('svg') ? new TextDecoder().decode(bytes) : ''});
});
"""


def wait_job_done(b, timeout=40):
    """Waits for the job on show to end; answers its status."""
    return b.wait(lambda: b.js(
        "const s = document.getElementById('job-status').dataset.status;"
        "return ['succeeded','failed','cancelled'].includes(s) ? s : null;"), timeout, "the job to finish")


def submit_and_wait(b, start, finish):
    """Presses Compute and waits (start s) for the new job to be shown,
    then (finish s) for it to end; answers its status and id."""
    before = b.js("return location.hash")
    b.click(b.find("#submit"))
    b.wait(lambda: b.js("return location.hash") != before, start, "the new job")
    status = wait_job_done(b, finish)
    return status, b.js("return decodeURIComponent(location.hash.replace('#job=', ''))")


# ---- a test's frame ------------------------------------------------------------------

# where a test's screenshots go (meson sets it to its build dir)
OUT = os.environ.get("HISTD_WEB_OUT") or os.path.join(ROOT, "build", "tests", "web")


def check(cond, what):
    """One check: an AssertionError naming it, or a line saying it holds."""
    if not cond:
        raise AssertionError(what)
    log("ok -", what)


def deadline(seconds):
    """A test's deadline, from now: a function answering the seconds left
    (at least 1, so that a last wait still gets a chance)."""
    end = time.monotonic() + seconds
    return lambda: max(1.0, end - time.monotonic())


def main(run, prefix):
    """A browser test's main: run(chromium, chromedriver, work) with a
    temporary work dir (removed after), then PASS. Skips (77) where there
    is no chromium."""
    chromium = find_chromium()
    chromedriver = find_chromedriver()
    os.makedirs(OUT, exist_ok=True)
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        run(chromium, chromedriver, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    log("PASS")
