#!/usr/bin/env bash
# Paired runs of endpoint binaries, for deciding whether a change helps: on a shared machine only
# runs taken minutes apart compare. Each binary is started in turn, pinned to core 0, with a fresh
# data directory, and loaded by wrk on core 1 with 64 keep-alive connections sending the 140-byte
# report. Prints, per run: req/s, p90 and p99, how busy the server's core was (user and kernel,
# from /proc/PID/stat), its CPU per request, and reports per flush (from /metrics). A run in which
# any answer was not 2xx stops the script.
# Usage: benchmarks/ab.sh [-r ROUNDS] [-d SECONDS] BINARY [BINARY...]
# A BINARY named `nginx` is nginx answering `return 204` with one worker, as in run.sh's table:
# issue 10's yardstick, taken in the same minutes as the binaries.
# Environment: ENDPOINT_ARGS adds arguments (e.g. "--log-preallocation-mb 0"); ACCESS_LOG=1 keeps
# the default access log on (stderr to a file) instead of passing --no-access-log.
set -euo pipefail
rounds=3 seconds=6
while getopts "r:d:" opt; do
  case $opt in r) rounds=$OPTARG ;; d) seconds=$OPTARG ;; *) exit 64 ;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-r ROUNDS] [-d SECONDS] BINARY [BINARY...]" >&2; exit 64; }
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || need+=(nginx-light)
[ ${#need[@]} -eq 0 ] || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }

body='{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}'
hz=$(getconf CLK_TCK)
# Token keys made once, by the first endpoint binary, and copied into each fresh data directory:
# without them an endpoint makes an RSA-4096 key per site as it starts, seconds of the very core
# being measured (until this was added, every run paid it while wrk was already sending).
keys=$(mktemp -d)
trap 'rm -rf "$keys"' EXIT
for first in "$@"; do [ "$first" = nginx ] || break; done
[ "$first" = nginx ] || python3 - "$(cd "$(dirname "$0")" && pwd)" "$first" "$keys" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import bench
bench.ENDPOINT = os.path.abspath(sys.argv[2])
bench.token_keys(sys.argv[3])
__import__("shutil").rmtree(bench.WORK, ignore_errors=True)
PY

run() {  # $1 = binary
  local work port pid out u0 s0 u1 s1 flushes
  work=$(mktemp -d)
  port=$((20000 + RANDOM % 20000))
  cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Host"] = "shop.example"
LUA
  if [ "$1" = nginx ]; then
    cat >"$work/nginx.conf" <<CONF
worker_processes 1;
master_process off;
daemon off;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work;
  server { listen 127.0.0.1:$port; location / { return 204; } }
}
CONF
    taskset -c 0 nginx -c "$work/nginx.conf" &
    pid=$!
    for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done
  else
    mkdir -p "$work/data"
    cp "$keys/token-keys.json" "$work/data/"
    # shellcheck disable=SC2086
    taskset -c 0 "$1" --port "$port" --site news.example --site shop.example --data "$work/data" --token ab \
      $([ "${ACCESS_LOG:-0}" = 1 ] || echo --no-access-log) ${ENDPOINT_ARGS:-} 2>"$work/stderr" &
    pid=$!
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
  fi
  read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  out=$(taskset -c 1 wrk -t2 -c64 -d"${seconds}s" --latency -s "$work/post.lua" \
    "http://127.0.0.1:$port/.well-known/private-click-measurement/report-attribution/")
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  flushes=$(curl -s -H "Authorization: Bearer ab" "http://127.0.0.1:$port/metrics" |
    awk '/^attribution_store_flushes_total/ {print $2}') || true
  kill "$pid"; wait "$pid" 2>/dev/null || true
  python3 - "$1" "$seconds" "$hz" "$u1" "$u0" "$s1" "$s0" "${flushes:-0}" "$out" <<'PY' || { rm -rf "$work"; exit 1; }
import re, sys
name, secs, hz, u1, u0, s1, s0, flushes, out = sys.argv[1:]
secs, hz = float(secs), float(hz)
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
# wrk counts every answer as a request: a run where some were refused (503 disk_full, say) measures
# something else, and is refused here rather than printed beside the others.
refused = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
if refused:
    sys.exit("%s: %s answers were not 2xx; the run is not counted (disk full?)" % (name, refused.group(1)))
p90 = re.search(r"\n\s+90%\s+(\S+)", out).group(1)
p99 = re.search(r"\n\s+99%\s+(\S+)", out).group(1)
user, sys_ = (int(u1) - int(u0)) / hz / secs, (int(s1) - int(s0)) / hz / secs
flushed = "  reports/flush %.1f" % (rps * secs / int(flushes)) if flushes.isdigit() and int(flushes) else ""
print("%-40s %8.0f req/s  p90 %7s  p99 %7s  busy %3.0f%% (user %2.0f%%, kernel %2.0f%%)  CPU %4.1f + %4.1f us/req%s"
      % (name[-40:], rps, p90, p99, 100 * (user + sys_), 100 * user, 100 * sys_, user / rps * 1e6, sys_ / rps * 1e6, flushed))
PY
  rm -rf "$work"
}

for round in $(seq "$rounds"); do
  for binary in "$@"; do run "$binary"; done
done
