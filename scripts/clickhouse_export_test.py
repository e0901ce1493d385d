"""The ClickHouse export against Debian's real clickhouse-server (docs/RELIABILITY.md).

    python3 scripts/clickhouse_export_test.py BINARY

0. The fixture's log of every kind (Tests/EndpointTests/Resources/log-2026-11-25), exported: the
   cluster's summaries (`scope=cluster`, counted in ClickHouse) equal the node's own, for every
   view, period and site asked.
1. Every record acknowledged is in ClickHouse once (with FINAL), of every kind.
2. Killed inside the window: a relay between the endpoint and ClickHouse lets a batch of reports
   and its counts reach ClickHouse, and SIGKILLs the endpoint as ClickHouse's 200 for the counts
   comes back, before the endpoint can save its cursor. Restarted, the endpoint sends the batch
   again; FINAL still counts each report once, and the cluster's summary (read from the counts)
   counts what ClickHouse holds.
3. ClickHouse stopped for 30 s under load: the endpoint answers every request, /healthz stays 200
   and says the export is behind, /metrics has the lag and the last error; when ClickHouse is back
   the backlog drains (its rate is printed) and every acknowledged record is there once.
4. ClickHouse refuses a table's rows (a column dropped by hand): that table's export stops with an
   event naming it, /metrics says so, and the other tables go on.
"""
import json
import os
import select
import signal
import socket
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clickhouse_server import ClickHouse  # noqa: E402
from endpoint_process import Endpoint, finish  # noqa: E402
import traffic  # noqa: E402

TOKEN = "clickhouse-test"


class Relay:
    """A TCP relay to ClickHouse that, when armed, kills the endpoint when an INSERT's 200 comes
    back, and drops that answer: ClickHouse has the rows; the endpoint never hears so."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.armed_pid = None
        self.killed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client):
        try:
            upstream = socket.create_connection(("127.0.0.1", self.target_port))
        except OSError:
            client.close()
            return
        insert_in_flight = False
        try:
            while True:
                readable, _, _ = select.select([client, upstream], [], [], 60)
                if not readable:
                    break
                for s in readable:
                    data = s.recv(1 << 20)
                    if not data:
                        return
                    if s is client:
                        # The batch's last insert: its counts, after its reports. Both are in
                        # ClickHouse when the endpoint dies, and both are sent again.
                        if b"query=INSERT" in data and b"pcm_report_counts" in data:
                            insert_in_flight = True
                        upstream.sendall(data)
                    else:
                        if insert_in_flight and self.armed_pid and data.startswith(b"HTTP/1.1 200"):
                            os.kill(self.armed_pid, signal.SIGKILL)
                            self.armed_pid = None
                            self.killed.set()
                            return
                        if data.startswith(b"HTTP/1.1"):
                            insert_in_flight = False
                        client.sendall(data)
        finally:
            client.close()
            upstream.close()


def get(port, path):
    return traffic.get(port, path, TOKEN)


def export_state(port):
    status, body = get(port, "/healthz")
    return status, json.loads(body).get("export", {})


def wait_current(port, timeout=180):
    deadline = time.time() + timeout
    state = {}
    while time.time() < deadline:
        _, state = export_state(port)
        if state.get("state") == "current":
            return state
        time.sleep(0.1)  # polling the endpoint's own report, bounded by the deadline
    raise RuntimeError("export not current after %d s: %s" % (timeout, state))


def counts(ch, final=True):
    f = " FINAL" if final else ""
    return {t: int(ch.query("SELECT count() FROM attribution.%s%s" % (t, f)))
            for t in ("pcm_reports", "pcm_triggers", "postbacks", "postback_retries")}


def check_counts(port, ch, failures, label):
    """The cluster's PCM summary (read from the counts kept per batch) counts every report once."""
    status, body = get(port, "/api/summary?scope=cluster")
    summary = json.loads(body)
    counted = sum(summary[k][r] for k in ("accepted", "quarantined") for r in ("source", "destination")) if status == 200 else -1
    stored = int(ch.query("SELECT count() FROM attribution.pcm_reports FINAL"))
    if counted != stored:
        failures.append("%s: the cluster's summary counts %d reports, ClickHouse holds %d" % (label, counted, stored))


def check_exactly_once(ch, tally, failures, label):
    numbers = ch.query("SELECT visitParamExtractUInt(extra, 'n') FROM attribution.pcm_reports FINAL").split()
    in_clickhouse = [int(x) for x in numbers]
    acked = tally.acknowledged["report"]
    if len(in_clickhouse) != len(set(in_clickhouse)):
        failures.append("%s: a report is in ClickHouse twice under FINAL" % label)
    missing = acked - set(in_clickhouse)
    if missing:
        failures.append("%s: %d acknowledged reports are not in ClickHouse, e.g. %s" % (label, len(missing), sorted(missing)[:5]))
    extra = set(in_clickhouse) - acked
    # A report stored but whose answer was lost (the connection died with the node) may be there.
    c = counts(ch)
    postbacks = len(tally.acknowledged["postback"])
    retries = sum(v - 1 for v in tally.deliveries.values())
    # So may a postback delivery whose answer was lost: stored as the postback (its second
    # delivery then acknowledged as a retry, or never sent) or as a retry. Each such delivery can
    # add one to one of the two counts, never more, and nothing acknowledged may be missing.
    lost = tally.unanswered["postback"]
    if not postbacks <= c["postbacks"] <= postbacks + lost:
        failures.append("%s: %d postbacks in ClickHouse, %d acknowledged (%d answers lost)" % (label, c["postbacks"], postbacks, lost))
    if not retries <= c["postback_retries"] <= retries + lost or c["postbacks"] + c["postback_retries"] > postbacks + retries + lost:
        failures.append("%s: %d retries in ClickHouse, %d acknowledged (%d answers lost)" % (label, c["postback_retries"], retries, lost))
    print("%s: ClickHouse holds %s (FINAL); acknowledged %d reports (%d more stored unanswered), %d postbacks, %d retries, %d pixel hits"
          % (label, c, len(acked), len(extra), postbacks, retries, len(tally.acknowledged["trigger"])))


def fixture_summaries(binary, ch, folder, failures):
    import shutil
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    data = folder + "/fixture"
    os.makedirs(data)
    for name in ("reports.log", "registry.json", "apps.json"):
        shutil.copy(os.path.join(root, "Tests/EndpointTests/Resources/log-2026-11-25", name), data)
    node = Endpoint(binary, data, TOKEN, extra=["--dev", "--node", "fixture", "--clickhouse", ch.url + "/fixture"])
    try:
        wait_current(node.port)
        compared = 0
        for path in ("/api/summary", "/api/apps/summary", "/api/apple-ads/summary"):
            for query in ("from=2026-11-01&to=2026-11-25", "from=2026-11-03&to=2026-11-10&site=app.example",
                          "from=2026-11-02&to=2026-11-20&site=shop.example", "from=2026-11-20&to=2026-11-21"):
                _, own = get(node.port, "%s?%s" % (path, query))
                status, cluster = get(node.port, "%s?%s&scope=cluster" % (path, query))
                own, cluster = json.loads(own), json.loads(cluster)
                # Every node's numbers also say each node's last export; this one's is recent.
                nodes = cluster.pop("nodes", None)
                if [(n["node"], n["stale"]) for n in nodes or []] != [("fixture", False)]:
                    failures.append("%s?%s: the cluster's nodes are %s" % (path, query, nodes))
                if status != 200 or own.pop("scope") != "node" or cluster.pop("scope") != "cluster" or own != cluster:
                    failures.append("%s?%s: the cluster's answer differs from the node's: %s" % (
                        path, query, {k: (own.get(k), cluster.get(k)) for k in set(own) | set(cluster) if own.get(k) != cluster.get(k)}))
                compared += 1
        print("fixture log: %d summaries asked of the node and of ClickHouse (scope=cluster) agree" % compared)
    finally:
        node.stop()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/attribution-endpoint"
    failures = []
    folder = tempfile.mkdtemp(prefix="clickhouse-export-test-")
    ch = ClickHouse.start(folder + "/clickhouse")
    fixture_summaries(binary, ch, folder, failures)
    relay = Relay(ch.http_port)
    data = folder + "/node"
    extra = ["--site", "app.example", "--node", "node-1", "--clickhouse", "http://127.0.0.1:%d/attribution" % relay.port]
    tally = traffic.Tally()
    endpoint = Endpoint(binary, data, TOKEN, extra=extra)
    try:
        # 1 and 2: traffic, then the kill inside the window.
        traffic.send(endpoint.port, traffic.mixed(range(0, 3000)), tally)
        wait_current(endpoint.port)
        before = counts(ch)
        relay.armed_pid = endpoint.pid
        traffic.send(endpoint.port, traffic.mixed(range(3000, 5000)), tally)
        if not relay.killed.wait(60):
            failures.append("the relay never saw an INSERT's 200 to kill the endpoint in")
        endpoint.process.wait(timeout=30)
        cursor = json.load(open(data + "/clickhouse-export.json"))
        cursor_reports = cursor["tables"]["pcm_reports"]["rows"]
        in_clickhouse = counts(ch)["pcm_reports"]
        print("killed inside the window: ClickHouse holds %d reports, the cursor on disk says %d were sent (before: %d)"
              % (in_clickhouse, cursor_reports, before["pcm_reports"]))
        if endpoint.process.returncode != -signal.SIGKILL:
            failures.append("the endpoint was not killed: exit %s" % endpoint.process.returncode)
        if not in_clickhouse > cursor_reports:
            # The batch killed in flight may have been another table's; then the window was hit there.
            other = [t for t, c in counts(ch).items() if c > cursor["tables"].get(t, {}).get("rows", 0)]
            if not other:
                failures.append("the kill did not land inside the window (ClickHouse has nothing the cursor lacks)")
        endpoint = Endpoint(binary, data, TOKEN, extra=extra)
        wait_current(endpoint.port)
        check_exactly_once(ch, tally, failures, "after the kill and restart")
        check_counts(endpoint.port, ch, failures, "after the kill and restart")

        # 3: ClickHouse down for 30 s under load.
        ch.stop()
        stop = threading.Event()
        sender = threading.Thread(target=lambda: [traffic.send(endpoint.port, traffic.mixed(range(10_000 + i * 100_000, 10_000 + i * 100_000 + 40)), tally, stop)
                                                  for i in range(100_000) if not stop.is_set() and time.sleep(0.05) is None])
        sender.start()
        down_since = time.time()
        saw_behind, saw_metrics = False, False
        while time.time() - down_since < 30:
            status, state = export_state(endpoint.port)
            if status != 200:
                failures.append("/healthz answered %d while ClickHouse was down" % status)
                break
            if state.get("state") == "behind" and state.get("lag_records", 0) > 0 and state.get("last_error"):
                saw_behind = True
            _, metrics = get(endpoint.port, "/metrics")
            if "attribution_export_last_error_info" in metrics and 'attribution_export_lag_records{table="pcm_reports"} 0' not in metrics:
                saw_metrics = True
            time.sleep(1)  # sampling /healthz once a second while ClickHouse is down: the 30 s are the test's own
        stop.set()
        sender.join()
        backlog = export_state(endpoint.port)[1].get("lag_records", 0)
        if not saw_behind:
            failures.append("/healthz never said the export was behind with a last error while ClickHouse was down")
        if not saw_metrics:
            failures.append("/metrics never showed the lag and the last error while ClickHouse was down")
        fivexx = tally.count_5xx()
        if fivexx:
            failures.append("%d requests got a 5xx while ClickHouse was down" % fivexx)
        ch.restart()
        started = time.time()
        first_progress, lag = None, backlog
        while lag > 0 and time.time() - started < 180:
            lag = export_state(endpoint.port)[1].get("lag_records", 0)
            if first_progress is None and lag < backlog:
                first_progress = time.time()
            time.sleep(0.05)  # sampling the lag while the backlog drains, bounded
        done = time.time()
        wait_current(endpoint.port)
        first_progress = first_progress or done
        print("ClickHouse down 30 s: %d records waited in the log; the export resumed %.1f s after ClickHouse did (the retry wait) "
              "and drained them in %.1f s (%.0f records/s)" % (backlog, first_progress - started, done - first_progress,
                                                             backlog / max(done - first_progress, 0.05)))
        check_exactly_once(ch, tally, failures, "after ClickHouse came back")
        check_counts(endpoint.port, ch, failures, "after ClickHouse came back")

        # 4: a refused table stops alone.
        ch.query("ALTER TABLE attribution.pcm_triggers DROP COLUMN priority")
        traffic.send(endpoint.port, traffic.mixed(range(500_000_000, 500_000_040)), tally)
        deadline = time.time() + 60
        paused = ""
        while time.time() < deadline and not paused:
            paused = endpoint.event("export_paused")
            time.sleep(0.1)  # polling the log for the event, bounded
        if "pcm_triggers" not in paused:
            failures.append("no export_paused event naming pcm_triggers: %r" % paused)
        _, metrics = get(endpoint.port, "/metrics")
        if 'attribution_export_paused{table="pcm_triggers"} 1' not in metrics:
            failures.append("/metrics does not show pcm_triggers paused")
        deadline = time.time() + 60
        while time.time() < deadline:
            _, state = export_state(endpoint.port)
            if counts(ch)["pcm_reports"] >= len(tally.acknowledged["report"]):
                break
            time.sleep(0.1)  # polling ClickHouse for the reports sent after the pause, bounded
        check_exactly_once(ch, tally, failures, "with pcm_triggers paused")
        status, state = export_state(endpoint.port)
        if status != 200 or state.get("state") != "paused":
            failures.append("/healthz with a paused table: %d %s" % (status, state))
        print("refused table: %s" % paused)
    finally:
        if endpoint.process.poll() is None:
            endpoint.stop()
        ch.stop()
    finish(failures)


if __name__ == "__main__":
    main()
