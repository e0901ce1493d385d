#!/usr/bin/env python3
"""The README's "More than one node", run as written (issue 46).

The section's commands are taken from README.md and run with bash, with only what names this
machine changed: /etc/attribution-endpoint and /var/lib/attribution-endpoint become folders of the
test's own, ClickHouse's 10.0.0.5 becomes a test clickhouse-server (scripts/clickhouse_server.py),
the front's 10.0.0.2 is 127.0.0.1, and each node's --node, --data and --port are its own. The front
is deploy/nginx/cluster.conf as shipped, plain HTTP on loopback instead of TLS. Then:
- a report for each site goes through the front and reaches ClickHouse;
- the viewer token the section made, and the admin token, work on every node;
- the node that serves the page's host is killed, and the page's next request, with the same admin
  token, is answered by another node.

usage: readme_cluster_test.py BINARY
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clickhouse_server import ClickHouse, free_port  # noqa: E402
from endpoint_process import wait_port  # noqa: E402
import traffic  # noqa: E402
import endpoint_process  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE_HOST = "attribution.shop.example"


def section_commands():
    readme = open(os.path.join(ROOT, "README.md")).read()
    section = readme[readme.index("## More than one node"):]
    section = section[:section.index("\n## ", 3)]
    return re.search(r"```sh\n(.*?)```", section, re.S).group(1)


def request(port, method, path, host, body=None, token=None):
    """endpoint_process.request, its body as text (the checks read it as such)."""
    status, answer = endpoint_process.request(port, token, method, path, body, host=host, timeout=30)
    return status, answer.decode(errors="replace")


def start_front(work, ports, listen):
    """deploy/nginx/cluster.conf as shipped, the nodes' addresses and plain HTTP on loopback for its own."""
    conf = open(os.path.join(ROOT, "deploy/nginx/cluster.conf")).read()
    servers = re.findall(r"server 10\.0\.0\.\d+:8080", conf)
    assert len(servers) == len(ports), "cluster.conf names %d nodes" % len(servers)
    for server, port in zip(servers, ports):
        conf = conf.replace(server, "server 127.0.0.1:%d" % port, 1)
    conf = conf.replace("listen 443 ssl http2;", "listen 127.0.0.1:%d;" % listen)
    conf = re.sub(r"\n\s*ssl_certificate(_key)? [^;]+;", "", conf)
    conf = conf.replace("/etc/nginx/snippets/attribution-endpoint-locations.conf",
                        os.path.join(ROOT, "deploy/nginx/attribution-endpoint-locations.conf"))
    site = os.path.join(work, "cluster.conf")
    open(site, "w").write(conf)
    main = os.path.join(work, "nginx.conf")
    open(main, "w").write("daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log;\n"
                          "events {}\nhttp {\n  access_log off;\n  client_body_temp_path %s;\n  proxy_temp_path %s;\n"
                          "  include %s;\n}\n" % (work, work, work, work, site))
    process = subprocess.Popen(["nginx", "-c", main, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(listen)
    return process


def main():
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="readme-cluster-")
    if subprocess.run(["which", "nginx"], capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=True, stdout=subprocess.DEVNULL)
    clickhouse = ClickHouse.start(os.path.join(work, "clickhouse"))
    etc = os.path.join(work, "etc")
    commands = section_commands()
    commands = commands.replace("/etc/attribution-endpoint", etc)
    commands = commands.replace("http://10.0.0.5:8123/attribution", clickhouse.url + "/attribution")
    commands = commands.replace('"10.0.0.2"', '"127.0.0.1"')
    # Everything before the node command runs once; the node command runs on each node.
    node_at = commands.index("attribution-endpoint --config")
    setup, node_command = commands[:node_at], commands[node_at:].strip()
    environment = dict(os.environ, PATH=os.path.dirname(binary) + os.pathsep + os.environ["PATH"])
    made = subprocess.run(["bash", "-euo", "pipefail", "-c", setup], cwd=work, env=environment, capture_output=True, text=True)
    if made.returncode != 0:
        raise SystemExit("the README's commands failed:\n%s\n%s" % (setup, made.stderr))
    viewer_token = made.stdout.strip().splitlines()[-1]
    admin_token = open(os.path.join(etc, "admin-token")).read().strip()

    ports = [free_port() for _ in range(3)]
    nodes = []
    failures = []
    front = None
    try:
        for i, port in enumerate(ports):
            command = node_command.replace("--node node-1", "--node node-%d" % (i + 1))
            command = command.replace("/var/lib/attribution-endpoint", os.path.join(work, "node-%d" % (i + 1)))
            command = command.replace("--port 8080", "--port %d" % port)
            assert "--port %d" % port in command and "node-%d" % (i + 1) in command, command
            log = open(os.path.join(work, "node-%d.log" % (i + 1)), "w")
            nodes.append(subprocess.Popen(["bash", "-c", "exec " + command.replace("\\\n", " ")], cwd=work, env=environment,
                                          stdout=subprocess.DEVNULL, stderr=log))
            wait_port(port)
        listen = free_port()
        front = start_front(work, ports, listen)

        sites = json.loads(open(os.path.join(etc, "config.json")).read())["sites"]
        for n, site in enumerate(sites):
            report = ('{"source_engagement_type":"click","source_site":"%s","source_id":%d,"attributed_on_site":"elsewhere.example",'
                      '"trigger_data":3,"version":3}' % (site, n))
            status, body = request(listen, "POST", "/.well-known/private-click-measurement/report-attribution/", site, body=report)
            if status != 201:
                failures.append("a report for %s through the front was answered %d: %s" % (site, status, body[:200]))
        deadline = time.monotonic() + 60
        count = 0
        while time.monotonic() < deadline:
            try:
                count = int(clickhouse.query("SELECT count() FROM attribution.pcm_reports FINAL").strip() or 0)
            except Exception:
                count = 0
            if count >= len(sites):
                break
            time.sleep(0.5)  # polling ClickHouse against a deadline, not a synchronisation
        if count != len(sites):
            failures.append("ClickHouse holds %d of the %d reports" % (count, len(sites)))
        for port in ports:
            for token, what in [(admin_token, "the admin token"), (viewer_token, "the README's viewer token")]:
                status, _ = request(port, "GET", "/api/summary", "localhost", token=token)
                if status != 200:
                    failures.append("node on %d answered %s with %d" % (port, what, status))

        # The page's host, through the front: the node behind it is killed, the next one answers
        # the same admin token.
        status, body = request(listen, "GET", "/healthz", PAGE_HOST, token=admin_token)
        serving = json.loads(body).get("node") if status == 200 else None
        if not serving:
            failures.append("the page's host answered /healthz with %d: %s" % (status, body[:200]))
        else:
            victim = nodes[int(serving.split("-")[1]) - 1]
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            status, body = request(listen, "GET", "/api/whoami", PAGE_HOST, token=admin_token)
            status2, health = request(listen, "GET", "/healthz", PAGE_HOST, token=admin_token)
            after = json.loads(health).get("node") if status2 == 200 else None
            if status != 200 or not after or after == serving:
                failures.append("with %s killed the page's host answered %d (node %s): %s" % (serving, status, after, body[:200]))
        print("the README's cluster commands, run as written: %d nodes, %d reports through cluster.conf reached ClickHouse, "
              "the admin and viewer tokens worked on every node, and the page moved from %s to another node with the same token"
              % (len(nodes), count, serving))
    finally:
        for node in nodes:
            if node.poll() is None:
                node.send_signal(signal.SIGTERM)
                node.wait(timeout=60)
        if front:
            front.send_signal(signal.SIGTERM)
            front.wait(timeout=30)
        clickhouse.stop()
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        for i in range(len(ports)):
            print("--- node-%d.log (tail)\n%s" % (i + 1, open(os.path.join(work, "node-%d.log" % (i + 1))).read()[-1500:]))
        sys.exit(1)


if __name__ == "__main__":
    main()
