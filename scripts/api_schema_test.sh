#!/usr/bin/env bash
# docs/openapi.yaml against the live endpoint, with schemathesis (PyPI): every operation, its
# examples, boundary values and fuzzed inputs, with the bearer token. It must find no 5xx, no
# answer outside the documented statuses, content types, headers and schemas, no undeclared
# method answered other than 405, and no authenticated path that answers without the token.
# The endpoint runs the demo (three weeks of traffic, registrations, the manual clock), so the
# summary, the exports and the registries have something in them. It runs twice: first with a
# viewer token scoped to the demo's advertiser "acme" (every write must be a documented 403, every
# read within its sites), then with the admin token (whose fuzzing may remove that advertiser).
# `scheduleTokenKey` is left out: each call it accepts makes an RSA-4096 key (seconds of CPU), and a
# hundred of them would be the run; TokenPathTests covers it. `registerRelay` is left out too: each
# destination it accepts would send the demo's copies to a host on the internet; RelayRulesTests
# and RelayEndpointTests cover it.
# Usage: scripts/api_schema_test.sh BINARY [max examples per operation, default 100]
set -euo pipefail
cd "$(dirname "$0")/.."
binary=$1
examples=${2:-100}
command -v schemathesis >/dev/null || pip install -q schemathesis

work=$(mktemp -d)
token=schema-test-token
"$binary" demo --port 0 --data "$work/data" --token "$token" > "$work/demo.out" 2> "$work/endpoint.err" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 600); do
  port=$(sed -n 's|.*Open   http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$work/demo.out" | head -1)
  [ -n "$port" ] && break
  kill -0 $pid 2>/dev/null || { cat "$work/demo.out" "$work/endpoint.err" >&2; exit 1; }
  sleep 0.1  # polling for the demo's "Open" line, bounded
done
[ -n "$port" ] || { echo "the demo did not start" >&2; exit 1; }

run() {
  local label=$1 bearer=$2
  set +e
  schemathesis run docs/openapi.yaml --url "http://127.0.0.1:$port" -H "Authorization: Bearer $bearer" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance,unsupported_method,ignored_auth \
    --exclude-operation-id scheduleTokenKey --exclude-operation-id registerRelay \
    --max-examples "$examples" --seed 20261123 --suppress-health-check all --no-color > "$work/schemathesis-$label.out" 2>&1
  local status=$?
  set -e
  tail -150 "$work/schemathesis-$label.out"
  cases=$(sed -n 's/^ *\([0-9]*\) generated.*/\1/p' "$work/schemathesis-$label.out" | tail -1)
  echo "schemathesis with the $label token: ${cases:-0} test cases against $(grep -c 'operationId:' docs/openapi.yaml) operations"
  return $status
}
viewer=$("$binary" viewer-token add --label "schemathesis" --advertiser acme --data "$work/data")
status=0
run viewer "$viewer" || status=1
run admin "$token" || status=1
kill -0 $pid 2>/dev/null || { echo "the endpoint died during the run" >&2; status=1; }
if [ $status -eq 0 ]; then echo "1 passed, 0 failed"; else echo "0 passed, 1 failed"; fi
exit $status
