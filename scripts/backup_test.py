#!/usr/bin/env python3
"""A backup taken under load, the node killed, the backup restored (docs/RELIABILITY.md).

    python3 scripts/backup_test.py BINARY

1. A node exporting to Debian's clickhouse-server takes reports, postbacks and pixel hits from
   four senders, with 1 MB segments so that the log has sealed ones to link.
2. `attribution-endpoint backup DEST --data DATA` runs while they send.
3. The senders go on for a while; the export catches up (ClickHouse now holds records the backup
   does not); the node is SIGKILLed and its data folder moved aside.
4. `attribution-endpoint restore DEST --data NEW`; the node starts there under the same name
   and takes more traffic; the export catches up again.
5. A second node starts on a copy of DEST itself (a start on the backup's folder checks it).
Passes when:
- every report and postback acknowledged before the backup began is in the restored node (its
  /api/reports and /api/postbacks);
- the restored node's summaries equal those of a rebuild from its log (checkpoint deleted);
- ClickHouse holds every acknowledged report once (FINAL), those the node lost after the cut
  included, and the cluster's summary (its counts) counts what it holds: no id was given twice
  and nothing was counted twice;
- a relay destination (a collector on loopback, taking the reports) got every acknowledged
  report at least once, and never two different bodies under one delivery id: the copies sent
  again after the restore (from the backup's cursor to its cut) carry their first id;
- a backup whose file was changed is refused by restore and by a start, naming the file.
"""
import datetime
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clickhouse_server import ClickHouse  # noqa: E402
from endpoint_process import Endpoint, finish  # noqa: E402
import traffic  # noqa: E402

TOKEN = "backup-test"
# Every record the test sends is from today.
PERIOD = "from=%s&to=%s" % (datetime.date.today() - datetime.timedelta(days=30), datetime.date.today() + datetime.timedelta(days=1))


def get_json(port, path):
    status, body = traffic.get(port, path, TOKEN)
    if status != 200:
        raise RuntimeError("%s answered %d: %s" % (path, status, body[:300]))
    return json.loads(body)


def wait_current(port, timeout=180):
    deadline = time.time() + timeout
    state = {}
    while time.time() < deadline:
        status, body = traffic.get(port, "/healthz", TOKEN)
        state = json.loads(body).get("export", {}) if status == 200 else {}
        if state.get("state") == "current":
            return
        time.sleep(0.1)  # polling the endpoint's own report, bounded by the deadline
    raise RuntimeError("export not current after %d s: %s" % (timeout, state))


def exported_numbers(port, path):
    """The number each record of an NDJSON export was sent with: a report's `n` (kept under
    `extra`), a postback's transaction-id `t-N`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("GET", path, headers={"Authorization": "Bearer " + TOKEN})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    if response.status != 200:
        raise RuntimeError("%s answered %d" % (path, response.status))
    numbers = set()
    for line in body.splitlines():
        if not line.strip():
            continue
        text = json.dumps(json.loads(line))
        found = re.search(r'"n": (\d+)', text) or re.search(r'"t-(\d+)"', text)
        if found:
            numbers.add(int(found.group(1)))
    return numbers


def summaries(port):
    answers = {}
    for path in ("/api/summary?" + PERIOD, "/api/apps/summary?" + PERIOD):
        answers[path] = get_json(port, path)
    return answers


class Collector:
    """A relay destination on loopback: every delivery's id and the `n` of its report."""

    def __init__(self):
        self.lock = threading.Lock()
        self.deliveries = []  # (delivery id, n)
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                found = re.search(rb'"n":(\d+)', body)
                with collector.lock:
                    collector.deliveries.append((self.headers.get("X-Attribution-Delivery"), int(found.group(1)) if found else None))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d/copies" % self.server.server_address[1]

    def numbers(self):
        with self.lock:
            return {n for _, n in self.deliveries}

    def wait_for(self, numbers, timeout=300):
        deadline = time.time() + timeout
        while not numbers <= self.numbers() and time.time() < deadline:
            time.sleep(0.1)  # polling what the relay delivered, bounded by the deadline
        return numbers - self.numbers()


class Senders:
    def __init__(self, port, tally):
        self.stop = threading.Event()
        self.threads = []
        for k in range(4):
            def run(k=k):
                batch = 0
                while not self.stop.is_set():
                    first = 1_000_000 * k + 200 * batch
                    traffic.send(port, traffic.mixed(range(first, first + 200)), tally, self.stop)
                    batch += 1
            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            self.threads.append(thread)

    def finish(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else ".build/debug/attribution-endpoint"
    failures = []
    folder = tempfile.mkdtemp(prefix="backup-test-")
    ch = ClickHouse.start(folder + "/clickhouse")
    data, backup, restored = folder + "/node", folder + "/backup", folder + "/restored"
    extra = ["--site", "app.example", "--node", "node-1", "--clickhouse", ch.url + "/attribution", "--log-segment-mb", "1"]
    tally = traffic.Tally()
    node = Endpoint(binary, data, TOKEN, extra=extra)
    collector = Collector()
    try:
        destination = {"name": "collector", "url": collector.url, "site": "shop.example", "protocols": ["pcm"],
                       "copies": "all", "internal": True}
        connection = http.client.HTTPConnection("127.0.0.1", node.port, timeout=30)
        connection.request("POST", "/api/relays", body=json.dumps(destination),
                           headers={"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"})
        answer = connection.getresponse()
        if answer.status != 201:
            failures.append("the relay destination was refused: %d %s" % (answer.status, answer.read()[:200]))
        connection.close()
        # 1 and 2: the backup under load.
        senders = Senders(node.port, tally)
        deadline = time.time() + 120
        while len(tally.acknowledged["report"]) < 8000 and time.time() < deadline:
            time.sleep(0.1)  # letting the senders fill a few segments, bounded
        with tally.lock:
            before = {kind: set(numbers) for kind, numbers in tally.acknowledged.items()}
        started = time.time()
        run = subprocess.run([binary, "backup", backup, "--data", data], capture_output=True, text=True, timeout=600)
        took = time.time() - started
        if run.returncode != 0:
            failures.append("backup exited %d: %s" % (run.returncode, run.stderr))
            raise SystemExit(finish(failures))
        event = json.loads(run.stdout.strip().splitlines()[-1])
        sealed = len([f for f in os.listdir(backup + "/log") if f.endswith(".log")])
        print("backup under load in %.2f s: %d files, %.1f MB, %d sealed segments, the log cut at %d; %d reports acknowledged before it"
              % (took, event["files"], event["bytes"] / 1e6, sealed, event["log_end"], len(before["report"])))
        if sealed < 2:
            failures.append("the backup holds %d sealed segments; the test meant to link several" % sealed)

        # 3: more traffic the backup does not hold, exported; then the node dies.
        goal = len(tally.acknowledged["report"]) + 3000
        while len(tally.acknowledged["report"]) < goal and time.time() < deadline + 120:
            time.sleep(0.1)  # more traffic after the cut, bounded
        senders.finish()
        wait_current(node.port)
        undelivered = collector.wait_for(set(tally.acknowledged["report"]))
        if undelivered:
            failures.append("%d acknowledged reports never reached the relay before the kill" % len(undelivered))
        delivered_before_kill = len(collector.deliveries)
        lost = {kind: tally.acknowledged[kind] - before[kind] for kind in before}
        node.stop(sig=9)
        os.rename(data, data + ".lost")
        print("after the cut: %d more reports acknowledged and exported, then SIGKILL" % len(lost["report"]))

        # 4: restore, start, more traffic.
        run = subprocess.run([binary, "restore", backup, "--data", restored], capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            failures.append("restore exited %d: %s" % (run.returncode, run.stderr))
            raise SystemExit(finish(failures))
        floor = json.loads(run.stdout.strip().splitlines()[-1])["id_floor"]
        node = Endpoint(binary, restored, TOKEN, extra=extra)
        after = traffic.Tally()
        traffic.send(node.port, traffic.mixed(range(5_000_000, 5_002_000)), after)
        wait_current(node.port)

        # The relay: every acknowledged report delivered, no delivery id under two bodies.
        undelivered = collector.wait_for(set(after.acknowledged["report"]))
        if undelivered:
            failures.append("%d reports taken after the restore never reached the relay" % len(undelivered))
        with collector.lock:
            deliveries = list(collector.deliveries)
        bodies_by_id = {}
        for delivery, n in deliveries:
            bodies_by_id.setdefault(delivery, set()).add(n)
        reused = {d: ns for d, ns in bodies_by_id.items() if len(ns) > 1}
        if reused:
            failures.append("%d delivery ids carried two different reports, e.g. %s" % (len(reused), list(reused.items())[:3]))
        print("relay: %d deliveries, %d after the restore of which %d sent again with their first id; %d delivery ids, none reused"
              % (len(deliveries), len(deliveries) - delivered_before_kill,
                 len(deliveries) - delivered_before_kill - len(after.acknowledged["report"]), len(bodies_by_id)))

        # Every record acknowledged before the backup is in the restored node.
        for kind, path in (("report", "/api/reports"), ("postback", "/api/postbacks")):
            held = exported_numbers(node.port, path)
            missing = before[kind] - held
            if missing:
                failures.append("%d %ss acknowledged before the backup are not in the restored node, e.g. %s"
                                % (len(missing), kind, sorted(missing)[:5]))
            print("restored node: %d of %d %ss acknowledged before the backup are there" % (len(before[kind] & held), len(before[kind]), kind))
        # ClickHouse: every acknowledged report once, the lost ones included; the counts agree.
        in_clickhouse = [int(x) for x in ch.query("SELECT visitParamExtractUInt(extra, 'n') FROM attribution.pcm_reports FINAL").split()]
        acknowledged = tally.acknowledged["report"] | after.acknowledged["report"]
        if len(in_clickhouse) != len(set(in_clickhouse)):
            failures.append("a report is in ClickHouse twice under FINAL")
        missing = acknowledged - set(in_clickhouse)
        if missing:
            failures.append("%d acknowledged reports are not in ClickHouse (an id given twice merges two), e.g. %s"
                            % (len(missing), sorted(missing)[:5]))
        new_ids = ch.query("SELECT min(id) FROM attribution.pcm_reports FINAL WHERE visitParamExtractUInt(extra, 'n') >= 5000000").strip()
        if int(new_ids or 0) < floor:
            failures.append("a report taken after the restore has id %s, below the floor %d" % (new_ids, floor))
        cluster = get_json(node.port, "/api/summary?scope=cluster&" + PERIOD)
        counted = sum(cluster[k][r] for k in ("accepted", "quarantined") for r in ("source", "destination"))
        if counted != len(in_clickhouse):
            failures.append("the cluster's summary counts %d reports, ClickHouse holds %d" % (counted, len(in_clickhouse)))
        print("ClickHouse: %d reports (FINAL), %d acknowledged, %d of them lost by the node after the cut; the counts say %d; new ids from %s (floor %d)"
              % (len(in_clickhouse), len(acknowledged), len(lost["report"]), counted, new_ids, floor))

        # The summaries equal a rebuild from the log.
        kept = summaries(node.port)
        node.stop()
        os.unlink(restored + "/summary.checkpoint")
        node = Endpoint(binary, restored, TOKEN, extra=extra)
        deadline = time.time() + 120
        while traffic.get(node.port, "/api/summary", TOKEN)[0] == 503 and time.time() < deadline:
            time.sleep(0.1)  # the rebuild, bounded
        rebuilt = summaries(node.port)
        for path in kept:
            if kept[path] != rebuilt[path]:
                failures.append("%s differs from a rebuild from the log" % path)
        print("summaries: %d views equal a rebuild from the log" % len(kept))
        node.stop()

        # 5: a start on a copy of the backup's folder itself; a changed file refused.
        copy = folder + "/started-on-backup"
        shutil.copytree(backup, copy)
        node = Endpoint(binary, copy, TOKEN, extra=["--site", "app.example", "--node", "node-2"])
        held = exported_numbers(node.port, "/api/reports")
        if before["report"] - held:
            failures.append("a start on the backup's folder lacks %d reports" % len(before["report"] - held))
        if os.path.exists(copy + "/backup-manifest.json") or not os.path.exists(copy + "/restored-from.json"):
            failures.append("a start on the backup's folder did not take it (the manifest is still there)")
        node.stop()
        tampered = folder + "/tampered"
        shutil.copytree(backup, tampered)
        victim = sorted(f for f in os.listdir(tampered + "/log") if f.endswith(".log"))[0]
        with open(tampered + "/log/" + victim, "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 1]))
        run = subprocess.run([binary, "restore", tampered, "--data", folder + "/never"], capture_output=True, text=True, timeout=600)
        if run.returncode == 0 or victim not in run.stderr:
            failures.append("restore of a changed backup: exit %d, %r" % (run.returncode, run.stderr))
        start = subprocess.run([binary, "--port", "0", "--site", "news.example", "--data", tampered, "--token", TOKEN],
                               capture_output=True, text=True, timeout=120)
        if start.returncode == 0 or victim not in start.stderr:
            failures.append("a start on a changed backup: exit %d, %r" % (start.returncode, start.stderr[-400:]))
        print("a changed byte in log/%s: restore refused (%s), start refused" % (victim, run.stderr.strip()[-120:]))
    finally:
        node.stop()
        ch.stop()
        collector.server.shutdown()
    finish(failures)


if __name__ == "__main__":
    main()
