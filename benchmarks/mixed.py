#!/usr/bin/env python3
"""Neighbours (issue 41): what reads of the log do to the reports sent meanwhile.

    python3 benchmarks/mixed.py [--records 10000000] [--seconds 60] [--binary B] [--baseline B0]

On a log of --records PCM reports over 30 days (benchmarks' log-generator, through the real store;
one segment a day), each binary given (--binary, and --baseline for a paired run against the
previous main) is started on its own copy of the log and measured twice:

1. Alone: one full admin export (NDJSON, `curl`), rows/s; and a scoped viewer's export of an
   advertiser with no records (quiet.example), seconds.
2. Mixed, for --seconds: PCM reports at a steady 2,000/s (one process, 16 keep-alive
   connections, each request's latency measured from when it was due, so a stall is counted in
   full), postback copies at 200/s (distinct SKAdNetwork 4.0 postbacks signed by a test key), a
   token signature every second; beside them, over and over, a full admin export (`curl`, reading
   as fast as it can), a scoped viewer's export (on one keep-alive connection, as a dashboard
   polls: a `curl` process each would measure the machine starting processes), and
   `/api/summary` once a second. `--reads full,scoped,summaries` chooses which reads run, and
   `--load-only` runs none: the floor the reads add to (reports only are reported then).
   Everything runs on this machine's two cores: the clients of the exports, the summaries and the
   signatures run at nice 10, as if elsewhere, so that what is measured is the endpoint's loop, not
   the benchmark's own processes taking its core; the reports' and postbacks' clients at 0.
   Reported: the reports' p50, p99 and maximum, the exports' rows/s and times, the summaries'.

The targets: report p99 <= 5 ms and max <= 50 ms under the mix; the scoped export of an advertiser
with no records within 1 s; export throughput at least the baseline's. Prints the results as JSON;
--markdown FILE writes them as a section for docs/PERFORMANCE.md.
"""
import argparse
import base64
import json
import multiprocessing
import os
import secrets
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from endpoint_process import wait_port  # noqa: E402
from token_round_trip import b64url, read_key, unb64url  # noqa: E402

REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"
POSTBACK_PATH = "/.well-known/skadnetwork/report-attribution/"
SIGN_PATH = "/.well-known/private-click-measurement/sign-unlinkable-token/"
KEY_PATH = "/.well-known/private-click-measurement/get-token-public-key/"
BODY = ('{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
        '"attributed_on_site":"shop.example","trigger_data":5,"version":3}')
# The generator's sites, the postbacks' app site, and a quiet advertiser's site with no records.
SITES = ["news.example", "shop.example", "blog.example", "store.example", "app.example", "quiet.example"]
SEP = "\u2063"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(binary, data, spki):
    port = free_port()
    command = [binary, "--port", str(port), "--data", data, "--token", "bench", "--no-access-log", "--no-page",
               "--config", os.path.join(data, "bench-config.json"), "--postback-key", "bench=" + spki]
    log = open(os.path.join(data, "endpoint.log"), "a")
    process = subprocess.Popen(command, stdout=log, stderr=log)
    wait_port(port, timeout=600)
    return process, port


def stop(process):
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def token_keys(binary, work):
    """Token keys for every site, made once by the endpoint itself (RSA-4096 each)."""
    made = os.path.join(work, "keys")
    if not os.path.exists(os.path.join(made, "token-keys.json")):
        port = free_port()
        process = subprocess.Popen([binary, "--port", str(port), "--data", made, "--token", "bench", "--no-page"]
                                   + [a for s in SITES for a in ("--site", s)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, timeout=600)
        for site in SITES:
            request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, KEY_PATH), headers={"Host": site})
            urllib.request.urlopen(request, timeout=300).read()
        stop(process)
    return os.path.join(made, "token-keys.json")


def curl(port, path, token, out=os.devnull):
    """Downloads `path`; returns (bytes, seconds, status) as curl measured them."""
    result = subprocess.run(["curl", "-s", "-o", out, "-w", "%{size_download} %{time_total} %{http_code}", "-H",
                             "Authorization: Bearer " + token, "http://127.0.0.1:%d%s" % (port, path)],
                            capture_output=True, text=True, timeout=3600)
    size, seconds, status = result.stdout.split()
    return int(size), float(seconds), int(status)


def sign_postbacks(count):
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    spki = base64.b64encode(key.public_key().public_bytes(serialization.Encoding.DER,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo)).decode()
    bodies = []
    for n in range(count):
        p = {"version": "4.0", "ad-network-id": "bench.skadnetwork", "source-identifier": "%04d" % (n % 10000),
             "app-id": 525463029, "transaction-id": str(uuid.UUID(int=secrets.randbits(128))), "redownload": False,
             "fidelity-type": 1, "did-win": True, "postback-sequence-index": 0}
        message = SEP.join(str(p[k]).lower() if isinstance(p[k], bool) else str(p[k]) for k in
                           ["version", "ad-network-id", "source-identifier", "app-id", "transaction-id", "redownload",
                            "fidelity-type", "did-win", "postback-sequence-index"])
        p["conversion-value"] = n % 64
        p["attribution-signature"] = base64.b64encode(key.sign(message.encode(), ec.ECDSA(hashes.SHA256()))).decode()
        bodies.append(json.dumps(p, separators=(",", ":")))
    return spki, bodies


def paced(port, requests, rate, seconds, connections, results):
    """Sends `requests` (raw bytes, cycled) at `rate`/s on `connections` keep-alive connections;
    puts each answer's latency in ms, measured from when the request was due, and the statuses."""
    selector = selectors.DefaultSelector()

    def connect():
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        return sock

    # Taken in turn (first in, first out), so that every connection is used; one the endpoint
    # closed after its idle time-out is opened again, and counted.
    idle = [connect() for _ in range(connections)]
    reconnects = 0
    busy = {}  # sock -> (due, buffer)
    latencies, statuses, due_queue = [], {}, []
    interval = 1.0 / rate
    started = time.perf_counter()
    next_due = started
    sent = 0
    end = started + seconds
    while True:
        now = time.perf_counter()
        while next_due <= now and next_due < end:
            due_queue.append(next_due)
            next_due += interval
        while due_queue and idle:
            sock = idle.pop(0)
            try:
                closed = sock.recv(1, socket.MSG_PEEK) == b""
            except BlockingIOError:
                closed = False
            except OSError:
                closed = True
            if closed:
                sock.close()
                sock = connect()
                reconnects += 1
            sock.sendall(requests[sent % len(requests)])
            sent += 1
            busy[sock] = (due_queue.pop(0), b"")
            selector.register(sock, selectors.EVENT_READ)
        if not busy and not due_queue and next_due >= end:
            break
        timeout = max(0.0, min(next_due, end) - time.perf_counter()) if not due_queue else 0.001
        for key, _ in selector.select(timeout=timeout):
            sock = key.fileobj
            due, buffer = busy[sock]
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                # Closed before answering: only an idle connection may be, and none was idle here.
                raise RuntimeError("the endpoint closed a connection with a request in flight")
            buffer += chunk
            head_end = buffer.find(b"\r\n\r\n")
            if head_end < 0:
                busy[sock] = (due, buffer)
                continue
            head = buffer[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if len(buffer) < head_end + 4 + length:
                busy[sock] = (due, buffer)
                continue
            latencies.append((time.perf_counter() - due) * 1000)
            status = int(head.split(" ")[1])
            statuses[status] = statuses.get(status, 0) + 1
            selector.unregister(sock)
            del busy[sock]
            idle.append(sock)
    results.put({"latencies": latencies, "statuses": statuses, "seconds": time.perf_counter() - started, "reconnects": reconnects})


def raw_post(path, host, body):
    return ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (path, host, len(body), body)).encode()


def signer(port, seconds, results):
    """A token signature every second, for news.example."""
    os.nice(10)
    n, _ = read_key(unb64url(json.loads(urllib.request.urlopen(urllib.request.Request(
        "http://127.0.0.1:%d%s" % (port, KEY_PATH), headers={"Host": "news.example"}), timeout=60).read())["token_public_key"]))
    signed, end = 0, time.time() + seconds
    while time.time() < end:
        body = '{"source_engagement_type":"click","source_nonce":"%s","source_unlinkable_token":"%s","version":3}' % (
            b64url(secrets.token_bytes(16)), b64url(secrets.randbelow(n).to_bytes(512, "big")))
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, SIGN_PATH), data=body.encode(),
                                         headers={"Host": "news.example", "Content-Type": "application/json"})
        urllib.request.urlopen(request, timeout=60).read()
        signed += 1
        time.sleep(1)  # pacing: one signature a second
    results.put({"signed": signed})


def repeat_curl(port, path, token, seconds, results, enabled=True):
    os.nice(10)  # and the curl processes it starts
    runs, end = [], time.time() + seconds
    while enabled and time.time() < end:
        size, took, status = curl(port, path, token)
        runs.append({"bytes": size, "seconds": took, "status": status})
    results.put(runs)


def repeat_get(port, path, token, seconds, results, enabled=True):
    """The scoped viewer's export, over and over on one keep-alive connection, as a dashboard
    polling it would: a `curl` process per request (60 a second) would measure the machine
    starting processes beside the loop more than the endpoint."""
    import http.client
    os.nice(10)
    runs, end = [], time.time() + seconds
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    while enabled and time.time() < end:
        t0 = time.perf_counter()
        connection.request("GET", path, headers={"Authorization": "Bearer " + token})
        response = connection.getresponse()
        size = len(response.read())
        runs.append({"bytes": size, "seconds": time.perf_counter() - t0, "status": response.status})
    connection.close()
    results.put(runs)


def summaries(port, seconds, results, enabled=True):
    os.nice(10)
    times, end = [], time.time() + seconds
    while enabled and time.time() < end:
        t0 = time.perf_counter()
        request = urllib.request.Request("http://127.0.0.1:%d/api/summary" % port, headers={"Authorization": "Bearer bench"})
        urllib.request.urlopen(request, timeout=60).read()
        times.append((time.perf_counter() - t0) * 1000)
        time.sleep(1)  # pacing: one summary a second
    results.put(times)


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))] if ordered else None


def measure(binary, template, work, spki, postbacks, args):
    data = os.path.join(work, "run-" + os.path.basename(os.path.dirname(os.path.dirname(os.path.dirname(binary)))))
    shutil.rmtree(data, ignore_errors=True)
    shutil.copytree(template, data)
    viewer = subprocess.run([binary, "viewer-token", "add", "--label", "bench", "--advertiser", "quiet", "--data", data,
                             "--config", os.path.join(data, "bench-config.json")],
                            capture_output=True, text=True, check=True).stdout
    token = next(word for word in viewer.split() if word.startswith("vt_"))
    process, port = start(binary, data, spki)
    result = {"binary": binary}
    try:
        # What a start describes of the sealed segments (this change's SegmentSites) is awaited:
        # the scoped export is measured once the endpoint has it. A binary without it goes on.
        sealed = len([n for n in os.listdir(os.path.join(data, "log")) if n.endswith(".log")])
        deadline = time.time() + 600
        while os.path.isdir(os.path.join(data, "segment-sites")) and time.time() < deadline:
            if len(os.listdir(os.path.join(data, "segment-sites"))) >= sealed:
                break
            time.sleep(0.5)  # polling for the background description, bounded by the deadline
        result["described_after_seconds"] = round(time.time() - (deadline - 600), 1)
        # And the summary, rebuilt from the log at a first start: measured once the node is quiet.
        while time.time() < deadline:
            try:
                urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%d/api/summary" % port,
                                                              headers={"Authorization": "Bearer bench"}), timeout=60).read()
                break
            except urllib.error.HTTPError:
                time.sleep(0.5)  # polling for the rebuild (503 summary_rebuilding), bounded by the deadline
        result["ready_after_seconds"] = round(time.time() - (deadline - 600), 1)
        if args.load_only:
            result["alone"] = None
        else:
            size, took, status = curl(port, "/api/reports", "bench")
            rows = args.records  # every record of the log is a report
            result["alone"] = {"full_export_seconds": took, "full_export_bytes": size, "full_export_rows_per_second": rows / took,
                               "status": status}
            scoped = [curl(port, "/api/reports", token) for _ in range(5)]
            result["alone"]["scoped_export_seconds"] = [s for _, s, _ in scoped]
            result["alone"]["scoped_export_statuses"] = sorted({c for _, _, c in scoped})

        queue = multiprocessing.Queue()
        reports = [raw_post(REPORT_PATH, "news.example", BODY)]
        workers = [
            multiprocessing.Process(target=paced, args=(port, reports, 2000, args.seconds, 16, queue)),
            multiprocessing.Process(target=paced, args=(port, [raw_post(POSTBACK_PATH, "app.example", b) for b in postbacks], 200,
                                                        args.seconds, 4, queue)),
            multiprocessing.Process(target=signer, args=(port, args.seconds, queue)),
        ]
        if not args.load_only:
            reads = set(args.reads.split(","))
            workers += [
                multiprocessing.Process(target=repeat_curl, args=(port, "/api/reports", "bench", args.seconds, queue, "full" in reads)),
                multiprocessing.Process(target=repeat_get, args=(port, "/api/reports", token, args.seconds, queue, "scoped" in reads)),
                multiprocessing.Process(target=summaries, args=(port, args.seconds, queue, "summaries" in reads)),
            ]
        for w in workers:
            w.start()
        outputs = [queue.get(timeout=args.seconds + 3600) for _ in workers]
        for w in workers:
            w.join()
        paced_runs = [o for o in outputs if isinstance(o, dict) and "latencies" in o]
        report_run = max(paced_runs, key=lambda o: len(o["latencies"]))
        postback_run = min(paced_runs, key=lambda o: len(o["latencies"]))
        lat = report_run["latencies"]
        if args.load_only or args.reads != "full,scoped,summaries":
            # The floor (the same load with no read beside it), or some of the reads: reports only.
            result["mixed"] = {"reports": {"answered": len(lat), "rate": len(lat) / report_run["seconds"], "statuses": report_run["statuses"],
                                           "p50_ms": percentile(lat, 0.5), "p99_ms": percentile(lat, 0.99), "max_ms": max(lat)},
                               "postbacks": {"answered": len(postback_run["latencies"]), "p99_ms": percentile(postback_run["latencies"], 0.99)}}
            return result
        curls = [o for o in outputs if isinstance(o, list) and o and isinstance(o[0], dict)]
        summary_times = next(o for o in outputs if isinstance(o, list) and (not o or isinstance(o[0], float)))
        full = max(curls, key=lambda runs: max(r["bytes"] for r in runs))
        scoped_runs = min(curls, key=lambda runs: max(r["bytes"] for r in runs))
        finished_full = [r for r in full if r["status"] == 200]
        result["mixed"] = {
            "reports": {"answered": len(lat), "rate": len(lat) / report_run["seconds"], "statuses": report_run["statuses"],
                        "p50_ms": percentile(lat, 0.5), "p99_ms": percentile(lat, 0.99), "max_ms": max(lat)},
            "postbacks": {"answered": len(postback_run["latencies"]), "statuses": postback_run["statuses"],
                          "p99_ms": percentile(postback_run["latencies"], 0.99)},
            "signatures": next((o["signed"] for o in outputs if isinstance(o, dict) and "signed" in o), 0),
            "full_exports": {"runs": len(full), "bytes_per_second": sum(r["bytes"] for r in full) / max(1e-9, sum(r["seconds"] for r in full)),
                             "seconds": [round(r["seconds"], 2) for r in finished_full]},
            "scoped_exports": {"runs": len(scoped_runs), "p50_s": percentile([r["seconds"] for r in scoped_runs], 0.5),
                               "max_s": max(r["seconds"] for r in scoped_runs), "statuses": sorted({r["status"] for r in scoped_runs})},
            "summaries": {"runs": len(summary_times), "p50_ms": percentile(summary_times, 0.5), "max_ms": max(summary_times) if summary_times else None},
        }
    finally:
        stop(process)
        shutil.rmtree(data, ignore_errors=True)
    return result


def markdown(results, args):
    lines = ["### Neighbours: reads beside reports (issue 41)", "",
             "Written by `python3 benchmarks/mixed.py --records %d --seconds %d%s` on %s UTC, on this machine (%s, %d cores). "
             "Each binary on its own copy of a log of %d PCM reports over 30 days (one segment a day)."
             % (args.records, args.seconds, " --baseline …" if args.baseline else "", time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                os.uname().machine, os.cpu_count(), args.records), "",
             "| binary | full export alone: rows/s | scoped export (no records) alone: s | reports under the mix: rate, p50, p99, max (ms) "
             "| full exports under the mix: MB/s | scoped exports under the mix: p50, max (s) | summaries: p50, max (ms) |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        a, m = r["alone"], r["mixed"]
        lines.append("| %s | %.0f | %s | %.0f/s, %.2f, **%.2f**, **%.1f** | %.1f | %.3f, **%.3f** | %.1f, %.1f |" % (
            r["label"], a["full_export_rows_per_second"], ", ".join("%.3f" % s for s in a["scoped_export_seconds"]),
            m["reports"]["rate"], m["reports"]["p50_ms"], m["reports"]["p99_ms"], m["reports"]["max_ms"],
            m["full_exports"]["bytes_per_second"] / 1e6, m["scoped_exports"]["p50_s"], m["scoped_exports"]["max_s"],
            m["summaries"]["p50_ms"], m["summaries"]["max_ms"]))
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=10_000_000)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build/release/attribution-endpoint"))
    parser.add_argument("--baseline", help="the previous main's release binary, for a paired run")
    parser.add_argument("--generator", default=os.path.join(HERE, ".build/release/log-generator"))
    parser.add_argument("--work", default=None)
    parser.add_argument("--load-only", action="store_true",
                        help="the load alone (reports, postbacks, signatures), without the reads: the floor the reads add to")
    parser.add_argument("--reads", default="full,scoped,summaries",
                        help="which reads run beside the load (to tell which costs what); the target is measured with all three")
    parser.add_argument("--markdown", help="write the results as a section of docs/PERFORMANCE.md to this file")
    args = parser.parse_args()
    if not os.path.exists(args.binary):
        subprocess.run(["swift", "build", "-c", "release", "--product", "attribution-endpoint"], cwd=ROOT, check=True)
    if not os.path.exists(args.generator):
        subprocess.run(["swift", "build", "-c", "release", "--product", "log-generator"], cwd=HERE, check=True)
    work = args.work or tempfile.mkdtemp(prefix="mixed-")
    template = os.path.join(work, "template")
    if not os.path.exists(os.path.join(template, "bench-config.json")):
        shutil.rmtree(template, ignore_errors=True)
        t0 = time.time()
        out = subprocess.run([args.generator, template, str(args.records), str(24 * 30)], check=True, capture_output=True, text=True).stdout
        print("generated in %.1f s: %s" % (time.time() - t0, out.strip()), file=sys.stderr)
        shutil.copy(token_keys(args.binary, work), template)
        with open(os.path.join(template, "bench-config.json"), "w") as f:
            json.dump({"sites": SITES, "advertisers": [{"id": "quiet", "name": "Quiet Ltd", "sites": ["quiet.example"]}]}, f)
    spki, postbacks = sign_postbacks(200 * args.seconds + 100)
    results = []
    for label, binary in ([("baseline (previous main)", args.baseline)] if args.baseline else []) + [("this change", args.binary)]:
        result = measure(binary, template, work, spki, postbacks, args)
        result["label"] = label
        results.append(result)
        print(json.dumps(result, indent=1), file=sys.stderr)
    print(json.dumps(results))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(results, args))


if __name__ == "__main__":
    main()
