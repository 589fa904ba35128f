package rest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
	"github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/logging"
)

type pluginJSON struct {
	Class   string `json:"class"`
	Type    string `json:"type"`
	Version string `json:"version,omitempty"`
}

func (a *API) plugins(w http.ResponseWriter, r *http.Request) {
	only := true
	if v := r.URL.Query().Get("connectorsOnly"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, 400, "connectorsOnly must be true or false")
			return
		}
		only = b
	}
	var types []connect.PluginType
	if only {
		types = []connect.PluginType{connect.PluginSource, connect.PluginSink}
	}
	out := []pluginJSON{}
	for _, p := range connect.Plugins(types...) {
		out = append(out, pluginJSON{Class: p.Class, Type: string(p.Type), Version: p.Version})
	}
	writeJSON(w, 200, out)
}

// keyInfoJSON is Kafka's ConfigKeyInfo.
type keyInfoJSON struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	OrderInGroup  int      `json:"order_in_group"`
	Width         string   `json:"width"`
	DisplayName   string   `json:"display_name"`
	Dependents    []string `json:"dependents"`
}

func keyInfo(k connect.ConfigKey) keyInfoJSON {
	ki := keyInfoJSON{Name: k.Name, Type: string(k.Type), Required: k.Required, Importance: string(k.Importance),
		Documentation: k.Doc, OrderInGroup: k.Order, Width: string(k.Width), DisplayName: k.Display, Dependents: k.Dependents}
	if ki.Dependents == nil {
		ki.Dependents = []string{}
	}
	if ki.DisplayName == "" {
		ki.DisplayName = k.Name
	}
	if ki.Width == "" {
		ki.Width = string(connect.WidthNone)
	}
	if ki.Importance == "" {
		ki.Importance = string(connect.Medium)
	}
	if k.Group != "" {
		g := k.Group
		ki.Group = &g
	}
	if !k.Required && k.Default != nil {
		d := defaultString(k.Default)
		ki.DefaultValue = &d
	}
	return ki
}

func defaultString(v any) string {
	switch x := v.(type) {
	case []string:
		return strings.Join(x, ",")
	case string:
		return x
	}
	return fmt.Sprint(v)
}

func pluginDef(name string) (*connect.ConfigDef, connect.PluginInfo, bool) {
	info, ok := connect.Lookup(name)
	if !ok {
		return nil, info, false
	}
	switch info.Type {
	case connect.PluginSource, connect.PluginSink:
		c, _, err := connect.NewConnector(name)
		if err != nil {
			return nil, info, false
		}
		return c.Config(), info, true
	case connect.PluginTransformation:
		t, err := connect.NewTransformation(name)
		if err != nil {
			return nil, info, false
		}
		return t.Config(), info, true
	case connect.PluginPredicate:
		p, err := connect.NewPredicate(name)
		if err != nil {
			return nil, info, false
		}
		return p.Config(), info, true
	}
	if d, ok := newConfigurable(name); ok {
		return d, info, true
	}
	return connect.NewConfigDef(), info, true
}

// newConfigurable gives a converter's config definition when it has one.
func newConfigurable(name string) (*connect.ConfigDef, bool) {
	c, err := connect.NewConverter(name)
	if err != nil {
		return nil, false
	}
	if d, ok := c.(interface{ Config() *connect.ConfigDef }); ok {
		return d.Config(), true
	}
	return nil, false
}

func (a *API) pluginConfig(w http.ResponseWriter, r *http.Request) {
	def, _, ok := pluginDef(r.PathValue("plugin"))
	if !ok {
		writeError(w, http.StatusNotFound, "Unknown plugin "+r.PathValue("plugin")+".")
		return
	}
	out := []keyInfoJSON{}
	for _, k := range def.Keys() {
		out = append(out, keyInfo(k))
	}
	writeJSON(w, 200, out)
}

type valueInfoJSON struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

type configInfoJSON struct {
	Definition keyInfoJSON   `json:"definition"`
	Value      valueInfoJSON `json:"value"`
}

// ValidationJSON is Kafka's ConfigInfos.
type ValidationJSON struct {
	Name       string           `json:"name"`
	ErrorCount int              `json:"error_count"`
	Groups     []string         `json:"groups"`
	Configs    []configInfoJSON `json:"configs"`
}

func validationJSON(v *worker.Validation) ValidationJSON {
	out := ValidationJSON{Name: v.Name, ErrorCount: v.ErrorCount, Groups: v.Groups, Configs: []configInfoJSON{}}
	if out.Groups == nil {
		out.Groups = []string{}
	}
	for _, c := range v.Configs {
		vi := valueInfoJSON{Name: c.Value.Name, Visible: c.Value.Visible, Errors: c.Value.Errors, RecommendedValues: []string{}}
		if vi.Errors == nil {
			vi.Errors = []string{}
		}
		if s, ok := c.Value.Value.(string); ok {
			vi.Value = &s
		} else if !c.Def.Required && c.Def.Default != nil {
			d := defaultString(c.Def.Default)
			vi.Value = &d
		}
		for _, rv := range c.Value.RecommendedValues {
			vi.RecommendedValues = append(vi.RecommendedValues, defaultString(rv))
		}
		out.Configs = append(out.Configs, configInfoJSON{Definition: keyInfo(c.Def), Value: vi})
	}
	return out
}

func (a *API) validate(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	if _, ok := readBody(w, r, &raw); !ok {
		return
	}
	cfg, err := stringMap(raw)
	if err != nil {
		writeError(w, 400, err.Error())
		return
	}
	plugin := r.PathValue("plugin")
	if c, ok := cfg[worker.KeyConnectorClass]; ok {
		pi, ok1 := connect.Lookup(plugin)
		ci, ok2 := connect.Lookup(c)
		if !ok1 || !ok2 || pi.Class != ci.Class {
			writeError(w, 400, fmt.Sprintf("Included connector type %s does not match request type %s", c, plugin))
			return
		}
	} else {
		cfg[worker.KeyConnectorClass] = plugin
	}
	v, err := a.h.Validate(cfg)
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, validationJSON(v))
}

// --- loggers (KIP-495, KIP-976) ---

// clusterLoggers is a distributed herder's cluster-wide logging levels.
type clusterLoggers interface {
	PutLoggerLevel(ctx context.Context, namespace, level string) error
	OnLoggerLevel(f func(namespace, level string))
}

// applyClusterLevel applies a cluster-wide level read from the config
// topic to namespace and its descendants (every logger, for root).
func (a *API) applyClusterLevel(namespace, level string) {
	if a.levels == nil {
		return
	}
	names := []string{namespace}
	for _, n := range a.levels.Names() {
		if n != namespace && (namespace == logging.RootLogger || strings.HasPrefix(n, namespace+".")) {
			names = append(names, n)
		}
	}
	now := time.Now().UnixMilli()
	for _, n := range names {
		if err := a.levels.Set(n, level); err != nil {
			slog.Warn("ignoring an invalid cluster-wide logging level", "logger", namespace, "level", level, "err", err)
			return
		}
		a.mu.Lock()
		a.loggerTimes[n] = now
		a.mu.Unlock()
	}
}

type levelJSON struct {
	Level        string `json:"level"`
	LastModified *int64 `json:"last_modified"`
}

func (a *API) levelOf(name string) levelJSON {
	lj := levelJSON{Level: "INFO"}
	if a.levels != nil {
		lj.Level = a.levels.Level(name)
	}
	a.mu.Lock()
	t, ok := a.loggerTimes[name]
	a.mu.Unlock()
	if ok {
		lj.LastModified = &t
	}
	return lj
}

func (a *API) loggers(w http.ResponseWriter, _ *http.Request) {
	out := map[string]levelJSON{}
	names := []string{logging.RootLogger}
	if a.levels != nil {
		names = a.levels.Names()
	}
	for _, n := range names {
		out[n] = a.levelOf(n)
	}
	writeJSON(w, 200, out)
}

func (a *API) logger(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("logger")
	if a.levels == nil || !a.levels.Has(name) {
		writeError(w, http.StatusNotFound, "Logger "+name+" not found.")
		return
	}
	writeJSON(w, 200, a.levelOf(name))
}

func (a *API) setLogger(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	if _, ok := readBody(w, r, &req); !ok {
		return
	}
	lvl, _ := req["level"].(string)
	if lvl == "" {
		writeError(w, 400, "Desired 'level' parameter was not specified in request.")
		return
	}
	scope := r.URL.Query().Get("scope")
	cluster := strings.EqualFold(scope, "cluster")
	if scope != "" && !cluster && !strings.EqualFold(scope, "worker") {
		writeError(w, 400, "Invalid scope "+scope+"; must be one of 'worker' or 'cluster'")
		return
	}
	if a.levels == nil {
		writeError(w, 500, "log levels cannot be changed in this process")
		return
	}
	name := r.PathValue("logger")
	if _, ok := logging.ParseLog4jLevel(lvl); !ok {
		writeError(w, 400, "Invalid log level '"+lvl+"'.")
		return
	}
	if cluster {
		if cl, ok := a.h.(clusterLoggers); ok {
			if err := cl.PutLoggerLevel(r.Context(), name, strings.ToUpper(lvl)); err != nil {
				a.fail(w, r, nil, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
			return
		}
		slog.Warn("cluster-wide logging level changes are not supported in standalone mode; applying the level to this worker only", "logger", name, "level", lvl)
	}
	if err := a.levels.Set(name, lvl); err != nil {
		writeError(w, 400, err.Error())
		return
	}
	a.mu.Lock()
	a.loggerTimes[name] = time.Now().UnixMilli()
	a.mu.Unlock()
	writeJSON(w, 200, []string{name})
}
