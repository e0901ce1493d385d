#!/usr/bin/env python3
"""Disk-full test: the data directory on a small tmpfs (needs root for mount).

Fills the disk through the real ingest path and checks that:
- once full, ingest answers 503 (problem+json, rule disk_full), /healthz answers 503, the metric
  attribution_store_disk_full_failures_total rises and one store_write_failed line is logged;
- a trigger and a postback copy sent while it is full get the same 503 too, never a closed
  connection: their devices and browsers act on it;
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
import tempfile
import urllib.error
import urllib.request

from endpoint_process import Endpoint, finish

REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"


def request(port, path, body=None, token=False, method=None):
    headers = {"Host": "shop.example"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = "Bearer full"
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body, headers=headers, method=method)
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
        server = Endpoint(args.binary, data, "full")
        port = server.port
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
        # A trigger and a postback copy are refused the same way, with an answer. The room a
        # report lacked may still hold a trigger's smaller record: triggers fill it first.
        trigger_path = "/.well-known/private-click-measurement/trigger-attribution/05"
        for _ in range(200):
            trigger = request(port, trigger_path, method="GET")
            if trigger[0] != 200:
                break
        postback = request(port, "/.well-known/skadnetwork/report-attribution/", body=(
            b'{"version":"4.0","ad-network-id":"n.skadnetwork","source-identifier":"1234","app-id":1,'
            b'"transaction-id":"full-1","redownload":false,"fidelity-type":1,"did-win":true,'
            b'"postback-sequence-index":0,"attribution-signature":"MEUCIQ=="}'))
        for what, (status, body) in (("trigger", trigger), ("postback", postback)):
            print("while full, a %s: %d %s" % (what, status, body.decode(errors="replace").strip()[:80]))
            if status != 503 or json.loads(body).get("rule") != "disk_full":
                failures.append("a %s was answered %d while the disk was full, not 503 disk_full" % (what, status))
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
        server.stop()
        if server.log().count('"event":"store_write_failed"') != 1:
            failures.append("not exactly one store_write_failed log line")
        server = Endpoint(args.binary, data, "full")
        port = server.port
        replay = server.event("replay")
        print("after restart:", replay)
        if '"corrupt_records":0' not in replay or '"torn_tail_bytes":0' not in replay:
            failures.append("the log was damaged: %s" % replay)
        if exported(port) != acknowledged:
            failures.append("export differs from the acknowledged reports after restart")
        server.stop()
    finally:
        subprocess.run(["umount", mount])
    finish(failures)


if __name__ == "__main__":
    main()
