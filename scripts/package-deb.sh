#!/usr/bin/env bash
# Builds attribution-endpoint_VERSION_ARCH.deb: the binary with the Swift runtime's libraries beside
# it (so a clean Debian needs no toolchain), the summary page and deploy/ in /usr/share/attribution-endpoint, the
# systemd unit (deploy/attribution-endpoint.service, run as the package's own user), a default
# config in /etc/attribution-endpoint/config.json (a conffile), and the maintainer scripts of
# deploy/debian/: the user made at install, the data kept on remove and removed on purge after
# saying so. Depends are the Debian packages holding the libraries the binary links.
#
# Usage: scripts/package-deb.sh [--binary FILE] [--out DIR] [--version VERSION]
#   --binary FILE  package this binary instead of building one (linked with RUNPATH /usr/lib/attribution-endpoint)
#   --out DIR      where the .deb goes (default .build/deb)
#   --version V    the package version (default 0.YYYYMMDD+gCOMMIT, from the last commit)
set -euo pipefail
cd "$(dirname "$0")/.."
binary="" out=.build/deb version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --version) version=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "package-deb.sh: unknown option $1" >&2; exit 64 ;;
  esac
done
# The Swift runtime's libraries go in /usr/lib/attribution-endpoint, found through the binary's
# RUNPATH. (A static runtime would also link Foundation's own CFURLSessionCurlHostIsEqual beside
# the endpoint's, which replaces it to stop a leak: Sources/Platform/CSystemShims/url_host_check.c.)
libdir=/usr/lib/attribution-endpoint
runtime="$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift/linux"
if [ -z "$binary" ]; then
  build=(swift build -c release --product attribution-endpoint --scratch-path .build/package
         -Xswiftc -no-toolchain-stdlib-rpath -Xlinker -rpath -Xlinker "$libdir")
  "${build[@]}"
  binary=$("${build[@]}" --show-bin-path)/attribution-endpoint
fi
version=${version:-0.$(git log -1 --format=%cd --date=format:%Y%m%d)+g$(git rev-parse --short HEAD)}
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
chmod 0755 "$stage"

# Each library the binary links comes from the toolchain (copied in) or from a Debian package: the
# packages of what the binary and the copied libraries name themselves (NEEDED) are the Depends,
# and anything from neither stops the build.
install -d "$stage$libdir"
declare -A found=()
while read -r soname path; do found[$soname]=$path; done < <(LD_LIBRARY_PATH="$runtime" ldd "$binary" |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $2 == "=>" && $3 == "not" { print $1, "missing" }
       $1 ~ /^\// { n = split($1, part, "/"); print part[n], $1 }')
depends=()
for soname in "${!found[@]}"; do
  path=${found[$soname]}
  if [ "$path" != missing ] && [ "$(readlink -f "$(dirname "$path")")" = "$(readlink -f "$runtime")" ]; then
    install -m 0644 "$path" "$stage$libdir/"
  fi
done
needed=$( { readelf -d "$binary"; for library in "$stage$libdir"/*.so*; do [ -e "$library" ] && readelf -d "$library"; done; } |
  sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
for soname in $needed; do
  [ -e "$stage$libdir/$soname" ] && continue
  path=${found[$soname]:-missing}
  package=""
  if [ "$path" != missing ]; then
    for candidate in "$path" "$(readlink -f "$path")" "/usr$path" "${path#/usr}"; do
      package=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$package" ] && break
    done
  fi
  if [ -z "$package" ]; then
    echo "package-deb.sh: $binary needs $soname ($path), which neither Debian nor the Swift toolchain holds" >&2
    exit 1
  fi
  depends+=("$package")
done
if [ -z "$(ls "$stage$libdir")" ]; then rmdir "$stage$libdir"; fi
depends_line=$(printf '%s\n' "${depends[@]}" | sort -u | paste -sd, | sed 's/,/, /g')

scripts/install.sh --prefix /usr --destdir "$stage" --binary "$binary" >/dev/null
# The unit of deploy/, pointed at /usr/bin and run as the user postinst makes (a DynamicUser's
# data would live in /var/lib/private, out of the package's reach on purge).
install -d "$stage/lib/systemd/system"
sed -e 's|/usr/local/bin/attribution-endpoint|/usr/bin/attribution-endpoint|' \
    -e 's|^DynamicUser=yes|User=attribution-endpoint\nGroup=attribution-endpoint|' \
    -e 's|^# An unprivileged user made up for the service.*|# The unprivileged user the package made at install; its state directory is its own.|' \
    -e 's|^# systemd unit for attribution-endpoint, installed by scripts/install.sh into /usr/local.|# systemd unit for attribution-endpoint, installed by its Debian package (scripts/package-deb.sh).|' \
    -e '/^# Copy to \/etc\/systemd\/system/,/^# The admin token is generated/d' \
    deploy/attribution-endpoint.service > "$stage/lib/systemd/system/attribution-endpoint.service"
grep -q '^User=attribution-endpoint' "$stage/lib/systemd/system/attribution-endpoint.service"
install -D -m 0640 deploy/debian/config.json "$stage/etc/attribution-endpoint/config.json"
install -d "$stage/DEBIAN"
install -m 0755 deploy/debian/postinst deploy/debian/prerm deploy/debian/postrm "$stage/DEBIAN/"
echo /etc/attribution-endpoint/config.json > "$stage/DEBIAN/conffiles"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: attribution-endpoint
Version: $version
Architecture: $arch
Maintainer: ${DEBFULLNAME:-attribution-endpoint packager} <${DEBEMAIL:-root@localhost}>
Installed-Size: $(du -sk "$stage" | cut -f1)
Depends: $depends_line, passwd
Section: net
Priority: optional
Description: endpoint for Apple's privacy-preserving ad attribution reports
 Receives Private Click Measurement (Web AdAttributionKit) reports and copies of
 SKAdNetwork and AdAttributionKit postbacks on a site's well-known paths,
 validates them, checks their signatures, stores them durably and shows honest
 aggregates on its page. Runs behind nginx or Caddy; needs no other service.
CONTROL
mkdir -p "$out"
deb="$out/attribution-endpoint_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$deb" >/dev/null
echo "$deb"
