#!/usr/bin/env python3
"""The summary page in a real browser: headless Chromium (Debian's chromium + chromium-driver,
driven by Selenium) against `attribution-endpoint demo`, which fills a live server with known
traffic. Every number the page renders is checked against the NDJSON export; the page is also
used at 375 px wide and with the keyboard only, must log no console errors, and must say clearly
when the token is wrong. Saves screenshots.

Usage: scripts/browser_test.py [path/to/attribution-endpoint] [screenshot-directory]
"""
import collections
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/attribution-endpoint")
SHOTS = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, ".build/browser-test")
TOKEN = "browser-test-token"
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


def start_demo():
    process = subprocess.Popen([BINARY, "demo", "--port", "0", "--token", TOKEN, "--public", os.path.join(ROOT, "Public")],
                               stdout=subprocess.PIPE, stderr=open(os.path.join(SHOTS, "demo.err"), "w"), text=True, cwd=ROOT)
    for line in process.stdout:
        match = re.search(r"Open\s+(http://\S+)", line)
        if match:
            return process, match.group(1).rstrip("/")
    raise RuntimeError("the demo did not print its address")


def api(base, path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(request) as response:
        return response.read().decode()


def browser(width, height):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", f"--window-size={width},{height}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def console_errors(driver):
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text.strip()


def table(driver, element_id):
    rows = []
    for tr in driver.find_elements(By.CSS_SELECTOR, f"#{element_id} tbody tr"):
        rows.append([td.text.strip() for td in tr.find_elements(By.TAG_NAME, "td")])
    return rows


def expected_from_export(base, day_from, day_to):
    """The page's numbers, computed independently from the raw export."""
    counts = collections.Counter()
    campaigns, conversions, reasons = collections.Counter(), collections.Counter(), collections.Counter()
    for line in api(base, "/api/reports").splitlines():
        r = json.loads(line)
        if not (day_from <= r["received_at"][:10] <= day_to):
            continue
        role = r["role"]
        if r["verdict"] == "accepted":
            counts["accepted_" + role] += 1
            if "late" in r["reasons"]:
                counts["late"] += 1
            campaigns[(r.get("campaign") or "No campaign registered", r["source_site"], r["source_id"], role)] += 1
            conversions[(r["attributed_on_site"], r["trigger_data"], role)] += 1
            if any(reason.endswith("_token_verified") for reason in r["reasons"]):
                campaigns[(r.get("campaign") or "No campaign registered", r["source_site"], r["source_id"], "verified")] += 1
                conversions[(r["attributed_on_site"], r["trigger_data"], "verified")] += 1
        else:
            counts["quarantined"] += 1
            for reason in r["reasons"]:
                reasons[(reason, role)] += 1
    return counts, campaigns, conversions, reasons


def expected_apps(base, day_from, day_to):
    """The Apps view's numbers, computed independently from /api/postbacks."""
    totals, kinds, signatures, reasons = collections.Counter(), collections.Counter(), collections.Counter(), collections.Counter()
    rows = collections.Counter()
    for line in api(base, "/api/postbacks").splitlines():
        p = json.loads(line)
        if not (day_from <= p["received_at"][:10] <= day_to):
            continue
        totals["retries"] += p["duplicates_received"]
        signatures[p["signature"]] += 1
        if p["verdict"] != "accepted":
            totals["quarantined"] += 1
            for reason in p["reasons"]:
                reasons[reason] += 1
            continue
        if p.get("postback-sequence-index", 0) != 0 or p.get("did-win") is False:
            continue
        if p["protocol"] == "skadnetwork":
            kind = "redownloads" if p.get("redownload") is True else "installs"
            network, campaign = p["ad-network-id"], p.get("source-identifier") or str(p.get("campaign-id", ""))
        else:
            kind = {"redownload": "redownloads", "re-engagement": "re_engagements"}.get(p["conversion-type"], "installs")
            network, campaign = p["ad-network-identifier"], p["source-identifier"]
        kinds[kind] += 1
        rows[(network, campaign, kind)] += 1
    return totals, kinds, signatures, reasons, rows


PLIST_WITH_MISTAKES = """<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
<key>AdAttributionKitConfigurations</key><dict>
  <key>AttributionWindows</key><dict>
    <key>global</key><dict><key>install</key><dict><key>view</key><integer>9</integer><key>ignoreInteractionType</key><string>view</string></dict></dict>
    <key>example123.skadnetwork</key><dict><key>install</key><dict><key>click</key><integer>5</integer></dict></dict>
  </dict>
  <key>AttributionCooldown</key><dict><key>reengagement-cooldown-hours</key><integer>12</integer></dict>
</dict>
<key>NSAdvertisingAttributionReportEndpoint</key><string>https://elsewhere.example</string>
</dict></plist>"""


def api_post(base, path, body):
    request = urllib.request.Request(base + path, data=body, method="POST", headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read().decode())


def check_apple_ads(driver, base, day_from, day_to):
    """The Apple Ads view against /api/apple-ads, counted here from the export's lines."""
    WebDriverWait(driver, 10).until(lambda d: text(d, "apple-ads-tokens") != "0")
    lines = [json.loads(line) for line in api(base, "/api/apple-ads").splitlines() if line]
    lines = [l for l in lines if day_from <= l["received_at"][:10] <= day_to]
    status = collections.Counter(l["status"] for l in lines)
    check(int(text(driver, "apple-ads-tokens")) == len(lines), f"Apple Ads tokens {text(driver, 'apple-ads-tokens')} = export {len(lines)}")
    for element, key in [("apple-ads-attributed", "attributed"), ("apple-ads-not-attributed", "not_attributed"), ("apple-ads-pending", "pending")]:
        check(int(text(driver, element)) == status[key], f"Apple Ads {key} {text(driver, element)} = export {status[key]}")
    failed = sum(status[k] for k in ("invalid_token", "not_found", "expired", "refused"))
    check(int(text(driver, "apple-ads-failed")) == failed, f"Apple Ads failed {text(driver, 'apple-ads-failed')} = export {failed}")
    check(status["attributed"] > 0 and status["not_attributed"] > 0 and status["pending"] > 0 and failed > 0,
          f"the demo produced every kind of Apple Ads outcome: {dict(status)}")
    wanted = collections.Counter()
    for l in lines:
        if l["status"] == "attributed":
            kind = "downloads" if l["conversionType"] == "Download" else "redownloads"
            wanted[(l["campaignId"], l["adGroupId"], l["keywordId"], kind)] += 1
    shown = collections.Counter()
    ident = lambda cell_text: None if cell_text == "—" else int(cell_text.split("\n")[-1].split()[-1])
    for campaign, group, keyword, downloads, redownloads in table(driver, "apple-ads-installs"):
        for kind, n in (("downloads", downloads), ("redownloads", redownloads)):
            if int(n):
                shown[(ident(campaign), ident(group), ident(keyword), kind)] += int(n)
    check(shown == wanted, f"Apple Ads installs table = export ({len(wanted)} cells)")
    check("puzzle game" in text(driver, "apple-ads-installs") and "Today tab" in text(driver, "apple-ads-installs"),
          "keyword and campaign names come from the registration")
    driver.execute_script("document.getElementById('apple-ads').scrollIntoView()")
    driver.save_screenshot(os.path.join(SHOTS, "apple-ads-1280.png"))


def check_plist_form(driver, base):
    """The plist form: a pasted XML plist and an uploaded binary one, each shown as the API reports it."""
    driver.execute_script("document.getElementById('plist').scrollIntoView()")
    area = driver.find_element(By.ID, "plist-text")
    driver.execute_script("arguments[0].value = arguments[1]", area, PLIST_WITH_MISTAKES)
    driver.find_element(By.CSS_SELECTOR, "#plist-form button[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: "property list" in d.find_element(By.ID, "plist-verdict").text)
    wanted = api_post(base, "/api/plist-check", PLIST_WITH_MISTAKES.encode())
    shown = [(row[0].lower(), row[1], row[2].split("\n")[1].split(" · ")[0]) for row in table(driver, "plist-findings")]
    check(shown == [(f["severity"], f["key"], f["rule"]) for f in wanted["findings"]], f"plist findings = /api/plist-check: {shown}")
    rules = {f["rule"] for f in wanted["findings"]}
    check({"out_of_range", "wrong_place", "undocumented_spelling", "site_not_served"} <= rules, f"the pasted plist's mistakes are found: {sorted(rules)}")
    check(f"{wanted['errors']} errors" in text(driver, "plist-verdict"), "the verdict counts the errors: " + text(driver, "plist-verdict"))
    windows = {row[0].split("\n")[0]: (row[1].split("\n")[0], row[2].split("\n")[0]) for row in table(driver, "plist-windows")}
    check(windows.get("example123.skadnetwork") == ("5 days", "1 day"), f"effective windows by precedence: {windows}")
    driver.save_screenshot(os.path.join(SHOTS, "plist-1280.png"))
    # A binary plist, uploaded: Python wrote it, the endpoint reads it.
    driver.execute_script("arguments[0].value = ''", area)
    binary = os.path.join(ROOT, "Tests/AppConfigurationTests/Resources/seed-precedence.binary.plist")
    driver.find_element(By.ID, "plist-file").send_keys(binary)
    driver.find_element(By.CSS_SELECTOR, "#plist-form button[type=submit]").click()
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "plist-verdict").text.startswith("BINARY"))
    with open(binary, "rb") as f:
        wanted = api_post(base, "/api/plist-check", f.read())
    check(text(driver, "plist-verdict").startswith(f"BINARY property list: {wanted['errors']} error"), "an uploaded binary plist is checked: " + text(driver, "plist-verdict"))
    windows = {row[0].split("\n")[0]: (row[1].split("\n")[0], row[2].split("\n")[0], row[3]) for row in table(driver, "plist-windows")}
    check(windows.get("com.apple.test.itms11.2") == ("5 days", "3 days", "view"), f"the seed's precedence example on the page: {windows}")


def log_in(driver, base, token):
    driver.get(base + "/")
    field = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
    field.send_keys(token)
    field.send_keys(Keys.ENTER)


def main():
    os.makedirs(SHOTS, exist_ok=True)
    process, base = start_demo()
    try:
        driver = browser(1280, 1000)
        try:
            # A wrong token gets a clear message and the login form again.
            log_in(driver, base, "not-the-token")
            error = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "login-error")))
            check("not accepted" in error.text, "a wrong token is answered with a clear message: " + error.text)
            check(not driver.find_element(By.ID, "summary").is_displayed(), "a wrong token shows no numbers")
            # The browser itself logs the refused request; what follows must log nothing.
            driver.get_log("browser")

            log_in(driver, base, TOKEN)
            WebDriverWait(driver, 10).until(EC.text_to_be_present_in_element((By.ID, "status"), "Showing"))
            day_from = driver.find_element(By.ID, "from").get_attribute("value")
            day_to = driver.find_element(By.ID, "to").get_attribute("value")
            counts, campaigns, conversions, reasons = expected_from_export(base, day_from, day_to)
            check(int(text(driver, "accepted-source")) == counts["accepted_source"],
                  f"source copies {text(driver, 'accepted-source')} = export {counts['accepted_source']}")
            check(int(text(driver, "accepted-destination")) == counts["accepted_destination"],
                  f"destination copies {text(driver, 'accepted-destination')} = export {counts['accepted_destination']}")
            check(int(text(driver, "quarantined-total")) == counts["quarantined"],
                  f"quarantined {text(driver, 'quarantined-total')} = export {counts['quarantined']}")
            check(int(text(driver, "late-total")) == counts["late"], f"late {text(driver, 'late-total')} = export {counts['late']}")
            check(counts["accepted_source"] > 0 and counts["quarantined"] > 0 and counts["late"] > 0, "the demo produced every kind")

            shown = {}
            for name_cell, source, destination, verified in table(driver, "campaigns"):
                name, detail = name_cell.split("\n")
                site, source_id = re.match(r"(\S+) · source id (\d+)", detail).groups()
                shown[(name, site, int(source_id))] = (int(source), int(destination), int(verified.split()[0]))
            wanted = {}
            for (name, site, source_id, role), n in campaigns.items():
                row = wanted.setdefault((name, site, source_id), [0, 0, 0])
                row[{"source": 0, "destination": 1, "verified": 2}[role]] += n
            check(shown == {k: tuple(v) for k, v in wanted.items()}, f"campaign table = export ({len(shown)} rows)")

            shown = {}
            for name_cell, source, destination, verified in table(driver, "conversions"):
                name, detail = name_cell.split("\n")
                site, data = re.match(r"(\S+) · trigger data (\d+)", detail).groups()
                shown[(site, int(data))] = (name, int(source), int(destination), int(verified.split()[0]))
            wanted = {}
            for (site, data, role), n in conversions.items():
                row = wanted.setdefault((site, data), [0, 0, 0])
                row[{"source": 0, "destination": 1, "verified": 2}[role]] += n
            names = {5: "purchase", 2: "signup", 1: "add_to_cart"}
            expected = {k: (names[k[1]], v[0], v[1], v[2]) for k, v in wanted.items()}
            check(shown == expected, f"conversion table = export ({len(shown)} rows), with names: {shown} vs {expected}")

            shown = {row[0]: (int(row[1]), int(row[2])) for row in table(driver, "quarantine")}
            wanted = {}
            for (reason, role), n in reasons.items():
                pair = wanted.setdefault(reason, [0, 0])
                pair[0 if role == "source" else 1] += n
            check(shown == {k: tuple(v) for k, v in wanted.items()}, f"quarantine reasons = export: {sorted(shown)}")
            rejected = {row[0]: int(row[1]) for row in table(driver, "rejections")}
            check(rejected == json.loads(api(base, "/api/rejections"))["counts"], f"refusals = /api/rejections: {rejected}")
            # The Apps view: every number against /api/postbacks.
            WebDriverWait(driver, 10).until(lambda d: len(table(d, "apps-signatures")) > 0)
            totals, kinds, signatures, app_reasons, rows = expected_apps(base, day_from, day_to)
            for element, key in [("apps-installs", "installs"), ("apps-redownloads", "redownloads"), ("apps-reengagements", "re_engagements")]:
                check(int(text(driver, element)) == kinds[key], f"Apps view {key} {text(driver, element)} = export {kinds[key]}")
            check(int(text(driver, "apps-quarantined")) == totals["quarantined"],
                  f"quarantined postbacks {text(driver, 'apps-quarantined')} = export {totals['quarantined']}")
            check(int(text(driver, "apps-retries")) == totals["retries"], f"retries {text(driver, 'apps-retries')} = export {totals['retries']}")
            check(kinds["installs"] > 0 and kinds["re_engagements"] > 0 and totals["retries"] > 0 and totals["quarantined"] > 0,
                  "the demo produced installs, re-engagements, retries and quarantined postbacks")
            check({r[0]: int(r[1]) for r in table(driver, "apps-signatures")} == dict(signatures),
                  f"signatures = export: {dict(signatures)}")
            check({r[0]: int(r[1]) for r in table(driver, "apps-reasons")} == dict(app_reasons),
                  f"postback quarantine reasons = export: {dict(app_reasons)}")
            shown = collections.Counter()
            for network, campaign, _app, installs, redownloads, reengagements in table(driver, "apps-campaigns"):
                network_id = network.split("\n")[-1] if "\n" in network else network
                campaign_id = campaign.split("\n")[-1]
                for kind, n in [("installs", installs), ("redownloads", redownloads), ("re_engagements", reengagements)]:
                    if int(n):
                        shown[(network_id, campaign_id, kind)] += int(n)
            check(shown == rows, f"Apps campaign table = export ({len(rows)} cells)")
            check("Holiday video" in text(driver, "apps-campaigns"), "campaign names come from the registered ad network")
            check("purchase" in text(driver, "apps-fine"), "fine values are read through the app's schema")
            driver.execute_script("document.getElementById('apps').scrollIntoView()")
            driver.save_screenshot(os.path.join(SHOTS, "apps-1280.png"))
            check_apple_ads(driver, base, day_from, day_to)
            check_plist_form(driver, base)
            driver.execute_script("window.scrollTo(0, 0)")
            bars = driver.find_elements(By.CSS_SELECTOR, "#chart rect")
            check(len(bars) == 2 * 30, f"the chart draws two bars for each of the 30 days ({len(bars)})")
            driver.save_screenshot(os.path.join(SHOTS, "summary-1280.png"))
            errors = console_errors(driver)
            check(errors == [], f"no console errors: {errors}")
        finally:
            driver.quit()

        # 375 px wide, keyboard only: Tab to the token field, type, Enter; Tab through the filters.
        driver = browser(500, 900)
        try:
            # Headless Chromium will not make a window narrower than 500 px: emulate a phone's viewport.
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 375, "height": 812, "deviceScaleFactor": 2, "mobile": True})
            driver.get(base + "/")
            WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
            body = driver.find_element(By.TAG_NAME, "body")
            check(driver.switch_to.active_element.get_attribute("id") == "token", "the token field has focus at once")
            driver.switch_to.active_element.send_keys(TOKEN + Keys.ENTER)
            WebDriverWait(driver, 10).until(EC.text_to_be_present_in_element((By.ID, "status"), "Showing"))
            order = []
            for _ in range(12):
                driver.switch_to.active_element.send_keys(Keys.TAB)
                order.append(driver.switch_to.active_element.get_attribute("id"))
            check(order[:4] == ["site", "from", "to", "role"] or all(x in order for x in ["site", "from", "to", "role"]),
                  f"Tab reaches every filter: {order}")
            # Choose "Source copies" with the keyboard, Tab to "Update" and press Enter.
            while driver.switch_to.active_element.get_attribute("id") != "role":
                driver.switch_to.active_element.send_keys(Keys.SHIFT + Keys.TAB)
            driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
            driver.switch_to.active_element.send_keys(Keys.TAB)
            check(driver.switch_to.active_element.text == "Update", "Tab after the filters reaches Update")
            driver.switch_to.active_element.send_keys(Keys.ENTER)
            WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "accepted-destination").text == "0")
            check(text(driver, "accepted-destination") == "0", "role filter by keyboard: destination copies drop to 0")
            viewport, width = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
            check(viewport == 375 and width <= 375, f"no horizontal scrolling at 375 px (viewport {viewport}, content {width} px wide)")
            driver.save_screenshot(os.path.join(SHOTS, "summary-375.png"))
            errors = console_errors(driver)
            check(errors == [], f"no console errors at 375 px: {errors}")
            del body
        finally:
            driver.quit()
    finally:
        process.terminate()
        process.wait(timeout=20)
    print(f"screenshots in {SHOTS}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("browser test passed")


if __name__ == "__main__":
    main()
