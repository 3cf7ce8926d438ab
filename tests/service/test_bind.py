"""test_bind.py -- histd that cannot listen says so in one sentence.

A port another process holds (IPv4 and IPv6 loopback), and an address that
is not this host's (192.0.2.1, TEST-NET-1): histd exits with status 1,
prints nothing on stdout (no "listening"), and its stderr is one line that
names the address and the reason, without libmicrohttpd's own words
(which used to come first: "Failed to bind to port 0").

usage: test_bind.py HISTD_EXE
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import check  # noqa: E402


def start(exe, listen, data_dir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HISTD_")}
    try:
        # a token: listening beyond loopback without one is refused before
        # the bind is tried (test_listen_policy)
        r = subprocess.run([exe, "--listen", listen, "--data-dir", data_dir, "--token", "t" * 32],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=60)
    except subprocess.TimeoutExpired:
        raise AssertionError("histd --listen %s did not exit within 60 s" % listen)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def one_sentence(exe, listen, reason, data_dir):
    rc, out, err = start(exe, listen, data_dir)
    what = "histd --listen %s: exit %s\nstdout: %r\nstderr: %r" % (listen, rc, out, err)
    check(rc == 1, "want exit status 1; " + what)
    check(out == "", "want nothing on stdout; " + what)
    lines = err.splitlines()
    check(len(lines) == 1, "want one line on stderr; " + what)
    line = lines[0]
    check(line.startswith("histd: cannot listen on %s: " % listen),
          "want 'histd: cannot listen on %s: ...'; %s" % (listen, what))
    check(re.search(reason, line), "want the reason (%s); %s" % (reason, what))
    check("port 0" not in line and "Failed to bind" not in line, what)
    print("%-22s exit 1: %s" % (listen, line))


def main():
    exe = sys.argv[1]
    data_dir = tempfile.mkdtemp(prefix="histd-bind-")
    try:
        held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        one_sentence(exe, "127.0.0.1:%d" % port, r"already in use", os.path.join(data_dir, "a"))
        held.close()

        if socket.has_ipv6:
            try:
                held6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
                held6.bind(("::1", 0))
                held6.listen(1)
            except OSError as e:
                print("no IPv6 loopback here (%s): skipping [::1]" % e)
            else:
                port6 = held6.getsockname()[1]
                one_sentence(exe, "[::1]:%d" % port6, r"already in use",
                             os.path.join(data_dir, "b"))
                held6.close()

        one_sentence(exe, "192.0.2.1:%d" % port, r"not an address of this host",
                     os.path.join(data_dir, "c"))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print("test_bind: all ok")


if __name__ == "__main__":
    main()
