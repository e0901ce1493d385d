#!/usr/bin/env python3
"""Network fuzzer: mutated requests against a live endpoint.

Each request goes on its own connection, followed by a half-close, and must be answered with a
status (never a 5xx) or a closed connection, within a few seconds. After the run the server must
still answer /healthz and a valid report. Usage:

    scripts/net_fuzz.py [--requests 100000] [--threads 8] [--binary .build/release/attribution-endpoint]
"""
import argparse
import random
import re
import socket
import tempfile
import threading
import time

from endpoint_process import Endpoint, finish

PATH = "/.well-known/private-click-measurement/report-attribution/"
VALID = (b'{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
         b'"attributed_on_site":"shop.example","trigger_data":5,"version":3}')


def request(body=VALID, method=b"POST", path=PATH.encode(), version=b"HTTP/1.1", headers=None):
    headers = headers if headers is not None else [
        (b"Host", b"shop.example"), (b"Content-Type", b"application/json"),
        (b"Content-Length", str(len(body)).encode())]
    head = method + b" " + path + b" " + version + b"\r\n" + b"".join(n + b": " + v + b"\r\n" for n, v in headers)
    return head + b"\r\n" + body


def chunked(body, sizes):
    out, i = b"", 0
    for size in sizes:
        out += size + b"\r\n" + body[i:i + 5] + b"\r\n"
        i += 5
    return out + b"0\r\n\r\n"


def generators(rng):
    nested = lambda depth: b'{"a":' * depth + b"1" + b"}" * depth
    return [
        # Malformed request lines.
        lambda: rng.choice([b"GET\r\n\r\n", b" / HTTP/1.1\r\n\r\n", b"GET / HTTP/9.9\r\nHost: a\r\n\r\n",
                            b"GET /\x00 HTTP/1.1\r\nHost: a\r\n\r\n", b"\xff\xfe\xfd\r\n\r\n",
                            b"GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n", b"POST " + b"/" * 20000 + b" HTTP/1.1\r\n\r\n"]),
        # Header floods and broken header lines.
        lambda: request(headers=[(b"Host", b"shop.example")] + [(b"X-%d" % i, b"v" * rng.randint(1, 200)) for i in range(rng.randint(50, 400))]),
        lambda: request(headers=[(b"Host", b"shop.example"), (b"Content-Length", b"10"), (b"Content-Length", b"11")]),
        lambda: request(headers=[(b"Host", b"shop.example"), (b"Content-Length", b"140"), (b"Transfer-Encoding", b"chunked")]),
        lambda: request(headers=[(b"Host", b"shop.example"), (b"Bad Header", b"x"), (b"Content-Length", b"140")]),
        lambda: request(headers=[(b"Host", b"shop.example"), (b" folded", b"x")]),
        # Bad chunk sizes.
        lambda: request(body=chunked(VALID, [rng.choice([b"zz", b"-1", b"ffffffffffff", b"", b"5;" + b"x" * 5000, b"7"])] * 3),
                        headers=[(b"Host", b"shop.example"), (b"Content-Type", b"application/json"), (b"Transfer-Encoding", b"chunked")]),
        # Invalid UTF-8, huge numbers, deep nesting, not-objects.
        lambda: request(body=VALID.replace(b"news.example", b"n\xc3\x28ws.example")),
        lambda: request(body=VALID.replace(b"42", b"9" * 10000)),
        lambda: request(body=VALID.replace(b"42", b"1e" + b"9" * rng.randint(1, 3000))),
        lambda: request(body=nested(rng.randint(10, 5000))),
        lambda: request(body=b"[" * rng.randint(1, 6000)),
        lambda: request(body=rng.choice([b"null", b"[]", b"\"x\"", b"{}", b"{" + b'"a":1,' * 1000 + b'"a":2}'])),
        # Random byte mutations of a valid request.
        lambda: mutate(rng, request()),
        lambda: mutate(rng, request(body=chunked(VALID, [b"5"] * 29), headers=[(b"Host", b"shop.example"), (b"Content-Type", b"application/json"), (b"Transfer-Encoding", b"chunked")])),
    ]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.randint(0, 3)
        i = rng.randrange(len(data))
        if kind == 0:
            data[i] = rng.randrange(256)
        elif kind == 1:
            del data[i:i + rng.randint(1, 20)]
        elif kind == 2:
            data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
        else:
            data[i:i] = data[i:i + rng.randint(1, 200)] * rng.randint(1, 20)
        if not data:
            data = bytearray(b"x")
    return bytes(data)


def send_one(port, payload):
    """Returns the status, 'closed' or 'hang'."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError as error:
        return "connect-failed: %s" % error
    try:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the server may close early on a bad head; its answer is still readable
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return "hang"
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        match = re.match(rb"HTTP/1\.1 (\d{3}) ", data)
        return int(match.group(1)) if match else "closed"
    finally:
        s.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="net-fuzz-")
    server = Endpoint(args.binary, data, "fuzz", extra=["--request-timeout", "2"])
    port = server.port

    outcomes, lock = {}, threading.Lock()
    per_thread = args.requests // args.threads
    started = time.time()

    def worker(index):
        rng = random.Random(args.seed * 1000 + index)
        gens = generators(rng)
        for _ in range(per_thread):
            outcome = send_one(port, rng.choice(gens)())
            key = outcome if isinstance(outcome, str) else "%dxx" % (outcome // 100)
            with lock:
                outcomes[key] = outcomes.get(key, 0) + 1

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.time() - started
    alive = server.process.poll() is None
    healthy = send_one(port, b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n") == 200 if alive else False
    still_ingests = send_one(port, request()) == 201 if alive else False
    if alive:
        server.stop()
    total = sum(outcomes.values())
    print("net fuzz: %d requests in %.0f s (seed %d): %s" % (total, seconds, args.seed,
          ", ".join("%s %d" % kv for kv in sorted(outcomes.items()))))
    failures = []
    if not alive:
        failures.append("the server died (exit status %s); its last words:\n%s" % (
            server.process.returncode, "".join(server.lines[-200:])))
    if outcomes.get("5xx"):
        failures.append("%d answers were 5xx" % outcomes["5xx"])
    if outcomes.get("hang"):
        failures.append("%d requests hung" % outcomes["hang"])
    if any(k.startswith("connect-failed") for k in outcomes):
        failures.append("connections were refused")
    if not healthy or not still_ingests:
        failures.append("the server stopped answering after the run")
    finish(failures)


if __name__ == "__main__":
    main()
