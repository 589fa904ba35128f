// Package runner starts a Connect worker: the herder for its mode, the REST
// API on its own httpapi listener, and (standalone) the connectors given at
// start. `vltava connect` and the embedded worker of `vltava server` use it.
package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/connect/herder"
	_ "github.com/vltava/vltava/internal/connect/plugins/all" // the built-in plugins
	"github.com/vltava/vltava/internal/connect/rest"
	"github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/logging"
)

// Options configure a worker.
type Options struct {
	Mode   worker.Mode
	Worker map[string]string // worker properties
	// Connectors are created at start (standalone mode).
	Connectors []map[string]string
	Log        *slog.Logger
	Levels     *logging.Levels
}

// closer is what a herder needs at shutdown.
type closer interface {
	herder.Herder
	Close()
}

// Runner is a running worker.
type Runner struct {
	h    closer
	http *httpapi.Server
	cfg  *worker.Config
}

// Start parses the worker config, connects to the cluster, serves the REST
// API and creates the given connectors.
func Start(o Options) (*Runner, error) {
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	cfg, err := worker.ParseConfig(o.Worker, o.Mode)
	if err != nil {
		return nil, err
	}
	var h closer
	switch o.Mode {
	case worker.Standalone:
		h, err = herder.NewStandalone(cfg, log)
	case worker.Distributed:
		h, err = herder.NewDistributed(cfg, log)
	}
	if err != nil {
		return nil, err
	}
	srv := httpapi.New(httpapi.Options{Service: "connect", Listeners: cfg.Listeners, Logger: log})
	rest.New(h, o.Levels).Mount(srv)
	if err := srv.Start(); err != nil {
		h.Close()
		return nil, err
	}
	r := &Runner{h: h, http: srv, cfg: cfg}
	for _, c := range o.Connectors {
		name := c[worker.KeyName]
		if _, _, err := h.PutConnectorConfig(name, c, false); err != nil {
			r.Close()
			return nil, fmt.Errorf("creating connector %s: %w", name, err)
		}
		log.Info("created connector", "component", "connect", "connector", name)
	}
	return r, nil
}

// Addrs are the REST listeners' bound addresses.
func (r *Runner) Addrs() []net.Addr { return r.http.Addrs() }

// Close stops the REST API, then every connector and task.
func (r *Runner) Close() {
	_ = r.http.Close()
	r.h.Close()
}

// LoadProperties reads a Java properties file.
func LoadProperties(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := config.ParseProperties(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// LoadConnector reads a connector config: a .properties file, or JSON as
// POST /connectors takes it ({"name":..., "config":{...}}) or a flat object.
func LoadConnector(path string) (map[string]string, error) {
	if !strings.EqualFold(filepath.Ext(path), ".json") {
		p, err := LoadProperties(path)
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(p[worker.KeyName]) == "" {
			return nil, fmt.Errorf("%s: the connector config has no name", path)
		}
		return p, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseConnectorJSON(b)
}

// ParseConnectorJSON reads {"name":..., "config":{...}} or a flat config
// object; values may be strings, numbers or booleans.
func ParseConnectorJSON(b []byte) (map[string]string, error) {
	var raw map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	flat := raw
	name := ""
	if c, ok := raw["config"]; ok {
		if n, ok := raw["name"]; ok {
			if err := json.Unmarshal(n, &name); err != nil {
				return nil, errors.New("name is not a string")
			}
		}
		flat = nil
		if err := json.Unmarshal(c, &flat); err != nil {
			return nil, errors.New("config is not an object")
		}
	}
	out := map[string]string{}
	for k, v := range flat {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			t := strings.TrimSpace(string(v))
			if t == "null" || strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
				return nil, fmt.Errorf("config %s is not a string", k)
			}
			s = t
		}
		out[k] = s
	}
	if name != "" {
		if n, ok := out[worker.KeyName]; ok && n != name {
			return nil, fmt.Errorf("name %s does not match config name %s", name, n)
		}
		out[worker.KeyName] = name
	}
	if strings.TrimSpace(out[worker.KeyName]) == "" {
		return nil, errors.New("the connector config has no name")
	}
	return out, nil
}
