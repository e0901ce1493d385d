"""Three nodes behind nginx, exporting to one ClickHouse, with a node killed and ClickHouse stopped
under load (docs/RELIABILITY.md, "More than one node").

    python3 scripts/cluster_test.py BINARY

Installs clickhouse-server and nginx from Debian if missing and starts them on loopback with
folders and ports of their own. The nodes share one config file ("cluster": true, the
registrations) and one token-key file (`attribution-endpoint token-keys add`); nginx runs
deploy/nginx/cluster.conf's upstream and failover settings with the shipped locations. Traffic for
six sites (two publishers, two advertisers, two apps) goes through nginx: reports of both roles,
pixel hits, postbacks delivered twice as devices retry, Apple Ads tokens. During it:
- the node that serves the most sites is SIGKILLed, and started again 15 s later;
- ClickHouse is stopped for 30 s, and started again.
At the end:
- every acknowledged report, postback, pixel hit and token is in ClickHouse once (FINAL);
- the killed node's sites were served by another node while it was down;
- every node serves the same token key bytes for every site;
- the cluster's summaries (scope=cluster) equal the sum of the nodes' own, for every view;
- the 5xx answers during the failover stay under a bound (the requests in flight on the killed
  node's connections), and are printed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clickhouse_server import ClickHouse, free_port  # noqa: E402
from endpoint_process import apple_stand_in, finish, wait_port  # noqa: E402
import traffic  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOKEN = "cluster-test"
PUBLISHERS = ["news.example", "blog.example"]
ADVERTISERS = ["shop.example", "store.example"]
APPS = ["app.example", "game.example"]
SITES = PUBLISHERS + ADVERTISERS + APPS
CLIENTS = 6


# Apple's attribution API answers every token with an attributed install.
ATTRIBUTED = (b'{"attribution":true,"orgId":40669820,"campaignId":542370539,"adGroupId":542317095,"keywordId":87675432,'
              b'"adId":542317137,"conversionType":"Download","claimType":"Click","countryOrRegion":"US"}')


class Node:
    def __init__(self, binary, name, port, data, config):
        self.binary, self.name, self.port, self.data, self.config = binary, name, port, data, config
        self.process = None
        self.start()

    def start(self):
        log = open(os.path.join(self.data + ".log"), "a")
        self.process = subprocess.Popen([self.binary, "--config", self.config, "--node", self.name, "--port", str(self.port),
                                         "--data", self.data, "--token", TOKEN, "--no-access-log"],
                                        stdout=subprocess.DEVNULL, stderr=log)
        wait_port(self.port)
        # The node on that port must be this one: another answering there would be counted twice.
        status, body = self.get("/healthz")
        if self.process.poll() is not None or status != 200 or json.loads(body).get("node") != self.name:
            raise RuntimeError("%s did not start on port %d (see %s.log): %s" % (self.name, self.port, self.data, body[:200]))

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)

    def get(self, path):
        return http_get(self.port, path)


def http_get(port, path, host="localhost"):
    return traffic.get(port, path, TOKEN, host=host)


def start_nginx(work, ports, listen):
    conf = open(os.path.join(ROOT, "deploy/nginx/cluster.conf")).read()
    # The shipped upstream and failover settings, with the test's nodes; one plain-HTTP server
    # for every test site, with the shipped locations.
    head = conf[:conf.index("\nserver {")]
    servers = re.findall(r"server 10\.0\.0\.\d+:8080", head)
    assert len(servers) == len(ports), "cluster.conf names %d nodes" % len(servers)
    for server, port in zip(servers, ports):
        head = head.replace(server, "server 127.0.0.1:%d" % port, 1)
    locations = os.path.join(work, "attribution-endpoint-locations.conf")
    with open(locations, "w") as f:
        f.write(open(os.path.join(ROOT, "deploy/nginx/attribution-endpoint-locations.conf")).read())
    site = os.path.join(work, "cluster.conf")
    with open(site, "w") as f:
        f.write(head + "\nserver {\n    listen 127.0.0.1:%d;\n    server_name %s;\n    include %s;\n}\n" % (listen, " ".join(SITES), locations))
    main = os.path.join(work, "nginx-main.conf")
    with open(main, "w") as f:
        f.write("daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log;\n"
                "events {}\nhttp {\n  access_log off;\n  client_body_temp_path %s;\n  proxy_temp_path %s;\n"
                "  include %s;\n}\n" % (work, work, work, work, site))
    process = subprocess.Popen(["nginx", "-c", main, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(listen)
    return process


def requests_for(client, rounds):
    """One client's share of every kind of traffic, numbered so that no two clients collide."""
    for r in range(rounds):
        n = client * 1_000_000 + r
        publisher, advertiser, app = PUBLISHERS[n % 2], ADVERTISERS[n % 2], APPS[n % 2]
        yield "trigger", n, traffic.trigger(n, site=advertiser)
        dest = traffic.report(n, site=advertiser)
        body = dest[3].replace('"source_site":"news.example"', '"source_site":"%s"' % publisher)
        yield "report", n, ("POST", traffic.REPORT_PATH, advertiser, body)
        yield "report", n + 500_000, ("POST", traffic.REPORT_PATH, publisher,
                                      body.replace('"n":%d' % n, '"n":%d' % (n + 500_000)))
        if r % 3 == 0:
            postback = traffic.postback(n, site=app)
            yield "postback", n, postback
            if r % 9 == 0:
                yield "postback", n, postback
        if r % 20 == 0:
            yield "token", n, ("POST", "/apple-ads/attribution", app, "cluster-token-%d" % n)


def main():
    binary = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".build/debug/attribution-endpoint")
    failures = []
    work = tempfile.mkdtemp(prefix="cluster-test-")
    if subprocess.run(["which", "nginx"], capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True, stdout=subprocess.DEVNULL)
    ch = ClickHouse.start(os.path.join(work, "clickhouse"))
    apple, apple_url = apple_stand_in(ATTRIBUTED)

    keys = os.path.join(work, "token-keys.json")
    for site in SITES:
        subprocess.run([binary, "token-keys", "add", site, "--file", keys], check=True, stdout=subprocess.DEVNULL)
    config = os.path.join(work, "cluster.json")
    with open(config, "w") as f:
        json.dump({"sites": SITES, "cluster": True, "token_keys": keys, "viewer_tokens": os.path.join(work, "viewer-tokens.json"), "trusted_proxies": ["127.0.0.1"],
                   "clickhouse": ch.url + "/attribution", "apple_ads_api": apple_url,
                   "conversions": [{"site": s, "name": "purchase", "trigger_data": 5} for s in ADVERTISERS],
                   "campaigns": [{"source_site": s, "name": "Winter %d" % i, "source_id": i, "destination": a, "starts_at": "2026-01-01T00:00:00Z"}
                                 for s in PUBLISHERS for i, a in enumerate(ADVERTISERS)],
                   "apps": [{"app_id": 1, "site": "app.example", "name": "Test app"}]}, f)
    ports = [free_port() for _ in range(3)]
    nodes = [Node(binary, "node-%d" % (i + 1), port, os.path.join(work, "node-%d" % (i + 1)), config) for i, port in enumerate(ports)]
    front = free_port()
    nginx = start_nginx(work, ports, front)

    tally = traffic.Tally()
    tally.acknowledged["token"] = set()
    stop = threading.Event()

    def client(c):
        traffic.send(front, requests_for(c, 10_000_000), tally, stop)

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        time.sleep(5)  # load before the faults: the run's own schedule, not a synchronisation
        # Which node serves which site, from the nodes themselves.
        owner = {}
        for node in nodes:
            _, body = node.get("/api/summary?scope=node&from=2026-01-01&to=2030-12-31")
            for site in json.loads(body)["sites"]:
                owner[site] = node.name
        by_node = {node.name: [s for s, o in owner.items() if o == node.name] for node in nodes}
        victim = max(nodes, key=lambda n: len(by_node[n.name]))
        print("sites by node: %s; killing %s" % (by_node, victim.name))
        fivexx_before = tally.count_5xx()
        killed_at = time.time()
        victim.kill()
        time.sleep(15)  # the node stays down 15 s under load
        restarted_at = time.time()
        victim.start()
        fivexx_failover = tally.count_5xx() - fivexx_before
        time.sleep(5)
        ch.stop()
        time.sleep(30)  # ClickHouse stays down 30 s under load
        ch.restart()
        time.sleep(5)
        stop.set()
        for t in threads:
            t.join()
        # A device retrying through a failover: the same postback delivered to one node, then to
        # another. Each stores it; the cluster counts one postback and one duplicate.
        for i in range(20):
            n = 90_000_000 + i
            for node in (nodes[i % 3], nodes[(i + 1) % 3]):
                traffic.send(node.port, [("postback", n, traffic.postback(n, site=APPS[i % 2]))], tally)
        deadline = time.time() + 300
        while time.time() < deadline:
            states = [json.loads(n.get("/healthz")[1]).get("export", {}) for n in nodes]
            if all(s.get("state") == "current" for s in states):
                break
            time.sleep(0.5)  # polling the nodes' own export state, bounded by the deadline
        else:
            failures.append("the export was not current 300 s after the load: %s" % states)

        # Every acknowledged record once in ClickHouse.
        numbers = [int(x) for x in ch.query("SELECT visitParamExtractUInt(extra, 'n') FROM attribution.pcm_reports FINAL").split()]
        acked = tally.acknowledged["report"]
        if len(numbers) != len(set(numbers)):
            failures.append("a report is twice in ClickHouse under FINAL")
        missing = acked - set(numbers)
        if missing:
            failures.append("%d acknowledged reports are not in ClickHouse, e.g. %s" % (len(missing), sorted(missing)[:5]))
        transactions = ch.query("SELECT `transaction-id`, count() FROM attribution.postbacks FINAL GROUP BY `transaction-id`"
                                " FORMAT TabSeparated").split("\n")
        stored_postbacks = {line.split("\t")[0] for line in transactions if line}
        missing_postbacks = {"t-%d" % n for n in tally.acknowledged["postback"]} - stored_postbacks
        if missing_postbacks:
            failures.append("%d acknowledged postbacks are not in ClickHouse" % len(missing_postbacks))
        triggers = int(ch.query("SELECT count() FROM attribution.pcm_triggers FINAL"))
        if triggers < len(tally.acknowledged["trigger"]):
            failures.append("%d pixel hits acknowledged, %d triggers in ClickHouse" % (len(tally.acknowledged["trigger"]), triggers))
        tokens = int(ch.query("SELECT count() FROM attribution.apple_ads_tokens FINAL"))
        if tokens < len(tally.acknowledged["token"]):
            failures.append("%d Apple Ads tokens acknowledged, %d in ClickHouse" % (len(tally.acknowledged["token"]), tokens))

        # The victim's sites were served by another node while it was down.
        down = ch.query("SELECT DISTINCT site, node FROM attribution.pcm_reports FINAL WHERE received_at_ms >= %d AND received_at_ms < %d"
                        " AND node != '%s' FORMAT TabSeparated" % (killed_at * 1000 + 2000, restarted_at * 1000, victim.name))
        served = {line.split("\t")[0] for line in down.split("\n") if line}
        for site in by_node[victim.name]:
            if site in PUBLISHERS + ADVERTISERS and site not in served:
                failures.append("%s (on %s) was not served by another node while %s was down" % (site, victim.name, victim.name))

        # The same key bytes from every node.
        for site in PUBLISHERS + ADVERTISERS:
            answers = {http_get(n.port, "/.well-known/private-click-measurement/get-token-public-key/", host=site)[1] for n in nodes}
            if len(answers) != 1:
                failures.append("%s: the nodes serve %d different token keys" % (site, len(answers)))

        # The cluster's numbers equal the sum of the nodes' own.
        period = "from=2026-01-01&to=2030-12-31"
        compare_summaries(nodes, period, failures)

        # The bound: a request in flight on the killed node's connections (one per client) is lost
        # with a 502; nothing else may fail.
        total = sum(tally.statuses.values())
        bound = 2 * CLIENTS
        print("requests: %d, by status %s; 5xx during the failover: %d (bound %d); refused connections: %d"
              % (total, dict(sorted(tally.statuses.items())), fivexx_failover, bound, tally.refused_connections))
        if fivexx_failover > bound:
            failures.append("%d requests got a 5xx during the failover (bound %d)" % (fivexx_failover, bound))
        if tally.count_5xx() - fivexx_failover > 0:
            failures.append("%d requests got a 5xx outside the failover (ClickHouse down must not show)" % (tally.count_5xx() - fivexx_failover))
        print("ClickHouse holds %d reports, %d postbacks, %d triggers, %d tokens; acknowledged %d reports, %d postbacks, %d pixel hits, %d tokens"
              % (len(numbers), len(stored_postbacks), triggers, tokens, len(acked), len(tally.acknowledged["postback"]),
                 len(tally.acknowledged["trigger"]), len(tally.acknowledged["token"])))
    finally:
        stop.set()
        for node in nodes:
            node.stop()
        nginx.send_signal(signal.SIGTERM)
        nginx.wait()
        ch.stop()
        apple.shutdown()
    # Three nodes' logs and a ClickHouse come to about 2 GB a run: kept only when there is
    # something to look at, or a CI machine's disk fills after a few dozen runs.
    if failures:
        print("kept for a look: %s" % work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    finish(failures)


def compare_summaries(nodes, period, failures):
    """Cluster = sum of the nodes, view by view, as the page counts."""
    own = [json.loads(n.get("/api/summary?" + period)[1]) for n in nodes]
    cluster = json.loads(nodes[0].get("/api/summary?scope=cluster&" + period)[1])
    # Each node's last export, by ClickHouse's clock: all three, none stale once the killed one is back.
    listed = sorted((n["node"], n["stale"]) for n in cluster.get("nodes") or [])
    if listed != [(node.name, False) for node in nodes]:
        failures.append("the cluster's summary lists the nodes' exports as %s" % cluster.get("nodes"))
    for role in ("source", "destination"):
        for key in ("accepted", "quarantined", "late"):
            total = sum(o[key][role] for o in own)
            if cluster[key][role] != total:
                failures.append("PCM %s %s: cluster %d, nodes %d" % (key, role, cluster[key][role], total))
    apps_own = [json.loads(n.get("/api/apps/summary?" + period)[1])["postbacks"] for n in nodes]
    apps_cluster = json.loads(nodes[1].get("/api/apps/summary?scope=cluster&" + period)[1])["postbacks"]
    # A postback two nodes stored (a retry through the failover) is one postback and one
    # duplicate: deliveries add up, and accepted plus quarantined is what was stored.
    deliveries = sum(o["stored"] + o["duplicates_received"] for o in apps_own)
    if apps_cluster["stored"] + apps_cluster["duplicates_received"] != deliveries:
        failures.append("Apps: the cluster counts %d deliveries, the nodes %d" % (apps_cluster["stored"] + apps_cluster["duplicates_received"], deliveries))
    copies = sum(o["stored"] for o in apps_own) - apps_cluster["stored"]
    if copies < 20:
        failures.append("Apps: only %d postbacks stored on two nodes were counted once (20 were sent to two)" % copies)
    ads_own = [json.loads(n.get("/api/apple-ads/summary?" + period)[1]) for n in nodes]
    ads_cluster = json.loads(nodes[2].get("/api/apple-ads/summary?scope=cluster&" + period)[1])
    for key in ("tokens", "calls"):
        if ads_cluster[key] != sum(o[key] for o in ads_own):
            failures.append("Apple Ads %s: cluster %d, nodes %d" % (key, ads_cluster[key], sum(o[key] for o in ads_own)))
    for status in ads_cluster["by_status"]:
        if ads_cluster["by_status"][status] != sum(o["by_status"][status] for o in ads_own):
            failures.append("Apple Ads %s: cluster %d, nodes %d" % (status, ads_cluster["by_status"][status], sum(o["by_status"][status] for o in ads_own)))
    # The overview across the cluster: the same counts, day by day, as its views'.
    overview = json.loads(nodes[0].get("/api/overview?scope=cluster&" + period)[1])
    channels = {c["id"]: c for c in overview["channels"]}
    if overview["scope"] != "cluster":
        failures.append("overview: scope=cluster answered %s" % overview["scope"])
    ads_days = [sum(day) for day in zip(*[{c["id"]: c for c in json.loads(n.get("/api/overview?" + period)[1])["channels"]}["apple_ads"]["per_day"] for n in nodes])]
    if channels["apple_ads"]["per_day"] != ads_days:
        failures.append("overview Apple Ads per day: cluster %s, nodes %s" % (channels["apple_ads"]["per_day"], ads_days))
    if channels["apple_ads"]["total"] != ads_cluster["by_status"].get("attributed", 0):
        failures.append("overview Apple Ads: %d, the cluster's Apple Ads view %d" % (channels["apple_ads"]["total"], ads_cluster["by_status"].get("attributed", 0)))
    apps_view = json.loads(nodes[1].get("/api/apps/summary?scope=cluster&" + period)[1])
    installs = sum(r["installs"] + r["redownloads"] for r in apps_view["conversions"])
    if channels["app_installs"]["total"] != installs:
        failures.append("overview app installs: %d, the cluster's Apps view %d" % (channels["app_installs"]["total"], installs))
    web = cluster["accepted"][cluster["crosstab"]["copy"]]
    if channels["web"]["total"] != web:
        failures.append("overview web: %d, the cluster's summary %d" % (channels["web"]["total"], web))
    print("cluster = sum of nodes: PCM accepted %s, quarantined %s; postbacks stored %d (%d stored on two nodes), duplicates %d; Apple Ads tokens %d"
          % (cluster["accepted"], cluster["quarantined"], apps_cluster["stored"], copies, apps_cluster["duplicates_received"], ads_cluster["tokens"]))


if __name__ == "__main__":
    main()
