#!/usr/bin/env python3
"""Checks deploy/histd.service: the NVIDIA device nodes stay reachable
(DeviceAllow=, no PrivateDevices=), the rest is hardened (a dynamic or
named user, ProtectSystem=strict, StateDirectory=, NoNewPrivileges=,
PrivateTmp=, ...), the data dir is the state dir, and, where systemd is
installed, `systemd-analyze verify` accepts the unit without a warning.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from checks import ROOT, check, finish  # noqa: E402

UNIT = os.path.join(ROOT, "deploy", "histd.service")


def parse(path):
    """{section: {key: [values...]}}; an empty assignment resets the list, as systemd does."""
    out, sec = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                sec = out.setdefault(line[1:-1], {})
                continue
            k, _, v = line.partition("=")
            vals = sec.setdefault(k.strip(), [])
            if v.strip() == "" and k.strip() not in ("CapabilityBoundingSet", "AmbientCapabilities"):
                vals.clear()
            else:
                vals.append(v.strip())
    return out


def yes(v):
    return v is not None and v.lower() in ("yes", "true", "1", "on")


def main():
    u = parse(UNIT)
    s = u.get("Service", {})
    one = lambda k: (s.get(k) or [None])[-1]  # noqa: E731

    check("Unit" in u and "Install" in u and "Service" in u, "the unit has [Unit], [Service], [Install]")
    check("multi-user.target" in " ".join(u.get("Install", {}).get("WantedBy", [])), "WantedBy=multi-user.target")
    exe = (one("ExecStart") or "").lstrip("-+!@:").split()
    check(bool(exe) and exe[0].startswith("/") and exe[0].endswith("/histd"), "ExecStart runs histd by absolute path")

    # the GPUs stay reachable
    allow = " ".join(s.get("DeviceAllow", []))
    check(not yes(one("PrivateDevices")), "PrivateDevices is off (it would hide /dev/nvidia*)")
    check(one("DevicePolicy") in ("closed", "strict", None), "DevicePolicy=closed: only the listed devices")
    for node in ("/dev/nvidiactl", "/dev/nvidia-uvm"):
        check(node + " rw" in allow, "DeviceAllow=%s rw" % node)
    check("/dev/nvidia0 rw" in allow or "char-nvidia-frontend rw" in allow, "DeviceAllow covers /dev/nvidia0..N")
    check(not yes(one("ProtectKernelModules")) or "nvidia-modprobe" in " ".join(s.get("ExecStartPre", [])),
          "nvidia-uvm can be loaded despite ProtectKernelModules (ExecStartPre=+nvidia-modprobe)")
    check(not yes(one("MemoryDenyWriteExecute")), "MemoryDenyWriteExecute is off (the CUDA driver needs W+X maps)")

    # and everything else is hardened
    check(yes(one("DynamicUser")) or (one("User") not in (None, "root", "0")), "runs as a dynamic or non-root user")
    check(one("StateDirectory") == "histd", "StateDirectory=histd")
    env = dict(e.split("=", 1) for e in s.get("Environment", []))
    check(env.get("HISTD_DATA_DIR") in ("%S/histd", "/var/lib/histd"), "HISTD_DATA_DIR is the state directory")
    check(one("ProtectSystem") == "strict", "ProtectSystem=strict")
    for key in ("NoNewPrivileges", "PrivateTmp", "ProtectHome", "ProtectKernelTunables", "ProtectControlGroups",
                "RestrictSUIDSGID", "RestrictNamespaces", "LockPersonality", "RestrictRealtime"):
        check(yes(one(key)), "%s=yes" % key)
    check("CapabilityBoundingSet" in s and s["CapabilityBoundingSet"] in ([], [""]), "no capabilities")
    fams = set(" ".join(s.get("RestrictAddressFamilies", [])).split())
    check({"AF_INET", "AF_INET6", "AF_UNIX"} <= fams and "AF_PACKET" not in fams, "RestrictAddressFamilies to sockets it needs")
    check(any(v.startswith("@system-service") for v in s.get("SystemCallFilter", [])), "SystemCallFilter=@system-service")
    check(one("Restart") in ("on-failure", "always"), "restarts on failure")
    check(one("KillSignal") in (None, "SIGTERM"), "stops with SIGTERM (jobs finish or requeue)")

    # systemd's own parser, where it is installed
    sa = shutil.which("systemd-analyze")
    if not sa:
        print("note: systemd-analyze not installed; skipping `systemd-analyze verify`")
    else:
        tmp = tempfile.mkdtemp(prefix="histd-unit-")
        try:
            # verify wants ExecStart's binary to exist: point it at the built
            # daemon if there is one, else at /bin/true
            binary = os.environ.get("HISTD_BIN")
            if not (binary and os.access(binary, os.X_OK)):
                binary = shutil.which("true")
            with open(UNIT, encoding="utf-8") as f:
                text = f.read()
            text = text.replace("ExecStart=" + exe[0], "ExecStart=" + binary)
            text = text.replace("+/usr/bin/nvidia-modprobe", "+" + shutil.which("true"))
            unit = os.path.join(tmp, "histd.service")
            with open(unit, "w", encoding="utf-8") as f:
                f.write(text)
            p = subprocess.run([sa, "verify", "--man=no", unit], capture_output=True, text=True, timeout=30,
                               cwd=tmp)
            ours = [ln for ln in (p.stdout + p.stderr).splitlines() if "histd" in ln]
            check(p.returncode == 0 and not ours,
                  "systemd-analyze verify accepts the unit%s" % ("" if not ours else ":\n    " + "\n    ".join(ours)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    finish()


if __name__ == "__main__":
    main()
