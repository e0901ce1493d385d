#!/usr/bin/env python3
"""How long the overview takes to render over a year of data, in Chromium as the browser test
drives it (issue 45: "a full render of the overview over a year of demo data in under a second").

A year of PCM reports is written by `benchmarks/.build/release/log-generator` through the real
RecordLog (receive times spread over the last 8,760 hours), the endpoint is started on it, and the
page is opened on the overview of that whole year. The time is the page's own: from the start of
navigation (performance.now() = 0) to the moment the status line says the view is shown, which is
after the numbers are fetched and every chart and table is drawn. Each run reloads the page.

  python3 benchmarks/page_render.py --binary .build/release/attribution-endpoint [--reports 1000000] [--runs 7]
"""
import argparse
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GENERATOR = os.path.join(ROOT, "benchmarks/.build/release/log-generator")
TOKEN = "page-render-token"
SITES = ["news.example", "shop.example", "blog.example", "store.example"]

# Installed before the page's own scripts: the moment the status line first says "Showing".
OBSERVER = """
window.__shown = null;
new MutationObserver(() => {
  const status = document.getElementById('status');
  if (window.__shown === null && status && status.textContent.startsWith('Showing')) window.__shown = performance.now();
}).observe(document, { subtree: true, childList: true, characterData: true });
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(base, path):
    request = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + TOKEN})
    with urllib.request.urlopen(request, timeout=120) as response:
        return response.read()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/attribution-endpoint"))
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    data = tempfile.mkdtemp(prefix="page-render-")
    try:
        started = time.time()
        subprocess.run([GENERATOR, data, str(args.reports), "8760"], check=True, stdout=subprocess.DEVNULL)
        print(f"wrote {args.reports} reports over 8760 hours in {time.time() - started:.0f} s", flush=True)
        port = free_port()
        command = [args.binary, "--data", data, "--host", "127.0.0.1", "--port", str(port), "--token", TOKEN, "--no-access-log",
                   "--public", os.path.join(ROOT, "Public")]
        for site in SITES:
            command += ["--site", site]
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.time() + 600
            while True:
                try:
                    get(base, "/api/summary")
                    break
                except Exception:
                    if time.time() > deadline or server.poll() is not None:
                        raise RuntimeError("the endpoint did not become ready: " + (server.stderr.read().decode() if server.poll() is not None else ""))
                    time.sleep(0.5)
            today = datetime.datetime.now(datetime.timezone.utc).date()
            period = f"from={(today - datetime.timedelta(days=364)).isoformat()}&to={today.isoformat()}"
            api = []
            for _ in range(args.runs):
                t = time.perf_counter()
                body = get(base, "/api/overview?" + period)
                api.append((time.perf_counter() - t) * 1000)
            overview = json.loads(body)
            days = len(overview["days"])
            web = next(c for c in overview["channels"] if c["id"] == "web")["total"]
            options = webdriver.ChromeOptions()
            options.binary_location = "/usr/bin/chromium"
            for flag in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"]:
                options.add_argument(flag)
            driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            try:
                driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": OBSERVER})
                driver.get(base + "/")
                driver.execute_script("sessionStorage.setItem('attribution-endpoint-token', arguments[0])", TOKEN)
                renders = []
                for _ in range(args.runs):
                    driver.get(base + "/#view=overview&" + period)
                    driver.refresh()
                    deadline = time.time() + 60
                    while driver.execute_script("return window.__shown") is None:
                        if time.time() > deadline:
                            raise RuntimeError("the overview was not shown: " + driver.execute_script("return document.getElementById('status').textContent"))
                        time.sleep(0.02)
                    renders.append(driver.execute_script("return window.__shown"))
            finally:
                driver.quit()
        finally:
            server.terminate()
            server.wait()
        print(f"overview of {days} days, {web} web conversions: GET /api/overview median {statistics.median(api):.0f} ms "
              f"(min {min(api):.0f}, max {max(api):.0f}); page shown after median {statistics.median(renders):.0f} ms "
              f"(min {min(renders):.0f}, max {max(renders):.0f}) over {args.runs} loads")
    finally:
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
