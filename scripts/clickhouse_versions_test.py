"""The export's SQL on two ClickHouse versions: Debian's clickhouse-server (18.16) over HTTP, and
a current ClickHouse in-process through chdb (PyPI). Both run deploy/clickhouse/schema.sql, load
the same rows (the test fixture's log of every kind, as `attribution-endpoint clickhouse rows`
writes them, loaded twice, as a batch resent after a crash would be), and answer every query the
cluster's summaries run (`attribution-endpoint clickhouse queries`). The answers must be equal,
and must count each row once.

    python3 scripts/clickhouse_versions_test.py BINARY
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clickhouse_server import ClickHouse  # noqa: E402
from endpoint_process import finish  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "Tests/EndpointTests/Resources/log-2026-11-25")
TABLES = ["pcm_reports", "pcm_report_counts", "pcm_triggers", "postbacks", "postback_retries", "apple_ads_tokens", "apple_ads_calls"]


def statements(text):
    """The SQL statements of a file: comments dropped, split at ';' line ends."""
    lines = [line for line in text.splitlines() if not line.startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";\n") if s.strip()]


def canonical(text):
    """Rows as sorted JSON, 64-bit integers (quoted by 18.16) compared as numbers."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        for key, value in row.items():
            if isinstance(value, str) and value.lstrip("-").isdigit():
                row[key] = int(value)
        rows.append(json.dumps(row, sort_keys=True))
    return sorted(rows)


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/attribution-endpoint"
    failures = []
    try:
        from chdb import session as chdb_session
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "chdb"], check=True)
        from chdb import session as chdb_session
    work = tempfile.mkdtemp(prefix="clickhouse-versions-")
    data = os.path.join(work, "log")
    os.makedirs(data)
    shutil.copy(os.path.join(FIXTURE, "reports.log"), data)
    schema = open(os.path.join(ROOT, "deploy/clickhouse/schema.sql")).read()
    generated = subprocess.run([binary, "clickhouse", "schema"], capture_output=True, text=True, check=True).stdout
    if generated != schema:
        failures.append("deploy/clickhouse/schema.sql differs from `attribution-endpoint clickhouse schema`")
    rows = {t: subprocess.run([binary, "clickhouse", "rows", t, "--data", data, "--node", "node-a"], capture_output=True,
                              check=True).stdout for t in TABLES}
    queries = statements(subprocess.run([binary, "clickhouse", "queries", "--from", "2026-10-01", "--to", "2026-11-30"],
                                        capture_output=True, text=True, check=True).stdout)
    queries += statements(subprocess.run([binary, "clickhouse", "queries", "--from", "2026-11-03", "--to", "2026-11-10",
                                          "--site", "app.example"], capture_output=True, text=True, check=True).stdout)
    queries += ["SELECT count() AS n FROM attribution.%s FINAL" % t for t in TABLES]

    debian = ClickHouse.start(os.path.join(work, "debian"))
    current = chdb_session.Session(os.path.join(work, "chdb"))
    try:
        for statement in statements(schema):
            debian.query(statement)
            current.query(statement)
        for table, body in rows.items():
            for _ in range(2):  # a batch resent: FINAL must count it once
                debian.query("INSERT INTO attribution.%s FORMAT JSONEachRow" % table, body=body)
                current.query("INSERT INTO attribution.%s FORMAT JSONEachRow %s" % (table, body.decode()))
        # Two nodes' export turns, as each exporter writes them (ClickHouseExporter.heartbeat).
        for node in ("node-a", "node-b"):
            heartbeat = "INSERT INTO attribution.node_exports (node, exported_at, lag_seconds) VALUES ('%s', now(), 0.5)" % node
            debian.query(heartbeat)
            current.query(heartbeat)
        for query in queries:
            a = canonical(debian.query(query + " FORMAT JSONEachRow"))
            b = canonical(str(current.query(query, "JSONEachRow")))
            if "node_exports" in query:
                # Seconds since each node's turn, by each server's clock: the nodes and their order must agree.
                a, b = [sorted(json.loads(row)["node"] for row in side) for side in (a, b)]
            if a != b:
                failures.append("the versions disagree on:\n%s\n18.16: %s\ncurrent: %s" % (query, a[:3], b[:3]))
            elif not a:
                failures.append("no rows from:\n%s" % query)
        for table in TABLES:
            expected = len([line for line in rows[table].splitlines() if line.strip()])
            got = int(debian.query("SELECT count() FROM attribution.%s FINAL" % table))
            if got != expected:
                failures.append("%s: %d rows with FINAL after loading %d twice" % (table, got, expected))
        # A database made by schema version 1 is brought up to this one by the exporter's
        # ALTER TABLE … ADD COLUMN (ClickHouseSchema.missingColumns), on both versions, and
        # then takes this version's rows.
        calls = next(x for x in statements(schema) if "attribution.apple_ads_calls" in x and x.startswith("CREATE TABLE"))
        added = ["impressionDate", "supplyPlacement"]
        version1 = "\n".join(line for line in calls.replace("attribution.", "old.").splitlines()
                             if not any("`%s`" % column in line for column in added))
        for engine, run in (("18.16", debian.query), ("current", current.query)):
            run("CREATE DATABASE IF NOT EXISTS old")
            run(version1)
            for column in added:
                run("ALTER TABLE old.apple_ads_calls ADD COLUMN `%s` String" % column)
        for _ in range(2):
            debian.query("INSERT INTO old.apple_ads_calls FORMAT JSONEachRow", body=rows["apple_ads_calls"])
            current.query("INSERT INTO old.apple_ads_calls FORMAT JSONEachRow %s" % rows["apple_ads_calls"].decode())
        query = "SELECT count() AS n, countIf(supplyPlacement = '') AS unstated FROM old.apple_ads_calls FINAL"
        a = canonical(debian.query(query + " FORMAT JSONEachRow"))
        b = canonical(str(current.query(query, "JSONEachRow")))
        expected = len([line for line in rows["apple_ads_calls"].splitlines() if line.strip()])
        if a != b or not a or json.loads(a[0])["n"] != expected:
            failures.append("a version 1 table with its columns added: 18.16 %s, current %s, %d rows loaded" % (a, b, expected))
        print("%d statements of schema.sql and %d queries on ClickHouse 18.16 (Debian) and %s (chdb): equal answers"
              % (len(statements(schema)), len(queries), str(current.query("SELECT version()", "CSV")).strip()))
    finally:
        debian.stop()
        current.close()
    finish(failures)


if __name__ == "__main__":
    main()
