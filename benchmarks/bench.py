#!/usr/bin/env python3
"""Runs every contender one after another in one run and writes docs/PERFORMANCE.md.

Server processes are pinned to core 0 and wrk to core 1 with taskset; on a shared 2-core machine
only the ratios between rows of one run are meaningful. Called by benchmarks/run.sh, which
installs wrk and nginx and builds the binaries first.
"""
import datetime
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENDPOINT = os.path.join(ROOT, ".build/release/attribution-endpoint")
HUMMINGBIRD = os.path.join(ROOT, "benchmarks/.build/release/hummingbird-reference")
GENERATOR = os.path.join(ROOT, "benchmarks/.build/release/log-generator")
DURATION = int(os.environ.get("DURATION", "8"))
# Every contender runs once per round, rounds interleaved, and the median is reported: on a shared
# machine throughput drifts by tens of percent within minutes, and interleaving spreads the drift.
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SCALE = [int(n) for n in os.environ.get("SCALE", "1000000 10000000").split()]
REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"
BODY = ('{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
        '"attributed_on_site":"shop.example","trigger_data":5,"version":3}')
WORK = tempfile.mkdtemp(prefix="bench-")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from endpoint_process import wait_port  # noqa: E402  (the scripts' helper, shared)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wrk_script(close):
    path = os.path.join(WORK, "close.lua" if close else "keepalive.lua")
    with open(path, "w") as f:
        f.write('wrk.method = "POST"\n')
        f.write("wrk.body = '%s'\n" % BODY)
        f.write('wrk.headers["Content-Type"] = "application/json"\n')
        f.write('wrk.headers["Host"] = "shop.example"\n')
        if close:
            f.write('wrk.headers["Connection"] = "close"\n')
    return path


def to_ms(value, unit):
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def run_wrk(port, close):
    out = subprocess.run(
        ["taskset", "-c", "1", "wrk", "-t2", "-c64", "-d%ds" % DURATION, "--latency", "-s", wrk_script(close),
         "http://127.0.0.1:%d%s" % (port, REPORT_PATH)],
        capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"\s50%\s+([\d.]+)(us|ms|s)", out)
    p99 = re.search(r"\s99%\s+([\d.]+)(us|ms|s)", out)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": to_ms(*p50.groups()), "p99": to_ms(*p99.groups()),
            "non2xx": int(errors.group(1)) if errors else 0}


def start(command, port, log_name):
    log = open(os.path.join(WORK, log_name), "w")
    process = subprocess.Popen(["taskset", "-c", "0"] + command, stdout=log, stderr=log)
    wait_port(port)
    return process


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def token_keys(data, sites=("news.example", "shop.example")):
    """Puts token keys for `sites` in the data directory `data`, as a running endpoint has them
    after its first start. Without them the endpoint makes an RSA-4096 key per site as it starts,
    seconds of the very core being measured. The keys are made once per benchmark run (by the
    endpoint itself) and copied."""
    made = os.path.join(WORK, "token-keys-" + "-".join(sites))
    if not os.path.exists(os.path.join(made, "token-keys.json")):
        port = free_port()
        with open(os.path.join(WORK, "token-keys.log"), "a") as log:
            process = subprocess.Popen([ENDPOINT, "--port", str(port), "--data", made, "--token", "bench", "--no-page"]
                                       + [arg for site in sites for arg in ("--site", site)], stdout=log, stderr=log)
            wait_port(port, timeout=600)  # the first start makes an RSA-4096 key per site first
            for site in sites:  # each answers once its key is made
                request = urllib.request.Request("http://127.0.0.1:%d/.well-known/private-click-measurement/get-token-public-key/" % port,
                                                 headers={"Host": site})
                urllib.request.urlopen(request, timeout=300).read()
            stop(process)
    os.makedirs(data, exist_ok=True)
    shutil.copy(os.path.join(made, "token-keys.json"), data)


def endpoint_command(port, data, access_log=True):
    """The endpoint as it runs by default: the access log on, on stderr (a file here), with the
    token keys it would have made on its first start."""
    token_keys(data)
    command = [ENDPOINT, "--port", str(port), "--site", "news.example", "--site", "shop.example",
               "--data", data, "--token", "bench"]
    return command if access_log else command + ["--no-access-log"]


def cpu_seconds(pid):
    """User and system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / ticks, int(fields[12]) / ticks


def cpu_times():
    """The machine's CPU time so far, in ticks, per /proc/stat: (total, steal). Steal is time the
    hypervisor ran something else while this guest's vCPU had work."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    return sum(fields), fields[7]


def steal_share(before, after):
    """The share of the machine's CPU time the hypervisor took between two `cpu_times()`."""
    total = after[0] - before[0]
    return (after[1] - before[1]) / total if total > 0 else 0.0


def measure(name, command, port, log_name="server.log"):
    results = {}
    for close in (False, True):
        process = start(command, port, log_name)
        time.sleep(0.2)  # let it settle before loading it
        user0, sys0 = cpu_seconds(process.pid)
        result = run_wrk(port, close)
        user1, sys1 = cpu_seconds(process.pid)
        requests = result["rps"] * DURATION
        result["user_us"] = (user1 - user0) / requests * 1e6
        result["sys_us"] = (sys1 - sys0) / requests * 1e6
        results["close" if close else "keepalive"] = result
        stop(process)
    print("%-40s keep-alive %9.0f req/s  close %9.0f req/s  p99 %.2f ms" % (
        name, results["keepalive"]["rps"], results["close"]["rps"], results["keepalive"]["p99"]), flush=True)
    return results


def nginx_command(port):
    directory = os.path.join(WORK, "nginx")
    os.makedirs(directory, exist_ok=True)
    config = os.path.join(directory, "nginx.conf")
    with open(config, "w") as f:
        f.write("""worker_processes 1;
master_process off;
daemon off;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %(d)s;
  server {
    listen 127.0.0.1:%(port)d;
    location / { return 204; }
  }
}
""" % {"d": directory, "port": port})
    return ["nginx", "-c", config]


def post_report(port):
    request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, REPORT_PATH), data=BODY.encode(),
                                     headers={"Content-Type": "application/json", "Host": "shop.example"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except Exception:
        return None


def seconds_until(port, data, log, ready):
    """Starts the endpoint on `data` and polls `ready` until it holds: the process and the seconds
    from its start."""
    started = time.time()
    process = subprocess.Popen(["taskset", "-c", "0"] + endpoint_command(port, data), stdout=log, stderr=log)
    while not ready():
        if process.poll() is not None:
            raise RuntimeError("endpoint exited during start")
        time.sleep(0.005)
    return process, time.time() - started


def summary_status(port):
    request = urllib.request.Request("http://127.0.0.1:%d/api/summary" % port, headers={"Authorization": "Bearer bench"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except Exception:
        return None


def memory_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def scale(count):
    data = os.path.join(WORK, "scale-%d" % count)
    # Spread over 30 days, a realistic retention window, so one hour holds count/720 reports.
    subprocess.run([GENERATOR, data, str(count), "720"], check=True, capture_output=True)
    log_bytes = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(data)
                    for name in names if name.endswith(".log"))
    subprocess.run(["sync"])
    port = free_port()
    log = open(os.path.join(WORK, "scale.log"), "w")
    process, start_seconds = seconds_until(port, data, log, lambda: post_report(port) == 201)
    started = time.time() - start_seconds
    # The summary is rebuilt from the log after the start, while reports are already accepted.
    while True:
        try:
            urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/api/summary" % port,
                                                          headers={"Authorization": "Bearer bench"}), timeout=60).read()
            break
        except urllib.error.HTTPError as error:
            if error.code != 503:
                raise
            time.sleep(0.05)
    summary_ready = time.time() - started
    since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    times, lines = [], 0
    for _ in range(20):
        request = urllib.request.Request("http://127.0.0.1:%d/api/reports?since=%s" % (port, since),
                                         headers={"Authorization": "Bearer bench"})
        t0 = time.time()
        with urllib.request.urlopen(request, timeout=60) as response:
            lines = response.read().count(b"\n")
        times.append(time.time() - t0)
    times.sort()
    # The summary API, as the page asks for it: the last 30 days for all sites, one site's
    # destination copies, and one week of one site.
    summary_times = []
    today = datetime.datetime.now(datetime.timezone.utc).date()
    week = "from=%s&to=%s" % (today - datetime.timedelta(days=7), today)
    for query in ["", "site=shop.example&role=destination", "site=news.example&" + week] * 34:
        request = urllib.request.Request("http://127.0.0.1:%d/api/summary?%s" % (port, query),
                                         headers={"Authorization": "Bearer bench"})
        t0 = time.time()
        with urllib.request.urlopen(request, timeout=60) as response:
            response.read()
        summary_times.append(time.time() - t0)
    summary_times.sort()
    rss, hwm = memory_kb(process.pid)
    stop(process)
    # A planned restart: the stop above wrote the summary's checkpoint; the summary API should now
    # answer within seconds of the process start instead of after a full rebuild.
    checkpoint_bytes = os.path.getsize(os.path.join(data, "summary.checkpoint"))
    process, restart_summary = seconds_until(port, data, log, lambda: summary_status(port) == 200)
    stop(process)
    shutil.rmtree(data, ignore_errors=True)
    result = {"count": count, "start": start_seconds, "rss_mb": rss / 1024, "hwm_mb": hwm / 1024,
              "bytes_per_report": log_bytes / count, "since_p95_ms": times[int(0.95 * (len(times) - 1))] * 1000,
              "since_lines": lines, "summary_p95_ms": summary_times[int(0.95 * (len(summary_times) - 1))] * 1000,
              "summary_p50_ms": summary_times[len(summary_times) // 2] * 1000, "summary_ready": summary_ready,
              "restart_summary": restart_summary, "checkpoint_mb": checkpoint_bytes / 1e6}
    print("scale %-10d start %.2f s  RSS %.1f MB  %.0f B/report  since p95 %.0f ms (%d lines)  summary ready %.1f s, p95 %.1f ms; "
          "after a restart with its checkpoint (%.1f MB) %.2f s" % (
              count, start_seconds, rss / 1024, log_bytes / count, result["since_p95_ms"], lines, summary_ready,
              result["summary_p95_ms"], checkpoint_bytes / 1e6, restart_summary), flush=True)
    return result


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"nproc": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "swift": swift[0] if swift else "unknown"}


def check(ok):
    return "met" if ok else "**not met**"


def write_report(results, scales, info):
    endpoint = results["endpoint"]
    nginx = results["nginx"]
    hb_validate = results["hummingbird-validate"]
    ratio_nginx = info["ratios"]["nginx"]
    ratio_hb = info["ratios"]["hummingbird"]
    ratio_close = info["ratios"]["close"]
    lines = [
        "# Performance",
        "",
        "Written by `benchmarks/run.sh` (which calls `benchmarks/bench.py`); do not edit by hand.",
        "",
        "- Date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "- Machine: %s × %s, Linux %s, %s" % (info["nproc"], info["cpu"], info["kernel"], info["swift"]),
        "- Method: each server pinned to core 0 and wrk (`-t2 -c64 -d%ds --latency`) to core 1 with `taskset`; "
        "every contender in the same run, one after another, in %d interleaved rounds; each figure is the median "
        "over the rounds, and each ratio the median of the ratios taken within a round. The body is the 140-byte "
        "v3 report `%s`." % (DURATION, ROUNDS, BODY),
        "- The endpoint runs as it does by default, with its access log on (stderr to a file); its row "
        "`--no-access-log` shows what the log costs. The targets are measured on the default.",
        "- Only ratios within this one run mean much on a shared 2-core machine.",
        "",
        "## Throughput and latency, 64 connections",
        "",
        "| contender | keep-alive req/s (each round) | p50 ms | p99 ms | server CPU per request (user + sys µs) | `Connection: close` req/s | close p99 ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    names = {
        "endpoint": "attribution-endpoint, durable (fdatasync before 201), default: access log on (to a file)",
        "endpoint-nolog": "attribution-endpoint, durable, `--no-access-log`",
        "nginx": "nginx 1 worker, `return 204` (ceiling for HTTP on this machine)",
        "hummingbird-durable": "Hummingbird 2 reference, JSONDecoder + checks + fsync per report",
        "hummingbird-validate": "Hummingbird 2 reference, validation only (no storage)",
    }
    for key, label in names.items():
        r = results[key]
        lines.append("| %s | %.0f (%s) | %.2f | %.2f | %.1f + %.1f | %.0f | %.2f |" % (
            label, r["keepalive"]["rps"], ", ".join("%.0f" % x for x in r["keepalive"]["all_rps"]),
            r["keepalive"]["p50"], r["keepalive"]["p99"], r["keepalive"]["user_us"],
            r["keepalive"]["sys_us"], r["close"]["rps"], r["close"]["p99"]))
    lines += [
        "",
        "Instructions per stored report in the endpoint's own process, counted by callgrind "
        "(`benchmarks/instructions.sh 20000`; repeatable, unlike req/s): %s." % info["instructions"],
        "",
        "## Ratios and targets",
        "",
        "| target | measured | |",
        "|---|---:|---|",
        "| durable ingest ≥ 0.5 × nginx `return 204` | %.2f × (rounds: %s) | %s |" % (
            ratio_nginx, ", ".join("%.2f" % x for x in info["ratios"]["per_round_nginx"]), check(ratio_nginx >= 0.5)),
        "| durable ingest ≥ 2 × Hummingbird validation-only | %.2f × | %s |" % (ratio_hb, check(ratio_hb >= 2)),
        "| `Connection: close` ingest ≥ 0.8 × nginx `Connection: close` | %.2f × (rounds: %s) | %s |" % (
            ratio_close, ", ".join("%.2f" % x for x in info["ratios"]["per_round_close"]), check(ratio_close >= 0.8)),
        "| p99 ≤ 5 ms at 64 connections | %.2f ms | %s |" % (endpoint["keepalive"]["p99"], check(endpoint["keepalive"]["p99"] <= 5)),
        "| (beside them: `--no-access-log` ingest / nginx `return 204`, and its p99) | %.2f × (rounds: %s), %.2f ms | |" % (
            info["ratios"]["nolog"], ", ".join("%.2f" % x for x in info["ratios"]["per_round_nolog"]),
            results["endpoint-nolog"]["keepalive"]["p99"]),
    ]
    for s in scales:
        if s["count"] >= 10_000_000:
            lines.append("| start to first accepted report ≤ 3 s with %d stored | %.2f s | %s |" % (
                s["count"], s["start"], check(s["start"] <= 3)))
            lines.append("| RSS ≤ 100 MB with %d stored | %.1f MB | %s |" % (s["count"], s["hwm_mb"], check(s["hwm_mb"] <= 100)))
            lines.append("| summary API p95 ≤ 10 ms with %d stored | %.1f ms | %s |" % (
                s["count"], s["summary_p95_ms"], check(s["summary_p95_ms"] <= 10)))
            lines.append("| summary API answers ≤ 3 s after a restart with %d stored | %.2f s | %s |" % (
                s["count"], s["restart_summary"], check(s["restart_summary"] <= 3)))
        lines.append("| ≤ 200 bytes on disk per report (%d stored) | %.0f B | %s |" % (
            s["count"], s["bytes_per_report"], check(s["bytes_per_report"] <= 200)))
    lines += [
        "",
        "## At scale",
        "",
        "Logs filled by `benchmarks/.build/release/log-generator DIR N 720`, which appends through the real "
        "`RecordLog` (same records, checksums, group commit), receive times spread over 30 days. "
        "\"start\" is from process start to the first 201 for a new report, replay included. "
        "RSS is the peak (VmHWM) after start, 20 exports and 102 summaries. The export is `GET /api/reports?since=<one hour ago>`. "
        "The summary is `GET /api/summary` three ways, 34 times each: the last 30 days for all sites, one site's destination "
        "copies, one site's last week, after the summary has been rebuilt from the log (it is rebuilt on a thread of its "
        "own after the start; reports are accepted meanwhile and the summary API answers 503 with its progress). The "
        "generator's reports cover 256 source ids × 16 trigger data values × 4 sites, a worst case for the number of groups. "
        "The generated log has no summary checkpoint, so the first start rebuilds the summary from the whole log; its "
        "SIGTERM writes the checkpoint, and \"after a restart\" is from the next process start to the first 200 of "
        "`GET /api/summary` (replay, checkpoint checked against the log and loaded).",
        "",
        "| reports stored | start to first 201 | peak RSS | bytes on disk per report | export of last hour, p95 | lines in that hour | summary rebuilt after a start without checkpoint | summary answers after a restart (checkpoint size) | summary p50 | summary p95 |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in scales:
        lines.append("| %d | %.2f s | %.1f MB | %.0f | %.0f ms | %d | %.1f s | %.2f s (%.1f MB) | %.1f ms | %.1f ms |" % (
            s["count"], s["start"], s["hwm_mb"], s["bytes_per_report"], s["since_p95_ms"], s["since_lines"],
            s["summary_ready"], s["restart_summary"], s["checkpoint_mb"], s["summary_p50_ms"], s["summary_p95_ms"]))
    notes_path = os.path.join(ROOT, "benchmarks/NOTES.md")
    if os.path.exists(notes_path):
        lines += ["", open(notes_path).read().strip()]
    # The postback section comes from its own run (benchmarks/postbacks.py), kept as it was.
    # So do the token section's (benchmarks/tokens.py).
    for section in ("POSTBACKS.md", "TOKENS.md", "CONVERSION_VALUES.md", "EXPORT.md", "HISTORY.md", "NEIGHBOURS.md", "SURFACES.md"):
        path = os.path.join(ROOT, "benchmarks", section)
        if os.path.exists(path):
            lines += ["", open(path).read().strip()]
    with open(os.path.join(ROOT, "docs/PERFORMANCE.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def parse_wrk(out):
    """Requests per second, p50 and p99 (ms) and non-2xx answers from wrk's --latency output."""
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50, p99 = (to_ms(*re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)" % q, out).groups()) for q in ("50", "99"))
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50": p50, "p99": p99, "non2xx": int(errors.group(1)) if errors else 0}


def section_head(heading, script):
    """The first lines of a section measured by its own script: heading, provenance, date, machine."""
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return ["## " + heading, "", "*Written by `benchmarks/%s`; bench.py keeps it in this page.*" % script, "",
            "- Date: %s UTC" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "- Machine: %d × %s, Linux %s, %s" % (os.cpu_count(), cpu, platform.release(), swift)]


def write_section(file_name, heading, text):
    """Keeps a section measured by its own script: benchmarks/FILE_NAME, and in docs/PERFORMANCE.md
    in place of the section with the same heading (bench.py appends the files when it rewrites
    the page)."""
    with open(os.path.join(ROOT, "benchmarks", file_name), "w") as f:
        f.write(text)
    page = os.path.join(ROOT, "docs/PERFORMANCE.md")
    with open(page) as f:
        current = f.read()
    current = re.sub(r"\n## %s\n.*?(?=\n## |\Z)" % re.escape(heading), "\n", current, flags=re.S).rstrip("\n") + "\n"
    with open(page, "w") as f:
        f.write(current + "\n" + text)


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def median_result(rounds):
    """The round with the median keep-alive req/s, and the median of each measure across rounds."""
    merged = {}
    for mode in ("keepalive", "close"):
        merged[mode] = {key: median([r[mode][key] for r in rounds]) for key in rounds[0][mode]}
        merged[mode]["all_rps"] = [r[mode]["rps"] for r in rounds]
    return merged


def main():
    info = machine()
    contenders = [
        ("endpoint", "endpoint (default, access log on)",
         lambda port: endpoint_command(port, os.path.join(WORK, "e1-%d" % port)), "endpoint-access.log"),
        ("endpoint-nolog", "endpoint --no-access-log",
         lambda port: endpoint_command(port, os.path.join(WORK, "e2-%d" % port), False), "server.log"),
        ("nginx", "nginx return 204", nginx_command, "server.log"),
        ("hummingbird-durable", "hummingbird durable",
         lambda port: [HUMMINGBIRD, str(port), "durable", os.path.join(WORK, "hb-%d.log" % port)], "server.log"),
        ("hummingbird-validate", "hummingbird validate-only",
         lambda port: [HUMMINGBIRD, str(port), "validate"], "server.log"),
    ]
    rounds = {key: [] for key, _, _, _ in contenders}
    for round_number in range(ROUNDS):
        print("round %d of %d" % (round_number + 1, ROUNDS), flush=True)
        for key, label, command, log_name in contenders:
            port = free_port()
            rounds[key].append(measure(label, command(port), port, log_name))
    results = {key: median_result(values) for key, values in rounds.items()}
    # Ratios are taken within each round, where the two contenders ran minutes apart at most.
    info["ratios"] = {
        "nginx": median([e["keepalive"]["rps"] / n["keepalive"]["rps"] for e, n in zip(rounds["endpoint"], rounds["nginx"])]),
        "hummingbird": median([e["keepalive"]["rps"] / h["keepalive"]["rps"]
                               for e, h in zip(rounds["endpoint"], rounds["hummingbird-validate"])]),
        "close": median([e["close"]["rps"] / n["close"]["rps"] for e, n in zip(rounds["endpoint"], rounds["nginx"])]),
        "per_round_nginx": [e["keepalive"]["rps"] / n["keepalive"]["rps"] for e, n in zip(rounds["endpoint"], rounds["nginx"])],
        "per_round_close": [e["close"]["rps"] / n["close"]["rps"] for e, n in zip(rounds["endpoint"], rounds["nginx"])],
        "nolog": median([e["keepalive"]["rps"] / n["keepalive"]["rps"] for e, n in zip(rounds["endpoint-nolog"], rounds["nginx"])]),
        "per_round_nolog": [e["keepalive"]["rps"] / n["keepalive"]["rps"] for e, n in zip(rounds["endpoint-nolog"], rounds["nginx"])],
    }
    scales = [scale(n) for n in SCALE]
    instructions = subprocess.run([os.path.join(ROOT, "benchmarks/instructions.sh"), "20000"], capture_output=True,
                                  text=True).stdout.strip().splitlines()
    info["instructions"] = instructions[-1] if instructions else "not measured"
    print(info["instructions"], flush=True)
    write_report(results, scales, info)
    shutil.rmtree(WORK, ignore_errors=True)
    print("wrote docs/PERFORMANCE.md")


if __name__ == "__main__":
    main()
