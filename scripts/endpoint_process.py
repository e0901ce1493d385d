"""What the fault scripts share: the endpoint as a child process, and how a script reports.

The scripts print a closing line `N passed, N failed` that CI reads, and exit non-zero on failure.
"""
import http.client
import http.server
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

def log_files(data):
    """The log's segment files, oldest first: the sealed ones in DATA/log/, then DATA/reports.log."""
    sealed = os.path.join(data, "log")
    names = sorted(n for n in os.listdir(sealed) if n.endswith(".log")) if os.path.isdir(sealed) else []
    active = os.path.join(data, "reports.log")
    return [os.path.join(sealed, n) for n in names] + ([active] if os.path.exists(active) else [])


def log_bytes(data):
    """Bytes of every segment of the log (the active one may end in preallocated zeros)."""
    return sum(os.path.getsize(path) for path in log_files(data))


def apple_stand_in(body):
    """Apple's attribution API on 127.0.0.1, answering every call 200 with `body` (bytes), from a
    thread of its own; returns the server (`shutdown()` stops it) and its URL."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, "http://127.0.0.1:%d/" % server.server_address[1]


LISTENING = re.compile(r'"event":"listening","address":"127\.0\.0\.1:(\d+)"')


class Endpoint:
    """The endpoint on a free port, serving news.example and shop.example.

    Every line it writes on stderr is kept in `lines`; a thread keeps reading them so that the
    server never blocks on a full pipe.
    """

    def __init__(self, binary, data, token, extra=(), pin_to_core=None):
        command = [binary, "--port", "0", "--site", "news.example", "--site", "shop.example",
                   "--data", data, "--token", token, "--no-access-log", *extra]
        if pin_to_core is not None:
            command = ["taskset", "-c", str(pin_to_core)] + command
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.port = None
        for line in self.process.stderr:
            self.lines.append(line)
            match = LISTENING.search(line)
            if match:
                self.port = int(match.group(1))
                break
        if self.port is None:
            raise RuntimeError("endpoint exited before listening: %s" % "".join(self.lines))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stderr:
            self.lines.append(line)

    @property
    def pid(self):
        return self.process.pid

    def event(self, name):
        """The first logged line of that event, or ''."""
        return next((line.strip() for line in self.lines if '"event":"%s"' % name in line), "")

    def log(self):
        return "".join(self.lines)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Sends `sig`, waits for the exit and for the last log lines; returns the exit status."""
        self.process.send_signal(sig)
        status = self.process.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return status


def wait_port(port, timeout=60):
    """Returns once something accepts connections on 127.0.0.1:port; raises after `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.02)  # polling for a port to open, bounded by the deadline
    raise RuntimeError("nothing listening on %d" % port)


def rss_mb(pid, field="VmRSS"):
    """The process's resident memory in MB (`field="VmHWM"`: its peak)."""
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def request(port, token, method, path, body=None, host="localhost", timeout=300):
    """One request, with the admin token unless `token` is None: (status, body), or (None, b"")
    when it could not be made."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Host": host, "Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = "Bearer " + token
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    except OSError:
        return None, b""
    finally:
        connection.close()


def metric(port, token, name, default=None):
    """The value of one unlabelled series of /metrics."""
    _, body = request(port, token, "GET", "/metrics")
    return next((float(line.split()[1]) for line in body.decode().splitlines() if line.startswith(name + " ")), default)


def until(check, started=None, timeout=3600, poll=0.01):
    """Seconds from `started` (now by default) until `check()` is true; raises after `timeout`."""
    started = time.time() if started is None else started
    while time.time() - started < timeout:
        if check():
            return time.time() - started
        time.sleep(poll)  # polling an outside process, bounded by the timeout
    raise RuntimeError("timed out")


def finish(failures):
    for failure in failures:
        print("FAIL:", failure)
    print("%d passed, %d failed" % (0 if failures else 1, 1 if failures else 0))
    sys.exit(1 if failures else 0)
