"""Debian's clickhouse-server, started for a test on loopback with a config, data folder and ports
of its own (docs/DEPLOYMENT.md, "More than one node"; ../shared CLICKHOUSE.md's recipe).

    server = ClickHouse.start(folder)      # installs the package first if it is missing
    server.query("SELECT 1")               # over its HTTP interface
    server.stop(); server.restart()        # SIGTERM, then the same ports and data again

Run alone it starts one and prints its HTTP port until Ctrl-C: `python3 scripts/clickhouse_server.py DIR`.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = "/usr/sbin/clickhouse-server"


def ensure_installed():
    if os.path.exists(SERVER):
        return
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "clickhouse-server", "clickhouse-client"], check=True, env=env,
                   stdout=subprocess.DEVNULL)


_HANDED_OUT = set()


def free_port():
    """A port nothing listens on, never one this process handed out before: the kernel may give
    the same free port to two binds in a row, and two servers asked to share it would not."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


class ClickHouse:
    def __init__(self, folder, http_port, tcp_port, inter_port):
        self.folder = folder
        self.http_port = http_port
        self.tcp_port = tcp_port
        self.inter_port = inter_port
        self.process = None

    @classmethod
    def start(cls, folder):
        ensure_installed()
        os.makedirs(folder, exist_ok=True)
        server = cls(folder, free_port(), free_port(), free_port())
        server._write_config()
        server._launch()
        return server

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.http_port

    def _write_config(self):
        with open("/etc/clickhouse-server/config.xml") as f:
            config = f.read()
        config = config.replace("/var/log/clickhouse-server/", self.folder + "/log/")
        config = config.replace("/var/lib/clickhouse/", self.folder + "/data/")
        config = re.sub(r"<http_port>\d+</http_port>", "<http_port>%d</http_port>" % self.http_port, config)
        config = re.sub(r"<tcp_port>\d+</tcp_port>", "<tcp_port>%d</tcp_port>" % self.tcp_port, config)
        config = re.sub(r"<interserver_http_port>\d+</interserver_http_port>",
                        "<interserver_http_port>%d</interserver_http_port>" % self.inter_port, config)
        config = config.replace("<listen_host>::1</listen_host>", "")
        config = config.replace("/etc/clickhouse-server/users.xml", self.folder + "/users.xml")
        config = config.replace("<users_config>users.xml</users_config>", "<users_config>%s/users.xml</users_config>" % self.folder)
        with open(self.folder + "/config.xml", "w") as f:
            f.write(config)
        shutil.copy("/etc/clickhouse-server/users.xml", self.folder + "/users.xml")
        for sub in ("log", "data"):
            os.makedirs(os.path.join(self.folder, sub), exist_ok=True)

    def _launch(self):
        self.process = subprocess.Popen([SERVER, "--config-file=%s/config.xml" % self.folder],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.folder)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("clickhouse-server exited with %s; see %s/log" % (self.process.returncode, self.folder))
            try:
                if self.query("SELECT 1").strip() == "1":
                    return
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        raise RuntimeError("clickhouse-server did not answer within 60 s")

    def query(self, sql, body=None, timeout=30):
        """Runs `sql` (in the body, or in the URL with `body` as its data); returns the answer's text."""
        if body is None:
            request = urllib.request.Request(self.url + "/", data=sql.encode(), method="POST")
        else:
            request = urllib.request.Request(self.url + "/?" + urllib.parse.urlencode({"query": sql}), data=body, method="POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read().decode()

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self):
        self.stop()
        self._launch()


if __name__ == "__main__":
    server = ClickHouse.start(sys.argv[1] if len(sys.argv) > 1 else "/tmp/clickhouse-test")
    print(server.url, flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        server.stop()
