#!/usr/bin/env python3
"""A reload every second under load (issue 46, docs/RELIABILITY.md).

The real executable runs from a config file while eight clients send numbered PCM reports over
keep-alive connections. Every second the file changes (one more campaign, and a value that needs a
restart) and the endpoint gets SIGHUP. Then broken files are sent the same way. Checked:
- a SIGHUP sent during the start is kept and done once the endpoint listens;
- every request is answered 2xx, none is dropped, and every acknowledged report is in the export
  once;
- each SIGHUP gives one `reload` event naming what it applied and what needs a restart;
- every campaign added by a reload is registered;
- a broken file gives `reload_refused`, changes nothing, and the endpoint still takes reports.

usage: reload_test.py BINARY [--seconds 60] [--clients 8]
"""
import argparse
import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import traffic  # noqa: E402

TOKEN = "reload-test-token"
SITES = ["news.example", "shop.example"]


class Events:
    """The endpoint's event lines, as they come, with a wait for the next of a kind."""

    def __init__(self, stream):
        self.lines = []
        self.changed = threading.Condition()
        threading.Thread(target=self.read, args=(stream,), daemon=True).start()

    def read(self, stream):
        for raw in stream:
            try:
                event = json.loads(raw)
            except ValueError:
                continue
            with self.changed:
                self.lines.append(event)
                self.changed.notify_all()

    def of(self, kind):
        with self.changed:
            return [e for e in self.lines if e.get("event") == kind]

    def wait_for(self, kind, count, seconds=30):
        deadline = time.monotonic() + seconds
        with self.changed:
            while len([e for e in self.lines if e.get("event") in kind]) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
        return True


def get(port, path):
    """(status, body text), read with http.client, which undoes chunked framing."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", path, headers={"Authorization": "Bearer " + TOKEN})
    response = connection.getresponse()
    body = response.read().decode()
    connection.close()
    return response.status, body


def campaign(k):
    return {"source_site": "news.example", "name": "Reload %d" % k, "source_id": k,
            "destination": "shop.example", "starts_at": "2026-01-01T00:00:00Z"}


def write_config(path, campaigns, max_connections):
    text = json.dumps({"sites": SITES, "campaigns": campaigns, "max_connections": max_connections})
    with open(path + ".new", "w") as f:
        f.write(text)
    os.replace(path + ".new", path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    assert args.seconds < 250, "one campaign per reload, on source ids 1 to 255"

    folder = tempfile.mkdtemp(prefix="reload-test-")
    config = os.path.join(folder, "config.json")
    write_config(config, [], 4096)
    process = subprocess.Popen([args.binary, "--port", "0", "--data", os.path.join(folder, "data"), "--config", config,
                                "--no-access-log", "--no-page"],
                               stderr=subprocess.PIPE, text=True, env=dict(os.environ, ATTRIBUTION_ENDPOINT_TOKEN=TOKEN))
    events = Events(process.stderr)
    failures = []
    try:
        # A SIGHUP during the start (systemd sends one as soon as the process runs): kept, and
        # done once the endpoint listens, never the end of the process.
        if not events.wait_for(["replay"], 1):
            raise SystemExit("the endpoint did not start: %s" % events.lines[-5:])
        process.send_signal(signal.SIGHUP)
        if not events.wait_for(["listening"], 1):
            raise SystemExit("the endpoint did not start: %s" % events.lines[-5:])
        if not events.wait_for(["reload"], 1):
            failures.append("a SIGHUP during the start gave no reload once listening")
        early = len(events.of("reload"))
        port = int(events.of("listening")[0]["address"].rsplit(":", 1)[1])

        tally, stop = traffic.Tally(), threading.Event()
        numbers = itertools.count()
        lock = threading.Lock()

        def reports():
            while True:
                with lock:
                    n = next(numbers)
                yield "report", n, traffic.report(n)

        clients = [threading.Thread(target=traffic.send, args=(port, reports(), tally, stop)) for _ in range(args.clients)]
        for c in clients:
            c.start()

        campaigns = []
        started = time.monotonic()
        for k in range(1, args.seconds + 1):
            # Paced at one a second; what is checked waits on the event, never on this pace.
            time.sleep(max(0, started + k - time.monotonic()))
            campaigns.append(campaign(k))
            write_config(config, campaigns, 4096 - k % 2)
            process.send_signal(signal.SIGHUP)
            if not events.wait_for(["reload", "reload_refused"], early + k):
                failures.append("no reload event for SIGHUP %d" % k)
                break
        stop.set()
        for c in clients:
            c.join()

        reloads, refused = events.of("reload")[early:], events.of("reload_refused")
        if refused:
            failures.append("a good file was refused: %s" % refused[0])
        if len(reloads) != args.seconds:
            failures.append("%d SIGHUPs gave %d reload events" % (args.seconds, len(reloads)))
        if any(r["applied"] != ["site registrations"] for r in reloads):
            failures.append("a reload applied something else: %s" % [r["applied"] for r in reloads][:3])
        odd = [r for r in reloads[::2] if not any("max_connections" in d["option"] for d in r["needs_restart"])]
        if odd:
            failures.append("a changed max_connections was not named as needing a restart: %s" % odd[0])

        statuses = dict(tally.statuses)
        answered = sum(statuses.values())
        if any(not 200 <= s < 300 for s in statuses) or tally.refused_connections:
            failures.append("answers other than 2xx: %s, connections failed: %d" % (statuses, tally.refused_connections))
        status, body = get(port, "/api/reports")
        exported = [json.loads(line) for line in body.splitlines() if line.strip().startswith("{")]
        seen = {}
        for record in exported:
            n = (record.get("extra") or {}).get("n")
            seen[n] = seen.get(n, 0) + 1
        missing = [n for n in tally.acknowledged["report"] if seen.get(n) != 1]
        if status != 200 or missing:
            failures.append("export %d: %d of %d acknowledged reports not there once (first %s)"
                            % (status, len(missing), len(tally.acknowledged["report"]), missing[:5]))
        status, body = get(port, "/api/campaigns")
        registered = [c for c in json.loads(body) if c["name"].startswith("Reload ")]
        if len(registered) != args.seconds:
            failures.append("%d campaigns in the file, %d registered" % (args.seconds, len(registered)))

        # Broken files: each refused, naming the problem; nothing changes; reports still go in.
        broken = ["{", "", "[]", '{"frobnicate":1}', '{"max_connections":0}',
                  json.dumps({"sites": SITES, "campaigns": campaigns + [dict(campaign(1), name="Clash")]}),
                  json.dumps({"sites": SITES, "campaigns": campaigns[1:]}) + "x"]
        for i, text in enumerate(broken):
            with open(config, "w") as f:
                f.write(text)
            process.send_signal(signal.SIGHUP)
            if not events.wait_for(["reload", "reload_refused"], early + args.seconds + i + 1):
                failures.append("no event for broken file %r" % text[:40])
                break
        refused = events.of("reload_refused")
        if len(refused) != len(broken):
            failures.append("%d broken files, %d refused: %s" % (len(broken), len(refused), events.of("reload")[early + args.seconds:][:2]))
        status, body = get(port, "/api/campaigns")
        if len([c for c in json.loads(body) if c["name"].startswith("Reload ")]) != args.seconds:
            failures.append("a refused file changed the campaigns")
        after = traffic.Tally()
        traffic.send(port, [("report", 10 ** 9 + i, traffic.report(10 ** 9 + i)) for i in range(20)], after)
        if len(after.acknowledged["report"]) != 20:
            failures.append("after the refusals, reports answered %s" % after.statuses)

        print("%d reloads in %d s under %d clients: %d reports answered %s, all %d acknowledged exported once; "
              "%d broken files refused, each naming its problem (first: %s)"
              % (len(reloads), args.seconds, args.clients, answered, statuses, len(tally.acknowledged["report"]),
                 len(refused), refused[0]["error"][:100] if refused else "-"))
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=60)
        if code != 0:
            failures.append("exit status %d after SIGTERM" % code)
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
