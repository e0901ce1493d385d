#!/usr/bin/env python3
"""Relays (issue 43): copies relayed over real HTTPS, certificates checked, to nginx on this
machine (two servers with a certificate from a test CA, each answering 204).

    python3 benchmarks/relays.py [--copies 1000000] [--rounds 3] [--seconds 15] [--binary B] [--markdown FILE]

The endpoint trusts the test CA the only way Foundation on Linux takes, its system trust store: it
runs in a mount namespace of its own in which the system bundle has the CA added
(scripts/relay_tls_test.py's wrapper). Postbacks are distinct SKAdNetwork 4.0 copies signed
beforehand with a test key the endpoint trusts (`--postback-key`), sent by wrk (core 1).

1. Backlog: one destination, paused while wrk sends --copies postbacks; then resumed, and timed
   until it has delivered them all (`/api/relays`, once a second). Beside the drain, PCM reports
   at a steady 2,000/s on 16 keep-alive connections (benchmarks/mixed.py's client; latency from
   when each was due): their p50, p99 and maximum. Target: >= 5,000 copies/s; report p99 within
   the neighbours' targets (p99 <= 5 ms, max <= 50 ms).
2. Intake, paired rounds: each round starts the endpoint afresh twice, without relays and with
   two destinations, and wrk sends postbacks for --seconds on 64 connections. Reported: intake
   per second; with the relays, each one's delivered copies and lag once a second while wrk runs,
   and the seconds from wrk's end until both have delivered everything accepted. Target: intake
   with two relays >= 0.9 x without, median of the rounds' ratios; the lag does not grow.

Prints the results as JSON; --markdown FILE writes them as a section for docs/PERFORMANCE.md.
"""
import argparse
import base64
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import mixed  # noqa: E402
import relay_tls_test  # noqa: E402
from endpoint_process import wait_port  # noqa: E402

POSTBACK_PATH = "/.well-known/skadnetwork/report-attribution/"
TOKEN = "bench"
# The reports beside the drain run this long from its start (the drain of 1 M copies lasts longer).
REPORT_SECONDS = 60
# Each steady rate runs this long.
STEADY_SECONDS = 30
SEP = "\u2063"


def sign_postbacks(path, count):
    """`count` distinct signed postbacks, one per line, made once and kept in `path`; returns the key's SPKI."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.derive_private_key(0x5EED_0043, ec.SECP256R1())
    spki = base64.b64encode(key.public_key().public_bytes(serialization.Encoding.DER,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    if os.path.exists(path) and sum(1 for _ in open(path)) >= count:
        return spki
    with open(path + ".part", "w") as f:
        for n in range(count):
            p = {"version": "4.0", "ad-network-id": "bench.skadnetwork", "source-identifier": "%04d" % (n % 10000),
                 "app-id": 525463029, "transaction-id": str(uuid.UUID(int=n + 43 * 2**64)), "redownload": False,
                 "fidelity-type": 1, "did-win": True, "postback-sequence-index": 0}
            message = SEP.join(str(p[k]).lower() if isinstance(p[k], bool) else str(p[k]) for k in
                               ["version", "ad-network-id", "source-identifier", "app-id", "transaction-id", "redownload",
                                "fidelity-type", "did-win", "postback-sequence-index"])
            p["conversion-value"] = n % 64
            p["attribution-signature"] = base64.b64encode(key.sign(message.encode(), ec.ECDSA(hashes.SHA256()))).decode()
            f.write(json.dumps(p, separators=(",", ":")) + "\n")
    os.rename(path + ".part", path)
    return spki


def lua(path, bodies, first, count):
    """wrk sends lines [first, first + count) of `bodies`, each once, thread k taking every other;
    past the end it sends nothing new (a body again is a device's retry, which no relay sends)."""
    with open(path, "w") as f:
        f.write('''
local threads = {}
function setup(thread) thread:set("id", #threads); table.insert(threads, thread) end
function init(args)
  bodies = {}
  local i = 0
  for line in io.lines("%s") do
    if i >= %d + %d then break end
    if i >= %d and i %% 2 == id then table.insert(bodies, line) end
    i = i + 1
  end
  n = 0
end
function request()
  n = n + 1
  return wrk.format("POST", nil, {["Host"] = "app.example", ["Content-Type"] = "application/json"}, bodies[(n - 1) %% #bodies + 1])
end
''' % (bodies, first, count, first))
    return path


def wrk(port, script, seconds, connections=64):
    out = subprocess.run(["taskset", "-c", "1", "wrk", "-t2", "-c%d" % connections, "-d%ds" % seconds, "-s", script,
                          "http://127.0.0.1:%d%s" % (port, POSTBACK_PATH)], capture_output=True, text=True).stdout
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return float(match.group(1)) if match else 0.0


def nginx(work, ports):
    """nginx with one HTTPS server per port, each answering 204 to anything."""
    directory = os.path.join(work, "nginx")
    os.makedirs(directory, exist_ok=True)
    servers = "".join("""
  server {
    listen 127.0.0.1:%d ssl;
    ssl_certificate %s/server.pem;
    ssl_certificate_key %s/server.key;
    location / { return 204; }
  }""" % (port, work, work) for port in ports)
    config = os.path.join(directory, "nginx.conf")
    with open(config, "w") as f:
        f.write("""worker_processes 1;
daemon off;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 10000000;
  keepalive_timeout 120s;
  client_body_buffer_size 64k;
  client_body_temp_path %(d)s/body;
  proxy_temp_path %(d)s/proxy;
  fastcgi_temp_path %(d)s/fastcgi;
  uwsgi_temp_path %(d)s/uwsgi;
  scgi_temp_path %(d)s/scgi;
  %(servers)s
}
""" % {"d": directory, "servers": servers})
    process = subprocess.Popen(["nginx", "-e", os.path.join(directory, "error.log"), "-p", directory, "-c", config],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for port in ports:
        wait_port(port)
    return process


def api(port, method, path, body=None):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=body,
                                     headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read() or b"null")


def standings(port):
    return {d["destination"]["name"]: d for d in api(port, "GET", "/api/relays")["destinations"]}


def accepted(port):
    text = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/metrics" % port,
                                                         headers={"Authorization": "Bearer " + TOKEN}), timeout=60).read().decode()
    return int(sum(float(m.group(1)) for m in re.finditer(r'^attribution_postbacks_stored_total\{[^}]*verdict="accepted"[^}]*\} ([\d.]+)$', text, re.M)))


EXTRA = []


def start(binary, data, spki):
    port = mixed.free_port()
    os.makedirs(data, exist_ok=True)
    log = open(os.path.join(data, "endpoint.log"), "a")
    process = subprocess.Popen([binary, "--port", str(port), "--data", data, "--token", TOKEN, "--no-access-log", "--no-page",
                                "--site", "app.example", "--site", "news.example", "--postback-key", "bench=" + spki] + EXTRA,
                               stdout=log, stderr=log)
    wait_port(port, timeout=600)
    return process, port


def register(port, name, url):
    api(port, "POST", "/api/relays", json.dumps({"name": name, "url": url, "site": "app.example", "protocols": ["skadnetwork"],
                                                 "internal": True}).encode())


def backlog(binary, work, bodies, spki, copies, destination, report_rate):
    """Phase 1: the paused destination's backlog, then its drain beside steady reports."""
    data = os.path.join(work, "backlog")
    shutil.rmtree(data, ignore_errors=True)
    process, port = start(binary, data, spki)
    try:
        register(port, "drain", destination)
        api(port, "POST", "/api/relays/pause?name=drain")
        script = lua(os.path.join(work, "backlog.lua"), bodies, 0, copies)
        sent_started = time.time()
        while accepted(port) < copies and time.time() - sent_started < 1800:
            # Long enough for them all at this machine's intake, and little more (past the end,
            # wrk sends bodies again: retries, which no relay sends).
            wrk(port, script, max(5, copies // 12_000))
        taken = accepted(port)
        intake_seconds = time.time() - sent_started
        queue = multiprocessing.Queue()
        reports = multiprocessing.Process(target=mixed.paced, args=(port, [mixed.raw_post(mixed.REPORT_PATH, "news.example", mixed.BODY)],
                                                                      report_rate, REPORT_SECONDS, 16, queue))
        if report_rate:
            reports.start()
        time.sleep(1)  # the reports' client connects before the drain starts
        api(port, "POST", "/api/relays/resume?name=drain")
        started = time.time()
        samples = []
        while time.time() - started < 3600:
            time.sleep(1)  # sampling the relay's own report once a second
            s = standings(port)["drain"]
            samples.append((round(time.time() - started), s["delivered"]))
            if s["delivered"] >= taken:
                break
        drained = time.time() - started
        delivered = standings(port)["drain"]["delivered"]
        load = queue.get(timeout=600) if report_rate else {"latencies": [], "statuses": {}}
        if report_rate:
            reports.join()
        latencies = load["latencies"]
        return {"copies": taken, "intake_seconds": round(intake_seconds, 1), "drain_seconds": round(drained, 1),
                "delivered": delivered, "copies_per_second": round(delivered / drained),
                "delivered_each_second": [b - a for (_, a), (_, b) in zip(samples, samples[1:])][::max(1, len(samples) // 30)],
                "reports": {"sent": len(latencies), "statuses": load["statuses"], "p50": mixed.percentile(latencies, 0.5),
                            "p99": mixed.percentile(latencies, 0.99), "max": max(latencies) if latencies else None,
                            "seconds_beside_the_drain": min(REPORT_SECONDS - 1, drained)}}
    finally:
        process.terminate()
        process.wait(timeout=60)


def intake(binary, work, bodies, spki, seconds, destinations, round_, first):
    """Phase 2, one run: intake for `seconds`, with relays to `destinations` (none or two)."""
    data = os.path.join(work, "intake-%d-%d" % (round_, len(destinations)))
    shutil.rmtree(data, ignore_errors=True)
    process, port = start(binary, data, spki)
    try:
        for n, url in enumerate(destinations):
            register(port, "partner-%d" % n, url)
        samples = []
        stop = threading.Event()

        def sample():
            started = time.time()
            while not stop.wait(1):  # once a second, while wrk runs
                s = standings(port)
                samples.append({"t": round(time.time() - started), "accepted": accepted(port),
                                "delivered": [d["delivered"] for d in s.values()], "lag_seconds": [round(d["lag_seconds"], 1) for d in s.values()]})
        sampler = threading.Thread(target=sample)
        if destinations:
            sampler.start()
        script = lua(os.path.join(work, "intake.lua"), bodies, first, 400_000)
        rate = wrk(port, script, seconds)
        stop.set()
        if destinations:
            sampler.join()
        result = {"postbacks_per_second": round(rate), "samples": samples}
        if destinations:
            taken = accepted(port)
            ended = time.time()
            while time.time() - ended < 600:
                if all(d["delivered"] >= taken for d in standings(port).values()):
                    break
                time.sleep(0.5)  # polling the relays' own report, bounded
            result["accepted"] = taken
            result["caught_up_after_seconds"] = round(time.time() - ended, 1)
            result["delivered"] = [d["delivered"] for d in standings(port).values()]
        return result
    finally:
        process.terminate()
        process.wait(timeout=60)


def steady(binary, work, bodies, spki, rate, seconds, destinations, first):
    """Phase 3: postbacks at a steady `rate` (paced, each its own) with two relays: the lag once
    a second. Keeping up means it stays where it started."""
    data = os.path.join(work, "steady-%d" % rate)
    shutil.rmtree(data, ignore_errors=True)
    process, port = start(binary, data, spki)
    try:
        for n, url in enumerate(destinations):
            register(port, "partner-%d" % n, url)
        with open(bodies) as f:
            lines = [line.rstrip("\n") for _, line in zip(range(first + rate * seconds), f)][first:]
        queue = multiprocessing.Queue()
        load = multiprocessing.Process(target=mixed.paced, args=(port, [mixed.raw_post(POSTBACK_PATH, "app.example", b) for b in lines],
                                                                   rate, seconds, 16, queue))
        load.start()
        lags = []
        started = time.time()
        while time.time() - started < seconds:
            time.sleep(1)  # sampling the relays' own report once a second
            lags.append(max(d["lag_seconds"] for d in standings(port).values()))
        result = queue.get(timeout=120)
        load.join()
        taken = accepted(port)
        ended = time.time()
        while time.time() - ended < 120 and not all(d["delivered"] >= taken for d in standings(port).values()):
            time.sleep(0.2)  # polling the relays' own report, bounded
        latencies = result["latencies"]
        return {"rate": rate, "accepted": taken, "lag_seconds_each_second": [round(x, 2) for x in lags],
                "caught_up_after_seconds": round(time.time() - ended, 1),
                "postback_p99_ms": mixed.percentile(latencies, 0.99)}
    finally:
        process.terminate()
        process.wait(timeout=60)


def markdown(results, args):
    d = results.get("backlog")
    lines = ["### Relays over HTTPS (issue 43, %s)" % time.strftime("%Y-%m-%d"), "",
             "`python3 benchmarks/relays.py --copies %d --rounds %d --seconds %d` on this machine (%s), release build; nginx "
             "on the same two cores answers 204 over TLS with a test CA's certificate." % (args.copies, args.rounds, args.seconds, results["machine"]), ""]
    if d:
        lines += ["- Backlog: %d copies taken while the destination was paused (%.0f s), then drained in %.1f s: **%d copies/s**; "
             "PCM reports at 2,000/s beside the drain: p50 %.2f ms, p99 %.2f ms, max %.1f ms." % (
                 d["copies"], d["intake_seconds"], d["drain_seconds"], d["copies_per_second"], d["reports"]["p50"],
                 d["reports"]["p99"], d["reports"]["max"])]
    ratios = []
    for r in results["rounds"]:
        ratios.append(r["two"]["postbacks_per_second"] / r["none"]["postbacks_per_second"])
    if ratios:
        lines.append("- Intake, paired rounds: without relays %s postbacks/s, with two %s; median ratio **%.3f** (%s)." % (
            ", ".join(str(r["none"]["postbacks_per_second"]) for r in results["rounds"]),
            ", ".join(str(r["two"]["postbacks_per_second"]) for r in results["rounds"]), statistics.median(ratios),
            ", ".join("%.3f" % x for x in ratios)))
    for n, r in enumerate(results["rounds"]):
        lags = [max(s["lag_seconds"]) for s in r["two"]["samples"] if s["lag_seconds"]]
        lines.append("  - round %d: accepted %d, both destinations caught up %.1f s after wrk ended; the larger lag once a second: %s" % (
            n + 1, r["two"]["accepted"], r["two"]["caught_up_after_seconds"], " ".join("%.0f" % x for x in lags)))
    for r in results.get("steady", []):
        lines.append("- Steady intake of %d postbacks/s for %d s with two relays: the larger lag once a second %s (seconds); "
                     "both caught up %.1f s after the intake stopped; postbacks' p99 %.2f ms." % (
                         r["rate"], STEADY_SECONDS, " ".join("%.1f" % x for x in r["lag_seconds_each_second"]),
                         r["caught_up_after_seconds"], r["postback_p99_ms"] or 0))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--copies", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/attribution-endpoint"))
    parser.add_argument("--skip-backlog", action="store_true")
    parser.add_argument("--steady", default="1000,2000", help="steady postback rates with two relays, comma-separated")
    parser.add_argument("--reports-per-second", type=int, default=2000, help="PCM reports beside the drain (0: none)")
    parser.add_argument("--connections", type=int, help="--relay-connections (the endpoint's default if not given)")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    binary = os.path.abspath(args.binary)
    if args.connections:
        EXTRA.extend(["--relay-connections", str(args.connections)])
    work = tempfile.mkdtemp(prefix="relays-bench-")
    rates = [int(r) for r in args.steady.split(",") if r]
    needed = args.copies + 400_000 * args.rounds * 2 + sum(rates) * STEADY_SECONDS
    cache = os.path.join(tempfile.gettempdir(), "relays-bench-postbacks-%d.txt" % needed)
    spki = sign_postbacks(cache, needed)
    bundle = relay_tls_test.make_certificates(work)
    trusting = relay_tls_test.wrapper(work, binary, bundle)
    ports = [mixed.free_port(), mixed.free_port()]
    server = nginx(work, ports)
    urls = ["https://localhost:%d/copies" % port for port in ports]
    results = {"machine": "%s, %d cores" % (os.uname().machine, os.cpu_count())}
    try:
        if not args.skip_backlog:
            results["backlog"] = backlog(trusting, work, cache, spki, args.copies, urls[0], args.reports_per_second)
            print(json.dumps(results["backlog"]), flush=True)
        results["rounds"] = []
        for round_ in range(args.rounds):
            first = args.copies + round_ * 800_000
            none = intake(trusting, work, cache, spki, args.seconds, [], round_, first)
            two = intake(trusting, work, cache, spki, args.seconds, urls, round_, first + 400_000)
            results["rounds"].append({"none": none, "two": two})
            print("round %d: %d postbacks/s without relays, %d with two (caught up %.1f s after)" % (
                round_ + 1, none["postbacks_per_second"], two["postbacks_per_second"], two["caught_up_after_seconds"]), flush=True)
        results["steady"] = []
        first = args.copies + 400_000 * args.rounds * 2
        for rate in rates:
            results["steady"].append(steady(trusting, work, cache, spki, rate, STEADY_SECONDS, urls, first))
            first += rate * STEADY_SECONDS
            print(json.dumps(results["steady"][-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps(results, indent=1))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results, args))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
