#!/usr/bin/env python3
"""A restart at a large history (issue 30): time to the first 201, and until every summary (PCM,
Apps, Apple Ads) answers, with and without what a start takes instead of reading the log.

Generates RECORDS records of a top app's mix (`log-generator --mix app`: per ten postback copies
three retries, ten Apple Ads tokens with their final calls, one PCM report) spread over DAYS days,
one log segment a day, then runs the endpoint (release build) on it three times:
  0. once, briefly, so that its token keys exist (an RSA key is made on first start);
  1. "without checkpoints": no segment digests, no summary checkpoint, no postback key tables,
     as the first start after an upgrade. It then writes the digests and the key tables; the
     script waits for them, and the stop writes the summary's checkpoint;
  2. "with checkpoints": the restart that follows.
Each run prints seconds to `listening`, to the first 201 of a report, until /api/summary,
/api/apps/summary and /api/apple-ads/summary answer 200, the records the start read, and the
peak RSS. The log generated can be kept (--keep) and used again (--reuse). With --untrusted, on a
kept log, the first segment's digest is moved aside: the start trusts no digest, reads what reports
need before listening and the postback ledger and the Apps view in the background, and the run
also says when the Apps summary answers (the rebuild done) and the peak RSS through it.

    python3 benchmarks/restart.py [--records 100000000] [--days 285] [--binary .build/release/attribution-endpoint]
                                  [--generator benchmarks/.build/release/log-generator] [--data DIR] [--keep | --reuse | --again | --untrusted]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from endpoint_process import Endpoint, metric, request, rss_mb, until  # noqa: E402

TOKEN = "bench"
SITES = ["--site", "app.example", "--site", "blog.example", "--site", "store.example"]
REPORT = (b'{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
          b'"attributed_on_site":"shop.example","trigger_data":3,"version":3}')


def status(port, method, path, body=None, host="localhost"):
    return request(port, TOKEN, method, path, body=body, host=host, timeout=120)[0]


def run(binary, data, name):
    started = time.time()
    endpoint = Endpoint(binary, data, TOKEN, extra=SITES)
    listening = time.time() - started
    port = endpoint.port
    first_201 = until(lambda: status(port, "POST", "/.well-known/private-click-measurement/report-attribution/",
                                     REPORT, host="news.example") == 201, started)
    summaries = {}
    for path in ["/api/summary", "/api/apps/summary", "/api/apple-ads/summary"]:
        summaries[path] = until(lambda: status(port, "GET", path) == 200, started)
    replay = json.loads(endpoint.event("replay") or "{}")
    result = {"run": name, "listening_s": round(listening, 2), "first_201_s": round(first_201, 2),
              "pcm_summary_s": round(summaries["/api/summary"], 2), "apps_summary_s": round(summaries["/api/apps/summary"], 2),
              "apple_ads_summary_s": round(summaries["/api/apple-ads/summary"], 2),
              "records_read_at_start": replay.get("records_read"), "digested_segments": replay.get("digested_segments"),
              "peak_rss_mb": round(rss_mb(endpoint.pid, "VmHWM"), 1)}
    return endpoint, result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=100_000_000)
    parser.add_argument("--days", type=int, default=285)
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--generator", default="benchmarks/.build/release/log-generator")
    parser.add_argument("--data", default="/tmp/restart-bench")
    parser.add_argument("--reuse", action="store_true", help="keep the log already generated in --data")
    parser.add_argument("--keep", action="store_true", help="leave --data in place at the end")
    parser.add_argument("--again", action="store_true",
                        help="only the start with checkpoints, on a --data a run with --keep left (digests and tables written)")
    parser.add_argument("--untrusted", action="store_true",
                        help="on a --data a run with --keep left: the first segment's digest removed, so that the start trusts "
                             "none and reads the log again in the background; also times until postbacks are taken")
    args = parser.parse_args()
    if args.untrusted:
        digests = os.path.join(args.data, "digests")
        first = os.path.join(digests, min((n for n in os.listdir(digests) if n.endswith(".digest")), key=lambda n: int(n[:-7])))
        aside = first + ".aside"
        shutil.move(first, aside)
        try:
            endpoint, result = run(args.binary, args.data, "a digest removed: rebuilt in the background")
            t = time.time()
            until(lambda: metric(endpoint.port, TOKEN, "attribution_postback_rebuild_pending") == 0, t, timeout=7200)
            result["peak_rss_mb"] = round(rss_mb(endpoint.pid, "VmHWM"), 1)
            result["rebuild"] = json.loads(endpoint.event("postback_rebuilt") or "{}")
            # The start writes the digest again once the ledger is whole.
            until(lambda: os.path.exists(first), time.time(), timeout=7200)
            endpoint.stop(timeout=600)
            print(json.dumps(result), flush=True)
        finally:
            if not os.path.exists(first):
                shutil.move(aside, first)
            elif os.path.exists(aside):
                os.remove(aside)
        return
    if args.again:
        for n in range(3):
            endpoint, result = run(args.binary, args.data, "with checkpoints, again (%d)" % (n + 1))
            result["postback_keys_in_memory"] = metric(endpoint.port, TOKEN, "attribution_postback_keys_in_memory")
            result["replay"] = {k: v for k, v in json.loads(endpoint.event("replay")).items() if k.endswith("seconds")}
            endpoint.stop(timeout=600)
            print(json.dumps(result), flush=True)
        return

    t0 = time.time()
    postbacks = args.records * 10 // 35
    if not args.reuse:
        shutil.rmtree(args.data, ignore_errors=True)
        subprocess.run([args.generator, args.data, str(postbacks), str(args.days * 24), "--mix", "app"], check=True)
    generated = time.time() - t0
    log_bytes = sum(os.path.getsize(os.path.join(root, n)) for root, _, names in os.walk(args.data) for n in names if n.endswith(".log"))
    segments = len([n for n in os.listdir(os.path.join(args.data, "log")) if n.endswith(".log")])
    print("generated %d records (%d postback copies) over %d days in %.0f s: %.1f GB in %d sealed segments"
          % (args.records, postbacks, args.days, generated, log_bytes / 1e9, segments), flush=True)

    # 0: the token keys, made once on an empty data directory and copied (an RSA key is made on a
    # site's first start).
    keys = args.data + "-keys"
    shutil.rmtree(keys, ignore_errors=True)
    endpoint = Endpoint(args.binary, keys, TOKEN, extra=SITES)
    for site in ["news.example", "shop.example", "app.example", "blog.example", "store.example"]:
        status(endpoint.port, "GET", "/.well-known/private-click-measurement/get-token-public-key/", host=site)
    endpoint.stop(timeout=600)
    shutil.copy(os.path.join(keys, "token-keys.json"), os.path.join(args.data, "token-keys.json"))
    shutil.rmtree(keys, ignore_errors=True)
    for derived in ["digests", "postback-keys", "summary.checkpoint"]:
        path = os.path.join(args.data, derived)
        shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else (os.path.exists(path) and os.remove(path))

    endpoint, without = run(args.binary, args.data, "without checkpoints")
    print(json.dumps(without), flush=True)
    # Let it write what the next start takes: every sealed segment's digest, the key tables of
    # those past the postback window.
    t1 = time.time()
    sealed = len([n for n in os.listdir(os.path.join(args.data, "log")) if n.endswith(".log")])
    until(lambda: len([n for n in os.listdir(os.path.join(args.data, "digests")) if n.endswith(".digest")]) >= sealed, t1, timeout=7200)
    until(lambda: (metric(endpoint.port, TOKEN, "attribution_postback_key_tables") or 0) >= max(0, sealed - 13), t1, timeout=7200)
    print("digests and key tables written in %.0f s; postback keys in memory %d, key tables %d (%.0f MB)"
          % (time.time() - t1, metric(endpoint.port, TOKEN, "attribution_postback_keys_in_memory"),
             metric(endpoint.port, TOKEN, "attribution_postback_key_tables"), metric(endpoint.port, TOKEN, "attribution_postback_key_table_bytes") / 1e6),
          flush=True)
    endpoint.stop(timeout=600)

    endpoint, with_checkpoints = run(args.binary, args.data, "with checkpoints")
    with_checkpoints["postback_keys_in_memory"] = metric(endpoint.port, TOKEN, "attribution_postback_keys_in_memory")
    print(json.dumps(with_checkpoints), flush=True)
    endpoint.stop(timeout=600)
    without_rss = without["peak_rss_mb"]
    print("first start without checkpoints: peak RSS %.0f MB (the postbacks of every segment not yet in a key table)" % without_rss)
    digests = sum(os.path.getsize(os.path.join(args.data, "digests", n)) for n in os.listdir(os.path.join(args.data, "digests")))
    print("digests on disk: %.1f MB" % (digests / 1e6), flush=True)
    if not args.keep:
        shutil.rmtree(args.data, ignore_errors=True)


if __name__ == "__main__":
    main()
