#!/usr/bin/env bash
# libFuzzer over the HTTP request parser, the report validator, the postback readers (JSON
# bodies of both protocols, and the compact JWS splitter), the sign-unlinkable-token request
# reader, the Info.plist check (Foundation's PropertyListSerialization included) and the
# conversion-value API's rules, with AddressSanitizer.
# Usage: scripts/fuzz.sh [runs per target, default 1000000]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-1000000}
out=.build/fuzz
mkdir -p "$out/corpus-http" "$out/corpus-report" "$out/corpus-postback" "$out/corpus-token" "$out/corpus-plist" "$out/corpus-counters"

swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzHTTP -o "$out/fuzz-http" \
  Sources/Platform/HTTPServer/HTTPRequestParser.swift Sources/Platform/HTTPServer/HTTPRequest.swift \
  Sources/Platform/HTTPServer/HTTPHeaders.swift Sources/Platform/HTTPServer/ByteAppending.swift Tests/Fuzz/HTTPParserFuzz.swift 2> >(grep -v "Cannot export local symbol" >&2)
# The report validator's modules, built as plain swiftc modules in dependency order. A plain
# build has no generated Bundle.module, so Primitives gets a stand-in (the PSL is loaded by hand).
printf 'import Foundation\nextension Bundle { static var module: Bundle { Bundle.main } }\n' > "$out/BundleModule.swift"
swiftc -O -sanitize=fuzzer,address -parse-as-library -wmo -module-name Primitives -emit-module \
  -emit-module-path "$out/Primitives.swiftmodule" -c Sources/Rules/Primitives/*.swift "$out/BundleModule.swift" -o "$out/Primitives.o" \
  2> >(grep -v "Cannot export local symbol" >&2)
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzReport -o "$out/fuzz-report" -I "$out" \
  "$out/Primitives.o" Sources/Rules/PCM/*.swift Tests/Fuzz/ReportValidatorFuzz.swift 2> >(grep -v "Cannot export local symbol" >&2)
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzToken -o "$out/fuzz-token" -I "$out" \
  "$out/Primitives.o" Sources/Rules/PCM/*.swift Tests/Fuzz/TokenRequestFuzz.swift 2> >(grep -v "Cannot export local symbol" >&2)
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzPostback -o "$out/fuzz-postback" -I "$out" \
  "$out/Primitives.o" Sources/Rules/SKAdNetwork/*.swift Sources/Rules/AdAttributionKit/*.swift Tests/Fuzz/PostbackFuzz.swift \
  2> >(grep -v "Cannot export local symbol" >&2)
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzPlist -o "$out/fuzz-plist" -I "$out" \
  "$out/Primitives.o" Sources/Rules/AppConfiguration/*.swift Tests/Fuzz/PlistCheckFuzz.swift 2> >(grep -v "Cannot export local symbol" >&2)
# AppDevelopers names Apple Ads' placements from the AppleAds rules: a module of its own first.
swiftc -O -sanitize=fuzzer,address -parse-as-library -wmo -module-name AppleAds -emit-module -I "$out" \
  -emit-module-path "$out/AppleAds.swiftmodule" -c Sources/Rules/AppleAds/*.swift -o "$out/AppleAds.o" \
  2> >(grep -v "Cannot export local symbol" >&2)
swiftc -O -sanitize=fuzzer,address -parse-as-library -module-name FuzzCounters -o "$out/fuzz-counters" -I "$out" \
  "$out/Primitives.o" "$out/AppleAds.o" Sources/Rules/AppDevelopers/*.swift Tests/Fuzz/ConversionValueFuzz.swift 2> >(grep -v "Cannot export local symbol" >&2)

# Seeds: real requests and real reports, so mutation starts from the interesting shapes.
printf '\x03POST /.well-known/private-click-measurement/report-attribution/ HTTP/1.1\r\nHost: shop.example\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n' > "$out/corpus-http/seed1"
printf '\x07POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;x=1\r\nhello\r\n0\r\nT: 1\r\n\r\n' > "$out/corpus-http/seed2"
python3 -c "
import json
v = json.load(open('Tests/RulesTests/Resources/vectors/pcm_reports.json'))
for i, (k, x) in enumerate(v.items()):
    open('$out/corpus-report/seed%d' % i, 'w').write(x['raw'])
" 2>/dev/null || printf '{"source_engagement_type":"click","source_site":"news.example","source_id":42,"attributed_on_site":"shop.example","trigger_data":5,"version":3}' > "$out/corpus-report/seed0"

python3 - "$out/corpus-postback" <<'PY'
import json, sys
out = sys.argv[1]
n = 0
for name, tag in [("skadnetwork_postbacks", b"\x00"), ("adattributionkit_postbacks", b"\x01")]:
    for v in json.load(open("Tests/PostbackTests/Resources/vectors/%s.json" % name)).values():
        open("%s/seed%d" % (out, n), "wb").write(tag + json.dumps(v.get("postback") or v.get("body")).encode())
        n += 1
for v in json.load(open("Tests/PostbackTests/Resources/vectors/generated_postbacks.json"))["vectors"][::7]:
    tag = b"\x00" if v["protocol"] == "skadnetwork" else b"\x01"
    open("%s/seed%d" % (out, n), "wb").write(tag + v["body"].encode())
    n += 1
PY

python3 - "$out/corpus-token" <<'PY'
import base64, sys
out = sys.argv[1]
b = lambda n, fill: base64.urlsafe_b64encode(bytes([fill]) * n).rstrip(b"=").decode()
open(out + "/seed0", "w").write('{"source_engagement_type":"click","source_nonce":"%s","source_unlinkable_token":"%s","version":3}' % (b(16, 7), b(512, 1)))
open(out + "/seed1", "w").write('{"destination_nonce":"%s","destination_unlinkable_token":"%s","version":3}' % (b(16, 9), b(512, 2)))
PY

cp Tests/AppConfigurationTests/Resources/seed-precedence.*.plist "$out/corpus-plist/"
printf '{"app_id":1,"first_launch":"2026-11-20T09:00:00Z","conversion_value":3,"coarse_conversion_value":"low","events":{"level_complete":3,"trial_start":1},"revenue":{"EUR":4.99}}' > "$out/corpus-counters/seed0"
printf '{"app_id":1,"first_launch":1762000000,"skadnetwork_version":"3.0","events":["trial_start"],"framework":"skadnetwork"}' > "$out/corpus-counters/seed1"
# Registrations with their counters (a newline between), from the fixtures: the schemas that crashed once.
cp Tests/AppDevelopersTests/Resources/fuzz-fixtures/*.txt "$out/corpus-counters/"
printf '%s\n%s' '{"app_id":1,"site":"app.example","name":"G","schema":{"fine":[{"from":0,"to":9,"meaning":"l","events":["level"]},{"from":10,"to":63,"meaning":"p","revenue":{"min":0.99,"max":49.99,"currency":"USD"}}],"coarse_from_fine":{"medium":10,"high":30},"lock_at":{"fine":63,"coarse":"high"}}}' \
  '{"app_id":1,"first_launch":"2026-11-22T09:00:00Z","events":{"level":4},"revenue":{"USD":12.5}}' > "$out/corpus-counters/seed2"

# Swift's own backtracer would take the crash signal before libFuzzer could save the input.
export SWIFT_BACKTRACE=enable=no
"$out/fuzz-http" -runs="$runs" -artifact_prefix="$out/" -max_len=4096 -print_final_stats=1 "$out/corpus-http" 2>&1 | tail -12
PSL=Sources/Rules/Primitives/Resources/public_suffix_list.dat \
  "$out/fuzz-report" -runs="$runs" -artifact_prefix="$out/" -max_len=4096 -print_final_stats=1 "$out/corpus-report" 2>&1 | tail -12
"$out/fuzz-postback" -runs="$runs" -artifact_prefix="$out/" -max_len=4096 -print_final_stats=1 "$out/corpus-postback" 2>&1 | tail -12
"$out/fuzz-token" -runs="$runs" -artifact_prefix="$out/" -max_len=4096 -print_final_stats=1 "$out/corpus-token" 2>&1 | tail -12
# Foundation leaks an NSError for every plist it refuses: leaks are not what this target looks for.
ASAN_OPTIONS=detect_leaks=0 PSL=Sources/Rules/Primitives/Resources/public_suffix_list.dat "$out/fuzz-plist" -detect_leaks=0 -runs="$runs" -artifact_prefix="$out/" -max_len=8192 -print_final_stats=1 "$out/corpus-plist" 2>&1 | tail -12
"$out/fuzz-counters" -runs="$runs" -artifact_prefix="$out/" -max_len=4096 -print_final_stats=1 -dict=Tests/Fuzz/conversion_value.dict \
  "$out/corpus-counters" 2>&1 | tail -12
