#!/usr/bin/env python3
"""The endpoint's CSVs opened by a real spreadsheet: LibreOffice Calc (Debian's
libreoffice-calc-nogui, headless) imports each with formulas evaluated and writes it as flat ODF;
not one cell may be a formula, and every hostile text must still be there as text.

Hostile names (OWASP's CSV Injection list: =, +, -, @, |, after spaces, tabs, no-break spaces and
their full-width forms) are registered as campaigns and conversions, reports are filed under them,
and the summary's CSV, its crosstab and the reports' export are read. A control file written
without the guard is imported the same way and must give formulas: the check can fail.

Usage: python3 scripts/csv_injection_test.py BINARY    (installs libreoffice-calc-nogui if missing)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from endpoint_process import Endpoint  # noqa: E402

TOKEN = "csv-test"
# Evaluate formulas (token 13) and read quoted fields as any other (token 7 false): the reader at
# its most trusting.
INFILTER = "CSV:44,34,76,1,,1033,false,false,false,false,false,0,true"
HOSTILE = ["=1+1", "+2+2", "-3+3", "@SUM(1;2)", "|calc", " =4+4", "\u00a0=5+5", "\u3000=6+6", "\uff1d7+7",
           "=HYPERLINK(\"http://x.example\";\"y\")", "=cmd|' /C calc'!A0"]


def request(port, method, path, body=None, host="localhost"):
    headers = {"Authorization": "Bearer " + TOKEN, "Host": host}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def cells(fods):
    """Each cell of a flat ODF spreadsheet: (formula or None, its text)."""
    out = []
    for match in re.finditer(r"<table:table-cell([^>]*?)(/>|>(.*?)</table:table-cell>)", fods, re.S):
        attributes, text = match.group(1), re.sub(r"<[^>]+>", "", match.group(3) or "")
        formula = re.search(r'table:formula="([^"]*)"', attributes)
        out.append((formula.group(1) if formula else None, text))
    return out


def open_in_calc(path, outdir):
    subprocess.run(["soffice", "--headless", "--infilter=" + INFILTER, "--convert-to", "fods", "--outdir", outdir, path],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    with open(os.path.join(outdir, os.path.splitext(os.path.basename(path))[0] + ".fods"), encoding="utf-8") as f:
        return cells(f.read())


def unescape(text):
    return text.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'")


def main():
    binary = sys.argv[1]
    if not shutil.which("soffice"):
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "libreoffice-calc-nogui"], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    work = tempfile.mkdtemp(prefix="csv-injection-")
    failures, checks = [], 0
    endpoint = Endpoint(binary, os.path.join(work, "data"), TOKEN, extra=("--manual-clock",))
    try:
        port = endpoint.port
        request(port, "POST", "/admin/clock", {"now": "2026-11-20T10:00:00Z"})
        for i, name in enumerate(HOSTILE):
            status, body = request(port, "POST", "/api/campaigns", {"source_site": "news.example", "source_id": i, "destination": "shop.example",
                                                                    "name": name, "starts_at": "2026-11-01T00:00:00Z"})
            if status != 201:
                failures.append("campaign %r not registered: %d %s" % (name, status, body[:200]))
            status, body = request(port, "POST", "/api/conversions", {"site": "shop.example", "name": name, "trigger_data": i})
            if status != 201:
                failures.append("conversion %r not registered: %d %s" % (name, status, body[:200]))
            report = {"source_engagement_type": "click", "source_site": "news.example", "source_id": i,
                      "attributed_on_site": "shop.example", "trigger_data": i, "version": 3}
            for host in ("news.example", "shop.example"):
                status, body = request(port, "POST", "/.well-known/private-click-measurement/report-attribution/", report, host=host)
                if status != 201:
                    failures.append("report to %s: %d %s" % (host, status, body[:200]))
        for path in ["/api/summary.csv?from=2026-11-01&to=2026-11-30", "/api/summary/crosstab.csv?from=2026-11-01&to=2026-11-30",
                     "/api/reports.csv"]:
            status, body = request(port, "GET", path)
            name = re.sub(r"[^a-z]+", "-", path.split("?")[0]).strip("-")
            csv_path = os.path.join(work, name + ".csv")
            with open(csv_path, "wb") as f:
                f.write(body)
            found = open_in_calc(csv_path, work)
            formulas = [(f, t) for f, t in found if f]
            checks += 1
            if status != 200 or formulas:
                failures.append("%s: %d, %d formulas in Calc: %s" % (path, status, len(formulas), formulas[:3]))
            texts = {unescape(t) for _, t in found}
            for hostile in HOSTILE:
                checks += 1
                if not any(hostile in t for t in texts):
                    failures.append("%s: %r is not in Calc's cells as text" % (path, hostile))
        # The control: the same texts written without the guard; those Calc takes for formulas
        # (each that begins with =, at least) are formulas here, so the check above can fail.
        control = os.path.join(work, "control.csv")
        with open(control, "w", encoding="utf-8") as f:
            f.write(",".join(['"%s"' % h.replace('"', '""') for h in HOSTILE]) + "\r\n")
        formulas = sum(1 for f, _ in open_in_calc(control, work) if f)
        checks += 1
        if formulas < sum(1 for h in HOSTILE if h.startswith("=")):
            failures.append("the control's unguarded cells gave %d formulas: this check could not fail" % formulas)
        print("control: %d of %d unguarded cells are formulas to Calc" % (formulas, len(HOSTILE)))
    finally:
        endpoint.stop()
    for failure in failures:
        print("FAIL", failure)
    print("LibreOffice Calc %s: %d CSV checks" % (subprocess.run(["soffice", "--version"], capture_output=True, text=True).stdout.strip(), checks))
    print("%d passed, %d failed" % (checks - len(failures), len(failures)))
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
