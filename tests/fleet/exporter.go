package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/xexporter"
	"go.opentelemetry.io/collector/pdata/pprofile"
)

// profilefile: each batch the pipeline hands over becomes DIR/batch-N.json
// (the Collector's JSON of it) and DIR/batch-N.summary.json (summarize),
// each written to a temporary name and renamed, so a reader never sees half.
type fileConfig struct {
	Directory string `mapstructure:"directory"`
}

func (c *fileConfig) Validate() error {
	if c.Directory == "" {
		return errors.New("directory is required")
	}
	return nil
}

type fileExporter struct {
	dir string
	mu  sync.Mutex
	n   int
}

func newProfileFileFactory() exporter.Factory {
	return xexporter.NewFactory(component.MustNewType("profilefile"),
		func() component.Config { return &fileConfig{} },
		xexporter.WithProfiles(func(_ context.Context, _ exporter.Settings, cfg component.Config) (xexporter.Profiles, error) {
			return &fileExporter{dir: cfg.(*fileConfig).Directory}, nil
		}, component.StabilityLevelDevelopment))
}

func (e *fileExporter) Start(context.Context, component.Host) error {
	return os.MkdirAll(e.dir, 0o755)
}

func (e *fileExporter) Shutdown(context.Context) error { return nil }

func (e *fileExporter) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func writeAtomic(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (e *fileExporter) ConsumeProfiles(_ context.Context, pd pprofile.Profiles) error {
	// The summary first: the JSON marshaler moves the resource
	// attributes' strings into the dictionary in place (pdata's
	// ConvertProfilesToReferences), after which pcommon's API sees keys "".
	sum, err := json.MarshalIndent(summarize(pd), "", " ")
	if err != nil {
		return err
	}
	raw, err := (&pprofile.JSONMarshaler{}).MarshalProfiles(pd)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.n++
	n := e.n
	e.mu.Unlock()
	base := filepath.Join(e.dir, fmt.Sprintf("batch-%d", n))
	if err := writeAtomic(base+".json", raw); err != nil {
		return err
	}
	return writeAtomic(base+".summary.json", sum)
}
