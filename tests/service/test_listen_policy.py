"""test_listen_policy.py -- a daemon reachable beyond this machine has a
token, or was told in so many words to go without.

Listening on a host that is not loopback (0.0.0.0, ::, a LAN address)
without --token is refused before anything starts: exit status 2 and one
sentence on stderr that names the listen host, --token and
--allow-anonymous. Loopback hosts (127.0.0.1, localhost, ::1) need no
token; --allow-anonymous (or HISTD_ALLOW_ANONYMOUS=1) and a token each let
a wide listen start. No refused case ever binds a port.

usage: test_listen_policy.py HISTD_EXE
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402


def run(exe, args, env=None):
    full = {k: v for k, v in os.environ.items() if not k.startswith("HISTD_")}
    full.update(env or {})
    with tempfile.TemporaryDirectory() as d:
        try:
            return subprocess.run([exe, "--data-dir", os.path.join(d, "data")] + args, env=full,
                                  capture_output=True, text=True, timeout=10)
        except subprocess.TimeoutExpired as e:
            raise AssertionError("%s %s: still running after 10 s, so it started instead of "
                                 "refusing: %r" % (args, env, e.stdout)) from None


def refused(exe, args, env, host):
    r = run(exe, args, env)
    check(r.returncode == 2, "%s %s: exit 2, got %d (%s)" % (args, env, r.returncode, r.stderr.strip()))
    err = r.stderr.strip()
    check(host in err and "--token" in err and "--allow-anonymous" in err and err.count("\n") == 0,
          "one sentence naming %s, --token and --allow-anonymous: %r" % (host, err))
    check(r.stdout == "", "nothing listened: %r" % r.stdout)
    print("ok - refused: %s %s" % (args, env))


def starts(exe, args, env=None):
    # Daemon always passes --listen 127.0.0.1:0 first; a later --listen wins
    with Daemon(exe, args=args, env=env) as d:
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "%s %s: starts and answers" % (args, env))
        log = d.log()
    # a token shorter than 32 characters is warned about, a longer one not
    token = (env or {}).get("HISTD_TOKEN", "")
    warned = "warning: --token has %d characters" % len(token) in log
    check(warned == (0 < len(token) < 32), "warned %s about a token of %d: %r"
          % (warned, len(token), log))
    print("ok - starts: %s %s" % (args, env))


def main(exe):
    refused(exe, ["--listen", "0.0.0.0:0"], {}, "0.0.0.0")
    refused(exe, ["--listen", "[::]:0"], {}, "::")
    refused(exe, ["--listen", "192.0.2.7:0"], {}, "192.0.2.7")
    refused(exe, [], {"HISTD_LISTEN": "0.0.0.0:0"}, "0.0.0.0")
    refused(exe, ["--listen", "0.0.0.0:0"], {"HISTD_ALLOW_ANONYMOUS": "0"}, "0.0.0.0")
    refused(exe, ["--listen", "0.0.0.0:0", "--token", ""], {}, "0.0.0.0")
    starts(exe, ["--listen", "localhost:0"])
    starts(exe, ["--listen", "0.0.0.0:0", "--allow-anonymous"])
    starts(exe, ["--listen", "0.0.0.0:0"], {"HISTD_ALLOW_ANONYMOUS": "1"})
    starts(exe, ["--listen", "0.0.0.0:0"], {"HISTD_TOKEN": "s3cret"})
    starts(exe, ["--listen", "0.0.0.0:0"], {"HISTD_TOKEN": "a" * 31})
    starts(exe, ["--listen", "0.0.0.0:0"], {"HISTD_TOKEN": "0123456789abcdef" * 4})
    print("PASS")


if __name__ == "__main__":
    main(sys.argv[1])
