#!/usr/bin/env python3
"""What the Apple Ads names cost: the requests one refresh makes for a given number of ids, and
the endpoint's memory and disk for 100,000 names, against scripts/apple_ads_platform_standin.py.

An ad account of 20,000 campaigns; installs seen in 10 of them, over 100 ad groups of 800
keywords each: 20,000 + 100 + 80,000 = 100,100 names. docs/PERFORMANCE.md has the results.

Usage: benchmarks/apple_ads_names.py [BINARY]
"""
import datetime
import json
import os
import sys
import tempfile
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from apple_ads_platform_standin import StandIn  # noqa: E402
from endpoint_process import Endpoint, request, rss_mb, until  # noqa: E402

TOKEN = "names-benchmark"
TODAY = datetime.datetime.now(datetime.timezone.utc).date()
PERIOD = "from=%s&to=%s" % (TODAY - datetime.timedelta(days=1), TODAY + datetime.timedelta(days=1))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/release/attribution-endpoint"
    work = tempfile.mkdtemp(prefix="apple-ads-names-")
    key = ec.generate_private_key(ec.SECP256R1())
    with open(os.path.join(work, "key.pem"), "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    credentials = os.path.join(work, "platform.json")
    with open(credentials, "w") as f:
        json.dump({"client_id": "SEARCHADS.c", "team_id": "SEARCHADS.t", "key_id": "k", "ad_account_id": "1",
                   "private_key_file": os.path.join(work, "key.pem")}, f)
    campaigns = [{"id": 600000000 + i, "name": "Campaign %05d, spring push" % i} for i in range(20000)]
    seen = [600000000 + i for i in range(10)]
    ad_groups, keywords, attributions = {}, {}, {}
    for i in range(100):
        campaign, group = seen[i % 10], 800000000 + i
        ad_groups.setdefault(campaign, []).append({"id": group, "name": "Ad group %d, exact match" % i})
        keywords[group] = [{"id": 900000000 + i * 1000 + k, "text": "keyword %d %d" % (i, k)} for k in range(800)]
        attributions["t%d" % i] = {"attribution": True, "orgId": 1, "campaignId": campaign, "adGroupId": group,
                                   "keywordId": 900000000 + i * 1000, "conversionType": "Download", "claimType": "Click"}
    standin = StandIn(key.public_key(), "SEARCHADS.c", "SEARCHADS.t", "k", "1", campaigns, ad_groups, keywords, attributions)
    data = os.path.join(work, "data")
    endpoint = Endpoint(binary, data, TOKEN, ["--apple-ads-api", standin.url + "/adservices/", "--apple-ads-platform", credentials,
                                             "--apple-ads-platform-api", standin.url + "/v1/",
                                             "--apple-ads-platform-token-url", standin.url + "/auth/oauth2/token",
                                             "--apple-ads-platform-pace", "0.01"])
    try:
        port = endpoint.port
        for token in attributions:
            request(port, TOKEN, "POST", "/apple-ads/attribution", token.encode(), host="shop.example")

        def attributed():
            body = json.loads(request(port, TOKEN, "GET", "/api/apple-ads/summary?" + PERIOD)[1])
            return body.get("by_status", {}).get("attributed") == 100

        until(attributed, timeout=120)
        before = rss_mb(endpoint.pid)
        requests_before = standin.requests
        started = time.time()
        until(lambda: request(port, TOKEN, "POST", "/api/apple-ads/names/refresh")[0] == 202, timeout=30, poll=0.5)
        # Its event is written once the names are on disk.
        until(lambda: endpoint.event("apple_ads_names_refreshed"), timeout=600, poll=0.1)
        seconds = time.time() - started
        status = json.loads(request(port, TOKEN, "GET", "/api/apple-ads/names")[1])
        after = rss_mb(endpoint.pid)
        size = os.path.getsize(os.path.join(data, "apple-ads-names.json"))
        names = status["campaigns"] + status["ad_groups"] + status["keywords"]
        print(json.dumps({"names": names, "requests": standin.requests - requests_before, "refresh_seconds": round(seconds, 2),
                          "rss_before_mb": round(before, 1), "rss_after_mb": round(after, 1), "rss_per_100k_names_mb": round((after - before) * 100000 / names, 1),
                          "file_mb": round(size / 1e6, 2), "formula": "1 token + ceil(20000/1000) campaign pages + 10 campaigns + 100 ad groups = 131"}))
    finally:
        endpoint.stop()
        standin.stop()


if __name__ == "__main__":
    main()
