#!/usr/bin/env python3
"""tests/cluster: the shared store's S3 backend against a local S3 server.

    test_s3.py TEST_SHARED_STORE TESTS_CLUSTER_DIR

Starts s3rver (tests/cluster/node_modules, installed by deploy/install-deps.sh
--test from package-lock.json) on a free loopback port with a temp directory
and a bucket, then runs the C test in its phases:

  1. sigv4: the signer against the AWS docs' example and against this
     script's own signature (hmac, hashlib) of a second request;
  2. s3 put: put, size, ranged fetches and the bytes they download, the
     cache across a restart, a damaged cache block, eight threads;
  3. here: the manifest the put wrote is checked block by block with
     hashlib, then other bytes of the same size are PUT at the object's key
     (signed here, so the server really holds what a bad server would send);
  4. s3 served-wrong: a block fetched now is refused, naming the block;
     delete.

Exits 77 (skipped) only when there is no node at all; with node but no
s3rver it fails, saying how to install it.
"""
import datetime
import hashlib
import hmac
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from s3server import KEY, SECRET, S3rver

BIN, HERE = sys.argv[1], sys.argv[2]
BUCKET, PREFIX = "histd", "cluster/test"


def sigv4(method, uri, headers, payload_hash, amz_date, region, key, secret):
    """The Authorization value for a request (headers: lowercase name -> value)."""
    names = sorted(headers)
    canonical = "\n".join([method, uri, ""] + [f"{n}:{headers[n]}" for n in names] +
                          ["", ";".join(names), payload_hash])
    date = amz_date[:8]
    scope = f"{date}/{region}/s3/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for part in (date, region, "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    return (f"AWS4-HMAC-SHA256 Credential={key}/{scope},"
            f"SignedHeaders={';'.join(names)},Signature={sig}")


def s3(method, endpoint, key, body=b""):
    host = urllib.parse.urlsplit(endpoint).netloc
    uri = "/" + BUCKET + "/" + urllib.parse.quote(key, safe="/-_.~")
    amz_date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    ph = hashlib.sha256(body).hexdigest()
    h = {"host": host, "x-amz-content-sha256": ph, "x-amz-date": amz_date}
    auth = sigv4(method, uri, h, ph, amz_date, "us-east-1", KEY, SECRET)
    req = urllib.request.Request(endpoint + uri, data=body if method == "PUT" else None,
                                 method=method)
    for n, v in h.items():
        req.add_header(n, v)
    req.add_header("Authorization", auth)
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()


def run(*args, env):
    p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=120)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        sys.exit(f"test_shared_store {' '.join(args)}: exit {p.returncode}")


def main():
    # 1. the signer: the AWS docs' example (checked here too), then a PUT with
    # a session token and an encoded key, signed by this script
    empty = hashlib.sha256(b"").hexdigest()
    aws = sigv4("GET", "/test.txt", {"host": "examplebucket.s3.amazonaws.com",
                                     "range": "bytes=0-9", "x-amz-content-sha256": empty,
                                     "x-amz-date": "20130524T000000Z"},
                empty, "20130524T000000Z", "us-east-1", "AKIAIOSFODNN7EXAMPLE",
                "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
    assert aws.endswith("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"), aws
    hello = hashlib.sha256(b"hello").hexdigest()
    cross = sigv4("PUT", "/histd/a%20dir/x.f64",
                  {"host": "127.0.0.1:9000", "x-amz-content-sha256": hello,
                   "x-amz-date": "20240229T235959Z",
                   "x-amz-security-token": "FwoGZXIvYXdzEXAMPLE+token/=="},
                  hello, "20240229T235959Z", "eu-west-1", "AKID", "s3cr3t/+key")
    run("sigv4", cross.split("Signature=")[1], env=os.environ)

    server = S3rver(HERE, BUCKET)
    work = tempfile.mkdtemp(prefix="histd-s3-")
    try:
        endpoint = server.endpoint
        print("s3rver at", endpoint)
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID=KEY,
                   AWS_SECRET_ACCESS_KEY=SECRET, AWS_REGION="us-east-1",
                   HISTD_TEST_S3_URL=f"s3://{BUCKET}/{PREFIX}")
        env.pop("AWS_ENDPOINT_URL_S3", None)
        env.pop("AWS_SESSION_TOKEN", None)

        # 2. put and fetch
        run("s3", "put", work, env=env)

        # 3. the manifest, checked independently; then the wrong bytes on the server
        src = open(os.path.join(work, "src.f64"), "rb").read()
        oid = hashlib.sha256(src).hexdigest()
        manifest = s3("GET", endpoint, f"{PREFIX}/{oid}.manifest").decode()
        lines = manifest.splitlines()
        block = int(lines[2].split()[1])
        assert lines[0] == "histd-manifest 1" and lines[1] == f"size {len(src)}", lines[:2]
        assert lines[3] == "sha256 " + oid, lines[3]
        want = [hashlib.sha256(src[i:i + block]).hexdigest()
                for i in range(0, len(src), block)]
        assert lines[4:] == want, "the manifest's block hashes differ from hashlib's"
        print(f"manifest: {len(want)} blocks of {block} bytes, hashes as hashlib's")
        bad = bytearray(src)
        bad[3 * block + 100] ^= 0xFF
        s3("PUT", endpoint, f"{PREFIX}/{oid}.f64", bytes(bad))

        # 4. served wrong; delete
        run("s3", "served-wrong", work, env=env)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print("test_s3: all checks passed")


if __name__ == "__main__":
    main()
