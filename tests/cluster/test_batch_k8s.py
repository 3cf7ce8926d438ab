#!/usr/bin/python3
"""test_batch_k8s.py -- deploy/k8s/batch (no cluster here): the manifests
parse (python3-yaml); the shards Job is Indexed, its completions the COUNT
placeholder that deploy/k8s/batch/README.md says to replace with the plan's
count, its command `histd batch run /data/DIR` (the index from
JOB_COMPLETION_INDEX); the merge Job merges the same DIR; the image is the
Deployment's, the volume the PVC's. Then the commands run as the pods would:
/data is a temporary folder, each index with JOB_COMPLETION_INDEX set.

usage: test_batch_k8s.py HISTD
"""
import json
import os
import subprocess
import sys
import tempfile
import shutil

import yaml

from batch_checks import check, failures  # noqa: E402

HISTD = sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
K8S = os.path.join(ROOT, "deploy", "k8s")


def load(name):
    with open(os.path.join(K8S, "batch", name), encoding="utf-8") as f:
        return yaml.safe_load(f)


def main():
    shards, merge, pvc = load("shards.yaml"), load("merge.yaml"), load("pvc.yaml")
    with open(os.path.join(K8S, "deployment.yaml"), encoding="utf-8") as f:
        deployment = yaml.safe_load(f)
    with open(os.path.join(K8S, "batch", "README.md"), encoding="utf-8") as f:
        readme = f.read()
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    for name, job in (("shards", shards), ("merge", merge)):
        check(job["apiVersion"] == "batch/v1" and job["kind"] == "Job", "%s: a batch/v1 Job" % name)
        pod = job["spec"]["template"]["spec"]
        c = pod["containers"][0]
        check(c["image"] == image, "%s: the image is the Deployment's (%s)" % (name, image))
        check(pod["restartPolicy"] == "Never", "%s: restartPolicy Never" % name)
        claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]]
        check(claims == [pvc["metadata"]["name"]] and
              c["volumeMounts"][0]["mountPath"] == "/data",
              "%s: the PVC %s at /data" % (name, claims))
    spec = shards["spec"]
    check(spec["completionMode"] == "Indexed", "shards: completionMode Indexed")
    check(spec["completions"] == "COUNT" and 's/COUNT/' in readme and
          "histd batch plan" in readme,
          "shards: completions is the COUNT placeholder, and the README says to replace "
          "it with the count histd batch plan prints")
    check(isinstance(spec["parallelism"], int) and spec["parallelism"] > 0,
          "shards: parallelism %s" % spec["parallelism"])
    cmd = spec["template"]["spec"]["containers"][0]["command"]
    check(cmd[1:] == ["batch", "run", "/data/DIR"] and cmd[0].endswith("/histd"),
          "shards: the command is histd batch run /data/DIR (%s)" % cmd)
    mcmd = merge["spec"]["template"]["spec"]["containers"][0]["command"]
    check(mcmd[1:4] == ["batch", "merge", "/data/DIR"], "merge: histd batch merge /data/DIR")
    check("ReadWriteMany" in pvc["spec"]["accessModes"], "pvc: ReadWriteMany")

    # the pods' commands, by hand: /data a temporary folder
    data = tempfile.mkdtemp(prefix="histd-k8s-")
    try:
        os.mkdir(os.path.join(data, "job"))
        with open(os.path.join(data, "job", "pts.xyz"), "w") as f:
            f.write("5\nfive\n" + "".join("C %d %d %d\n" % (i, 2 * i, 3 * i) for i in range(5)))
        with open(os.path.join(data, "job", "JOB.json"), "w") as f:
            json.dump({"dataset": "pts.xyz", "bucket_width": 1}, f)
        r = subprocess.run([HISTD, "batch", "plan", os.path.join(data, "job", "JOB.json"),
                            "--shards", "3", "--out", os.path.join(data, "run1")],
                           capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "plan %s" % r.stderr.strip())
        count = int(r.stdout)
        shards_text = open(os.path.join(K8S, "batch", "shards.yaml")).read()
        filled = yaml.safe_load(shards_text.replace("COUNT", str(count)))
        check(filled["spec"]["completions"] == count, "completions filled in: %d" % count)
        env = {k: v for k, v in os.environ.items() if k != "SLURM_ARRAY_TASK_ID"}
        for i in range(count):
            argv = [HISTD] + [a.replace("/data/DIR", os.path.join(data, "run1")) for a in cmd[1:]]
            r = subprocess.run(argv, env=dict(env, JOB_COMPLETION_INDEX=str(i)),
                               capture_output=True, text=True, timeout=30)
            check(r.returncode == 0, "pod %d: %s" % (i, r.stderr.strip()[-120:]))
        argv = [HISTD] + [a.replace("/data/DIR", os.path.join(data, "run1")) for a in mcmd[1:]]
        r = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        out = mcmd[mcmd.index("--out") + 1].replace("/data/DIR", os.path.join(data, "run1"))
        ok = r.returncode == 0 and os.path.exists(out)
        if check(ok, "merge pod: %s %s" % (out, r.stderr.strip())):
            with open(out) as f:
                res = json.load(f)
            check(res["total"] == 10 and sum(res["counts"]) + res["overflow"] == 10,
                  "the merged result counts the 10 pairs")
    finally:
        shutil.rmtree(data, ignore_errors=True)
    if failures:
        print("\n%d failure(s)" % len(failures))
        return 1
    print("test_batch_k8s: all ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
