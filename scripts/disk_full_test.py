#!/usr/bin/env python3
"""Disk-full test: the data directory on a small tmpfs (needs root for mount).

Fills the disk through the real ingest path and checks that:
- once full, ingest answers 503 (problem+json, rule disk_full), /healthz answers 503, the metric
  attribution_store_disk_full_failures_total rises and one store_write_failed line is logged;
- after space is freed, ingest resumes without a restart;
- every report that got a 201 is exported exactly once, after a restart too, and the log opens
  with no damage.

Usage: scripts/disk_full_test.py [--binary .build/debug/attribution-endpoint]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"


def start(binary, data):
    log = open(os.path.join(tempfile.gettempdir(), "disk-full-endpoint.log"), "w+")
    process = subprocess.Popen([binary, "--port", "0", "--site", "news.example", "--site", "shop.example",
                                "--data", data, "--token", "full", "--no-access-log"],
                               stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(500):
        log.seek(0)
        match = re.search(r'"event":"listening","address":"127\.0\.0\.1:(\d+)"', log.read())
        if match:
            return process, int(match.group(1)), log
        time.sleep(0.02)
    raise RuntimeError("endpoint did not start")


def request(port, path, body=None, token=False):
    headers = {"Host": "shop.example"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer full"
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def post(port, n):
    body = ('{"source_engagement_type":"click","source_site":"news.example","source_id":%d,'
            '"attributed_on_site":"shop.example","trigger_data":%d,"version":3,"n":%d}') % (n % 256, n % 16, n)
    return request(port, REPORT_PATH, body.encode())


def exported(port):
    status, body = request(port, "/api/reports", token=True)
    assert status == 200
    return [json.loads(line)["extra"]["n"] for line in body.decode().splitlines() if line]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/debug/attribution-endpoint")
    args = parser.parse_args()
    mount = tempfile.mkdtemp(prefix="disk-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", mount], check=True)
    failures = []
    try:
        data = os.path.join(mount, "data")
        filler = os.path.join(mount, "filler")
        with open(filler, "wb") as f:
            f.write(b"\0" * 128 * 1024)
        process, port, log = start(args.binary, data)
        acknowledged, n = [], 0
        # Fill the disk: stop at the first refusal.
        while True:
            status, body = post(port, n)
            if status == 201:
                acknowledged.append(n)
            else:
                break
            n += 1
        print("disk full after %d reports: answered %d %s" % (len(acknowledged), status, body.decode().strip()))
        if status != 503 or json.loads(body).get("rule") != "disk_full":
            failures.append("a full disk was answered %d, not 503 disk_full" % status)
        health, _ = request(port, "/healthz")
        if health != 503:
            failures.append("/healthz answered %d while the disk was full" % health)
        _, metrics = request(port, "/metrics", token=True)
        failures_metric = re.search(rb"attribution_store_disk_full_failures_total (\d+)", metrics)
        if not failures_metric or int(failures_metric.group(1)) < 1:
            failures.append("disk-full metric did not rise")
        # Still full: still refused, and nothing half-written is left behind.
        for _ in range(5):
            n += 1
            if post(port, n)[0] != 503:
                failures.append("a report was acknowledged while the disk stayed full")
        # Free space; ingest resumes without a restart.
        os.remove(filler)
        resumed = 0
        for _ in range(100):
            n += 1
            status, _ = post(port, n)
            if status == 201:
                acknowledged.append(n)
                resumed += 1
        print("after freeing space: %d of 100 accepted" % resumed)
        if resumed == 0:
            failures.append("ingest did not resume after space was freed")
        if exported(port) != acknowledged:
            failures.append("export differs from the acknowledged reports before restart")
        process.terminate()
        process.wait(timeout=30)
        log.seek(0)
        log_text = log.read()
        if log_text.count('"event":"store_write_failed"') < 1:
            failures.append("no store_write_failed log line")
        process, port, log = start(args.binary, data)
        log.seek(0)
        replay = re.search(r'"event":"replay".*', log.read()).group(0)
        print("after restart:", replay)
        if '"corrupt_records":0' not in replay or '"torn_tail_bytes":0' not in replay:
            failures.append("the log was damaged: %s" % replay)
        if exported(port) != acknowledged:
            failures.append("export differs from the acknowledged reports after restart")
        process.terminate()
        process.wait(timeout=30)
    finally:
        subprocess.run(["umount", mount])
    for f in failures:
        print("FAIL:", f)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
