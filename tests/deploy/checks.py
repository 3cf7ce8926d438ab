"""The deploy suite's shared check list: check() prints and records each
check, finish() reports the failures and sets the exit status."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(cond, what):
    print(("ok - " if cond else "FAIL - ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def finish():
    if failures:
        print("\n%d check(s) failed:\n  %s" % (len(failures), "\n  ".join(failures)))
        sys.exit(1)
    print("PASS")
