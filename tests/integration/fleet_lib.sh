# The real OpenTelemetry Collector of the push tests (sourced after lib.sh):
# built once into build/fleet (tests/fleet/build.sh: Go 1.26 at
# /usr/local/go by its path, modules from the proxy, pinned by go.sum),
# shared by the sanitizer build's run: it is not ours to sanitize. Without
# it the push tests cannot run: said, never skipped quietly.
fleet_build() { # TESTNAME...: sets OTELCOL, or fails them all and exits
	local t0=$SECONDS t
	if ! OTELCOL=$(bash "$ROOT/tests/fleet/build.sh" "$ROOT/build/fleet" 2> "$TMP/build.log"); then
		for t in "$@"; do
			fail "$t" "the test Collector did not build: $(tail -n 3 "$TMP/build.log" | tr '\n' ' ')"
		done
		exit 0
	fi
	cat "$TMP/build.log" >&2
	echo "Collector ready in $((SECONDS - t0)) s (built or cached: $OTELCOL)" >&2
}

# tests/fleet/pyroingest, the test receiver of Pyroscope's /ingest (standard
# library only), built with Go 1.26 by its path as the Collector is, once per
# build directory; RECV set. Or fails TESTNAME... and exits.
pyroingest_build() {
	local t
	RECV=$ROOT/build/fleet/pyroingest
	[[ -x $RECV && ! $ROOT/tests/fleet/pyroingest/main.go -nt $RECV ]] && return 0
	mkdir -p "$ROOT/build/fleet"
	if ! (cd "$ROOT/tests/fleet" && GOCACHE=$ROOT/build/fleet/go-cache \
		GOFLAGS="-mod=readonly -buildvcs=false" CGO_ENABLED=0 \
		"${FLEET_GO:-/usr/local/go/bin/go}" build -trimpath -o "$RECV.tmp" ./pyroingest &&
		mv "$RECV.tmp" "$RECV") > "$TMP/build.log" 2>&1; then
		for t in "$@"; do
			fail "$t" "the test receiver did not build: $(tail -n 3 "$TMP/build.log" | tr '\n' ' ')"
		done
		exit 0
	fi
}

# start_receiver DIR [ARGS...]: pyroingest keeping what it gets in DIR (ARGS:
# e.g. -addr 127.0.0.1:PORT, -token T); its port in PORT, pid in RPID.
start_receiver() {
	local dir=$1 _
	shift
	mkdir -p "$dir"
	"$RECV" -dir "$dir" "$@" > "$dir.out" 2> "$dir.log" &
	RPID=$!
	for _ in $(seq 50); do grep -q listening "$dir.out" && break; sleep 0.1; done
	PORT=$(sed -n 's/^listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$dir.out")
}

# collector_start PORT DIR: the Collector on 127.0.0.1:PORT, its profilefile
# exporter writing each batch it gets into DIR (batch-N.json and
# batch-N.summary.json, N in the order received); COL_PID set. Waits until
# it is ready (0) or gone (1).
collector_start() {
	mkdir -p "$2"
	cat > "$TMP/otelcol-$1.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$1
exporters:
  profilefile:
    directory: $2
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [profilefile]
YAML
	"$OTELCOL" --config="$TMP/otelcol-$1.yaml" --feature-gates=service.profilesSupport \
		>> "$TMP/otelcol-$1.log" 2>&1 &
	COL_PID=$!
	local _
	for _ in $(seq 100); do
		[ "$(grep -c "Everything is ready" "$TMP/otelcol-$1.log")" -gt "${COL_STARTS:-0}" ] && break
		kill -0 $COL_PID 2> /dev/null || break
		sleep 0.1
	done
	COL_STARTS=$(grep -c "Everything is ready" "$TMP/otelcol-$1.log")
	[ "$COL_STARTS" -gt 0 ] && kill -0 $COL_PID 2> /dev/null && return 0
	echo "Collector did not start:" >&2
	tail -n 5 "$TMP/otelcol-$1.log" >&2
	return 1
}

# fixture_start PORT LOG ARGS...: tests/integration/http_fixture.py on
# 127.0.0.1:PORT (status CODE BODY, or proxy DELAY TO-PORT); FIX_PID set,
# once it takes connections.
fixture_start() {
	python3 "$ROOT/tests/integration/http_fixture.py" "$@" > "$TMP/fixture-$1.log" 2>&1 &
	FIX_PID=$!
	local _
	for _ in $(seq 50); do
		python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2> /dev/null && return 0
		sleep 0.1
	done
	return 1
}
