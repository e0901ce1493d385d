"""What the ClickHouse and cluster tests send: numbered PCM reports, pixel hits and postback copies
(some delivered twice, as devices retry), each over a keep-alive connection, with what was
acknowledged kept for the checks. Report n carries `"n": n`, which the export keeps under `extra`;
postback n has transaction-id `t-n`.
"""
import re
import socket
import threading

REPORT_PATH = "/.well-known/private-click-measurement/report-attribution/"
TRIGGER_PATH = "/.well-known/private-click-measurement/trigger-attribution/%02d"
POSTBACK_PATH = "/.well-known/skadnetwork/report-attribution/"


def read_response(sock, buffer):
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, rest = buffer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    match = re.search(rb"(?i)content-length: (\d+)", head)
    length = int(match.group(1)) if match else 0
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    if re.search(rb"(?i)\r\nconnection: *close", head):
        raise ServerClosing(status, rest[:length])
    return status, rest[:length], rest[length:]


class ServerClosing(Exception):
    """The answer said `Connection: close` (nginx does after 1000 requests on a connection)."""

    def __init__(self, status, body):
        super().__init__(status)
        self.status = status
        self.body = body


def get(port, path, token, host="localhost"):
    """One GET with the admin token on a connection of its own; (status, body text)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n" % (path, host, token)).encode())
    data = b""
    while True:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body.decode(errors="replace")


def report(n, site="shop.example"):
    body = ('{"source_engagement_type":"click","source_site":"news.example","source_id":%d,'
            '"attributed_on_site":"%s","trigger_data":%d,"version":3,"n":%d}') % (n % 256, site, n % 16, n)
    return "POST", REPORT_PATH, site, body


def postback(n, site="app.example"):
    body = ('{"version":"4.0","ad-network-id":"test.skadnetwork","source-identifier":"%d","app-id":1,'
            '"transaction-id":"t-%d","redownload":false,"fidelity-type":1,"did-win":true,'
            '"postback-sequence-index":0,"attribution-signature":"MEUCIQ=="}') % (1000 + n % 100, n)
    return "POST", POSTBACK_PATH, site, body


def trigger(n, site="shop.example"):
    return "GET", TRIGGER_PATH % (n % 16), site, None


class Tally:
    """What was sent and what was acknowledged, by kind, and every status seen."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acknowledged = {"report": set(), "postback": set(), "trigger": set(), "token": set()}
        self.deliveries = {}
        # Requests whose connection died before an answer came (status 0): each may have been
        # stored all the same, its answer lost with the node.
        self.unanswered = {"report": 0, "postback": 0, "trigger": 0, "token": 0}
        self.statuses = {}
        self.refused_connections = 0

    def note(self, kind, n, status):
        with self.lock:
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status == 0:
                self.unanswered[kind] += 1
            if 200 <= status < 300 or (kind == "trigger" and status in (200, 204, 302)):
                self.acknowledged[kind].add(n)
                if kind == "postback":
                    self.deliveries[n] = self.deliveries.get(n, 0) + 1

    def count_5xx(self):
        with self.lock:
            return sum(v for k, v in self.statuses.items() if 500 <= k < 600)


def send(port, requests, tally, stop=None, host_header=None):
    """Sends (kind, n, (method, path, site, body)) in order on one connection, reconnecting after a
    failure; a request whose connection failed counts as status 0 (never acknowledged)."""
    sock, buffer = None, b""
    for kind, n, (method, path, site, body) in requests:
        if stop is not None and stop.is_set():
            break
        data = body.encode() if body else b""
        head = "%s %s HTTP/1.1\r\nHost: %s\r\n" % (method, path, host_header or site)
        if body:
            kind_type = "text/plain" if kind == "token" else "application/json"
            head += "Content-Type: %s\r\nContent-Length: %d\r\n" % (kind_type, len(data))
        try:
            if sock is None:
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                buffer = b""
            sock.sendall(head.encode() + b"\r\n" + data)
            status, _, buffer = read_response(sock, buffer)
        except ServerClosing as closing:
            sock.close()
            sock = None
            tally.note(kind, n, closing.status)
            continue
        except (OSError, ConnectionError, ValueError, IndexError):
            if sock is not None:
                sock.close()
            sock = None
            with tally.lock:
                tally.refused_connections += 1
            tally.note(kind, n, 0)
            continue
        tally.note(kind, n, status)
    if sock is not None:
        sock.close()


def mixed(numbers, retry_every=3):
    """Reports, a pixel hit for every fourth, a postback for every fifth (every third of those twice)."""
    for n in numbers:
        yield "report", n, report(n)
        if n % 4 == 0:
            yield "trigger", n, trigger(n)
        if n % 5 == 0:
            yield "postback", n, postback(n)
            if n % (5 * retry_every) == 0:
                yield "postback", n, postback(n)
