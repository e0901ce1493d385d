#!/usr/bin/env python3
"""What the Apple Ads outbox holds in memory as days go by (issue 30).

Starts the endpoint (release build, --manual-clock) with Apple's API played by a local stand-in
that answers every call at once ("not attributed"), then for each of DAYS days: sets the clock
to that day, posts TOKENS tokens over keep-alive connections, waits until every one is answered,
and prints the process's RSS and `attribution_apple_ads_tokens_in_memory`. A token answered
more than a day ago is let go, so from the second day on both should stay flat.

    python3 benchmarks/apple_ads_memory.py [--binary .build/release/attribution-endpoint] [--days 5] [--tokens 20000] [--apple-down]

With --apple-down, Apple's API cannot be reached: calls pause, each day's tokens wait and expire
the next day without a call, so what grows with the calls themselves (URLSession) is left out.
"""
import argparse
import http.client
import json
import os
import shutil
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from endpoint_process import Endpoint, apple_stand_in, log_bytes, rss_mb  # noqa: E402

TOKEN = "bench"


def request(connection, method, path, body=None, headers=None):
    connection.request(method, path, body=body, headers=headers or {})
    response = connection.getresponse()
    return response.status, response.read()


def metric(port, name):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    _, body = request(connection, "GET", "/metrics", headers={"Authorization": "Bearer " + TOKEN})
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--days", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--apple-down", action="store_true")
    args = parser.parse_args()

    apple, apple_url = apple_stand_in(b'{"attribution":false}')
    data = tempfile.mkdtemp(prefix="apple-ads-memory-")
    endpoint = Endpoint(args.binary, data, TOKEN, extra=[
        "--site", "app.example", "--manual-clock", "--log-preallocation-mb", "0",
        "--apple-ads-api", "http://127.0.0.1:9/" if args.apple_down else apple_url,
        "--apple-ads-max-pending", "10000000"])
    admin = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    print("day  tokens_posted  tokens_in_memory  rss_mb  log_mb  seconds")
    print("0    0              %-17d %-7.1f %.1f" % (metric(endpoint.port, "attribution_apple_ads_tokens_in_memory"),
                                                     rss_mb(endpoint.pid), log_bytes(data) / 1e6))
    try:
        for day in range(1, args.days + 1):
            started = time.time()
            clock = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
            # A minute later each day: the day before's answers are then more than 24 hours old.
            now = "2026-12-%02dT12:%02d:00Z" % (day, day)
            status, body = request(clock, "POST", "/admin/clock", json.dumps({"now": now}), admin)
            assert status == 200, body

            def post(worker):
                connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=60)
                for n in range(worker, args.tokens, args.connections):
                    token = "day%02d-token-%08d-" % (day, n) + "x" * 110  # about the size of a real token
                    status, body = request(connection, "POST", "/apple-ads/attribution", token,
                                           {"Host": "app.example", "Content-Type": "text/plain"})
                    assert status == 202, (status, body)

            threads = [threading.Thread(target=post, args=(w,)) for w in range(args.connections)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            # Every token of the day answered; with Apple down, every one of the day waiting (and
            # the day before's expired).
            while metric(endpoint.port, "attribution_apple_ads_pending") != (args.tokens if args.apple_down else 0):
                time.sleep(0.2)
            print("%-4d %-14d %-17d %-7.1f %-7.1f %.1f" % (
                day, args.tokens * day, metric(endpoint.port, "attribution_apple_ads_tokens_in_memory"),
                rss_mb(endpoint.pid), log_bytes(data) / 1e6, time.time() - started))
            sys.stdout.flush()
    finally:
        endpoint.stop()
        apple.shutdown()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
