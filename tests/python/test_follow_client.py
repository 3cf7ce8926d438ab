"""test_follow_client.py -- the Python client and a simulation still running:
``upload(..., growing=True)``, ``Dataset.append()`` (one frame of points, a
(F, N, 3) array of frames, a file) while ``for r in job.updates()`` reads a
following job's results from its events stream, each held to numpy's
definition of the frames so far; ``Dataset.seal()`` ends the loop with the
whole trajectory's result; a plain job's ``updates()`` gives its one
result; a retry of an append whose answer was lost appends nothing, an
append after the seal is the daemon's 409.

usage: test_follow_client.py HISTD_EXE
"""
import os
import tempfile
import threading

from common import Daemon, check, distances, exe, np, width_counts

import histd


def main():
    width, buckets, atoms = 20.0, 10, 40
    rng = np.random.default_rng(7)
    frames = rng.uniform(0, 100, size=(8, atoms, 3))

    def want(k):
        counts = np.zeros(buckets, dtype=np.uint64)
        for f in frames[:k]:
            counts += width_counts(distances(f), width, buckets)[0]
        return counts

    with Daemon(exe(), args=["--workers", "1"]) as d:
        c = histd.Client("http://127.0.0.1:%d" % d.port)
        ds = c.upload(frames[0], growing=True)
        check(ds.growing and not ds.sealed and ds.frames == 1, ds.doc)
        check(c.upload(frames[0]).id != ds.id, "a plain upload of the same points is another")
        job = c.submit(ds, bucket_width=width, buckets=buckets, follow=True)
        xyz = tempfile.NamedTemporaryFile("w", suffix=".xyz", delete=False)
        for f in frames[6:8]:
            xyz.write("%d\nProperties=pos:R:3\n" % atoms)
            xyz.write("".join("%r %r %r\n" % tuple(p) for p in f.tolist()))
        xyz.close()

        failed = []

        def simulation():
            try:
                steps()
            except Exception as e:  # (raised in the main thread below)
                failed.append(e)

        def steps():
            stale = histd.Dataset(c, dict(ds.doc))  # (its frames: 1)
            ds.append(frames[1])                 # one frame of points
            stale.append(frames[1])              # a retry whose first answer was lost
            check(stale.frames == 2 == ds.frames, "a retry appends nothing")
            ds.append(frames[2:4])               # frames of points, one append each
            ds.append(frames[4])
            ds.append(frames[5:6])
            ds.append(xyz.name)                  # a file of two frames
            ds.seal()
        sim = threading.Thread(target=simulation)
        seen = []
        for r in job.updates(timeout=30):
            check(np.array_equal(np.asarray(r.counts, dtype=np.uint64), want(r.frames)),
                  "update of %d frames: %s, want %s" % (r.frames, r.counts, want(r.frames)))
            seen.append(r.frames)
            if len(seen) == 1:
                sim.start()
        sim.join(30)
        os.unlink(xyz.name)
        if failed:
            raise failed[0]
        check(job.status == "succeeded" and seen[-1] == 8 and seen == sorted(set(seen)),
              "updates %s, %s" % (seen, job.status))
        check(ds.sealed and ds.frames == 8 and ds.n == 8 * atoms, ds.doc)
        # after the seal: 409
        try:
            ds.append(frames[7])
            raise AssertionError("an append after the seal")
        except histd.HistdError as e:
            check(e.status == 409 and "sealed" in str(e), e)
        # a plain job: its one result
        plain = c.submit(ds, bucket_width=width, buckets=buckets)
        got = list(plain.updates(timeout=30))
        check(len(got) == 1 and np.array_equal(np.asarray(got[0].counts, dtype=np.uint64),
                                               want(8)), got)
        print("client: %d updates of a following job over 8 frames appended in 6 calls, each "
              "numpy's counts of its frames; seal ended it; a plain job's updates() is its "
              "result" % len(seen))


if __name__ == "__main__":
    main()
