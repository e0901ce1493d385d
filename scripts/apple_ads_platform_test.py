#!/usr/bin/env python3
"""Names for Apple Ads ids from the Apple Ads Platform API, end to end, against
scripts/apple_ads_platform_standin.py (which checks the client secret with Python's
`cryptography`): the endpoint with --apple-ads-platform, Apple Ads tokens attributed by the
stand-in's AdServices, then refreshes that meet a 5xx in the middle of paging, a token revoked
before its time, a 429 with Retry-After, and paging over 2,500 campaigns. Names typed in win;
the names survive a restart without a request; without the option nothing is asked.

Usage: scripts/apple_ads_platform_test.py [BINARY]
"""
import datetime
import json
import os
import sys
import tempfile

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from apple_ads_platform_standin import StandIn  # noqa: E402
from endpoint_process import Endpoint, finish, request, until  # noqa: E402

TOKEN = "platform-test-token"
TODAY = datetime.datetime.now(datetime.timezone.utc).date()
PERIOD = "from=%s&to=%s" % (TODAY - datetime.timedelta(days=1), TODAY + datetime.timedelta(days=1))
ACCOUNT = "4455667788"


def record(campaign, ad_group, keyword):
    return {"attribution": True, "orgId": 40669820, "campaignId": campaign, "conversionType": "Download", "claimType": "Click",
            "adGroupId": ad_group, "countryOrRegion": "US", "keywordId": keyword, "adId": 1, "supplyPlacement": "APPSTORE_SEARCH_RESULTS"}


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/attribution-endpoint"
    failures = []

    def check(condition, what):
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            failures.append(what)

    work = tempfile.mkdtemp(prefix="apple-ads-platform-")
    data = os.path.join(work, "data")
    key = ec.generate_private_key(ec.SECP256R1())
    # As `openssl ecparam -genkey -name prime256v1` writes it (Apple's instructions).
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption())
    with open(os.path.join(work, "apple-ads.pem"), "wb") as f:
        f.write(pem)
    credentials = os.path.join(work, "apple-ads-platform.json")
    with open(credentials, "w") as f:
        json.dump({"client_id": "SEARCHADS.client-1", "team_id": "SEARCHADS.team-1", "key_id": "key-1", "ad_account_id": ACCOUNT,
                   "private_key_file": os.path.join(work, "apple-ads.pem")}, f)
    os.chmod(credentials, 0o600)

    # 2,500 campaigns (three pages of 1,000); the installs' campaigns among them.
    campaigns = [{"id": 600000000 + i, "name": "Campaign %d" % i} for i in range(2500)]
    campaigns[7] = {"id": 542370539, "name": "Looked-up puzzles"}        # typed in below: the typed name wins
    campaigns[1800] = {"id": 642370540, "name": "Today tab (looked up)"}  # on the second page
    ad_groups = {542370539: [{"id": 542317095, "name": "Exact match (looked up)"}],
                 642370540: [{"id": 642317100, "name": "Today tab ad (looked up)"}]}
    keywords = {542317095: [{"id": 87675432, "text": "puzzle game"}, {"id": 87675433, "text": "brain teaser"}],
                642317100: []}
    attributions = {"t1": record(542370539, 542317095, 87675432), "t2": record(542370539, 542317095, 87675433),
                    "t3": record(642370540, 642317100, 87675432)}
    standin = StandIn(key.public_key(), "SEARCHADS.client-1", "SEARCHADS.team-1", "key-1", ACCOUNT, campaigns, ad_groups, keywords,
                      attributions)
    options = ["--apple-ads-api", standin.url + "/adservices/", "--apple-ads-platform", credentials,
               "--apple-ads-platform-api", standin.url + "/v1/", "--apple-ads-platform-token-url", standin.url + "/auth/oauth2/token",
               "--apple-ads-platform-pace", "0.01"]
    endpoint = Endpoint(binary, data, TOKEN, options)
    try:
        port = endpoint.port
        status, _ = request(port, TOKEN, "POST", "/api/apple-ads/campaigns",
                            json.dumps({"campaign_id": 542370539, "name": "Winter puzzles (typed)"}).encode())
        check(status == 201, "a campaign's name typed in")
        for token in attributions:
            status, _ = request(port, TOKEN, "POST", "/apple-ads/attribution", token.encode(), host="shop.example")
            check(status == 202, "token %s taken" % token)

        def summary():
            _, body = request(port, TOKEN, "GET", "/api/apple-ads/summary?" + PERIOD)
            return json.loads(body)

        until(lambda: summary()["by_status"]["attributed"] == 3, timeout=60)

        def names():
            return json.loads(request(port, TOKEN, "GET", "/api/apple-ads/names")[1])

        def refresh(before):
            until(lambda: request(port, TOKEN, "POST", "/api/apple-ads/names/refresh")[0] == 202, timeout=30, poll=0.5)
            until(lambda: names()["attempted_at"] not in (None, before), timeout=60)
            return names()

        # First: the refresh at start found the ids (or not yet). A 5xx on the second page of
        # campaigns ends a refresh: the error is kept and said, the names asked again later.
        first = names()
        check(first["configured"] and first["attempted_at"] is None, "the lookups are configured; nothing seen at start, nothing asked")
        standin.fail_page_once = ("campaigns/query", 1000)
        failed = refresh(None)
        check(failed["last_error"] is not None and "500" in failed["last_error"], "a 5xx in the middle of paging is said: %s" % failed["last_error"])

        # Then a token revoked before its hour (401 → a new token once), and a 429 (waited out).
        standin.revoke_after_calls = 1
        standin.too_many_once = "adgroups/query"
        issued_before = standin.issued
        good = refresh(failed["attempted_at"])
        check(good["last_error"] is None and good["refreshed_at"] is not None, "the refresh after them ends well: %s" % good)
        check(standin.too_many_once is None and standin.revoke_after_calls is None, "the 429 and the revoked token were both met")
        check(standin.issued == issued_before + 1, "a revoked token is replaced once (%d new)" % (standin.issued - issued_before))
        check(good["campaigns"] == 2500 and good["ad_groups"] == 2 and good["keywords"] == 2,
              "every campaign, and the ad groups and keywords seen: %s" % good)
        pages = [c for c in standin.calls if c[0] == "campaigns/query"]
        check([c[1] for c in pages[-3:]] == [0, 1000, 2000], "campaigns read page by page: %s" % [c[1] for c in pages[-3:]])
        check(not [r for r in standin.refusals if r.startswith("token:")],
              "every client secret verified with cryptography (ES256, kid, iss, sub, aud, iat, exp): %s" % standin.refusals)
        check(standin.secrets_checked >= 2, "%d client secrets checked" % standin.secrets_checked)

        rows = {(r["campaign_id"], r["keyword_id"]): r for r in summary()["installs"]}
        typed = rows[(542370539, 87675432)]
        check(typed["campaign_name"] == "Winter puzzles (typed)", "a typed name wins: %s" % typed["campaign_name"])
        check(typed["ad_group_name"] == "Exact match (looked up)" and typed["keyword_name"] == "puzzle game",
              "ad group and keyword named from the API: %s / %s" % (typed["ad_group_name"], typed["keyword_name"]))
        looked = rows[(642370540, 87675432)]
        check(looked["campaign_name"] == "Today tab (looked up)", "a campaign named from the API: %s" % looked["campaign_name"])
        export = request(port, TOKEN, "GET", "/api/apple-ads")[1].decode()
        check("Today tab (looked up)" in export, "the export names it too")
        status, _ = request(port, TOKEN, "POST", "/api/apple-ads/names/refresh")
        check(status == 429, "a refresh asked again at once is 429")
        # Every token forgotten (the next call is a 401), the new ones living two seconds, and a
        # one-second wait halfway: the token is renewed halfway through its life, before it expires.
        standin.expires_in = 2
        standin.tokens.clear()
        standin.too_many_once = "keywords/query"
        standin.refusals.clear()
        issued_before = standin.issued
        until(lambda: request(port, TOKEN, "POST", "/api/apple-ads/names/refresh")[0] == 202, timeout=30, poll=0.5)
        until(lambda: names()["attempted_at"] != good["attempted_at"], timeout=60)
        short = names()
        check(short["last_error"] is None, "a refresh with short-lived tokens ends well: %s" % short["last_error"])
        check(standin.issued >= issued_before + 2 and len(standin.refusals) == 1,
              "a forgotten token replaced, and a short-lived one renewed before it expired (%d new, refusals %s)"
              % (standin.issued - issued_before, standin.refusals))
        standin.expires_in = 3600
        # A 429 whose Retry-After is no number of seconds: waited as a day, the refresh ends, nothing traps.
        standin.retry_after = "inf"
        standin.too_many_once = "campaigns/query"
        until(lambda: request(port, TOKEN, "POST", "/api/apple-ads/names/refresh")[0] == 202, timeout=30, poll=0.5)
        until(lambda: names()["attempted_at"] != short["attempted_at"], timeout=60)
        check("86400 s" in (names()["last_error"] or ""), "Retry-After: inf is a day's wait: %s" % names()["last_error"])
        check(request(port, TOKEN, "GET", "/api/apple-ads/names")[0] == 200, "and the endpoint answers on")
        standin.retry_after = "1"
        requests_before = standin.requests
    finally:
        code = endpoint.stop()
    check(code == 0, "the endpoint stops cleanly")

    # A restart: the names come from DATA at once, and nothing is asked (all named, refreshed today).
    endpoint = Endpoint(binary, data, TOKEN, options)
    try:
        rows = json.loads(request(endpoint.port, TOKEN, "GET", "/api/apple-ads/summary?" + PERIOD)[1])["installs"]
        check(any(r["campaign_name"] == "Today tab (looked up)" for r in rows), "after a restart the names are there")
        check(standin.requests == requests_before, "and nothing was asked of the API (%d requests)" % (standin.requests - requests_before))
    finally:
        endpoint.stop()

    # Without the option: no lookups, the typed names only.
    endpoint = Endpoint(binary, data, TOKEN, ["--apple-ads-api", standin.url + "/adservices/"])
    try:
        check(json.loads(request(endpoint.port, TOKEN, "GET", "/api/apple-ads/names")[1]) == {"configured": False}, "without it, none")
        rows = json.loads(request(endpoint.port, TOKEN, "GET", "/api/apple-ads/summary?" + PERIOD)[1])["installs"]
        check(all(r["campaign_name"] in (None, "Winter puzzles (typed)") for r in rows), "and only typed names are shown")
    finally:
        endpoint.stop()
        standin.stop()
    finish(failures)


if __name__ == "__main__":
    main()
