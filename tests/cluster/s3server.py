"""s3server.py -- s3rver, a local S3-compatible server, for the cluster's
tests: started on a free loopback port over a temp directory with one
bucket; its built-in account is S3RVER / S3RVER.

S3rver(here, bucket) exits 77 (skipped) when there is no node at all, and
fails saying how to install s3rver when node is there but s3rver is not
(deploy/install-deps.sh --test installs it into tests/cluster/node_modules).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

KEY, SECRET = "S3RVER", "S3RVER"


class S3rver:
    def __init__(self, here, bucket):
        node = shutil.which("node")
        if node is None:
            print("skipped: no node (deploy/install-deps.sh --test installs nodejs)")
            sys.exit(77)
        s3rver = os.path.join(here, "node_modules", "s3rver", "bin", "s3rver.js")
        if not os.path.exists(s3rver):
            sys.exit(f"{s3rver} is missing: run deploy/install-deps.sh --test "
                     f"(npm ci --prefix {here})")
        self.work = tempfile.mkdtemp(prefix="histd-s3-")
        self.log = open(os.path.join(self.work, "s3rver.log"), "w+")
        self.server = subprocess.Popen(
            [node, s3rver, "-d", os.path.join(self.work, "s3rver"), "-a", "127.0.0.1", "-p",
             "0", "--configure-bucket", bucket], stdout=self.log, stderr=subprocess.STDOUT)
        self.endpoint = None
        deadline = time.time() + 20
        while self.endpoint is None and time.time() < deadline and self.server.poll() is None:
            time.sleep(0.1)
            self.log.seek(0)
            for line in self.log:
                if line.startswith("S3rver listening on "):
                    self.endpoint = "http://" + line.split()[-1]
        if self.endpoint is None:
            self.log.seek(0)
            text = self.log.read()
            self.stop()
            sys.exit("s3rver did not start:\n" + text)

    def env(self):
        """The AWS_ variables that point a client at this server."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET, "AWS_REGION": "us-east-1"}

    def stop(self):
        self.server.terminate()
        try:
            self.server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.server.kill()
        self.log.close()
        shutil.rmtree(self.work, ignore_errors=True)
