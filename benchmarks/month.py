#!/usr/bin/env python3
"""A month at a tenth of a top app's rate, over HTTP (issue 30): RSS per day.

Starts the endpoint (release build, --manual-clock, the default configuration otherwise) with
Apple's API played by a local stand-in that answers every call at once ("not attributed"), then
for each of DAYS days sets the clock to that day and sends, over pipelined keep-alive
connections:
  - POSTBACKS postback copies: AdAttributionKit postbacks signed with a test key the endpoint
    trusts (--postback-key), of which three in ten are a device's second delivery of one sent
    that day or the day before;
  - TOKENS Apple Ads tokens (as many by default), each answered by the stand-in;
  - a tenth as many PCM reports.
After each day it waits until no Apple Ads call is due and prints the day's RSS then
(`rss_at_end`: the burst's free memory still in malloc's heaps) and SETTLE seconds later
(`rss_mb`, after the endpoint's heap trim), the bytes of the postback ledger's window and of the
Apps view's conversion rows (what grows with the days kept), what the postback ledger and the Apple
Ads outbox hold, the log's size and the seconds the day's traffic took.
The target (issue 30): RSS on day 30 within 10 % of day 10.

    python3 benchmarks/month.py [--binary .build/release/attribution-endpoint] [--days 30] [--postbacks 100000] [--tokens 100000] [--reports 10000]
"""
import argparse
import base64
import datetime
import http.client
import json
import os
import random
import shutil
import socket
import sys
import tempfile
import threading
import time

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from endpoint_process import Endpoint, apple_stand_in, log_bytes, metric, rss_mb  # noqa: E402

TOKEN = "bench"
# Seconds after a day's traffic is answered before its RSS is read: one heap-trim interval (the
# endpoint hands malloc's free pages back every ten seconds), and a second more.
SETTLE = 11
KEY = ec.derive_private_key(0x5EED_2026_0030, ec.SECP256R1())
SPKI = base64.b64encode(KEY.public_key().public_bytes(serialization.Encoding.DER,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=")


def postback(day, n):
    """A signed AdAttributionKit postback, the n-th of the day."""
    header = b64url(b'{"kid":"month-key","alg":"ES256"}')
    payload = b64url(json.dumps({
        "impression-type": "app-impression", "ad-network-identifier": "bench.adattributionkit",
        "source-identifier": "%04d" % (n % 10000), "advertised-item-identifier": 6443210987,
        "conversion-type": "download", "postback-identifier": "month-%02d-%08d" % (day, n), "did-win": True,
        "postback-sequence-index": 0, "marketplace-identifier": "com.apple.AppStore"}, separators=(",", ":")).encode())
    r, s = decode_dss_signature(KEY.sign(header + b"." + payload, ec.ECDSA(hashes.SHA256())))
    signature = b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))
    jws = (header + b"." + payload + b"." + signature).decode()
    return json.dumps({"jws-string": jws, "ad-interaction-type": "click", "conversion-value": n % 64}).encode()


def request(path, host, body, content_type="application/json"):
    return (("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
             % (path, host, content_type, len(body))).encode() + body)


def send_all(port, requests, connections=4, depth=64):
    """Sends every request, `depth` at a time per connection (HTTP/1.1 pipelining); returns the
    statuses counted."""
    statuses = {}
    lock = threading.Lock()

    def worker(share):
        sock = socket.create_connection(("127.0.0.1", port))
        buffer = b""
        for start in range(0, len(share), depth):
            batch = share[start:start + depth]
            sock.sendall(b"".join(batch))
            answered = 0
            while answered < len(batch):
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        raise RuntimeError("connection closed")
                    buffer += chunk
                    continue
                head = buffer[:end].decode("latin-1")
                length = 0
                for line in head.split("\r\n")[1:]:
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                if len(buffer) < end + 4 + length:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        raise RuntimeError("connection closed")
                    buffer += chunk
                    continue
                status = int(head.split(" ", 2)[1])
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                buffer = buffer[end + 4 + length:]
                answered += 1
        sock.close()

    threads = [threading.Thread(target=worker, args=(requests[i::connections],)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/attribution-endpoint")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--postbacks", type=int, default=100_000, help="postback copies a day; a tenth as many reports")
    parser.add_argument("--tokens", type=int, default=100_000, help="Apple Ads tokens a day (the stand-in answers about 400 calls a second)")
    parser.add_argument("--reports", type=int, default=None, help="PCM reports a day (default: a tenth of POSTBACKS)")
    args = parser.parse_args()
    reports = args.postbacks // 10 if args.reports is None else args.reports

    apple, apple_url = apple_stand_in(b'{"attribution":false}')
    data = tempfile.mkdtemp(prefix="month-")
    endpoint = Endpoint(args.binary, data, TOKEN, extra=[
        "--site", "app.example", "--manual-clock", "--postback-key", "month-key=" + SPKI,
        "--apple-ads-api", apple_url, "--apple-ads-max-pending", "10000000"])
    port = endpoint.port
    admin = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    random.seed(30)
    new_per_day = args.postbacks * 7 // 10
    yesterday = []
    print("day  rss_at_end  rss_mb  ledger_mb  apps_rows_mb  postback_keys_in_memory  key_tables  apple_ads_tokens_in_memory  log_gb  seconds  statuses", flush=True)
    try:
        for day in range(1, args.days + 1):
            started = time.time()
            # A minute later each day, so that the day before's answers are more than 24 hours old.
            now = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc) + datetime.timedelta(days=day - 1, minutes=day)
            clock = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            clock.request("POST", "/admin/clock", json.dumps({"now": now.strftime("%Y-%m-%dT%H:%M:%SZ")}), admin)
            response = clock.getresponse()
            assert response.status == 200, response.read()
            response.read()
            clock.close()
            bodies = [postback(day, n) for n in range(new_per_day)]
            copies = bodies + random.sample(bodies, min(len(bodies), (args.postbacks - new_per_day) * 2 // 3)) \
                + random.sample(yesterday, min(len(yesterday), (args.postbacks - new_per_day) // 3))
            requests = [request("/.well-known/appattribution/report-attribution/", "app.example", body) for body in copies]
            requests += [request("/apple-ads/attribution", "app.example",
                                 ("d%02d-token-%08d-" % (day, n) + "x" * 110).encode(), "text/plain") for n in range(args.tokens)]
            requests += [request("/.well-known/private-click-measurement/report-attribution/", "news.example",
                                 json.dumps({"source_engagement_type": "click", "source_site": "news.example", "source_id": n % 256,
                                             "attributed_on_site": "shop.example", "trigger_data": n % 16, "version": 3}).encode())
                         for n in range(reports)]
            random.shuffle(requests)
            statuses = send_all(port, requests)
            yesterday = bodies
            while metric(port, TOKEN, "attribution_apple_ads_pending", 0.0) > 0:
                time.sleep(0.2)  # waiting for the outbox's calls to the stand-in, polled
            seconds = time.time() - started
            at_end = rss_mb(endpoint.pid)
            # The day's burst is answered; what it left free goes back at the next heap trim.
            time.sleep(SETTLE)
            print("%-4d %-11.1f %-7.1f %-10.1f %-13.2f %-24d %-11d %-27d %-7.2f %-8.0f %s" % (
                day, at_end, rss_mb(endpoint.pid), metric(port, TOKEN, "attribution_postback_ledger_bytes", 0.0) / 1e6,
                metric(port, TOKEN, "attribution_apps_view_conversion_bytes", 0.0) / 1e6,
                metric(port, TOKEN, "attribution_postback_keys_in_memory", 0.0),
                metric(port, TOKEN, "attribution_postback_key_tables", 0.0), metric(port, TOKEN, "attribution_apple_ads_tokens_in_memory", 0.0),
                log_bytes(data) / 1e9, seconds, json.dumps(statuses, sort_keys=True)), flush=True)
    finally:
        endpoint.stop(timeout=600)
        apple.shutdown()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
