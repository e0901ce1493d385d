#!/usr/bin/env python3
"""Crash test: SIGKILL the endpoint at random moments while 64 clients send reports and 8 more
send postback copies, each delivered once or twice, as devices retry.

After every restart the log must open, every report that got a 201 must be in the export
exactly once, every postback that got a 200 must be in /api/postbacks exactly once (its
retries counted, never stored again), and nothing may appear that no client sent. Usage:

    scripts/crash_test.py [--kills 20] [--clients 64] [--postback-clients 8] [--binary .build/release/attribution-endpoint]

Exits non-zero on any violation. Prints one line per kill and a summary.
"""
import argparse
import json
import random
import re
import signal
import socket
import tempfile
import threading
import time

from endpoint_process import Endpoint, finish

REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"
POSTBACK_PATH = "/.well-known/skadnetwork/report-attribution/"


def read_response(sock, buffer):
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    return status, rest[:length], rest[length:]


def client(port, numbers, acknowledged, sent, lock, stop):
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    buffer = b""
    for n in numbers:
        if stop.is_set():
            break
        body = ('{"source_engagement_type":"click","source_site":"news.example","source_id":%d,'
                '"attributed_on_site":"shop.example","trigger_data":%d,"version":3,"n":%d}') % (n % 256, n % 16, n)
        request = ("POST %s HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n\r\n%s") % (REPORT_PATH, len(body), body)
        with lock:
            sent.add(n)
        try:
            sock.sendall(request.encode())
            status, _, buffer = read_response(sock, buffer)
        except (OSError, ConnectionError, ValueError, AttributeError):
            break
        if status == 201:
            with lock:
                acknowledged.add(n)
    sock.close()


def postback_client(port, numbers, deliveries, sent, lock, stop):
    """Sends postbacks, some twice: `deliveries[n]` counts the 200s each got."""
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        return
    buffer = b""
    for n in numbers:
        if stop.is_set():
            break
        body = ('{"version":"3.0","ad-network-id":"crash.skadnetwork","campaign-id":%d,"app-id":1,'
                '"transaction-id":"crash-%d","redownload":false,"fidelity-type":1,"did-win":true,'
                '"attribution-signature":"MEUCIQ=="}') % (1 + n % 100, n)
        request = ("POST %s HTTP/1.1\r\nHost: shop.example\r\nContent-Length: %d\r\n\r\n%s") % (
            POSTBACK_PATH, len(body), body)
        for _ in range(1 + n % 2):
            with lock:
                sent[n] = sent.get(n, 0) + 1
            try:
                sock.sendall(request.encode())
                status, _, buffer = read_response(sock, buffer)
            except (OSError, ConnectionError, ValueError, AttributeError):
                sock.close()
                return
            if status == 200:
                with lock:
                    deliveries[n] = deliveries.get(n, 0) + 1
    sock.close()


def export(port, path="/api/reports"):
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer crash\r\nConnection: close\r\n\r\n" % path).encode())
    data = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    assert b" 200 " in head.split(b"\r\n")[0], head
    # Undo chunked framing.
    out, rest = b"", body
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2:]
    return [json.loads(line) for line in out.decode().splitlines() if line]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--postback-clients", type=int, default=8)
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    random.seed(args.seed)
    data = tempfile.mkdtemp(prefix="crash-test-")
    acknowledged, sent, lock = set(), set(), threading.Lock()
    postbacks_acknowledged, postbacks_sent = {}, {}
    failures = []
    next_number = 0
    for kill in range(args.kills):
        server = Endpoint(args.binary, data, "crash")
        port, replay = server.port, server.event("replay")
        stop = threading.Event()
        threads = []
        for c in range(args.clients):
            numbers = range(next_number + c, next_number + 10_000_000, args.clients)
            t = threading.Thread(target=client, args=(port, numbers, acknowledged, sent, lock, stop), daemon=True)
            t.start()
            threads.append(t)
        for c in range(args.postback_clients):
            numbers = range(next_number + c, next_number + 10_000_000, args.postback_clients)
            t = threading.Thread(target=postback_client, daemon=True,
                                 args=(port, numbers, postbacks_acknowledged, postbacks_sent, lock, stop))
            t.start()
            threads.append(t)
        time.sleep(random.uniform(0.05, 0.6))  # the random moment of the kill
        server.stop(signal.SIGKILL)
        stop.set()
        for t in threads:
            t.join(timeout=10)
        next_number += 10_000_000
        print("kill %2d: %6d reports and %5d postbacks acknowledged so far; replay %s" % (
            kill + 1, len(acknowledged), len(postbacks_acknowledged), replay), flush=True)

    server = Endpoint(args.binary, data, "crash")
    reports = export(server.port)
    postbacks = export(server.port, "/api/postbacks")
    if server.stop() != 0:
        failures.append("SIGTERM exit status was not 0")
    counts = {}
    for r in reports:
        n = r.get("extra", {}).get("n")
        if n is None or n not in sent:
            failures.append("a report nobody sent appeared: %r" % r)
            continue
        counts[n] = counts.get(n, 0) + 1
    lost = acknowledged - set(counts)
    twice = [n for n, c in counts.items() if c > 1]
    if lost:
        failures.append("%d acknowledged reports lost, e.g. %s" % (len(lost), sorted(lost)[:5]))
    if twice:
        failures.append("%d reports appear more than once, e.g. %s" % (len(twice), twice[:5]))
    print("crash test: %d kills, %d clients, seed %d: %d acknowledged, %d exported, %d lost, %d duplicated" % (
        args.kills, args.clients, args.seed, len(acknowledged), len(reports), len(lost), len(twice)))

    # Postbacks: one row per acknowledged postback, its retries counted, never a second row.
    rows = {}
    for p in postbacks:
        n = int(p.get("transaction-id", "crash--1").split("-")[1])
        if n not in postbacks_sent:
            failures.append("a postback nobody sent appeared: %r" % p)
            continue
        rows.setdefault(n, []).append(p)
    lost = [n for n in postbacks_acknowledged if n not in rows]
    twice = [n for n, r in rows.items() if len(r) > 1]
    miscounted = [n for n, r in rows.items() if len(r) == 1 and not (
        postbacks_acknowledged.get(n, 0) - 1 <= r[0]["duplicates_received"] <= postbacks_sent[n] - 1)]
    if lost:
        failures.append("%d acknowledged postbacks lost, e.g. %s" % (len(lost), sorted(lost)[:5]))
    if twice:
        failures.append("%d postbacks stored more than once, e.g. %s" % (len(twice), twice[:5]))
    if miscounted:
        failures.append("%d postbacks with a retry count outside what was sent and acknowledged, e.g. %s" % (
            len(miscounted), miscounted[:5]))
    retries = sum(p["duplicates_received"] for p in postbacks)
    print("crash test, postbacks: %d acknowledged, %d exported with %d retries counted, %d lost, %d stored twice, %d miscounted" % (
        len(postbacks_acknowledged), len(postbacks), retries, len(lost), len(twice), len(miscounted)))
    finish(failures)


if __name__ == "__main__":
    main()
