#!/usr/bin/env python3
"""Retention, proven with a run (issue 30): 40 days of a top app's mix written, then
`--retention-days 31` (the floor is more than the default `--late-cutoff-days`, 30). Prints the
log's disk use, its segments and the day of the oldest record kept before and after, and checks
that the three summaries (PCM, Apps, Apple Ads) over every day are the same after.

The log is generated (`log-generator --mix app`, RECORDS records over DAYS days, one segment a
day). A first run of the endpoint writes what retention waits for (the segments' digests, the
postback key tables, and at its stop the summary's checkpoint); a second, with retention on,
removes what is older.

    python3 benchmarks/retention.py [--records 1400000] [--days 40] [--binary .build/release/attribution-endpoint]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from endpoint_process import Endpoint, log_bytes, log_files, metric, request, until  # noqa: E402

TOKEN = "bench"
SITES = ["--site", "app.example", "--site", "blog.example", "--site", "store.example"]


def get(port, path):
    return request(port, TOKEN, "GET", path)


def summaries(port):
    """The three views over every day, without what says when records are kept from."""
    out = {}
    for path in ["/api/summary?from=2025-01-01&to=2027-12-31", "/api/apps/summary?from=2025-01-01&to=2027-12-31",
                 "/api/apple-ads/summary?from=2025-01-01&to=2027-12-31"]:
        until(lambda: get(port, path)[0] == 200, poll=0.1)
        body = json.loads(get(port, path)[1])
        for key in ["records_kept_from", "rejected_by_rule", "calls"]:
            body.pop(key, None)
        out[path.split("?")[0]] = body
    return out


def state(data, port):
    """The log's bytes and segments on disk, and the day of the oldest record kept (/metrics)."""
    files = log_files(data)
    oldest = metric(port, TOKEN, "attribution_log_oldest_record_timestamp_seconds")
    return {"log_gb": round(log_bytes(data) / 1e9, 3), "segments": len(files),
            "oldest_record_day": time.strftime("%Y-%m-%d", time.gmtime(oldest))}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_400_000)
    parser.add_argument("--days", type=int, default=40)
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--generator", default="benchmarks/.build/release/log-generator")
    parser.add_argument("--data", default="/tmp/retention-bench")
    args = parser.parse_args()
    shutil.rmtree(args.data, ignore_errors=True)
    subprocess.run([args.generator, args.data, str(args.records * 10 // 35), str(args.days * 24), "--mix", "app"], check=True)
    endpoint = Endpoint(args.binary, args.data, TOKEN, extra=SITES)
    before = state(args.data, endpoint.port)
    sealed = len(log_files(args.data)) - 1
    until(lambda: len([n for n in os.listdir(os.path.join(args.data, "digests")) if n.endswith(".digest")]) >= sealed)
    numbers = summaries(endpoint.port)
    endpoint.stop(timeout=600)

    endpoint = Endpoint(args.binary, args.data, TOKEN, extra=SITES + ["--retention-days", "31"])
    until(lambda: "log_segments_removed" in endpoint.log())
    after = state(args.data, endpoint.port)
    kept_from = json.loads(get(endpoint.port, "/api/summary")[1]).get("records_kept_from")
    same = summaries(endpoint.port) == numbers
    removed = json.loads(endpoint.event("log_segments_removed"))
    endpoint.stop(timeout=600)
    print(json.dumps({"before": before, "after": dict(after, records_kept_from=kept_from),
                      "removed": {k: removed.get(k) for k in ["segments", "bytes", "records_kept_from"]},
                      "summaries_unchanged": same}, indent=1))
    shutil.rmtree(args.data, ignore_errors=True)
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
