// Package rest is Kafka Connect's REST API (Kafka 4's endpoints, JSON
// shapes and status codes) on the herder, mounted on an httpapi.Server.
// Errors are {"error_code": <HTTP status>, "message": ...}. A request a
// follower cannot answer is forwarded to the leader (herder.NotLeader).
package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/connect/herder"
	"github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/logging"
)

// APIVersion is the Kafka Connect release whose REST API this serves, the
// "version" of GET /.
const APIVersion = "4.0.0"

// API serves the Connect REST API.
type API struct {
	h      herder.Herder
	levels *logging.Levels // nil: the loggers endpoints answer with root only
	client *http.Client
	commit string
	mu     sync.Mutex // guards loggerTimes
	// loggerTimes is each logger's last_modified (ms), set by PUT.
	loggerTimes map[string]int64
}

// New returns the API on a herder; levels are the process's loggers.
func New(h herder.Herder, levels *logging.Levels) *API {
	a := &API{h: h, levels: levels, client: &http.Client{Timeout: 90 * time.Second}, loggerTimes: map[string]int64{}}
	if cl, ok := h.(clusterLoggers); ok {
		cl.OnLoggerLevel(a.applyClusterLevel)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				a.commit = s.Value
			}
		}
	}
	return a
}

// Mount registers every endpoint on s.
func (a *API) Mount(s *httpapi.Server) {
	for pattern, f := range a.routes() {
		s.HandleFunc(pattern, f)
	}
}

// Handler serves the API without an httpapi.Server (tests).
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	for pattern, f := range a.routes() {
		mux.HandleFunc(pattern, f)
	}
	return mux
}

func (a *API) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /{$}":                                        a.root,
		"GET /connectors":                                 a.list,
		"POST /connectors":                                a.create,
		"GET /connectors/{name}":                          a.info,
		"DELETE /connectors/{name}":                       a.delete,
		"GET /connectors/{name}/config":                   a.getConfig,
		"PUT /connectors/{name}/config":                   a.putConfig,
		"PATCH /connectors/{name}/config":                 a.patchConfig,
		"GET /connectors/{name}/status":                   a.status,
		"POST /connectors/{name}/restart":                 a.restart,
		"PUT /connectors/{name}/pause":                    a.target(worker.TargetPaused),
		"PUT /connectors/{name}/resume":                   a.target(worker.TargetStarted),
		"PUT /connectors/{name}/stop":                     a.target(worker.TargetStopped),
		"GET /connectors/{name}/tasks":                    a.tasks,
		"GET /connectors/{name}/tasks/{id}/status":        a.taskStatus,
		"POST /connectors/{name}/tasks/{id}/restart":      a.taskRestart,
		"GET /connectors/{name}/topics":                   a.topics,
		"PUT /connectors/{name}/topics/reset":             a.resetTopics,
		"GET /connectors/{name}/offsets":                  a.offsets,
		"PATCH /connectors/{name}/offsets":                a.alterOffsets,
		"DELETE /connectors/{name}/offsets":               a.resetOffsets,
		"GET /connector-plugins":                          a.plugins,
		"GET /connector-plugins/{plugin}/config":          a.pluginConfig,
		"PUT /connector-plugins/{plugin}/config/validate": a.validate,
		"GET /admin/loggers":                              a.loggers,
		"GET /admin/loggers/{logger}":                     a.logger,
		"PUT /admin/loggers/{logger}":                     a.setLogger,
	}
}

// writeJSON writes v with status code.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = 500, []byte(fmt.Sprintf(`{"error_code":500,"message":%q}`, err.Error()))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

type errorBody struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, errorBody{code, msg})
}

// fail answers a herder error, forwarding to the leader when asked.
func (a *API) fail(w http.ResponseWriter, r *http.Request, body []byte, err error) {
	var nl *herder.NotLeader
	if errors.As(err, &nl) {
		a.forward(w, r, body, nl.LeaderURL)
		return
	}
	var he *herder.Error
	if errors.As(err, &he) {
		writeError(w, he.Code, he.Msg)
		return
	}
	var ve *herder.ValidationError
	if errors.As(err, &ve) {
		writeError(w, ve.Code, ve.Msg)
		return
	}
	writeError(w, http.StatusInternalServerError, err.Error())
}

// forward sends the request to the leader and copies its answer; a
// request already forwarded is not forwarded again (409).
func (a *API) forward(w http.ResponseWriter, r *http.Request, body []byte, leader string) {
	if r.URL.Query().Get("forward") == "false" || leader == "" {
		writeError(w, http.StatusConflict, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)")
		return
	}
	q := r.URL.Query()
	q.Set("forward", "false")
	u := strings.TrimSuffix(leader, "/") + r.URL.Path + "?" + q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u, bytes.NewReader(body))
	if err != nil {
		writeError(w, 500, err.Error())
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("IO Error trying to forward REST request: %v", err))
		return
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// readBody reads a JSON body into v (nil v: read only); a malformed body is 400.
func readBody(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	if v != nil {
		if len(bytes.TrimSpace(b)) == 0 {
			writeError(w, http.StatusBadRequest, "Request body is empty")
			return nil, false
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if err := d.Decode(v); err != nil {
			writeError(w, http.StatusBadRequest, "Cannot deserialize value: "+err.Error())
			return nil, false
		}
	}
	return b, true
}

// stringMap decodes a JSON object of config values: Kafka accepts numbers
// and booleans for string values too.
func stringMap(raw map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch x := v.(type) {
		case string:
			out[k] = x
		case json.Number:
			out[k] = x.String()
		case bool:
			out[k] = strconv.FormatBool(x)
		case nil:
			return nil, fmt.Errorf("config %s is null", k)
		default:
			return nil, fmt.Errorf("config %s is not a string", k)
		}
	}
	return out, nil
}

func (a *API) root(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, 200, map[string]any{"version": APIVersion, "commit": a.commit, "kafka_cluster_id": a.h.ClusterID()})
}

// --- JSON shapes ---

type infoJSON struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []worker.TaskID   `json:"tasks"`
	Type   string            `json:"type"`
}

func infoOf(i *herder.ConnectorInfo) infoJSON {
	return infoJSON{Name: i.Name, Config: i.Config, Tasks: i.Tasks, Type: string(i.Type)}
}

type stateJSON struct {
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
}

type taskStateJSON struct {
	ID       int    `json:"id"`
	State    string `json:"state"`
	Trace    string `json:"trace,omitempty"`
	WorkerID string `json:"worker_id"`
}

type statusJSON struct {
	Name      string          `json:"name"`
	Connector stateJSON       `json:"connector"`
	Tasks     []taskStateJSON `json:"tasks"`
	Type      string          `json:"type"`
}

func taskStateOf(s worker.Status) taskStateJSON {
	return taskStateJSON{ID: s.ID.Task, State: string(s.State), Trace: s.Trace, WorkerID: s.WorkerID}
}

func statusOf(si *herder.StateInfo) statusJSON {
	out := statusJSON{Name: si.Name, Type: string(si.Type), Tasks: []taskStateJSON{},
		Connector: stateJSON{State: string(si.Connector.State), Trace: si.Connector.Trace, WorkerID: si.Connector.WorkerID}}
	for _, t := range si.Tasks {
		out.Tasks = append(out.Tasks, taskStateOf(t))
	}
	return out
}

// --- connectors ---

func (a *API) list(w http.ResponseWriter, r *http.Request) {
	names, err := a.h.Connectors()
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		writeJSON(w, 200, names)
		return
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		m := map[string]any{}
		for _, e := range expand {
			switch e {
			case "status":
				if si, err := a.h.Status(n); err == nil {
					m["status"] = statusOf(si)
				}
			case "info":
				if inf, err := a.h.ConnectorInfo(n); err == nil {
					m["info"] = infoOf(inf)
				}
			}
		}
		out[n] = m
	}
	writeJSON(w, 200, out)
}

func (a *API) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name   *string        `json:"name"`
		Config map[string]any `json:"config"`
	}
	body, ok := readBody(w, r, &req)
	if !ok {
		return
	}
	name := ""
	if req.Name != nil {
		name = strings.TrimSpace(*req.Name)
	}
	if name == "" {
		writeError(w, 400, "Connector name must not be empty")
		return
	}
	if strings.ContainsAny(name, "/") {
		writeError(w, 400, "Connector name must not contain '/'")
		return
	}
	cfg, err := stringMap(req.Config)
	if err != nil {
		writeError(w, 400, err.Error())
		return
	}
	if req.Config == nil {
		writeError(w, 400, "Connector config must not be null")
		return
	}
	if _, ok := cfg[worker.KeyName]; !ok {
		cfg[worker.KeyName] = name
	}
	inf, _, err := a.h.PutConnectorConfig(name, cfg, false)
	if err != nil {
		a.fail(w, r, body, err)
		return
	}
	w.Header().Set("Location", "/connectors/"+name)
	writeJSON(w, http.StatusCreated, infoOf(inf))
}

func (a *API) info(w http.ResponseWriter, r *http.Request) {
	inf, err := a.h.ConnectorInfo(r.PathValue("name"))
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, infoOf(inf))
}

func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	if err := a.h.DeleteConnector(r.PathValue("name")); err != nil {
		a.fail(w, r, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) getConfig(w http.ResponseWriter, r *http.Request) {
	cfg, err := a.h.ConnectorConfig(r.PathValue("name"))
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, cfg)
}

func (a *API) putConfig(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	body, ok := readBody(w, r, &raw)
	if !ok {
		return
	}
	cfg, err := stringMap(raw)
	if err != nil {
		writeError(w, 400, err.Error())
		return
	}
	name := r.PathValue("name")
	inf, created, err := a.h.PutConnectorConfig(name, cfg, true)
	if err != nil {
		a.fail(w, r, body, err)
		return
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
		w.Header().Set("Location", "/connectors/"+name)
	}
	writeJSON(w, code, infoOf(inf))
}

func (a *API) patchConfig(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	body, ok := readBody(w, r, &raw)
	if !ok {
		return
	}
	patch := map[string]*string{}
	for k, v := range raw {
		if v == nil {
			patch[k] = nil
			continue
		}
		m, err := stringMap(map[string]any{k: v})
		if err != nil {
			writeError(w, 400, err.Error())
			return
		}
		s := m[k]
		patch[k] = &s
	}
	inf, err := a.h.PatchConnectorConfig(r.PathValue("name"), patch)
	if err != nil {
		a.fail(w, r, body, err)
		return
	}
	writeJSON(w, 200, infoOf(inf))
}

func (a *API) status(w http.ResponseWriter, r *http.Request) {
	si, err := a.h.Status(r.PathValue("name"))
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, statusOf(si))
}

func boolParam(r *http.Request, k string) (bool, error) {
	v := r.URL.Query().Get(k)
	if v == "" {
		return false, nil
	}
	return strconv.ParseBool(v)
}

func (a *API) restart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	includeTasks, err1 := boolParam(r, "includeTasks")
	onlyFailed, err2 := boolParam(r, "onlyFailed")
	if err1 != nil || err2 != nil {
		writeError(w, 400, "includeTasks and onlyFailed must be true or false")
		return
	}
	if !includeTasks && !onlyFailed {
		// The original behaviour: the connector only, 204.
		if err := a.h.RestartConnector(name); err != nil {
			a.fail(w, r, nil, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	si, err := a.h.Restart(name, includeTasks, onlyFailed)
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, http.StatusAccepted, statusOf(si))
}

func (a *API) target(ts worker.TargetState) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := a.h.SetTarget(r.PathValue("name"), ts); err != nil {
			a.fail(w, r, nil, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}

func (a *API) tasks(w http.ResponseWriter, r *http.Request) {
	ts, err := a.h.Tasks(r.PathValue("name"))
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	type taskJSON struct {
		ID     worker.TaskID     `json:"id"`
		Config map[string]string `json:"config"`
	}
	out := []taskJSON{}
	for _, t := range ts {
		out = append(out, taskJSON{t.ID, t.Config})
	}
	writeJSON(w, 200, out)
}

func taskID(w http.ResponseWriter, r *http.Request) (worker.TaskID, bool) {
	n, err := strconv.Atoi(r.PathValue("id"))
	if err != nil {
		writeError(w, http.StatusNotFound, "HTTP 404 Not Found")
		return worker.TaskID{}, false
	}
	return worker.TaskID{Connector: r.PathValue("name"), Task: n}, true
}

func (a *API) taskStatus(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	s, err := a.h.TaskStatus(id)
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, taskStateOf(*s))
}

func (a *API) taskRestart(w http.ResponseWriter, r *http.Request) {
	id, ok := taskID(w, r)
	if !ok {
		return
	}
	if err := a.h.RestartTask(id); err != nil {
		a.fail(w, r, nil, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *API) topics(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ts, err := a.h.Topics(name)
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, map[string]any{name: map[string]any{"topics": ts}})
}

func (a *API) resetTopics(w http.ResponseWriter, r *http.Request) {
	if err := a.h.ResetTopics(r.PathValue("name")); err != nil {
		a.fail(w, r, nil, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

type offsetsJSON struct {
	Offsets []offsetJSON `json:"offsets"`
}

type offsetJSON struct {
	Partition map[string]any `json:"partition"`
	Offset    map[string]any `json:"offset"`
}

func (a *API) offsets(w http.ResponseWriter, r *http.Request) {
	offs, _, err := a.h.Offsets(r.PathValue("name"))
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	out := offsetsJSON{Offsets: []offsetJSON{}}
	for _, e := range offs {
		out.Offsets = append(out.Offsets, offsetJSON{e.Partition, e.Offset})
	}
	writeJSON(w, 200, out)
}

func (a *API) alterOffsets(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Offsets []struct {
			Partition map[string]any `json:"partition"`
			Offset    map[string]any `json:"offset"`
		} `json:"offsets"`
	}
	body, ok := readBody(w, r, &req)
	if !ok {
		return
	}
	if req.Offsets == nil {
		writeError(w, 400, "The offsets to be modified must be specified")
		return
	}
	var offs herder.Offsets
	for _, o := range req.Offsets {
		offs = append(offs, worker.OffsetEntry{Partition: numbers(o.Partition), Offset: numbers(o.Offset)})
	}
	msg, err := a.h.AlterOffsets(r.PathValue("name"), offs, false)
	if err != nil {
		a.fail(w, r, body, err)
		return
	}
	writeJSON(w, 200, map[string]string{"message": msg})
}

// numbers turns json.Number into int64 (integral) or float64, as the offsets
// JsonConverter reads them.
func numbers(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	for k, v := range m {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				m[k] = i
			} else {
				f, _ := n.Float64()
				m[k] = f
			}
		}
	}
	return m
}

func (a *API) resetOffsets(w http.ResponseWriter, r *http.Request) {
	msg, err := a.h.AlterOffsets(r.PathValue("name"), nil, true)
	if err != nil {
		a.fail(w, r, nil, err)
		return
	}
	writeJSON(w, 200, map[string]string{"message": msg})
}
