#!/usr/bin/python3
"""slowloris.py -- can an address under a slowloris attack from itself still
be served? (Debian's python3, standard library only; loopback only.)

Starts the given histd on 127.0.0.1 (a free port, a temporary data dir),
then, from 127.0.0.1:
  - the attack: ATTACKERS connections, each sending a request head one
    header line ("X-a: b\\r\\n", 8 bytes) per second and never finishing it;
    any connection the daemon closes is opened again at once, as slowloris
    does;
  - the probe: GET /healthz every 0.25 s on a fresh connection, a success
    being a 200 within 2 s.
Reports the share of successful probes and their median latency over the
measured window (after a warm-up that lets the attack fill its slots), and
the daemon's histd_http_slow_clients_total at the end. Everything stops
after WARMUP + SECONDS; the daemon is killed at exit.

usage: bench/slowloris.py HISTD_EXE [SECONDS=30] [ATTACKERS=128] [-- histd flags...]
"""
import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

WARMUP = 3.0


def start(exe, flags):
    data = tempfile.mkdtemp(prefix="histd-slowloris-")
    p = subprocess.Popen([exe, "--listen", "127.0.0.1:0", "--data-dir", os.path.join(data, "d")] + flags,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    line = p.stdout.readline()
    if b"listening on" not in line:
        p.kill()
        raise SystemExit("histd did not start: %r" % line)
    return p, int(line.strip().rsplit(b":", 1)[1]), data


def attack(port, n, stop, stats):
    socks = {}  # socket -> next send time

    def opened():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            s.setblocking(False)
            s.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            socks[s] = time.monotonic() + 1
            stats["opened"] += 1
        except OSError:
            stats["refused"] += 1

    while not stop.is_set():
        while len(socks) < n and not stop.is_set():
            opened()
        now = time.monotonic()
        readable, _, _ = select.select(list(socks), [], [], 0.05)
        dead = set()
        for s in readable:
            try:
                if not s.recv(4096):
                    dead.add(s)
            except OSError:
                dead.add(s)
        for s, due in list(socks.items()):
            if s in dead or due > now:
                continue
            try:
                s.send(b"X-a: b\r\n")
                socks[s] = now + 1
            except OSError:
                dead.add(s)
        for s in dead:
            stats["closed_by_daemon"] += 1
            socks.pop(s, None)
            s.close()
    for s in socks:
        s.close()


def probe(port):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.settimeout(max(0.01, 2 - (time.monotonic() - t0)))
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            c = s.recv(4096)
            if not c:
                break
            data += c
        s.close()
        return data.startswith(b"HTTP/1.1 200"), time.monotonic() - t0
    except OSError:
        return False, time.monotonic() - t0


def slow_counts(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            c = s.recv(65536)
            if not c:
                break
            data += c
        s.close()
        return [l for l in data.decode(errors="replace").splitlines()
                if l.startswith("histd_http_slow_clients_total{")]
    except OSError as e:
        return ["(/metrics: %s)" % e]


def main():
    args = sys.argv[1:]
    flags = []
    if "--" in args:
        flags = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    exe = args[0]
    seconds = float(args[1]) if len(args) > 1 else 30.0
    attackers = int(args[2]) if len(args) > 2 else 128
    p, port, data = start(exe, flags)
    stop = threading.Event()
    stats = {"opened": 0, "refused": 0, "closed_by_daemon": 0}
    t = threading.Thread(target=attack, args=(port, attackers, stop, stats), daemon=True)
    try:
        t.start()
        time.sleep(WARMUP)
        results = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.monotonic()
            results.append(probe(port))
            time.sleep(max(0, 0.25 - (time.monotonic() - t0)))
        stop.set()
        t.join(5)
        ok = [lat for good, lat in results if good]
        print("histd %s %s" % (exe, " ".join(flags)))
        print("attack: %d slow connections from 127.0.0.1 (%d opened, %d closed by the daemon, "
              "%d connects failed)" % (attackers, stats["opened"], stats["closed_by_daemon"], stats["refused"]))
        print("probes from 127.0.0.1 over %.0f s: %d/%d succeeded (%.1f%%), median latency %s"
              % (seconds, len(ok), len(results), 100.0 * len(ok) / max(1, len(results)),
                 "%.1f ms" % (1000 * statistics.median(ok)) if ok else "-"))
        time.sleep(0.3)
        for line in slow_counts(port):
            print("  " + line)
    finally:
        stop.set()
        p.kill()
        p.wait(5)
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
