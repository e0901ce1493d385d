#!/usr/bin/env python3
"""The summary page in a real browser: headless Chromium (Debian's chromium + chromium-driver,
driven by Selenium) against `attribution-endpoint demo`, which fills a live server with known
traffic. Every number the page renders is checked against the NDJSON exports; the overview's
channels and both campaign crosstabs against arithmetic over them; the views and their state
against the address (a link opens the same view); a viewer token scoped to one advertiser against
everything of another's; the silence warning against /api/arrivals. The page is also used at
390 px wide and with the keyboard only, must log no console errors, and must say clearly when
the token is wrong. Saves screenshots.

Usage: scripts/browser_test.py [path/to/attribution-endpoint] [screenshot-directory]
"""
import collections
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/debug/attribution-endpoint")
SHOTS = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, ".build/browser-test")
TOKEN = "browser-test-token"
failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message)
    if not condition:
        failures.append(message)


DATA = tempfile.mkdtemp(prefix="browser-test-")


def start_demo():
    process = subprocess.Popen([BINARY, "demo", "--port", "0", "--token", TOKEN, "--data", DATA, "--public", os.path.join(ROOT, "Public")],
                               stdout=subprocess.PIPE, stderr=open(os.path.join(SHOTS, "demo.err"), "w"), text=True, cwd=ROOT)
    for line in process.stdout:
        match = re.search(r"Open\s+(http://\S+)", line)
        if match:
            return process, match.group(1).rstrip("/")
    raise RuntimeError("the demo did not print its address")


def api(base, path, token=TOKEN):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request) as response:
        return response.read().decode()


def viewer_token(advertiser, label):
    """A viewer token made as an agency would make one: with the command, in the data directory."""
    made = subprocess.run([BINARY, "viewer-token", "add", "--label", label, "--data", DATA] + (["--advertiser", advertiser] if advertiser else []),
                          capture_output=True, text=True, check=True)
    return made.stdout.strip()


def show(driver, view):
    """Clicks the view's tab and waits for its numbers."""
    driver.find_element(By.CSS_SELECTOR, f'#nav a[data-view="{view}"]').click()
    WebDriverWait(driver, 10).until(lambda d: f"view={view}" in d.current_url and not d.find_element(By.ID, "view-" + view).get_attribute("hidden")
                                    and d.find_element(By.ID, "status").text not in ("", "Loading…"))


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
    """Every row, the long tables' hidden ones too (their "Show all" is clicked first)."""
    more = driver.find_elements(By.ID, element_id + "-more")
    if more and more[0].is_displayed() and more[0].get_attribute("data-open") != "true":
        driver.execute_script("arguments[0].click()", more[0])
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
            campaigns[(r.get("campaign") or f"source id {r['source_id']}", r["source_site"], r["source_id"], role)] += 1
            conversions[(r["attributed_on_site"], r["trigger_data"], role)] += 1
            if any(reason.endswith("_token_verified") for reason in r["reasons"]):
                campaigns[(r.get("campaign") or f"source id {r['source_id']}", r["source_site"], r["source_id"], "verified")] += 1
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


def api_delete(base, path):
    request = urllib.request.Request(base + path, method="DELETE", headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read().decode())


def check_apple_ads(driver, base, day_from, day_to):
    """The Apple Ads view against /api/apple-ads, counted here from the export's lines."""
    WebDriverWait(driver, 10).until(lambda d: text(d, "apple-ads-tokens") != "0")
    lines = [json.loads(line) for line in api(base, "/api/apple-ads").splitlines() if line]
    lines = [l for l in lines if day_from <= l["received_at"][:10] <= day_to]
    # Apple's Developer Mode answers are listed in the export and counted in nothing on the page.
    tests = [l for l in lines if l["status"] == "test"]
    lines = [l for l in lines if l["status"] != "test"]
    check(all(l["campaignId"] == 1234567890 for l in tests), "only Apple's test answer is a test")
    if tests:
        check(str(len(tests)) in text(driver, "apple-ads-tests"), f"the test answers are said apart: {text(driver, 'apple-ads-tests')!r}")
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
            kind = {"download": "downloads", "redownload": "redownloads", "preorder": "pre-orders"}.get((l["conversionType"] or "").lower(), "other")
            wanted[(l["campaignId"], l["adGroupId"], l["keywordId"], kind)] += 1
    shown = collections.Counter()
    ident = lambda cell_text: None if cell_text == "—" else int(cell_text.split("\n")[-1].split()[-1])
    for campaign, group, keyword, downloads, redownloads, pre_orders in table(driver, "apple-ads-installs"):
        for kind, n in (("downloads", downloads), ("redownloads", redownloads), ("pre-orders", pre_orders)):
            if int(n):
                shown[(ident(campaign), ident(group), ident(keyword), kind)] += int(n)
    check(shown == wanted, f"Apple Ads installs table = export ({len(wanted)} cells)")
    check("puzzle game" in text(driver, "apple-ads-installs") and "Today tab" in text(driver, "apple-ads-installs"),
          "keyword and campaign names come from the registration")
    # Placement × claim, as the export's lines say it.
    claims = {"Click": "taps", "Impression": "views"}
    wanted = collections.Counter()
    for l in lines:
        if l["status"] == "attributed":
            label = {"APPSTORE_SEARCH_RESULTS": "Search Results", "APPSTORE_TODAY_TAB": "Today Tab"}.get(l["supplyPlacement"], "?")
            wanted[(label, claims.get(l["claimType"], "not stated"))] += 1
    shown = collections.Counter()
    for placement, taps, views, unstated, postbacks in table(driver, "apple-ads-placements"):
        for kind, n in (("taps", taps), ("views", views), ("not stated", unstated)):
            if int(n):
                shown[(placement, kind)] += int(n)
    check(shown == wanted and wanted[("Today Tab", "views")] > 0, f"Apple Ads placements table = export: {dict(shown)} vs {dict(wanted)}")
    driver.execute_script("document.getElementById('apple-ads').scrollIntoView()")
    driver.save_screenshot(os.path.join(SHOTS, "apple-ads-1280.png"))


def check_spend_form(driver, base, day_from, day_to):
    """Spend given through the page: the table shows the API's cost per install and return, and
    a refused file names its row in the whole file, not in the piece it was sent in."""
    driver.execute_script("document.getElementById('spend-card').scrollIntoView()")
    rows = ["date,app_id,ad_network,campaign,spend,currency"]
    # More than one piece (the page sends at most ~60 kB at a time): 1,200 rows of 80 bytes.
    day = datetime.date.fromisoformat(day_to)
    for n in range(1200):
        rows.append(f"{(day - datetime.timedelta(days=n % 30)).isoformat()},6443210987,demo-ads.skadnetwork,{1000 + n // 30:04d},1.25,EUR")
    rows.append(f"{day_to},6443210987,demo-ads.skadnetwork,4210,300.00,EUR")
    path = os.path.abspath(os.path.join(SHOTS, "spend.csv"))
    with open(path, "w") as f:
        f.write("\r\n".join(rows) + "\r\n")
    driver.find_element(By.ID, "spend-file").send_keys(path)
    driver.find_element(By.CSS_SELECTOR, "#spend-form button[type=submit]").click()
    WebDriverWait(driver, 20).until(lambda d: "rows of spend kept" in d.find_element(By.ID, "spend-status").text)
    check(text(driver, "spend-status").startswith("1201 rows"), "a long spend file goes in pieces: " + text(driver, "spend-status"))
    WebDriverWait(driver, 10).until(lambda d: len(table(d, "spend-table")) > 1)
    answer = json.loads(api(base, f"/api/apps/summary?from={day_from}&to={day_to}"))["spend_and_return"]["campaigns"]
    holiday = next(r for r in answer if r["campaign"] == "4210")
    shown = next(r for r in table(driver, "spend-table") if "Holiday video" in r[0])
    check(shown[3].replace("\u202f", " ").endswith("EUR") and holiday["cost_per_install"] is not None
          and f"{float(holiday['cost_per_install']):.2f}" in shown[3].replace(",", ""), f"cost per install = the API's: {shown} vs {holiday}")
    check(len(table(driver, "spend-table")) == len(answer), f"a row per campaign with spend ({len(answer)})")
    # A bad row in the second piece is named by its row in the file.
    rows[1100] = rows[1100].replace(",1.25,", ",-1,")
    with open(path, "w") as f:
        f.write("\r\n".join(rows) + "\r\n")
    driver.find_element(By.ID, "spend-file").clear()
    driver.find_element(By.ID, "spend-file").send_keys(path)
    driver.find_element(By.CSS_SELECTOR, "#spend-form button[type=submit]").click()
    WebDriverWait(driver, 20).until(lambda d: "Refused" in d.find_element(By.ID, "spend-status").text)
    check("row 1100: spend" in text(driver, "spend-status"), "a refusal names its row in the file: " + text(driver, "spend-status"))
    api_delete(base, f"/api/spend?from=2000-01-01&to={day_to}")


def set_value(driver, element_id, value):
    """A date-time input's value, as the page reads it (its typing format depends on the locale)."""
    driver.execute_script("const e = document.getElementById(arguments[0]); e.value = arguments[1]; e.dispatchEvent(new Event('input'))", element_id, value)


def field_error(driver, element_id):
    """The refusal shown at an input: its own message, and the input marked invalid."""
    element = driver.find_element(By.ID, element_id)
    described = element.get_attribute("aria-describedby")
    message = driver.find_element(By.ID, described).text if described else ""
    return element.get_attribute("aria-invalid") == "true", message


def click_in_row(driver, table_id, row_text, label):
    """Clicks a row's button, read and clicked in one step: the table is drawn again after each change."""
    clicked = driver.execute_script("""
        const [id, text, label] = arguments;
        const row = [...document.querySelectorAll(`#${id} tbody tr`)].find((tr) => tr.textContent.includes(text));
        const button = row && [...row.querySelectorAll("button")].find((b) => b.textContent === label);
        if (button) button.click();
        return Boolean(button);""", table_id, row_text, label)
    check(clicked, f"{label} in the row of {row_text}")


def check_register_forms(driver, base):
    """The Register view's forms, each through the admin API as curl goes: create, edit, a refusal
    shown at its field, the pixel's test, the schema editor and its preview, a token shown once."""
    show(driver, "register")
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: len(table(d, "campaigns-table")) > 0)
    # A campaign on an id the picker says is free.
    Select(driver.find_element(By.ID, "campaign-site")).select_by_value("news.example")
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: text(d, "picker-site") == "news.example")
    ids = json.loads(api(base, "/api/campaigns/source-ids?source_site=news.example"))
    free = next(s["source_id"] for s in ids["source_ids"] if s["free"] and s["source_id"] > 200 and "next_campaign" not in s)
    driver.find_element(By.CSS_SELECTOR, "#source-id-picker summary").click()
    driver.find_element(By.XPATH, f"//div[@id='picker-grid']/button[text()='{free}']").click()
    check(driver.find_element(By.ID, "campaign-id").get_attribute("value") == str(free), f"the picker fills the id ({free})")
    driver.find_element(By.ID, "campaign-destination").send_keys("shop.example")
    driver.find_element(By.ID, "campaign-name").send_keys("Browser test campaign")
    set_value(driver, "campaign-start", "2026-11-01T00:00")
    driver.find_element(By.ID, "campaign-submit").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: any("Browser test campaign" in r[0] for r in table(d, "campaigns-table")))
    made = [c for c in json.loads(api(base, "/api/campaigns")) if c["name"] == "Browser test campaign"]
    check(len(made) == 1 and made[0]["source_id"] == free and made[0]["starts_at"].startswith("2026-11-01T00:00"), f"the campaign is registered as typed: {made}")
    # The same id again, overlapping: refused at the id, with the reason.
    driver.find_element(By.ID, "campaign-id").send_keys(str(free))
    driver.find_element(By.ID, "campaign-destination").send_keys("shop.example")
    driver.find_element(By.ID, "campaign-name").send_keys("Clashing campaign")
    set_value(driver, "campaign-start", "2026-11-05T00:00")
    driver.find_element(By.ID, "campaign-submit").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: field_error(d, "campaign-id")[0])
    invalid, message = field_error(driver, "campaign-id")
    check(invalid and "belongs to" in message and "Browser test campaign" in message, f"a refusal is shown at its field: {message}")
    driver.find_element(By.ID, "campaign-form").find_element(By.CSS_SELECTOR, "button[type=submit]")
    driver.execute_script("document.getElementById('campaign-form').reset()")
    # Ended from its row: the API has its end.
    click_in_row(driver, "campaigns-table", "Browser test campaign", "End now")
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: [c for c in json.loads(api(base, "/api/campaigns")) if c["name"] == "Browser test campaign"][0].get("ends_at"))
    check(True, "a campaign is ended from its row")
    # Edited: renamed through the same form.
    click_in_row(driver, "campaigns-table", "Browser test campaign", "Edit")
    check(not driver.find_element(By.ID, "campaign-id").is_enabled(), "editing keeps the id fixed")
    name = driver.find_element(By.ID, "campaign-name")
    name.clear()
    name.send_keys("Browser test campaign, renamed")
    driver.find_element(By.ID, "campaign-submit").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: any("renamed" in r[0] for r in table(d, "campaigns-table")))
    check(any(c["name"] == "Browser test campaign, renamed" for c in json.loads(api(base, "/api/campaigns"))), "a campaign is renamed")

    # A conversion, its pixel tag and the pixel's test.
    Select(driver.find_element(By.ID, "conversion-site")).select_by_value("shop.example")
    taken = {c["trigger_data"] for c in json.loads(api(base, "/api/conversions")) if c["site"] == "shop.example"}
    labels = [o.text for o in Select(driver.find_element(By.ID, "conversion-data")).options]
    check(all(("taken" in labels[n]) == (n in taken) for n in range(16)), f"the values already taken are shown: {labels}")
    data = next(n for n in range(16) if n not in taken)
    Select(driver.find_element(By.ID, "conversion-data")).select_by_value(str(data))
    driver.find_element(By.ID, "conversion-name").send_keys("browser-test")
    driver.find_element(By.ID, "conversion-priority").clear()
    driver.find_element(By.ID, "conversion-priority").send_keys("5")
    driver.find_element(By.CSS_SELECTOR, "#conversion-form button[type=submit]").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.find_element(By.ID, "pixel").is_displayed())
    check(text(driver, "pixel-tag") == '<img src="https://shop.example/conversion-pixel?conversion=browser-test" width="1" height="1" alt="">',
          "the same-site tag: " + text(driver, "pixel-tag"))
    Select(driver.find_element(By.ID, "pixel-publisher")).select_by_value("news.example")
    check("https://news.example/conversion-pixel?conversion=browser-test&amp;site=shop.example" in driver.find_element(By.ID, "pixel-tag").get_attribute("innerHTML"),
          "the cross-site tag: " + text(driver, "pixel-tag"))
    driver.find_element(By.ID, "pixel-test").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: "302" in d.find_element(By.ID, "pixel-result").text)
    check(f"trigger-attribution/{data:02d}/05" in text(driver, "pixel-result") and "Nothing was recorded" in text(driver, "pixel-result"),
          "the pixel's test shows the redirect: " + text(driver, "pixel-result"))

    # An app and its schema: a bad currency refused at its cell, fixed, then the preview.
    driver.find_element(By.ID, "app-id").send_keys("6443219999")
    Select(driver.find_element(By.ID, "app-site-input")).select_by_value("app.example")
    driver.find_element(By.ID, "app-name").send_keys("Browser Test App")
    cells = driver.find_elements(By.CSS_SELECTOR, "#schema-fine tbody tr:first-child input")
    for cell, value in zip(cells, ["0", "9", "tutorial", "tutorial_done"]):
        cell.send_keys(value)
    driver.find_element(By.ID, "schema-add").click()
    cells = driver.find_elements(By.CSS_SELECTOR, "#schema-fine tbody tr:nth-child(2) input")
    for cell, value in zip(cells, ["10", "63", "purchase", "", "0.99", "49.99", "usd"]):
        if value:
            cell.send_keys(value)
    driver.find_element(By.ID, "app-submit").click()
    currency = cells[6]
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: currency.get_attribute("aria-invalid") == "true")
    message = driver.find_element(By.ID, currency.get_attribute("aria-describedby")).text
    check("ISO 4217" in message, f"a schema refusal is shown at its cell: {message}")
    currency.clear()
    currency.send_keys("USD")
    driver.find_element(By.ID, "schema-preview-value").send_keys("12")
    check(text(driver, "schema-preview").startswith("12: purchase") and "49.99" in text(driver, "schema-preview"), "the preview decodes a value: " + text(driver, "schema-preview"))
    driver.find_element(By.ID, "app-submit").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: any("Browser Test App" in r[0] for r in table(d, "apps-table")))
    app = next(a for a in json.loads(api(base, "/api/apps")) if a["app_id"] == 6443219999)
    check(app["schema"]["fine"][1]["revenue"] == {"min": 0.99, "max": 49.99, "currency": "USD"} and len(app["schema_versions"]) == 1, f"the app is registered as typed: {app['schema']}")

    # An app edited and saved unchanged: the form keeps every part of its schema, so no new version.
    before = next(a for a in json.loads(api(base, "/api/apps")) if a["app_id"] == 6443210987)
    click_in_row(driver, "apps-table", "app 6443210987", "Edit")
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: not d.find_element(By.ID, "app-id").is_enabled())
    driver.find_element(By.ID, "app-submit").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.find_element(By.ID, "app-id").is_enabled())
    after = next(a for a in json.loads(api(base, "/api/apps")) if a["app_id"] == 6443210987)
    check(after["schema"] == before["schema"] and len(after["schema_versions"]) == len(before["schema_versions"]),
          f"an app saved unchanged keeps its schema whole, with no new version: {after['schema'].get('lock_at')}")

    # Names: an ad network with its campaigns, and an Apple Ads campaign.
    driver.find_element(By.ID, "network-id").send_keys("browser.skadnetwork")
    driver.find_element(By.ID, "network-name").send_keys("Browser Ads")
    driver.find_element(By.ID, "network-campaigns").send_keys("4321 = Autumn\n#7 = Old banner")
    driver.find_element(By.CSS_SELECTOR, "#network-form button[type=submit]").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: any("Browser Ads" in r[0] for r in table(d, "networks-table")))
    network = next(n for n in json.loads(api(base, "/api/ad-networks")) if n["id"] == "browser.skadnetwork")
    check(network["campaigns"] == [{"source_identifier": "4321", "name": "Autumn"}, {"campaign_id": 7, "name": "Old banner"}], f"an ad network is named with its campaigns: {network}")
    driver.find_element(By.ID, "apple-campaign-id").send_keys("987654321")
    driver.find_element(By.ID, "apple-campaign-name").send_keys("Browser search")
    driver.find_element(By.ID, "apple-ad-groups").send_keys("11 = Puzzle lovers")
    driver.find_element(By.ID, "apple-keywords").send_keys("21 = puzzle games")
    driver.find_element(By.CSS_SELECTOR, "#apple-ads-name-form button[type=submit]").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: any("Browser search" in r[0] for r in table(d, "apple-names-table")))
    named = next(c for c in json.loads(api(base, "/api/apple-ads/campaigns")) if c["campaign_id"] == 987654321)
    check(named["name"] == "Browser search" and named["ad_groups"] == [{"id": 11, "name": "Puzzle lovers"}] and named["keywords"] == [{"id": 21, "name": "puzzle games"}],
          f"an Apple Ads campaign is named with its ad groups and keywords: {named}")

    # The Info.plist check is on the same screen as the app's registration.
    check(driver.execute_script("return document.getElementById('plist').closest('.view').id") == "view-register"
          and driver.find_element(By.ID, "plist-form").is_displayed(), "the Info.plist check is beside the app's registration")

    # In a cluster the form shows the file change instead of sending it (the page's side: the node
    # that refuses such writes is ClusterModeTests').
    driver.execute_script("whoami.cluster = true")
    Select(driver.find_element(By.ID, "conversion-site")).select_by_value("shop.example")
    driver.find_element(By.ID, "conversion-name").send_keys("cluster-test")
    driver.find_element(By.CSS_SELECTOR, "#conversion-form button[type=submit]").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.find_element(By.ID, "paste").is_displayed())
    pasted = json.loads(text(driver, "paste-text"))
    check(list(pasted) == ["conversions"] and pasted["conversions"][0]["name"] == "cluster-test"
          and not any(c["name"] == "cluster-test" for c in json.loads(api(base, "/api/conversions"))),
          f"in a cluster a form shows the file change, ready to paste, and sends nothing: {pasted}")
    driver.execute_script("whoami.cluster = false; document.getElementById('paste').hidden = true; document.getElementById('conversion-form').reset()")

    # A viewer token, shown once.
    driver.find_element(By.ID, "viewer-label").send_keys("Browser test viewer")
    Select(driver.find_element(By.ID, "viewer-advertiser")).select_by_value("acme")
    driver.find_element(By.CSS_SELECTOR, "#viewer-token-form button[type=submit]").click()
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.find_element(By.ID, "new-token").is_displayed())
    made = text(driver, "new-token-value")
    check(made.startswith("vt_") and "cannot be shown again" in text(driver, "new-token"), "a new token is shown once, and says so")
    check(json.loads(api(base, "/api/whoami", token=made))["advertiser"]["id"] == "acme", "the token shown reads acme")
    check(made not in api(base, "/api/viewer-tokens"), "the list never shows a token again")

    # By keyboard alone: an advertiser typed field to field and sent with Enter.
    driver.execute_script("document.getElementById('advertiser-id').focus()")
    for keys in ["keyboard-co", Keys.TAB, "Keyboard Co", Keys.TAB, "keyboard.example", Keys.ENTER]:
        driver.switch_to.active_element.send_keys(keys)
    WebDriverWait(driver, 10, ignored_exceptions=(StaleElementReferenceException,)).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#advertiser-sites[aria-invalid='true']") or
                                    any("Keyboard Co" in r[0] for r in table(d, "advertisers-table")))
    invalid, message = field_error(driver, "advertiser-sites")
    # keyboard.example is served by no one: refused at the sites, by keyboard too.
    check(invalid and "does not serve" in message, f"a refusal by keyboard is shown at its field: {message}")
    driver.switch_to.active_element.send_keys(Keys.CONTROL + "a", "keyboard.example, shop.example")
    check(driver.switch_to.active_element.get_attribute("id") == "advertiser-sites", "the refused field has the focus")
    driver.save_screenshot(os.path.join(SHOTS, "register-1280.png"))


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


def check_setup(driver, base):
    """The setup card: a development URL made on the page, a device's development postback shown
    by the card's own refresh, and paste and verify against Apple's examples."""
    driver.execute_script("document.getElementById('setup').scrollIntoView()")
    WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#setup-app option"))
    app_id = driver.find_element(By.ID, "setup-app").get_attribute("value")
    driver.find_element(By.ID, "setup-make-path").click()
    WebDriverWait(driver, 10).until(lambda d: "New development URL" in d.find_element(By.ID, "status").text)
    url = text(driver, "status").split(": ", 1)[1].split(" ")[0]
    path = urllib.parse.urlsplit(url).path
    check(path.startswith("/development-postbacks/") and path.endswith("/"), f"the page made a development URL: {url}")
    with open(os.path.join(ROOT, "Tests/PostbackTests/Resources/vectors/adattributionkit_postbacks.json")) as f:
        sample = json.load(f)["apple_doc_developer_settings"]["body"]
    stored_before = len(api(base, "/api/postbacks").splitlines())
    # As the device sends it, to the URL Settings › Developer was given.
    request = urllib.request.Request(base + path, data=json.dumps(sample).encode(), method="POST",
                                     headers={"Host": urllib.parse.urlsplit(url).netloc, "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as response:
        check(response.status == 200, "the device's development postback is taken")
    # No click: the card asks again by itself.
    WebDriverWait(driver, 15).until(lambda d: "development path" in d.find_element(By.ID, "setup-last").text)
    check("Apple's development key" in text(driver, "setup-last"), "the setup card says which key verified it: " + text(driver, "setup-last"))
    facts = {row[0]: row[1] for row in table(driver, "setup-facts")}
    check(facts.get("Development URL") == url, f"the card shows the development URL: {facts}")
    check(any(row[0] == "In the production log" for row in table(driver, "setup-fields")), "the last development postback's fields are decoded")
    check(len(api(base, "/api/postbacks").splitlines()) == stored_before, "the development postback is not among the production postbacks")
    # Paste and verify: Apple's 3.0 example, and the same with a signed field changed.
    with open(os.path.join(ROOT, "Tests/PostbackTests/Resources/vectors/skadnetwork_postbacks.json")) as f:
        vectors = json.load(f)
    for name, outcome in [("apple_3.0_win", "apple: Apple's SKAdNetwork P-256 key verifies it"), ("apple_3.0_win_tampered_campaign", "invalid: no key verifies it")]:
        area = driver.find_element(By.ID, "verify-text")
        driver.execute_script("arguments[0].value = arguments[1]", area, json.dumps(vectors[name]["postback"]))
        driver.find_element(By.CSS_SELECTOR, "#verify-form button[type=submit]").click()
        WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "verify-verdict").text.startswith(outcome.split(":")[0] + ":"))
        check(text(driver, "verify-verdict").startswith(outcome), f"paste and verify {name}: {text(driver, 'verify-verdict')}")
    rows = {row[0]: row[1] for row in table(driver, "verify-fields")}
    check(rows.get("Protocol") == "skadnetwork 3.0" and "transaction-id" in rows, f"the pasted postback's fields: {sorted(rows)[:6]}")
    driver.execute_script("document.getElementById('setup').scrollIntoView()")
    driver.save_screenshot(os.path.join(SHOTS, "setup-1280.png"))
    return app_id


def log_in(driver, base, token, fragment=""):
    driver.get(base + "/" + fragment)
    field = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
    field.send_keys(token)
    field.send_keys(Keys.ENTER)
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "status").text not in ("", "Loading…"))


def check_overview(driver, base, day_from, day_to, advertiser):
    """The overview's channels against arithmetic over the exports, for the advertiser's sites."""
    sites = set(advertiser["sites"])
    reports = [json.loads(l) for l in api(base, "/api/reports").splitlines()]
    reports = [r for r in reports if day_from <= r["received_at"][:10] <= day_to and r["site"] in sites and r["verdict"] == "accepted"]
    copy = "destination" if any(r["role"] == "destination" for r in reports) else "source"
    web = sum(1 for r in reports if r["role"] == copy)
    installs = reengagements = 0
    for line in api(base, "/api/postbacks").splitlines():
        p = json.loads(line)
        if not (day_from <= p["received_at"][:10] <= day_to) or p["site"] not in sites or p["verdict"] != "accepted":
            continue
        if p.get("postback-sequence-index", 0) != 0 or p.get("did-win") is False:
            continue
        if p["protocol"] == "adattributionkit" and p["conversion-type"] in ("re-engagement", "reengagement"):
            reengagements += 1
        else:
            installs += 1
    apple = sum(1 for l in api(base, "/api/apple-ads").splitlines()
                if json.loads(l)["status"] == "attributed" and json.loads(l)["site"] in sites and day_from <= json.loads(l)["received_at"][:10] <= day_to)
    shown = {t.get_attribute("data-channel"): int(t.find_element(By.CLASS_NAME, "value").text)
             for t in driver.find_elements(By.CSS_SELECTOR, "#overview-tiles .tile")}
    wanted = {"web": web, "app_installs": installs, "re_engagements": reengagements, "apple_ads": apple}
    check(shown == wanted, f"overview for {advertiser['id']} = the exports' arithmetic: {shown} vs {wanted}")
    check(all(v > 0 for v in wanted.values()), f"the demo fills every channel of its brand: {wanted}")
    lines = driver.find_elements(By.CSS_SELECTOR, "#overview-chart polyline")
    check(len(lines) == 4, f"one line per channel on one chart ({len(lines)})")
    check("never added" in text(driver, "overview-note"), "the overview says why channels are not added")
    check(len(driver.find_elements(By.CSS_SELECTOR, "#overview-top table.top:not(.placements):not(.revenue)")) == 4, "top campaigns for each channel")
    revenue = driver.find_elements(By.CSS_SELECTOR, "#overview-top table.revenue")
    check(len(revenue) == 1 and "not a measured amount" in revenue[0].find_element(By.TAG_NAME, "caption").text,
          "app installs show estimated revenue, labelled as an estimate")
    # Apple Ads' placements, both ways, beside its top campaigns.
    placements = table(driver, "overview-top table.placements")
    check(any(row[0] == "Today Tab" and int(row[1]) > 0 for row in placements), f"the Apple Ads line has its placements: {placements}")


def check_crosstab(driver, base, day_from, day_to):
    """Campaign × conversion: each cell against the export, one copy of each conversion."""
    header = [th.text.split("\n") for th in driver.find_elements(By.CSS_SELECTOR, "#crosstab thead th")][1:-1]
    columns = [(h[1].split(" · ")[0], int(h[1].split(" · ")[1])) for h in header]
    shown = collections.Counter()
    for tr in driver.find_elements(By.CSS_SELECTOR, "#crosstab tbody tr"):
        label = tr.find_element(By.TAG_NAME, "th").text.split("\n")[1]
        site, source_id = re.match(r"(\S+) · source id (\d+)", label).groups()
        for column, td in zip(columns, tr.find_elements(By.TAG_NAME, "td")[:-1]):
            if int(td.text):
                shown[(site, int(source_id)) + column] += int(td.text)
    wanted = collections.Counter()
    for line in api(base, "/api/reports").splitlines():
        r = json.loads(line)
        if day_from <= r["received_at"][:10] <= day_to and r["verdict"] == "accepted" and r["role"] == "destination":
            wanted[(r["source_site"], r["source_id"], r["attributed_on_site"], r["trigger_data"])] += 1
    check(shown == wanted and len(wanted) > 3, f"campaign × conversion = export's destination copies ({len(wanted)} cells)")
    check("destination copies" in text(driver, "crosstab-copy"), "the crosstab says which copy it counts")


def check_url_state(driver, base):
    """Filters go into the address; the address opened in another browser opens the same view."""
    show(driver, "web")
    Select(driver.find_element(By.ID, "advertiser")).select_by_value("acme")
    WebDriverWait(driver, 10).until(lambda d: "advertiser=acme" in d.current_url)
    # The address changes before the view is read again: the filter is used once it is shown.
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "site").is_displayed())
    Select(driver.find_element(By.ID, "site")).select_by_value("shop.example")
    WebDriverWait(driver, 10).until(lambda d: "site=shop.example" in d.current_url)
    WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "status").text.startswith("Showing"))
    url = driver.current_url
    check(all(part in url for part in ["view=web", "advertiser=acme", "site=shop.example", "from=", "to="]), f"the view's state is in the address: {url}")
    numbers = (text(driver, "accepted-source"), text(driver, "accepted-destination"))
    other = browser(1280, 1000)
    try:
        fragment = url[url.index("#"):]
        log_in(other, base, TOKEN, fragment)
        WebDriverWait(other, 10).until(lambda d: d.find_element(By.ID, "status").text.startswith("Showing"))
        same = (text(other, "accepted-source"), text(other, "accepted-destination"))
        check(not other.find_element(By.ID, "view-web").get_attribute("hidden") and same == numbers,
              f"a link opens the same view with the same numbers: {same} vs {numbers}")
        check(other.find_element(By.ID, "site").get_attribute("value") == "shop.example"
              and other.find_element(By.ID, "advertiser").get_attribute("value") == "acme", "and the same advertiser and site")
        check(TOKEN not in other.current_url, "the token is never in the address")
    finally:
        other.quit()
    # Back returns to the previous view.
    show(driver, "apps")
    driver.back()
    WebDriverWait(driver, 10).until(lambda d: "view=web" in d.current_url and not d.find_element(By.ID, "view-web").get_attribute("hidden"))
    check(True, "Back returns to the previous view")
    Select(driver.find_element(By.ID, "advertiser")).select_by_value("")
    WebDriverWait(driver, 10).until(lambda d: "advertiser=" not in d.current_url)


def check_viewer(base, advertisers):
    """A viewer token scoped to the publisher: its role shown, its numbers only, acme's refused."""
    token = viewer_token("news", "News Daily's dashboard")
    driver = browser(1280, 1000)
    try:
        log_in(driver, base, token)
        WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "caller")))
        role = text(driver, "caller")
        check("Viewer" in role and "News Daily" in role and "changes nothing" in role, f"the page shows the viewer's role: {role}")
        check(not driver.find_element(By.ID, "nav-register").is_displayed(), "a viewer token is offered no forms")
        driver.get(base + "/#view=register")
        WebDriverWait(driver, 10).until(lambda d: "view=overview" in d.current_url)
        check(driver.find_element(By.ID, "view-register").get_attribute("hidden") is not None, "a viewer's link to the forms opens the overview")
        select = driver.find_element(By.ID, "advertiser")
        check(not select.is_enabled() and Select(select).first_selected_option.text == "News Daily", "a scoped viewer's advertiser is fixed")
        tiles = {t.get_attribute("data-channel"): int(t.find_element(By.CLASS_NAME, "value").text)
                 for t in driver.find_elements(By.CSS_SELECTOR, "#overview-tiles .tile")}
        check(tiles["app_installs"] == 0 and tiles["apple_ads"] == 0 and tiles["web"] > 0, f"the publisher's overview has no app numbers: {tiles}")
        show(driver, "web")
        sites = [o.get_attribute("value") for o in driver.find_elements(By.CSS_SELECTOR, "#site option") if o.get_attribute("value")]
        check(sites == ["news.example"], f"a scoped viewer's site list is its own: {sites}")
        check(int(text(driver, "accepted-destination")) == 0 and int(text(driver, "accepted-source")) > 0, "its web view counts its own copies")
        page = driver.find_element(By.TAG_NAME, "body").text
        check("shop.example ·" not in page.split("Campaign × conversion")[0], "nothing of acme's sites in its totals")
        # Another advertiser's link: refused, not shown.
        driver.get(base + "/#view=web&advertiser=acme")
        WebDriverWait(driver, 10).until(lambda d: "403" in d.find_element(By.ID, "status").text)
        check("reads advertiser news" in text(driver, "status"), "another advertiser's link is refused: " + text(driver, "status"))
        show(driver, "tools")
        arrivals = [row[0].split("\n")[0] for row in table(driver, "arrivals")]
        check(arrivals == ["news.example"], f"its arrivals are its own: {arrivals}")
        errors = console_errors(driver)
        # The refused link's 403 is logged by the browser itself, as a wrong token's 401 is.
        check(all("403" in e["message"] for e in errors), f"no console errors but the refused link: {errors}")
    finally:
        driver.quit()
    # What the page read, read with the token: every path keeps to the publisher's site.
    # (A publisher's own reports name the advertiser's site as attributed_on_site: the site each
    # record was sent to is what must be the publisher's.)
    for path in ["/api/reports", "/api/postbacks", "/api/apple-ads"]:
        sites = {json.loads(line)["site"] for line in api(base, path, token).splitlines() if line}
        check(sites <= {"news.example"}, f"{path} holds only what was sent to news.example: {sites}")
    rows = api(base, "/api/reports.csv", token).splitlines()
    column = rows[0].split(",").index("site")
    check(len(rows) > 1 and {row.split(",")[column] for row in rows[1:]} == {"news.example"}, "the CSV export too")
    recent = json.loads(api(base, "/api/rejections", token))["recent"]
    check({r["site"] for r in recent} <= {"news.example"}, f"its refusals are those sent to its site: {len(recent)}")
    metrics = api(base, "/metrics", token)
    check("shop.example" not in metrics and "app.example" not in metrics and "attribution_reports_total" not in metrics,
          "its metrics are its site's series alone")
    try:
        api(base, "/api/summary?advertiser=acme", token)
        check(False, "another advertiser's summary is refused")
    except urllib.error.HTTPError as error:
        check(error.code == 403, f"another advertiser's summary is refused: {error.code}")
    request = urllib.request.Request(base + "/api/conversions", data=b"{}", method="POST", headers={"Authorization": "Bearer " + token})
    try:
        urllib.request.urlopen(request)
        check(False, "a viewer token cannot register")
    except urllib.error.HTTPError as error:
        problem = json.loads(error.read().decode())
        check(error.code == 403 and problem["rule"] == "viewer_token_read_only", f"a viewer token cannot register: {error.code} {problem['rule']}")


def check_health(driver, base):
    """The silence warning names the app and the Info.plist keys, as /api/arrivals does."""
    arrivals = json.loads(api(base, "/api/arrivals"))
    silent = [r for r in arrivals["sites"] + arrivals["apps"] if r["silent"]]
    items = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#health-list li")]
    check(items == [r["warning"] for r in silent] and len(items) == 1, f"the page warns of each silent site or app: {items}")
    check("Demo Puzzle Lite" in items[0] and "NSAdvertisingAttributionReportEndpoint" in items[0] and "AttributionCopyEndpoint" in items[0],
          "the warning names the app and the keys to check")


def check_relays(base):
    """A relay destination that answers nothing: listed in Tools, then, an hour of the demo's clock
    later, called out above every view in the words /api/relays uses."""
    apps = json.loads(api(base, "/api/apps"))
    app_id = apps[0]["app_id"]
    # Port 9 on loopback: nothing listens there, so every attempt is refused.
    api_post(base, "/api/relays", json.dumps({"name": "collector", "url": "http://127.0.0.1:9/copies", "app_id": app_id,
                                              "protocols": ["skadnetwork", "adattributionkit"], "internal": True}).encode())
    def standing():
        return next(d for d in json.loads(api(base, "/api/relays"))["destinations"] if d["destination"]["name"] == "collector")
    deadline = time.time() + 30
    while standing()["state"] != "retrying" and time.time() < deadline:
        time.sleep(0.2)  # polling another process's relay over HTTP, bounded
    first = standing()
    check(first["state"] == "retrying" and "refused" in (first.get("last_error") or ""), f"the relay to nowhere is retrying: {first['state']} {first.get('last_error')}")
    since = first["failing_since"]
    later = (datetime.datetime.fromisoformat(since.replace("Z", "+00:00")) + datetime.timedelta(seconds=3601)).strftime("%Y-%m-%dT%H:%M:%SZ")
    api_post(base, "/admin/clock", json.dumps({"now": later}).encode())
    failing = standing()
    check(failing["state"] == "failing" and failing["warning"].startswith("Relay destination collector"), f"an hour later it is failing: {failing['state']}")
    driver = browser(1280, 1000)
    try:
        log_in(driver, base, TOKEN, "#view=tools")
        WebDriverWait(driver, 10).until(lambda d: d.find_elements(By.CSS_SELECTOR, "#relays tbody tr"))
        rows = table(driver, "relays")
        check(len(rows) == 1 and rows[0][0].startswith("collector") and rows[0][2].startswith("failing"), f"Tools lists the relay and its state: {rows}")
        items = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#health-list li")]
        check(any(item.startswith(failing["warning"].split(" The last error")[0]) for item in items), f"the failing relay is called out above the view: {items}")
        show(driver, "overview")
        try:
            # (Its last error's time moves on with each attempt: the warning is matched by its start.)
            WebDriverWait(driver, 10).until(lambda d: any(li.text.startswith("Relay destination collector (http://127.0.0.1:9/copies) has taken no copy since")
                                                          for li in d.find_elements(By.CSS_SELECTOR, "#health-list li")))
            check(True, "and above every view")
        except Exception:
            check(False, "and above every view: " + str([li.text for li in driver.find_elements(By.CSS_SELECTOR, "#health-list li")]))
        check(console_errors(driver) == [], f"no console errors: {console_errors(driver)}")
    finally:
        driver.quit()


def check_narrow(base):
    """390 px wide, keyboard only: log in, reach the views and filters, no horizontal scrolling."""
    driver = browser(500, 900)
    try:
        # Headless Chromium will not make a window narrower than 500 px: emulate a phone's viewport.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
        driver.get(base + "/")
        WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
        check(driver.switch_to.active_element.get_attribute("id") == "token", "the token field has focus at once")
        driver.switch_to.active_element.send_keys(TOKEN + Keys.ENTER)
        WebDriverWait(driver, 10).until(EC.text_to_be_present_in_element((By.ID, "status"), "Showing"))
        # From the advertiser filter, Shift+Tab goes back through the views' tabs, Tab on to the period.
        driver.execute_script("document.getElementById('advertiser').focus()")
        order = []
        for keys in [Keys.SHIFT + Keys.TAB] * 6 + [Keys.TAB] * 11:
            driver.switch_to.active_element.send_keys(keys)
            order.append(driver.switch_to.active_element.get_attribute("id") or driver.switch_to.active_element.get_attribute("data-view"))
        check(all(x in order for x in ["overview", "web", "apps", "apple-ads", "tools", "advertiser", "from", "to"]), f"Tab reaches the views and the filters: {order}")
        # To the Web view by keyboard, then the copies filter by keyboard.
        while driver.switch_to.active_element.get_attribute("data-view") != "web":
            driver.switch_to.active_element.send_keys(Keys.SHIFT + Keys.TAB)
        driver.switch_to.active_element.send_keys(Keys.ENTER)
        WebDriverWait(driver, 10).until(lambda d: "view=web" in d.current_url and d.find_element(By.ID, "status").text.startswith("Showing"))
        for _ in range(30):
            driver.switch_to.active_element.send_keys(Keys.TAB)
            if driver.switch_to.active_element.get_attribute("id") == "role":
                break
        check(driver.switch_to.active_element.get_attribute("id") == "role", "Tab reaches the copies filter")
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        WebDriverWait(driver, 10).until(lambda d: "role=source" in d.current_url and d.find_element(By.ID, "accepted-destination").text == "0")
        check(text(driver, "accepted-destination") == "0", "copies filter by keyboard: destination copies drop to 0")
        for view in ["overview", "web", "apps", "apple-ads", "tools", "register"]:
            show(driver, view)
            viewport, width = driver.execute_script("return [window.innerWidth, document.documentElement.scrollWidth]")
            check(viewport == 390 and width <= 390, f"{view}: no horizontal scrolling at 390 px (content {width} px wide)")
            if view == "apps":
                kept = driver.execute_script("""
                    const box = document.getElementById('apps-crosstab').closest('.scroll');
                    const first = box.querySelector('tbody tr > :first-child'), last = box.querySelector('tbody tr > :last-child');
                    return [box.classList.contains('overflowing'), first && getComputedStyle(first).position, last && getComputedStyle(last).position,
                            box.nextElementSibling.offsetParent !== null];""")
                check(kept == [True, "sticky", "sticky", True], f"a wide table keeps its name and total in view and says more columns exist: {kept}")
            if view in ("overview", "apps", "register"):
                driver.save_screenshot(os.path.join(SHOTS, f"{view}-390.png"))
        # A form at 390 px, by keyboard alone: a conversion typed field to field, sent with Enter.
        show(driver, "register")
        driver.execute_script("document.getElementById('conversion-site').focus()")
        for keys in ["shop", Keys.TAB, "narrow-test", Keys.TAB, Keys.TAB, "3", Keys.ENTER]:
            driver.switch_to.active_element.send_keys(keys)
        WebDriverWait(driver, 10).until(lambda d: d.find_element(By.ID, "pixel").is_displayed())
        made = [c for c in json.loads(api(base, "/api/conversions")) if c["name"] == "narrow-test"]
        check(len(made) == 1 and made[0]["site"] == "shop.example" and made[0]["priority"] == 3, f"a form filled by keyboard at 390 px: {made}")
        check(driver.execute_script("return document.documentElement.scrollWidth") <= 390, "the pixel's tag fits 390 px")
        errors = console_errors(driver)
        check(errors == [], f"no console errors at 390 px: {errors}")
    finally:
        driver.quit()


def check_metrics_conventions(base):
    """The demo's /metrics (sites, apps, a relay, Apple Ads, every surface's series) as Prometheus'
    own linter reads it: base units, names, HELP and TYPE. Debian's `prometheus` has promtool."""
    result = subprocess.run(["promtool", "check", "metrics"], input=api(base, "/metrics"), capture_output=True, text=True)
    check(result.returncode == 0, f"promtool check metrics is clean on a live /metrics: {(result.stdout + result.stderr).strip()}")


def main():
    os.makedirs(SHOTS, exist_ok=True)
    process, base = start_demo()
    try:
        check_metrics_conventions(base)
        driver = browser(1280, 1000)
        try:
            # A wrong token gets a clear message and the login form again.
            driver.get(base + "/")
            field = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
            field.send_keys("not-the-token" + Keys.ENTER)
            error = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "login-error")))
            check("not accepted" in error.text, "a wrong token is answered with a clear message: " + error.text)
            check(not driver.find_element(By.ID, "summary").is_displayed(), "a wrong token shows no numbers")
            # The browser itself logs the refused request; what follows must log nothing.
            driver.get_log("browser")

            field = WebDriverWait(driver, 10).until(EC.visibility_of_element_located((By.ID, "token")))
            field.send_keys(TOKEN + Keys.ENTER)
            WebDriverWait(driver, 10).until(EC.text_to_be_present_in_element((By.ID, "status"), "Showing"))
            check("view=overview" in driver.current_url and not driver.find_element(By.ID, "view-overview").get_attribute("hidden"),
                  "the first view is the overview")
            check("Admin" in text(driver, "caller"), "the page shows the admin role: " + text(driver, "caller"))
            day_from = driver.find_element(By.ID, "from").get_attribute("value")
            day_to = driver.find_element(By.ID, "to").get_attribute("value")
            advertisers = json.loads(api(base, "/api/advertisers"))
            check_health(driver, base)
            Select(driver.find_element(By.ID, "advertiser")).select_by_value("acme")
            WebDriverWait(driver, 10).until(lambda d: "Acme Puzzles" in d.find_element(By.ID, "overview-who").text)
            check_overview(driver, base, day_from, day_to, next(a for a in advertisers if a["id"] == "acme"))
            driver.save_screenshot(os.path.join(SHOTS, "overview-1280.png"))
            Select(driver.find_element(By.ID, "advertiser")).select_by_value("")
            WebDriverWait(driver, 10).until(lambda d: "Every site" in d.find_element(By.ID, "overview-who").text)

            show(driver, "web")
            counts, campaigns, conversions, reasons = expected_from_export(base, day_from, day_to)
            check(int(text(driver, "accepted-source")) == counts["accepted_source"],
                  f"source copies {text(driver, 'accepted-source')} = export {counts['accepted_source']}")
            check(int(text(driver, "accepted-destination")) == counts["accepted_destination"],
                  f"destination copies {text(driver, 'accepted-destination')} = export {counts['accepted_destination']}")
            check(int(text(driver, "quarantined-total")) == counts["quarantined"],
                  f"quarantined {text(driver, 'quarantined-total')} = export {counts['quarantined']}")
            check(int(text(driver, "late-total")) == counts["late"], f"late {text(driver, 'late-total')} = export {counts['late']}")
            check(counts["accepted_source"] > 0 and counts["quarantined"] > 0 and counts["late"] > 0, "the demo produced every kind")
            check_crosstab(driver, base, day_from, day_to)
            bars = driver.find_elements(By.CSS_SELECTOR, "#chart rect")
            check(len(bars) == 2 * 30, f"the chart draws two bars for each of the 30 days ({len(bars)})")
            driver.save_screenshot(os.path.join(SHOTS, "web-1280.png"))

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
            # A verified token is noted beside the causes, never counted as one.
            causes = {k: tuple(v) for k, v in wanted.items() if not k.endswith("_verified")}
            check(shown == causes, f"quarantine causes = export: {sorted(shown)}")
            noted = [k for k in wanted if k.endswith("_verified")]
            check(all(k in text(driver, "quarantine-note") for k in noted), "verified tokens are noted apart: " + text(driver, "quarantine-note"))
            rejected = {row[0]: int(row[1]) for row in table(driver, "rejections")}
            check(rejected == json.loads(api(base, "/api/rejections"))["counts"], f"refusals = /api/rejections: {rejected}")
            # The Apps view: every number against /api/postbacks.
            show(driver, "apps")
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
                campaign_id = campaign.split("\n")[-1].split(" · ")[0]
                for kind, n in [("installs", installs), ("redownloads", redownloads), ("re_engagements", reengagements)]:
                    if int(n):
                        shown[(network_id, campaign_id, kind)] += int(n)
            check(shown == rows, f"Apps campaign table = export ({len(rows)} cells)")
            check("Holiday video" in text(driver, "apps-campaigns"), "campaign names come from the registered ad network")
            fine = {row[0].split("\n")[0]: int(row[2]) for row in table(driver, "apps-fine")}
            check("purchase" in fine and len(fine) <= 8, f"fine values grouped by meaning, not one row per value: {fine}")
            check(sum(fine.values()) == sum(int(r[2]) for r in table(driver, "apps-fine")), "each meaning's postbacks add up")
            days = driver.find_elements(By.CSS_SELECTOR, "#apps-chart rect")
            check(len(days) == 2 * 30, f"installs per day are charted ({len(days)} bars)")
            crosstab = sum(int(td.text) for td in driver.find_elements(By.CSS_SELECTOR, "#apps-crosstab tbody td:last-child"))
            accepted = sum(1 for l in api(base, "/api/postbacks").splitlines()
                           if json.loads(l)["verdict"] == "accepted" and day_from <= json.loads(l)["received_at"][:10] <= day_to)
            check(crosstab == accepted, f"campaign × value counts every accepted postback once: {crosstab} vs {accepted}")
            # Estimated revenue: the page's rows are the API's, to the cent, and say they are estimates.
            estimates = driver.find_elements(By.CSS_SELECTOR, "#apps-revenue table.revenue tbody tr")
            answer = json.loads(api(base, f"/api/apps/summary?from={day_from}&to={day_to}"))["revenue"]
            check(len(estimates) == len(answer["by_campaign"]) > 0, f"a revenue row per campaign and currency ({len(estimates)})")
            check("not a measured amount" in text(driver, "apps-revenue"), "the revenue is labelled an estimate from value ranges")
            driver.save_screenshot(os.path.join(SHOTS, "apps-1280.png"))
            check_spend_form(driver, base, day_from, day_to)
            check_register_forms(driver, base)
            show(driver, "apple-ads")
            check_apple_ads(driver, base, day_from, day_to)
            show(driver, "tools")
            check_setup(driver, base)
            check_plist_form(driver, base)
            check_url_state(driver, base)
            # The refusals the forms were sent on purpose (a bad spend file, a clashing campaign, a bad
            # currency, an unserved site) are logged by the browser itself, as a refused link's 403 is.
            meant = [("/api/spend", "422"), ("/api/campaigns", "409"), ("/api/apps", "422"), ("/api/advertisers", "422")]
            errors = [e for e in console_errors(driver) if not any(path in e["message"] and f"status of {code}" in e["message"] for path, code in meant)]
            check(errors == [], f"no console errors: {errors}")
            # The picture in docs/: the advertiser's overview.
            driver.get(base + "/#view=overview&advertiser=acme")
            WebDriverWait(driver, 10).until(lambda d: "Acme Puzzles" in d.find_element(By.ID, "overview-who").text)
            height = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(1280, min(height + 140, 2400))
            driver.save_screenshot(os.path.join(SHOTS, "summary-page.png"))
        finally:
            driver.quit()

        check_viewer(base, advertisers)
        check_narrow(base)
        check_relays(base)

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
