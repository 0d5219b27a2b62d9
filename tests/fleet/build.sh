#!/bin/bash
# Builds the test Collector (main.go: otelcol v0.165.0 with its otlpreceiver
# and this module's profilefile exporter) into $1 (default build/fleet), once:
# it is rebuilt only when a source here is newer than the binary. Go 1.26 at
# /usr/local/go, by its path: Debian's Go 1.19 (first on some PATHs, and what
# tools/pprof builds with) cannot build these modules. Modules come from the
# module proxy as configured (GOPROXY), pinned by go.sum (-mod=readonly).
# Prints the binary's path; its build time on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "${1:-$here/../../build/fleet}" && cd "${1:-$here/../../build/fleet}" && pwd)
bin=$out/otelcol
GO=${FLEET_GO:-/usr/local/go/bin/go}
if [[ -x $bin && -z $(find "$here" -newer "$bin" -name '*.go' -o -newer "$bin" -name 'go.*') ]]; then
	echo "$bin"
	exit 0
fi
[[ -x $GO ]] || { echo "build.sh: $GO: not found (Go 1.26 is expected at /usr/local/go)" >&2; exit 1; }
start=$(date +%s)
# Two runs building at once each write their own file; the last rename wins.
tmp=$(mktemp "$out/.otelcol.XXXXXX")
trap 'rm -f "$tmp"' EXIT
(cd "$here" && GOCACHE=$out/go-cache GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
	"$GO" build -trimpath -o "$tmp" .) >&2
chmod 755 "$tmp"
mv "$tmp" "$bin"
echo "build.sh: built $bin with $("$GO" version | cut -d' ' -f3) in $(($(date +%s) - start)) s" >&2
echo "$bin"
