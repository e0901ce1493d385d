#!/usr/bin/env bash
# Durable ingest with wrk: the endpoint pinned to core 0, wrk to core 1, 64 keep-alive
# connections posting a 140-byte v3 report. Prints wrk's summary and the group-commit ratio.
# Usage: benchmarks/wrk-ingest.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
swift build -c release --product attribution-endpoint >/dev/null
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$work"' EXIT
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Host"] = "shop.example"
LUA
port=18181
taskset -c 0 .build/release/attribution-endpoint --port $port --site news.example --site shop.example \
  --data "$work/data" --token bench --no-access-log 2>"$work/server.log" &
pid=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
taskset -c 1 wrk -t2 -c64 -d"${seconds}s" --latency -s "$work/post.lua" \
  "http://127.0.0.1:$port/.well-known/private-click-measurement/report-attribution/"
curl -s -H "Authorization: Bearer bench" "http://127.0.0.1:$port/metrics" \
  | grep -E '^attribution_store_(flushes_total|reports|bytes) '
