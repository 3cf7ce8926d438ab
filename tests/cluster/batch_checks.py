"""batch_checks.py -- the batch tests' one line a check (test_batch.py,
test_batch_k8s.py): ok/FAIL and what, the failures kept for the end."""
failures = []


def check(cond, what):
    print("%s  %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        failures.append(what)
    return cond
