// A real OpenTelemetry Collector (v0.165.0) for tests/integration/test_fleet.sh:
// the Collector's own otlpreceiver, and an exporter of this module's that
// writes each batch of profiles it is handed to a file, as the Collector's
// JSON (pprofile.JSONMarshaler) and a summary the Collector's pdata computes
// (profiles/summary.go), so that the test reads what the Collector made of
// the request, not the request. Go is for tests only: never in the tool.
package main

import (
	"log"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/provider/fileprovider"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/otelcol"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/service/telemetry/otelconftelemetry"
)

func components() (otelcol.Factories, error) {
	rf := otlpreceiver.NewFactory()
	ef := newProfileFileFactory()
	return otelcol.Factories{
		Receivers: map[component.Type]receiver.Factory{rf.Type(): rf},
		Exporters: map[component.Type]exporter.Factory{ef.Type(): ef},
		Telemetry: otelconftelemetry.NewFactory(),
	}, nil
}

func main() {
	set := otelcol.CollectorSettings{
		BuildInfo: component.BuildInfo{Command: "fleet-otelcol", Description: "bpftrace-rec test Collector", Version: "0.165.0"},
		Factories: components,
		ConfigProviderSettings: otelcol.ConfigProviderSettings{
			ResolverSettings: confmap.ResolverSettings{
				ProviderFactories: []confmap.ProviderFactory{fileprovider.NewFactory()},
				DefaultScheme:     "file",
			},
		},
	}
	if err := otelcol.NewCommand(set).Execute(); err != nil {
		log.Fatal(err)
	}
}
