#!/usr/bin/env python3
"""The endpoint behind a real TLS front: nginx and Caddy, with the files from deploy/.

Installs nginx and Caddy from Debian's packages if missing, makes a throwaway CA and certificates
with openssl, installs the endpoint with scripts/install.sh into a temporary prefix and starts it
from `/` with the systemd unit's own ExecStart line, then starts each front with deploy/nginx/
or deploy/Caddyfile (only ports and paths changed) and sends real HTTPS traffic through it with
`curl --resolve`: WebKit-shaped reports to both sites over HTTP/1.1 and HTTP/2, a pixel hit and
its trigger redirect, and the summary page. Prints `N passed, N failed`.

Usage: scripts/tls_front_test.py BINARY [--front nginx|caddy]...
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from endpoint_process import log_files, wait_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITES = ["news.example", "shop.example"]
PAGE_HOST = "attribution.shop.example"
TOKEN = "tls-front-test-token"
REPORT = "/.well-known/private-click-measurement/report-attribution/"
# WebKit's exact bytes and key order, with registrable domains.
BODY = ('{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
        '"attributed_on_site":"shop.example","trigger_data":5,"version":3}')

passed = 0
failures = []


def check(condition, what):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(command, **kwargs):
    return subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)


def ensure_installed():
    need = [package for command, package in [("nginx", "nginx-light"), ("caddy", "caddy"), ("openssl", "openssl"),
                                              ("curl", "curl")] if shutil.which(command) is None]
    if need:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", *need], check=True, stdout=subprocess.DEVNULL,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certificates(directory):
    """A throwaway CA and one certificate per name, as SITE.crt and SITE.key."""
    ca_key, ca_crt = os.path.join(directory, "ca.key"), os.path.join(directory, "ca.crt")
    run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=attribution test CA",
         "-keyout", ca_key, "-out", ca_crt])
    for name in SITES + [PAGE_HOST]:
        key, csr, crt = (os.path.join(directory, name + ext) for ext in (".key", ".csr", ".crt"))
        ext = os.path.join(directory, name + ".ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n" % name)
        run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + name, "-keyout", key, "-out", csr])
        run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
             "-extfile", ext, "-out", crt])
    return ca_crt


class Endpoint:
    """The installed endpoint, started from / with the systemd unit's ExecStart line."""

    def __init__(self, binary, work):
        prefix = os.path.join(work, "prefix")
        run([os.path.join(ROOT, "scripts/install.sh"), "--prefix", prefix, "--binary", binary])
        self.data = os.path.join(work, "state")
        config = os.path.join(work, "config.json")
        with open(config, "w") as f:
            json.dump({"sites": SITES, "trusted_proxies": ["127.0.0.1"]}, f)
        self.port = free_port()
        unit = open(os.path.join(ROOT, "deploy/attribution-endpoint.service")).read()
        line = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
        line = (line.replace("/usr/local", prefix).replace("/etc/attribution-endpoint/config.json", config)
                .replace("/var/lib/attribution-endpoint", self.data).replace("--port 8080", "--port %d" % self.port))
        self.log = open(os.path.join(work, "endpoint.log"), "w")
        self.process = subprocess.Popen(shlex.split(line) + ["--token", TOKEN], cwd="/", stdout=subprocess.DEVNULL,
                                        stderr=self.log, env=dict(os.environ, ATTRIBUTION_ENDPOINT_TOKEN=""))
        wait_port(self.port)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def start_nginx(work, certs, endpoint_port, tls_port):
    locations = os.path.join(work, "attribution-endpoint-locations.conf")
    shutil.copy(os.path.join(ROOT, "deploy/nginx/attribution-endpoint-locations.conf"), locations)
    conf = open(os.path.join(ROOT, "deploy/nginx/attribution-endpoint.conf")).read()
    conf = (conf.replace("listen 443 ", "listen %d " % tls_port).replace("127.0.0.1:8080", "127.0.0.1:%d" % endpoint_port)
            .replace("/etc/ssl/attribution", certs).replace("/etc/nginx/snippets/attribution-endpoint-locations.conf", locations))
    site = os.path.join(work, "attribution-endpoint.conf")
    with open(site, "w") as f:
        f.write(conf)
    main = os.path.join(work, "nginx-main.conf")
    with open(main, "w") as f:
        # The usual nginx.conf around the copied file, as /etc/nginx/nginx.conf has it.
        f.write("daemon off;\nworker_processes 1;\npid %s/nginx.pid;\nerror_log %s/nginx-error.log;\n"
                "events {}\nhttp {\n  access_log off;\n  client_body_temp_path %s;\n  proxy_temp_path %s;\n"
                "  include %s;\n}\n" % (work, work, work, work, site))
    process = subprocess.Popen(["nginx", "-c", main, "-p", work], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_port(tls_port)
    return process


def start_caddy(work, certs, endpoint_port, tls_port):
    conf = open(os.path.join(ROOT, "deploy/Caddyfile")).read()
    conf = conf.replace("127.0.0.1:8080", "127.0.0.1:%d" % endpoint_port).replace("/etc/ssl/attribution", certs)
    # Ports only: the HTTPS port, no HTTP port to redirect from, no admin socket.
    options = ("\tadmin off\n\thttps_port %d\n\tauto_https disable_redirects\n\tstorage file_system %s\n"
               % (tls_port, os.path.join(work, "caddy-storage")))
    # The file's own global options block (its time-outs) takes the test's options too: Caddy
    # allows one such block, first in the file.
    start = conf.index("\n{\n") + 3 if "\n{\n" in conf else None
    conf = conf[:start] + options + conf[start:] if start is not None else "{\n" + options + "}\n\n" + conf
    path = os.path.join(work, "Caddyfile")
    with open(path, "w") as f:
        f.write(conf)
    env = dict(os.environ, XDG_DATA_HOME=os.path.join(work, "caddy-data"), XDG_CONFIG_HOME=os.path.join(work, "caddy-config"),
               HOME=work)
    process = subprocess.Popen(["caddy", "run", "--config", path, "--adapter", "caddyfile"], env=env,
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "caddy.log"), "w"))
    wait_port(tls_port)
    return process


def curl(ca, tls_port, host, path, method="GET", body=None, headers=(), http="1.1", interface=None, direct_port=None):
    """One request with curl; returns (status, headers dict, body, HTTP version)."""
    if direct_port:
        url = "http://127.0.0.1:%d%s" % (direct_port, path)
        command = ["curl", "-sS", "-o", "-", "-D", "-", "-X", method, "-H", "Host: " + host, url]
    else:
        url = "https://%s:%d%s" % (host, tls_port, path)
        command = ["curl", "-sS", "-o", "-", "-D", "-", "-X", method, "--cacert", ca,
                   "--resolve", "%s:%d:127.0.0.1" % (host, tls_port), "--http2" if http == "2" else "--http1.1", url]
    if interface:
        command += ["--interface", interface]
    for header in headers:
        command += ["-H", header]
    if body is not None:
        command += ["-H", "Content-Type: application/json", "--data-binary", body]
    command += ["-w", "\n%{http_version}"]
    out = subprocess.run(command, capture_output=True, timeout=30)
    if out.returncode != 0:
        raise RuntimeError("curl %s failed: %s" % (url, out.stderr.decode()))
    # Bytes, not text: text mode would turn the head's CRLFs into newlines.
    text, version = out.stdout.decode(errors="replace").rsplit("\n", 1)
    head, _, content = text.partition("\r\n\r\n")
    lines = head.split("\r\n")
    status = int(lines[0].split()[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields, content, version


def exercise(front, ca, tls_port, endpoint):
    print("-- %s on port %d" % (front, tls_port), flush=True)
    # Both copies of one conversion, each to its own site, over HTTP/1.1 and HTTP/2.
    roles = {}
    for site, http in [("news.example", "1.1"), ("shop.example", "2"), ("news.example", "2"), ("shop.example", "1.1")]:
        status, headers, content, version = curl(ca, tls_port, site, REPORT, "POST", BODY, http=http)
        check(status == 201, "%s: report to %s over HTTP/%s answered %d %s" % (front, site, http, status, content))
        check(version == http, "%s: curl spoke HTTP/%s, not HTTP/%s" % (front, version, http))
        check("set-cookie" not in headers, "%s: no cookie on the report path" % front)
        role = json.loads(content).get("role") if status == 201 else None
        roles.setdefault(site, set()).add(role)
    check(roles == {"news.example": {"source"}, "shop.example": {"destination"}},
          "%s: the role comes from the host the browser used: %s" % (front, roles))

    # A client's own X-Forwarded-Host through the front is replaced by the front's.
    status, _, content, _ = curl(ca, tls_port, "news.example", REPORT, "POST", BODY, headers=["X-Forwarded-Host: shop.example"])
    check(status == 201 and json.loads(content)["role"] == "source",
          "%s: a forged X-Forwarded-Host through the front is overwritten: %d %s" % (front, status, content))
    # Straight to the endpoint from an untrusted peer (127.0.0.2 is not --trusted-proxy).
    status, _, content, _ = curl(ca, tls_port, "news.example", REPORT, "POST", BODY, headers=["X-Forwarded-Host: shop.example"],
                                 interface="127.0.0.2", direct_port=endpoint.port)
    check(status == 201 and json.loads(content)["role"] == "source",
          "%s: a forged X-Forwarded-Host from an untrusted peer is ignored: %d %s" % (front, status, content))

    # No redirect on any well-known path, whatever it is; the site's own redirect elsewhere.
    for method, path in [("POST", REPORT.rstrip("/")), ("GET", REPORT), ("GET", "/.well-known/private-click-measurement/"),
                         ("GET", "/.well-known/private-click-measurement/trigger-attribution/05"),
                         ("GET", "/.well-known/private-click-measurement/trigger-attribution/5/1"),
                         ("POST", "/.well-known/skadnetwork/report-attribution/"),
                         ("GET", "/.well-known/unknown")]:
        status, headers, _, _ = curl(ca, tls_port, "shop.example", path, method, BODY if method == "POST" else None)
        check(not 300 <= status < 400 and "location" not in headers,
              "%s: %s %s answered %d without a redirect" % (front, method, path, status))
    # What an app calls on its site reaches the endpoint too: its Apple Ads token, and where it stands.
    status, headers, content, _ = curl(ca, tls_port, "shop.example", "/apple-ads/attribution", "POST", "front-test-token-" + front)
    check(status == 202 and "location" in headers, "%s: an Apple Ads token through the front: %d %s" % (front, status, content))
    if "location" in headers:
        status, _, content, _ = curl(ca, tls_port, "shop.example", headers["location"])
        check(status == 200, "%s: the token's answer through the front: %d %s" % (front, status, content))
    status, headers, _, _ = curl(ca, tls_port, "shop.example", "/about")
    check(status == 301 and headers.get("location", "").startswith("https://www.shop.example"),
          "%s: the site's own redirect still works elsewhere: %d %s" % (front, status, headers.get("location")))

    # The pixel redirects to the trigger path on the https origin the browser used; the browser follows.
    origin = "https://shop.example:%d" % tls_port
    status, headers, content, _ = curl(ca, tls_port, "shop.example", "/conversion-pixel?conversion=purchase&source=https://news.example")
    location = headers.get("location", "")
    check(status == 302 and location == origin + "/.well-known/private-click-measurement/trigger-attribution/05/40"
          "?attributionSource=https://news.example", "%s: pixel Location %r (%d %s)" % (front, location, status, content))
    if location.startswith(origin):
        status, headers, _, _ = curl(ca, tls_port, "shop.example", location[len(origin):])
        check(status == 200 and headers.get("content-type") == "image/gif", "%s: the trigger answered %d" % (front, status))

    if front == "nginx":
        # A storm of signing requests from one address: nginx lets the burst through and answers
        # the rest 429, before they reach the signing threads. Reports from the same address are
        # never limited (they arrive through Apple's privacy proxies).
        def burst(url, body, n):
            """n POSTs of `body` on one connection; the status of each."""
            command = ["curl", "-sS", "--cacert", ca, "--resolve", "news.example:%d:127.0.0.1" % tls_port, "--http1.1",
                       "-H", "Content-Type: application/json", "--data-binary", body, "-w", "%{http_code}\n"]
            for _ in range(n):
                command += ["-o", "/dev/null", url]
            return subprocess.run(command, capture_output=True, timeout=60).stdout.decode().split()
        sign = "https://news.example:%d/.well-known/private-click-measurement/sign-unlinkable-token/" % tls_port
        codes = burst(sign, "{}", 120)
        limited = codes.count("429")
        check(len(codes) == 120 and limited >= 40 and codes[:40].count("429") == 0,
              "%s: 120 signing requests at once: %d answered 429 (the burst of 40 first passes): %s" % (front, limited, codes[:50]))
        codes = burst("https://news.example:%d%s" % (tls_port, REPORT), BODY, 120)
        check(codes.count("201") == 120, "%s: 120 reports at once from one address: every one 201 (%s)" % (front, sorted(set(codes))))

    # The summary page and its API, on the page's own name.
    status, headers, content, _ = curl(ca, tls_port, PAGE_HOST, "/")
    check(status == 200 and "<html" in content.lower(), "%s: the summary page answered %d" % (front, status))
    status, _, content, _ = curl(ca, tls_port, PAGE_HOST, "/api/summary?site=shop.example", headers=["Authorization: Bearer " + TOKEN])
    check(status in (200, 503), "%s: the summary API answered %d %s" % (front, status, content[:200]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--front", action="append", choices=["nginx", "caddy"])
    args = parser.parse_args()
    fronts = args.front or ["nginx", "caddy"]
    ensure_installed()
    work = tempfile.mkdtemp(prefix="tls-front-")
    certs = os.path.join(work, "certs")
    os.makedirs(certs)
    ca = make_certificates(certs)
    endpoint = Endpoint(os.path.abspath(args.binary), work)
    try:
        status, _, content, _ = curl(ca, 0, "shop.example", "/api/conversions", "POST",
                                     '{"site":"shop.example","name":"purchase","trigger_data":5,"priority":40}',
                                     headers=["Authorization: Bearer " + TOKEN], direct_port=endpoint.port)
        check(status == 201, "conversion registered: %d %s" % (status, content))
        for front in fronts:
            tls_port = free_port()
            start = start_nginx if front == "nginx" else start_caddy
            process = start(work, certs, endpoint.port, tls_port)
            try:
                exercise(front, ca, tls_port, endpoint)
            finally:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
        # What the endpoint stored: reports, bodies as sent, and never a client address or User-Agent.
        status, _, export, _ = curl(ca, 0, "shop.example", "/api/reports", headers=["Authorization: Bearer " + TOKEN],
                                    direct_port=endpoint.port)
        lines = [json.loads(line) for line in export.splitlines() if line]
        check(len(lines) >= 6 * len(fronts), "the export holds every report: %d" % len(lines))
        stored = b"".join(open(path, "rb").read() for path in log_files(endpoint.data)) + export.encode()
        for needle in [b"127.0.0.", b"curl/", b"::1"]:
            check(needle not in stored, "the log and the export hold no %r" % needle)
    finally:
        check(endpoint.stop() == 0, "the endpoint stopped with status 0")
    print("%d passed, %d failed" % (passed, len(failures)))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
