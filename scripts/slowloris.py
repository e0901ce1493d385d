#!/usr/bin/env python3
"""Slowloris: 1,000 connections dribble one header byte every 2 s while wrk sends real reports.

Passes when real reports keep p99 ≤ 50 ms with no errors, the server closes the slow
connections by its request timeout (the attacker reopens them, keeping 1,000 open), and open
descriptors and memory stay bounded. Usage:

    scripts/slowloris.py [--connections 1000] [--seconds 30] [--binary .build/release/attribution-endpoint]

The endpoint is pinned to core 0; wrk and the attacker to core 1.
"""
import argparse
import os
import re
import selectors
import socket
import subprocess
import tempfile
import threading
import time

from endpoint_process import Endpoint, finish

HEAD = b"POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: shop.example\r\nX-Slow: "


def open_slow(port):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    return s


def attacker(port, count, stop, stats):
    selector = selectors.DefaultSelector()
    sockets = {}
    for _ in range(count):
        s = open_slow(port)
        sockets[s] = 0
        selector.register(s, selectors.EVENT_READ)
    last_drip = 0.0
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.2):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if not data or b"HTTP/1.1 408" in data:
                # The server gave up on it: count it and open a fresh one, as an attacker would.
                stats["closed_by_server"] += 1
                selector.unregister(s)
                s.close()
                del sockets[s]
                fresh = open_slow(port)
                sockets[fresh] = 0
                selector.register(fresh, selectors.EVENT_READ)
        if time.time() - last_drip >= 2:
            last_drip = time.time()
            for s in list(sockets):
                position = sockets[s]
                byte = HEAD[position:position + 1] if position < len(HEAD) else b"a"
                try:
                    s.send(byte)
                    sockets[s] = position + 1
                except (BlockingIOError, InterruptedError, OSError):
                    pass
    for s in sockets:
        s.close()


def sample(pid, stop, stats):
    while not stop.is_set():
        try:
            stats["max_fds"] = max(stats["max_fds"], len(os.listdir("/proc/%d/fd" % pid)))
            with open("/proc/%d/status" % pid) as f:
                rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
            stats["max_rss_mb"] = max(stats["max_rss_mb"], rss / 1024)
        except (OSError, AttributeError):
            pass
        time.sleep(0.5)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--connections", type=int, default=1000)
    parser.add_argument("--seconds", type=int, default=30)
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="slowloris-")
    server = Endpoint(args.binary, data, "s", pin_to_core=0)
    port = server.port
    os.sched_setaffinity(0, {1})

    stats = {"closed_by_server": 0, "max_fds": 0, "max_rss_mb": 0.0}
    stop = threading.Event()
    threads = [threading.Thread(target=attacker, args=(port, args.connections, stop, stats)),
               threading.Thread(target=sample, args=(server.pid, stop, stats))]
    for t in threads:
        t.start()
    time.sleep(3)  # the slow connections are open and dribbling before the real load starts
    script = os.path.join(data, "post.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write("wrk.body = '{\"source_engagement_type\":\"click\",\"source_site\":\"news.example\",\"source_id\":42,"
                "\"attributed_on_site\":\"shop.example\",\"trigger_data\":5,\"version\":3}'\n")
        f.write('wrk.headers["Content-Type"] = "application/json"\nwrk.headers["Host"] = "shop.example"\n')
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t1", "-c16", "-d%ds" % args.seconds, "--latency", "-s", script,
                          "http://127.0.0.1:%d/.well-known/private-click-measurement/report-attribution/" % port],
                         capture_output=True, text=True).stdout
    stop.set()
    for t in threads:
        t.join()
    server.stop()

    p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", out)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[p99.group(2)]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    socket_errors = re.search(r"Socket errors: (.*)", out)
    print("slowloris: %d slow connections, %d s of wrk -c16: %.0f req/s, p99 %.2f ms; slow connections closed by the "
          "server: %d; max open fds %d; max RSS %.1f MB" % (args.connections, args.seconds, rps, p99_ms,
                                                             stats["closed_by_server"], stats["max_fds"], stats["max_rss_mb"]))
    failures = []
    if p99_ms > 50:
        failures.append("p99 %.2f ms > 50 ms" % p99_ms)
    if errors or socket_errors:
        failures.append("wrk saw errors: %s %s" % (errors.group(0) if errors else "", socket_errors.group(0) if socket_errors else ""))
    if args.seconds >= 15 and stats["closed_by_server"] < args.connections:
        failures.append("only %d slow connections were closed by the request timeout" % stats["closed_by_server"])
    if stats["max_fds"] > args.connections + 200:
        failures.append("open descriptors reached %d" % stats["max_fds"])
    if stats["max_rss_mb"] > 100:
        failures.append("RSS reached %.1f MB" % stats["max_rss_mb"])
    finish(failures)


if __name__ == "__main__":
    main()
