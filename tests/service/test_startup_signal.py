"""test_startup_signal.py -- a SIGTERM (or SIGINT) that arrives as soon as
the daemon says it is listening stops it cleanly, exit status 0, never the
signal's default action.

The window between "listening" and the daemon taking signals used to be a
few microseconds; the faults.so shim widens whatever window there is
(HISTD_TEST_SLOW_SIGNAL_START_MS makes the signal thread's first sigwait
sleep first), so a daemon that answers before it can take a signal fails
here every time.
Then a few plain starts, signalled at once, as a supervisor would.

usage: test_startup_signal.py HISTD_EXE FAULTS_SO
"""
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402


def stop_at_once(exe, env, sig):
    d = Daemon(exe, env=env)
    try:
        d.start()
        try:
            rc = d.stop(sig)
        except AssertionError as e:  # it did not stop: say what it had logged
            rc = "none (%s)" % e
        log = d.log()
    finally:
        d.kill()
    check(rc == 0, "exit status %s after %s at start (want 0)\n%s" % (rc, sig.name, log))
    check("received, shutting down" in log and "histd: stopped" in log, log)


def main():
    exe, shim = sys.argv[1], sys.argv[2]
    slow = {"LD_PRELOAD": shim, "HISTD_TEST_SLOW_SIGNAL_START_MS": "300",
            "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    for sig in (signal.SIGTERM, signal.SIGINT):
        stop_at_once(exe, slow, sig)
    print("signal right after 'listening', handlers slowed by 300 ms: exit 0")
    for _ in range(10):
        stop_at_once(exe, {}, signal.SIGTERM)
    print("10 plain starts stopped at once: exit 0")
    print("test_startup_signal: all ok")


if __name__ == "__main__":
    main()
