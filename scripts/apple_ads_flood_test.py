#!/usr/bin/env python3
"""A junk Apple Ads token flood with Apple's API unreachable: the outbox stays bounded.

Posts 20,000 distinct tokens (no admin token needed, as an app posts them) to an endpoint whose
`--apple-ads-api` refuses every connection, with `--apple-ads-max-pending 5000`. Passes when:
- exactly 5,000 are taken (202) and every other one is answered 503 `apple_ads_backlogged`
  with Retry-After;
- once the flood ends, the idle process uses under 5 % of one core over 10 s (calls are paused
  while the API does not answer, one probe per pause; no scan of the backlog); a window over it
  is measured again, up to twice, and printed with its busiest threads: what the flood left to
  do is done once, a spin is in every window;
- its memory does not grow while idle, and stays under 150 MB;
- the log holds a handful of call records, not one per token per retry (`/metrics`);
- all of it again after a restart, which rebuilds the 5,000 pending tokens from the log.
Usage: scripts/apple_ads_flood_test.py [--binary .build/debug/attribution-endpoint] [--tokens 20000]
"""
import argparse
import http.client
import json
import os
import re
import socket
import tempfile
import threading
import time

from endpoint_process import Endpoint, finish, log_bytes, rss_mb

TOKEN = "flood-token"
TICKS = os.sysconf("SC_CLK_TCK")


def unreachable_url():
    """A loopback port with nothing listening: every call is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return "http://127.0.0.1:%d/api/v1/" % port


def cpu_seconds(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def post_tokens(port, first, count, results, lock):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for n in range(first, first + count):
        body = ("junk-%08d-" % n) + "x" * 200
        connection.request("POST", "/apple-ads/attribution", body=body,
                           headers={"Host": "news.example", "Content-Type": "text/plain"})
        response = connection.getresponse()
        payload = response.read()
        key = response.status
        if key == 503:
            rule = json.loads(payload).get("rule")
            key = "503 %s retry-after=%s" % (rule, response.getheader("Retry-After"))
        with lock:
            results[key] = results.get(key, 0) + 1
    connection.close()


def metric(endpoint, name, labels=""):
    connection = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=10)
    connection.request("GET", "/metrics", headers={"Authorization": "Bearer " + TOKEN})
    text = connection.getresponse().read().decode()
    pattern = re.escape(name + labels) + r" (\d+)"
    if not labels:
        pattern = re.escape(name) + r"(?:\{[^}]*\})? (\d+)"
    return sum(int(v) for v in re.findall(r"^" + pattern + r"$", text, re.M))


def thread_cpu_seconds(pid):
    """CPU seconds of each of the process's threads, by thread id: (name, seconds)."""
    threads = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            text = open("/proc/%d/task/%s/stat" % (pid, tid)).read()
        except OSError:
            continue  # a thread that ended meanwhile
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        threads[tid] = (name, (int(fields[11]) + int(fields[12])) / TICKS)
    return threads


def idle_window(endpoint, seconds):
    """CPU seconds and RSS growth of the process over `seconds` with no client connected, and
    the threads that used the most CPU in it (what to look at when it is not idle)."""
    cpu_before, rss_before, threads_before = cpu_seconds(endpoint.pid), rss_mb(endpoint.pid), thread_cpu_seconds(endpoint.pid)
    time.sleep(seconds)  # the measured idle window itself, not a wait for anything to happen
    threads_after = thread_cpu_seconds(endpoint.pid)
    used = sorted(((seconds_after - threads_before.get(tid, (name, 0))[1], name)
                   for tid, (name, seconds_after) in threads_after.items()), reverse=True)
    busiest = ", ".join("%s %.2f s" % (name, cpu) for cpu, name in used[:3] if cpu > 0)
    return (cpu_seconds(endpoint.pid) - cpu_before, rss_mb(endpoint.pid) - rss_before, rss_mb(endpoint.pid),
            busiest or "no thread")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/attribution-endpoint")
    parser.add_argument("--tokens", type=int, default=20000)
    parser.add_argument("--max-pending", type=int, default=5000)
    parser.add_argument("--idle-seconds", type=float, default=10)
    args = parser.parse_args()
    failures = []
    data = tempfile.mkdtemp(prefix="apple-ads-flood-")
    extra = ["--apple-ads-api", unreachable_url(), "--apple-ads-max-pending", str(args.max_pending)]

    endpoint = Endpoint(args.binary, data, TOKEN, extra=extra)
    results, lock = {}, threading.Lock()
    started = time.time()
    threads = [threading.Thread(target=post_tokens, args=(endpoint.port, k * (args.tokens // 4), args.tokens // 4, results, lock))
               for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flood_seconds = time.time() - started
    refused = args.tokens - args.max_pending
    print("flood: %d tokens in %.1f s: %s" % (args.tokens, flood_seconds, results))
    if results.get(202) != args.max_pending:
        failures.append("expected %d tokens taken, got %s" % (args.max_pending, results.get(202)))
    if results.get("503 apple_ads_backlogged retry-after=60") != refused:
        failures.append("expected %d answered 503 apple_ads_backlogged with Retry-After, got %s" % (refused, results))

    for phase in ["after the flood", "after a restart"]:
        # A window over budget is measured again, twice: work the flood left (a sweep catching up)
        # is done once, while a spin (a scan of the backlog per pause) is there in every window.
        for window in range(3):
            cpu, growth, rss, busiest = idle_window(endpoint, args.idle_seconds)
            if cpu <= 0.05 * args.idle_seconds:
                break
            print("%s: not idle in window %d: %.2f s of CPU in %.0f s (%s)" % (phase, window + 1, cpu, args.idle_seconds, busiest))
        pending = metric(endpoint, "attribution_apple_ads_pending")
        calls = metric(endpoint, "attribution_apple_ads_calls_total")
        paused = metric(endpoint, "attribution_apple_ads_api_paused")
        print("%s: idle %.1f s used %.3f s of CPU (%.1f %% of a core; %s); RSS %.1f MB (%+.1f MB); pending %d; calls %d; paused %d"
              % (phase, args.idle_seconds, cpu, 100 * cpu / args.idle_seconds, busiest, rss, growth, pending, calls, paused))
        if cpu > 0.05 * args.idle_seconds:
            failures.append("%s: %.2f s of CPU in %.0f s idle" % (phase, cpu, args.idle_seconds))
        if growth > 2 or rss > 150:
            failures.append("%s: RSS %.1f MB, %+.1f MB while idle" % (phase, rss, growth))
        if pending != args.max_pending:
            failures.append("%s: %d pending, expected %d" % (phase, pending, args.max_pending))
        if paused != 1:
            failures.append("%s: calls are not paused with the API unreachable" % phase)
        if calls > 20:
            failures.append("%s: %d calls recorded; a paused API costs one probe per pause" % (phase, calls))
        if phase == "after the flood":
            if endpoint.stop() != 0:
                failures.append("the endpoint did not stop cleanly")
            endpoint = Endpoint(args.binary, data, TOKEN, extra=extra)
    size = log_bytes(data)
    print("log: %.1f MB" % (size / 1e6))
    endpoint.stop()
    finish(failures)


if __name__ == "__main__":
    main()
