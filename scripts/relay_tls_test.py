#!/usr/bin/env python3
"""Relays over real HTTPS, certificates checked: a receiver on 127.0.0.1 with a certificate from a
test CA, and the endpoint told to trust that CA the only way Foundation on Linux takes, its
system trust store. The endpoint runs in a mount namespace of its own (`unshare`) in which
/etc/ssl/certs/ca-certificates.crt is the system's bundle plus the test CA: nothing on the
machine changes, and the endpoint has no flag that turns verification off.

- With the test CA trusted, every copy reaches the receiver byte for byte, with its headers,
  through the relays' connect guard (the process's https_proxy), which checked the address.
- Without it (the endpoint started plainly), nothing reaches the receiver and the relay says
  why: the certificate was refused, so verification is on.

Usage: scripts/relay_tls_test.py BINARY
"""
import http.server
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import endpoint_process  # noqa: E402
import traffic  # noqa: E402

passed = failed = 0


def check(condition, what):
    global passed, failed
    if condition:
        passed += 1
        print("ok    " + what)
    else:
        failed += 1
        print("FAIL  " + what)


def run(*command, cwd):
    subprocess.run(command, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_certificates(work):
    """A test CA, and a certificate it signed for localhost and 127.0.0.1."""
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=attribution relay test CA",
        "-keyout", "ca.key", "-out", "ca.pem", cwd=work)
    with open(os.path.join(work, "san.cnf"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "server.key", "-out", "server.csr", cwd=work)
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
        "-extfile", "san.cnf", "-out", "server.pem", cwd=work)
    bundle = os.path.join(work, "bundle.pem")
    with open(bundle, "wb") as out:
        for path in ["/etc/ssl/certs/ca-certificates.crt", os.path.join(work, "ca.pem")]:
            if os.path.exists(path):
                out.write(open(path, "rb").read() + b"\n")
    return bundle


def https_receiver(work):
    """An HTTPS server on 127.0.0.1 that answers 200 and keeps each request's body and headers."""
    received = []

    class Receive(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            received.append((body, {k.lower(): v for k, v in self.headers.items()}))
            # The very first is answered 503: the relay must see the destination's own answer
            # through the tunnel, not the connect guard's 200 to the tunnel's CONNECT.
            self.send_response(503 if len(received) == 1 else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receive)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(os.path.join(work, "server.pem"), os.path.join(work, "server.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


def wrapper(work, binary, bundle):
    """The binary, started in a mount namespace where the system bundle is `bundle`: as an
    unprivileged user namespace where the kernel allows one, else (as root) a mount namespace."""
    path = os.path.join(work, "trusting-endpoint")
    user_ns = subprocess.run(["unshare", "-U", "-r", "-m", "true"], stderr=subprocess.DEVNULL).returncode == 0
    flags = "-U -r -m" if user_ns else "-m"
    with open(path, "w") as f:
        f.write('#!/bin/sh\nexec unshare %s sh -c \'mount --bind "$0" /etc/ssl/certs/ca-certificates.crt && exec "$@"\' "%s" "%s" "$@"\n'
                % (flags, bundle, os.path.abspath(binary)))
    os.chmod(path, 0o755)
    return path


def relay(endpoint, token, url, sent_bodies, failing=False):
    """Registers the app's site as a relay destination at `url`, sends the postbacks, and waits
    (bounded) until the relay has delivered them all or, when it is expected to fail, has failed."""
    destination = {"name": "partner", "url": url, "site": "app.example", "protocols": ["skadnetwork"],
                   "copies": "all", "internal": True}
    status, body = endpoint_process.request(endpoint.port, token, "POST", "/api/relays", json.dumps(destination))
    check(status == 201, "the destination at %s is registered (%s %s)" % (url, status, body[:200]))
    for body in sent_bodies:
        method, path, site, text = body
        status, _ = endpoint_process.request(endpoint.port, token, method, path, text, host=site)
        check(status == 200, "a postback copy is taken")
    deadline = time.time() + 60
    standing = {}
    while time.time() < deadline:
        _, answer = endpoint_process.request(endpoint.port, token, "GET", "/api/relays")
        standing = json.loads(answer)["destinations"][0]
        if standing["delivered"] >= len(sent_bodies) or (failing and standing.get("last_error") and standing["retrying"]):
            break
        time.sleep(0.1)  # polling the relay's own report, bounded by the deadline
    return standing


def main():
    binary = sys.argv[1]
    work = tempfile.mkdtemp()
    try:
        bundle = make_certificates(work)
        server, received = https_receiver(work)
        url = "https://localhost:%d/copies" % server.server_address[1]
        token = "relay-tls-token"
        postbacks = [traffic.postback(n) for n in range(5)]

        trusting = endpoint_process.Endpoint(wrapper(work, binary, bundle), os.path.join(work, "trusting"), token,
                                             extra=["--site", "app.example"])
        standing = relay(trusting, token, url, postbacks)
        tunnels = endpoint_process.metric(trusting.port, token, "attribution_relay_connections_total", 0)
        trusting.stop()
        check(standing.get("delivered") == 5, "with the test CA trusted, all 5 copies are delivered over HTTPS (%s)" % standing)
        bodies = [body for body, _ in received]
        check(len(received) > 5 and bodies.count(bodies[0]) >= 2,
              "the destination's 503 to the first was seen through the tunnel, and that copy sent again (%d requests)" % len(received))
        check(set(bodies) == {text.encode() for _, _, _, text in postbacks}, "each arrives byte for byte")
        check(all(headers.get("x-attribution-protocol") == "skadnetwork" and len(headers.get("x-attribution-delivery", "")) == 32
                  for _, headers in received), "with its protocol and delivery id")
        check(tunnels and tunnels >= 1, "through the connect guard, which checked the address connected to (%s connections)" % tunnels)

        received.clear()
        plain = endpoint_process.Endpoint(binary, os.path.join(work, "plain"), token, extra=["--site", "app.example"])
        standing = relay(plain, token, url, postbacks[:1], failing=True)
        plain.stop()
        check(not received, "without it, nothing reaches the receiver")
        check(standing.get("delivered") == 0 and "TLS" in (standing.get("last_error") or ""),
              "and the relay says the certificate was refused (%s)" % standing.get("last_error"))
        server.shutdown()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
