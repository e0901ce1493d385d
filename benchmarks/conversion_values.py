#!/usr/bin/env python3
"""The conversion-value API: how many answers the endpoint gives per second, what each costs, and
how that compares with the same work without HTTP and with the server's bare HTTP floor.

In one run, rounds interleaved:
- the yardstick: `conversion-value-rate` (reading the counters and answering from the demo's
  schema, without HTTP) on core 0;
- the endpoint by default (access log on, stderr to a file) on core 0, with the demo's app and
  schema registered: wrk on core 1 posts the same counters to /conversion-value on 64 connections;
  its answers per second, p99, and CPU µs per answer;
- the same endpoint answering GET /healthz (no work behind it): the HTTP floor.
Writes the "Conversion values" section of docs/PERFORMANCE.md (benchmarks/CONVERSION_VALUES.md,
which bench.py keeps in the page). Usage: benchmarks/conversion_values.py  (after
`swift build -c release --product attribution-endpoint` and, in benchmarks/,
`swift build -c release --product conversion-value-rate`)
"""
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from bench import parse_wrk as parse, section_head, write_section, ENDPOINT, cpu_seconds, free_port, stop, token_keys  # noqa: E402
from endpoint_process import wait_port  # noqa: E402

RATE = os.path.join(ROOT, "benchmarks/.build/release/conversion-value-rate")
DURATION = int(os.environ.get("DURATION", "8"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
WORK = tempfile.mkdtemp(prefix="conversion-values-")
# The demo's app (Sources/Commands/Demo/DemoPostbacks.swift) with the coarse thresholds and lock it registers.
APP = json.dumps({"app_id": 6443210987, "site": "app.example", "name": "Demo Puzzle", "schema": {
    "fine": [{"from": 0, "to": 0, "meaning": "installed"},
             {"from": 1, "to": 9, "meaning": "levels completed", "events": ["level_complete"]},
             {"from": 10, "to": 29, "meaning": "trial started", "events": ["trial_start"]},
             {"from": 30, "to": 63, "meaning": "purchase", "revenue": {"min": 0.99, "max": 49.99, "currency": "EUR"}}],
    "coarse": {"low": "installed", "medium": "played", "high": "paid"},
    "coarse_from_fine": {"medium": 10, "high": 30}, "lock_at": {"fine": 63, "coarse": "high"}}})
# The same counters conversion-value-rate reads, launched "now" so that the answer is window 1.
def counters():
    launch = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)
    return ('{"app_id":6443210987,"first_launch":"%s","conversion_value":3,"coarse_conversion_value":"low",'
            '"events":{"level_complete":3,"trial_start":1},"revenue":{"EUR":4.99},"idfv":"00000000-0000-0000-0000-000000000000"}'
            % launch.strftime("%Y-%m-%dT%H:%M:%SZ"))


def lua(name, method, body):
    path = os.path.join(WORK, name + ".lua")
    with open(path, "w") as f:
        f.write('wrk.method = "%s"\n' % method)
        if body:
            f.write('wrk.body = \'%s\'\nwrk.headers["Content-Type"] = "application/json"\n' % body)
    return path


def endpoint():
    os.sync()
    time.sleep(1)
    port = free_port()
    data = tempfile.mkdtemp(dir=WORK)
    token_keys(data, ("app.example",))
    log = open(os.path.join(WORK, "endpoint-%d.log" % port), "w")
    process = subprocess.Popen(["taskset", "-c", "0", ENDPOINT, "--port", str(port), "--site", "app.example", "--data", data,
                                "--token", "bench"], stdout=log, stderr=log)
    wait_port(port)
    request = urllib.request.Request("http://127.0.0.1:%d/api/apps" % port, data=APP.encode(), method="POST",
                                     headers={"Authorization": "Bearer bench", "Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).read()
    return process, port


def run(path, script):
    process, port = endpoint()
    user0, sys0 = cpu_seconds(process.pid)
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t2", "-c64", "-d%ds" % DURATION, "--latency", "--timeout", "10s",
                          "-s", script, "http://127.0.0.1:%d%s" % (port, path)], capture_output=True, text=True).stdout
    user1, sys1 = cpu_seconds(process.pid)
    stop(process)
    result = parse(out)
    result["cpu_us"] = ((user1 - user0) + (sys1 - sys0)) / (result["rps"] * DURATION) * 1e6
    return result


def main():
    body = counters()
    # The answer is checked once, so that the benchmark measures real answers.
    process, port = endpoint()
    answer = json.loads(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/conversion-value" % port, data=body.encode(),
                                                     headers={"Content-Type": "application/json"}), timeout=10).read())
    stop(process)
    assert answer == {"conversion_value": 32, "coarse_conversion_value": "high", "lock_window": False, "status": "ok", "window": 1}, answer
    rounds = []
    for k in range(ROUNDS):
        raw = json.loads(subprocess.run(["taskset", "-c", "0", RATE, "3"], capture_output=True, text=True, check=True).stdout)
        values = run("/conversion-value", lua("conversion-value", "POST", body))
        floor = run("/healthz", lua("healthz", "GET", None))
        assert values["non2xx"] == 0 and floor["non2xx"] == 0, (values, floor)
        rounds.append((raw, values, floor))
        print("round %d: %.2f µs without HTTP; %.0f answers/s (p99 %.2f ms, %.1f µs CPU each); /healthz %.0f/s (%.1f µs)" % (
            k + 1, raw["microseconds_each"], values["rps"], values["p99"], values["cpu_us"], floor["rps"], floor["cpu_us"]), flush=True)
    rounds.sort(key=lambda r: r[1]["rps"])
    raw, values, floor = rounds[len(rounds) // 2]

    lines = section_head("Conversion values", "conversion_values.py") + [
        "- Method: the endpoint by default (access log on, stderr to a file) on core 0 with the demo's app registered; "
        "wrk on core 1, 64 connections, %d s, posting the same counters (three levels, a trial, 4.99 EUR, an `idfv` that "
        "is ignored) to `/conversion-value`; then `GET /healthz` on a fresh endpoint, the HTTP floor. The yardstick "
        "(`conversion-value-rate`) reads the same body and answers without HTTP, on core 0. The round with the median "
        "answers/s of %d, rounds interleaved." % (DURATION, ROUNDS),
        "",
        "| what | per second | p99 | CPU per request | |",
        "|---|---:|---:|---:|---|",
        "| reading the counters and answering, no HTTP (`conversion-value-rate`, one core) | %d | | %.2f µs | the work itself |" % (
            raw["answers_per_second"], raw["microseconds_each"]),
        "| **`POST /conversion-value` through the endpoint** | %.0f | %.2f ms | %.1f µs | %.2f × the /healthz rate (rounds: %s/s) |" % (
            values["rps"], values["p99"], values["cpu_us"], values["rps"] / floor["rps"], ", ".join("%.0f" % r[1]["rps"] for r in rounds)),
        "| `GET /healthz` through the endpoint (no work) | %.0f | %.2f ms | %.1f µs | the HTTP floor |" % (
            floor["rps"], floor["p99"], floor["cpu_us"]),
        "",
        "An answer costs %.1f µs of the endpoint's CPU, of which %.1f µs is reading the counters and choosing the value; "
        "the rest is the request around it (a POST with a 260-byte body, the access log line, the app's lookup and its "
        "counter), where `GET /healthz`, with no body and no work, costs %.1f µs. Nothing is written to disk, so no flush "
        "limits it." % (values["cpu_us"], raw["microseconds_each"], floor["cpu_us"]),
        "",
    ]
    text = "\n".join(lines) + "\n"
    write_section("CONVERSION_VALUES.md", "Conversion values", text)
    print(text)


if __name__ == "__main__":
    try:
        main()
    finally:
        # Its data directories hold gigabytes of reports by the end; left behind, a few runs fill the disk.
        shutil.rmtree(WORK, ignore_errors=True)
