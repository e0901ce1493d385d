#!/usr/bin/env bash
# Installs the endpoint: the binary in PREFIX/bin, the summary page in
# PREFIX/share/attribution-endpoint/Public (where the binary looks for it, whatever its working
# directory), and the deployment files in PREFIX/share/attribution-endpoint/deploy.
#
# Usage: scripts/install.sh [--prefix DIR] [--destdir DIR] [--binary FILE]
#   --prefix DIR   where to install (default /usr/local)
#   --destdir DIR  stage the install under DIR (for packaging); paths inside stay PREFIX-based
#   --binary FILE  install this already-built binary instead of building a release one
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=/usr/local
destdir=""
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --destdir) destdir=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown option $1" >&2; exit 64 ;;
  esac
done
if [ -z "$binary" ]; then
  swift build -c release --product attribution-endpoint
  binary=$(swift build -c release --show-bin-path)/attribution-endpoint
fi
root="$destdir$prefix"
install -d "$root/bin" "$root/share/attribution-endpoint"
install -m 0755 "$binary" "$root/bin/attribution-endpoint"
# The targets' resources (the public suffix list) are bundles the binary finds beside itself
# (Bundle.module): without them it looks in the build folder, and stops where that is gone or
# unreadable to the service's user.
for bundle in "$(dirname "$binary")"/attribution-endpoint_*.resources; do
  # A build folder also holds the test targets' bundles: those stay behind.
  case "$bundle" in *Tests.resources) continue ;; esac
  [ -d "$bundle" ] || continue
  rm -rf "$root/bin/$(basename "$bundle")"
  cp -R "$bundle" "$root/bin/"
  chmod -R a+rX "$root/bin/$(basename "$bundle")"
done
ls -d "$root/bin/"attribution-endpoint_*.resources >/dev/null 2>&1 || {
  echo "install.sh: no attribution-endpoint_*.resources beside $binary: the binary would not find the public suffix list" >&2
  exit 1
}
rm -rf "$root/share/attribution-endpoint/Public" "$root/share/attribution-endpoint/deploy"
cp -R Public "$root/share/attribution-endpoint/Public"
cp -R deploy "$root/share/attribution-endpoint/deploy"
chmod -R a+rX "$root/share/attribution-endpoint"
echo "installed $root/bin/attribution-endpoint and its page in $root/share/attribution-endpoint/Public"
