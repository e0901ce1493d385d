#!/usr/bin/env bash
# Instructions per report, counted by callgrind: repeatable on a noisy machine, unlike req/s.
# Sends N reports (default 20000) over 16 keep-alive connections to the release build running
# under valgrind, stops it, and divides the program's instruction count (user space only) by N,
# after subtracting an idle run (start, replay, stop) with the same setup.
# Usage: benchmarks/instructions.sh [N]
#   ACCESS_LOG=1   with the access log on (to a file), as the endpoint runs by default
#   BINARY=path    count another build (to compare two), instead of building this tree
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
command -v valgrind >/dev/null || { apt-get update -qq && apt-get install -y -qq valgrind; }
binary=${BINARY:-.build/release/attribution-endpoint}
[ -n "${BINARY:-}" ] || swift build -c release --product attribution-endpoint >/dev/null
log_flag=--no-access-log
[ -n "${ACCESS_LOG:-}" ] && log_flag=
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] && echo "kept $work" || rm -rf "$work"' EXIT
# valgrind 3.19 gives up on the debug info of swift-crypto's BoringSSL objects; symbols are enough
# for counting, so it runs a copy without debug info.
objcopy --strip-debug "$binary" "$work/attribution-endpoint"
# Token keys made once, outside the count: an endpoint without them makes an RSA-4096 key per site
# as it starts, a random number of instructions that would swamp the difference between runs.
python3 - "$work/keys" <<'PY'
import sys
sys.path[:0] = ["benchmarks", "scripts"]
import bench
bench.token_keys(sys.argv[1])
__import__("shutil").rmtree(bench.WORK, ignore_errors=True)
PY

run() {  # $1 = number of reports; prints total instructions
  local count=$1 dir="$work/run-$1"
  mkdir -p "$dir/data"
  cp "$work/keys/token-keys.json" "$dir/data/"
  valgrind --tool=callgrind --callgrind-out-file="$dir/out" \
    "$work/attribution-endpoint" --port 0 --site news.example --site shop.example \
    --data "$dir/data" --token t $log_flag --public Public 2>"$dir/err" &
  local pid=$!
  local port=""
  for _ in $(seq 300); do
    port=$(grep -o '"address":"127.0.0.1:[0-9]*"' "$dir/err" 2>/dev/null | grep -o '[0-9]*"$' | tr -d '"') || true
    [ -n "$port" ] && break
    sleep 0.1
  done
  python3 - "$port" "$count" <<'PY'
import socket, sys, threading
port, count = int(sys.argv[1]), int(sys.argv[2])
body = b'{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}'
req = (b"POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: shop.example\r\n"
       b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
def client(k):
    s = socket.create_connection(("127.0.0.1", port))
    buf = b""
    for _ in range(k):
        s.sendall(req)
        while b"\r\n\r\n" not in buf or len(buf.split(b"\r\n\r\n", 1)[1]) < int(buf.split(b"Content-Length: ")[1].split(b"\r\n")[0]):
            buf += s.recv(65536)
        head, rest = buf.split(b"\r\n\r\n", 1)
        assert b" 201 " in head.split(b"\r\n")[0], head
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        buf = rest[length:]
threads = [threading.Thread(target=client, args=(count // 16,)) for _ in range(16)]
[t.start() for t in threads]; [t.join() for t in threads]
PY
  kill -TERM $pid
  wait $pid || true
  callgrind_annotate "$dir/out" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}

base=$(run 0)
loaded=$(run "$n")
python3 -c "print('instructions per report: %.0f  (%d reports, %s total, %s idle)' % (($loaded - $base) / $n, $n, '$loaded', '$base'))"
