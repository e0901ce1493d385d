#!/usr/bin/env python3
"""The Debian package as an operator meets it (issue 46): built with scripts/package-deb.sh,
installed with apt-get, the installed binary started as the package's user with the default
config, a report sent and read back; removed (the data stay), then purged (the data go, after a
message saying so). Needs root, as apt-get does.

usage: package_test.py [--deb FILE]   (without --deb it builds one)
"""
import argparse
import json
import os
import pwd
import signal
import stat
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import endpoint_process  # noqa: E402

DATA = "/var/lib/attribution-endpoint"
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
    return condition


def apt(*args):
    result = subprocess.run(["apt-get", "-y", "-q", *args], capture_output=True, text=True,
                            env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    if result.returncode != 0:
        raise SystemExit("apt-get %s failed:\n%s%s" % (" ".join(args), result.stdout, result.stderr))
    return result.stdout + result.stderr


def request(port, method, path, host, body=None, token=None):
    """endpoint_process.request, its body as text (the checks read it as such)."""
    status, answer = endpoint_process.request(port, token, method, path, body, host=host, timeout=30)
    return status, answer.decode(errors="replace")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--deb")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("package test skipped: apt-get install needs root")
        return
    deb = args.deb or subprocess.run(["bash", "scripts/package-deb.sh"], check=True, capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1]
    info = subprocess.run(["dpkg-deb", "--info", deb], check=True, capture_output=True, text=True).stdout
    depends = [line for line in info.splitlines() if line.strip().startswith("Depends:")]
    print("%s: %s" % (deb, depends[0].strip() if depends else "no Depends"))
    # A package left by an earlier run is purged first: the install must meet a machine without it.
    if subprocess.run(["dpkg", "-s", "attribution-endpoint"], capture_output=True).returncode == 0:
        apt("purge", "attribution-endpoint")

    installed = apt("install", os.path.abspath(deb))
    check("Name the registrable domains" in installed, "postinst did not say what to do next")
    for path in ["/usr/bin/attribution-endpoint", "/usr/bin/attribution-endpoint_Primitives.resources/public_suffix_list.dat",
                 "/usr/share/attribution-endpoint/Public/index.html",
                 "/usr/share/attribution-endpoint/deploy/nginx/attribution-endpoint.conf",
                 "/lib/systemd/system/attribution-endpoint.service", "/etc/attribution-endpoint/config.json"]:
        check(os.path.exists(path), "%s is not installed" % path)
    unit = open("/lib/systemd/system/attribution-endpoint.service").read()
    check("User=attribution-endpoint" in unit and "ExecStart=/usr/bin/attribution-endpoint" in unit
          and "ExecReload=" in unit and "DynamicUser" not in unit, "the unit does not run /usr/bin as the package's user")
    try:
        user = pwd.getpwnam("attribution-endpoint")
    except KeyError:
        raise SystemExit("postinst made no user attribution-endpoint")
    mode = os.stat(DATA)
    check(mode.st_uid == user.pw_uid and stat.S_IMODE(mode.st_mode) == 0o700, "%s is not the user's, 0700" % DATA)
    # The Swift runtime comes with the package: nothing is taken from the toolchain of this machine.
    linked = subprocess.run(["ldd", "/usr/bin/attribution-endpoint"], capture_output=True, text=True).stdout
    check("not found" not in linked and "/usr/lib/attribution-endpoint/libswiftCore.so" in linked
          and "/opt/swift" not in linked and "/usr/share/swift" not in linked,
          "the installed binary links outside the package and Debian:\n" + linked)
    if os.path.isdir("/run/systemd/system"):
        subprocess.run(["systemctl", "stop", "attribution-endpoint"], check=False)

    # The installed binary, as the package's user, with the default config, from a folder with no page.
    process = subprocess.Popen(["/usr/bin/attribution-endpoint", "--config", "/etc/attribution-endpoint/config.json",
                                "--data", DATA, "--port", "0"], cwd="/", stderr=subprocess.PIPE, text=True,
                               user="attribution-endpoint", group="attribution-endpoint", extra_groups=[])
    listening = None
    for line in process.stderr:
        if '"event":"listening"' in line:
            listening = json.loads(line)
            break
    if not listening:
        process.wait(timeout=30)
        raise SystemExit("the installed endpoint did not start: %s" % process.stderr.read()[-2000:])
    # The access log goes on: read, so that a full pipe never holds the endpoint.
    threading.Thread(target=lambda: [None for _ in process.stderr], daemon=True).start()
    port = int(listening["address"].rsplit(":", 1)[1])
    check(listening.get("url_host_check") == "endpoint", "URLSession's host check is %s's" % listening.get("url_host_check"))
    check(listening.get("page") == "/usr/share/attribution-endpoint/Public", "the page is %s" % listening.get("page"))
    report = ('{"source_engagement_type":"click","source_site":"news.example","source_id":42,'
              '"attributed_on_site":"example.com","trigger_data":3,"version":3}')
    status, body = request(port, "POST", "/.well-known/private-click-measurement/report-attribution/", "example.com", report)
    check(status == 201, "the report was answered %d: %s" % (status, body[:200]))
    token = open(os.path.join(DATA, "admin-token")).read().strip()
    check(os.stat(os.path.join(DATA, "admin-token")).st_uid == user.pw_uid, "the admin token is not the user's")
    status, body = request(port, "GET", "/api/reports", "localhost", token=token)
    check(status == 200 and '"source_id":42' in body, "the report is not in /api/reports: %d %s" % (status, body[:200]))
    status, page = request(port, "GET", "/", "localhost")
    check(status == 200 and "<html" in page.lower(), "the page answered %d" % status)
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=60)
    check(code == 0, "the endpoint exited %d on SIGTERM" % code)

    # An upgrade (here the same package again) keeps the operator's choices.
    os.chmod("/etc/attribution-endpoint/config.json", 0o644)
    apt("install", "--reinstall", os.path.abspath(deb))
    check(stat.S_IMODE(os.stat("/etc/attribution-endpoint/config.json").st_mode) == 0o644,
          "an upgrade reset the config's mode the operator chose")
    # A file of the operator's beside the config (a cluster's shared key file) outlives a purge.
    with open("/etc/attribution-endpoint/token-keys.json", "w") as f:
        f.write("{}")

    removed = apt("remove", "attribution-endpoint")
    check(not os.path.exists("/usr/bin/attribution-endpoint"), "remove left the binary")
    check(os.path.exists(os.path.join(DATA, "reports.log")), "remove took the data")
    check("data stay in %s" % DATA in removed, "remove did not say the data stay")
    purged = apt("purge", "attribution-endpoint")
    check("Purging attribution-endpoint: removing %s" % DATA in purged, "purge did not say what it removes: %s" % purged[-400:])
    check(not os.path.exists(DATA), "purge left %s" % DATA)
    check(os.path.exists("/etc/attribution-endpoint/token-keys.json") and not os.path.exists("/etc/attribution-endpoint/config.json"),
          "purge removed the operator's own file beside the config, or kept the config")
    check("Kept /etc/attribution-endpoint: it holds files of yours (token-keys.json" in purged, "purge did not name what it kept")
    os.remove("/etc/attribution-endpoint/token-keys.json")
    os.rmdir("/etc/attribution-endpoint")

    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("installed, ran as attribution-endpoint with the default config (report 201, read back, page 200), "
          "upgraded (the operator's config mode kept), removed (data kept), purged (data removed after saying so, "
          "the operator's own file in /etc kept and named)")


if __name__ == "__main__":
    main()
