# The test Collector (tests/fleet/build.sh's) on loopback, for the tests and
# benchmarks that push to it (source it). collector_start OTELCOL PORT DIR:
# starts it with its otlpreceiver on 127.0.0.1:PORT (HTTP) and the
# profilefile exporter writing into DIR, its config and log in DIR's
# parent (DIR.yaml, DIR.log), with the service.profilesSupport feature
# gate; waits until it says it is ready (at most 10 s). Sets COL_PID; 0, or
# 1 with its log's last lines on stderr.
collector_start() {
	local bin=$1 port=$2 dir=$3
	mkdir -p "$dir"
	cat > "$dir.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$port
exporters:
  profilefile:
    directory: $dir
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [profilefile]
YAML
	"$bin" --config="$dir.yaml" --feature-gates=service.profilesSupport > "$dir.log" 2>&1 &
	COL_PID=$!
	for _ in $(seq 100); do
		grep -q "Everything is ready" "$dir.log" && return 0
		kill -0 $COL_PID 2>/dev/null || break
		sleep 0.1
	done
	echo "Collector did not start:" >&2
	tail -n 5 "$dir.log" >&2
	return 1
}
