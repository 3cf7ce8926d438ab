"""rawhttp.py -- raw HTTP/1.1 over a loopback socket, for requests no client
library would send (two Content-Lengths, a body of NULs, a bad Host).

exchange() sends bytes and reads until the server closes or goes quiet;
responses() splits what came back into (status, headers, body) triples, so
a test can see when one request was answered twice (smuggling).
"""
import json
import socket
import time


def exchange(port, data, timeout=5.0, quiet=1.0, chunks=None, source=None):
    """Sends data (or each of chunks, in turn), returns (bytes, closed): what
    came back before the server closed the connection (closed True) or said
    nothing more for `quiet` seconds (closed False). source: the loopback
    address to send from (127.0.0.2, ...: another client)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                 source_address=(source, 0) if source else None)
    out = b""
    closed = False
    try:
        for part in (chunks or [data]):
            try:
                s.sendall(part)
            except OSError:
                break
        deadline = time.time() + timeout
        s.settimeout(quiet)
        while time.time() < deadline:
            try:
                c = s.recv(65536)
            except socket.timeout:
                break
            except OSError:
                closed = True
                break
            if not c:
                closed = True
                break
            out += c
    finally:
        s.close()
    return out, closed


def responses(data):
    """[(status, {header: value}, body), ...] of every response in data."""
    found = []
    while data.startswith(b"HTTP/"):
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            break
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            headers[k.strip().lower().decode()] = v.strip().decode(errors="replace")
        n = int(headers.get("content-length", "0"))
        found.append((status, headers, rest[:n]))
        data = rest[n:]
    return found


def problem(resp):
    """The problem+json document of a response triple, or None."""
    status, headers, body = resp
    if not headers.get("content-type", "").startswith("application/problem+json"):
        return None
    doc = json.loads(body)
    return doc if doc.get("status") == status and doc.get("detail") else None


def request(method, path, body=b"", headers=(), host="127.0.0.1", close=True):
    """A well-formed request's bytes; headers is a list of (name, value)."""
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: " + host]
    lines += ["%s: %s" % h for h in headers]
    if body and not any(h[0].lower() in ("content-length", "transfer-encoding") for h in headers):
        lines.append("Content-Length: %d" % len(body))
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body
