package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ContentType is the registry's media type; responses carry it.
const ContentType = "application/vnd.schemaregistry.v1+json"

// acceptedContentTypes are the request bodies the registry reads, as
// Confluent's: its own two media types, JSON, and octet-stream (what some
// clients send by default).
var acceptedContentTypes = map[string]bool{
	ContentType:                           true,
	"application/vnd.schemaregistry+json": true,
	"application/json":                    true,
	"application/octet-stream":            true,
}

// HandlerOptions configure the REST handler.
type HandlerOptions struct {
	// MaxRequestBytes bounds a request body (413 above it).
	MaxRequestBytes int64
	// ClusterID is the Kafka cluster's id, for /v1/metadata/id.
	ClusterID string
	// Leader, if set, says where writes go: this node serves them itself
	// when self is true, else they are forwarded to url; it waits, within
	// ctx, while no leader is known ("" then).
	Leader func(ctx context.Context) (url string, self bool)
}

// handler serves Confluent Schema Registry's REST API.
type handler struct {
	svc  *Service
	opts HandlerOptions
	mux  *http.ServeMux
	// routes are the patterns mounted, in order (Routes).
	routes []string
}

// handle mounts f at pattern and records the route.
func (h *handler) handle(pattern string, f http.HandlerFunc) {
	h.mux.HandleFunc(pattern, f)
	h.routes = append(h.routes, pattern)
}

// Routes are the endpoints the registry serves, as net/http patterns
// ("GET /subjects"), in the order they are mounted: what
// docs/COMPATIBILITY.md lists.
func Routes() []string { return newHandler(nil, HandlerOptions{}).routes }

// NewHandler returns the REST API over svc.
func NewHandler(svc *Service, opts HandlerOptions) http.Handler { return newHandler(svc, opts) }

func newHandler(svc *Service, opts HandlerOptions) *handler {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 16 << 20
	}
	h := &handler{svc: svc, opts: opts, mux: http.NewServeMux()}
	h.handle("GET /{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]any{}) })
	h.handle("GET /v1/metadata/id", h.metadataID)
	h.handle("GET /schemas/types", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, []string{TypeJSON, TypeProtobuf, TypeAvro})
	})
	h.handle("GET /schemas/ids/{id}", h.schemaByID)
	h.handle("GET /schemas/ids/{id}/schema", h.rawSchemaByID)
	h.handle("GET /schemas/ids/{id}/subjects", h.idSubjects)
	h.handle("GET /schemas/ids/{id}/versions", h.idVersions)
	h.handle("GET /subjects", h.subjects)
	h.handle("GET /subjects/{subject}/versions", h.subjectVersions)
	h.handle("POST /subjects/{subject}/versions", h.write(h.register))
	h.handle("GET /subjects/{subject}/versions/{version}", h.getVersion)
	h.handle("GET /subjects/{subject}/versions/{version}/schema", h.getRawVersion)
	h.handle("GET /subjects/{subject}/versions/{version}/referencedby", h.referencedBy)
	h.handle("DELETE /subjects/{subject}/versions/{version}", h.write(h.deleteVersion))
	h.handle("POST /subjects/{subject}", h.lookup)
	h.handle("DELETE /subjects/{subject}", h.write(h.deleteSubject))
	h.handle("GET /config", h.getConfig)
	h.handle("PUT /config", h.write(h.putConfig))
	h.handle("DELETE /config", h.write(h.deleteConfig))
	h.handle("GET /config/{subject}", h.getConfig)
	h.handle("PUT /config/{subject}", h.write(h.putConfig))
	h.handle("DELETE /config/{subject}", h.write(h.deleteConfig))
	h.handle("POST /compatibility/subjects/{subject}/versions/{version}", h.compatibility)
	h.handle("POST /compatibility/subjects/{subject}/versions", h.compatibility)
	h.handle("GET /mode", h.getMode)
	h.handle("PUT /mode", h.write(h.putMode))
	h.handle("GET /mode/{subject}", h.getMode)
	h.handle("PUT /mode/{subject}", h.write(h.putMode))
	h.handle("DELETE /mode/{subject}", h.write(h.deleteMode))
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if _, pattern := h.mux.Handler(r); pattern == "" {
		// Not a route (or not this method): Confluent's error shape rather
		// than ServeMux's text.
		allowed := false
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = m
			if _, p := h.mux.Handler(probe); p != "" {
				allowed = true
			}
		}
		if allowed {
			writeError(w, errHTTP(http.StatusMethodNotAllowed, "HTTP 405 Method Not Allowed"))
		} else {
			writeError(w, errHTTP(http.StatusNotFound, "HTTP 404 Not Found"))
		}
		return
	}
	h.mux.ServeHTTP(w, r)
}

// leaderWait bounds how long a write waits for a leader to be elected
// (at start, or during a rebalance of the election group).
const leaderWait = 15 * time.Second

// forwardedHeader marks a write forwarded by another registry node.
const forwardedHeader = "X-Vltava-Registry-Forwarded"

// write wraps a handler that changes state: it runs here on the leader,
// and is forwarded to the leader elsewhere.
func (h *handler) write(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if h.opts.Leader == nil {
			next(w, r)
			return
		}
		forwarded := r.Header.Get(forwardedHeader) != ""
		// The body is kept, so a write whose leader cannot be reached
		// (it stopped; the group has not noticed yet) is sent again to
		// the leader elected next.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes))
		if err != nil {
			writeError(w, errHTTP(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", h.opts.MaxRequestBytes)))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), leaderWait)
		defer cancel()
		failed := ""
		for {
			leader, self := h.opts.Leader(ctx)
			if leader != "" && leader == failed {
				// Still the leader that could not be reached: wait for
				// the group to elect another.
				select {
				case <-ctx.Done():
					leader = ""
				case <-time.After(200 * time.Millisecond):
					continue
				}
			}
			if self {
				r.Body = io.NopCloser(bytes.NewReader(body))
				next(w, r)
				return
			}
			if forwarded {
				// Forwarded here by a node that took this one for the
				// leader: one hop only, so two nodes that disagree for a
				// moment cannot pass a request back and forth.
				writeError(w, &Error{http.StatusInternalServerError, codeForwardingError, "Error while forwarding the request to the leader: the leader moved"})
				return
			}
			if leader == "" {
				msg := "no leader is elected"
				if failed != "" {
					msg = failed + " cannot be reached and no other leader is elected"
				}
				writeError(w, &Error{http.StatusInternalServerError, codeForwardingError, "Error while forwarding the request to the leader: " + msg})
				return
			}
			u, err := url.Parse(leader)
			if err != nil {
				writeError(w, &Error{http.StatusInternalServerError, codeForwardingError, "Error while forwarding the request to the leader: " + err.Error()})
				return
			}
			unreachable := false
			p := httputil.NewSingleHostReverseProxy(u)
			p.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
				if ctx.Err() == nil && errors.Is(err, syscall.ECONNREFUSED) {
					unreachable = true // nothing written yet: try the next leader
					return
				}
				writeError(w, &Error{http.StatusInternalServerError, codeForwardingError, "Error while forwarding the request to the leader: " + err.Error()})
			}
			fr := r.Clone(ctx)
			fr.Header.Set(forwardedHeader, "1")
			fr.Body = io.NopCloser(bytes.NewReader(body))
			fr.ContentLength = int64(len(body))
			p.ServeHTTP(w, fr)
			if !unreachable {
				return
			}
			failed = leader
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may have gone; nothing to do
}

func writeError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, map[string]any{"error_code": e.Code, "message": e.Message})
}

// readBody decodes a request body into v, answering what Confluent's
// REST layer answers for a wrong content type (415), a body over the
// limit (413), malformed JSON (400) and unknown fields (422).
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !acceptedContentTypes[mt] {
			writeError(w, errHTTP(http.StatusUnsupportedMediaType, "HTTP 415 Unsupported Media Type: "+ct))
			return false
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.opts.MaxRequestBytes))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data after the JSON object")
	}
	var tooBig *http.MaxBytesError
	var syntax *json.SyntaxError
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return true
	case errors.As(err, &tooBig):
		writeError(w, errHTTP(http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body larger than %d bytes", tooBig.Limit)))
	case errors.As(err, &typeErr), strings.HasPrefix(err.Error(), "json: unknown field"):
		writeError(w, errHTTP(http.StatusUnprocessableEntity, "Unrecognizable request: "+err.Error()))
	case errors.As(err, &syntax), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		writeError(w, errHTTP(http.StatusBadRequest, "Malformed JSON: "+err.Error()))
	default:
		writeError(w, errHTTP(http.StatusBadRequest, "Malformed request: "+err.Error()))
	}
	return false
}

func queryBool(r *http.Request, name string) bool {
	b, _ := strconv.ParseBool(r.URL.Query().Get(name))
	return b
}

func pathID(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	if err != nil {
		writeError(w, errHTTP(http.StatusNotFound, "HTTP 404 Not Found"))
		return 0, false
	}
	return int(id), true
}

// versionJSON is a version as GET /subjects/{s}/versions/{v} shows it.
type versionJSON struct {
	Subject    string      `json:"subject"`
	Version    int         `json:"version"`
	ID         int         `json:"id"`
	SchemaType string      `json:"schemaType,omitempty"`
	References []Reference `json:"references,omitempty"`
	Schema     string      `json:"schema"`
	Deleted    bool        `json:"deleted,omitempty"`
}

func toJSON(v SchemaVersion) versionJSON {
	out := versionJSON{Subject: v.Subject, Version: v.Version, ID: v.ID, References: v.References, Schema: v.Schema, Deleted: v.Deleted}
	if v.Type != TypeAvro {
		out.SchemaType = v.Type
	}
	return out
}

func (h *handler) metadataID(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"scope": map[string]any{"path": []string{},
		"clusters": map[string]string{"kafka-cluster": h.opts.ClusterID, "schema-registry-cluster": "schema-registry"}}})
}

func (h *handler) schemaByID(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	typ, schema, refs, found := h.svc.state.SchemaByID(id)
	if !found {
		writeError(w, errSchemaIDNotFound(id))
		return
	}
	out := struct {
		SchemaType string      `json:"schemaType,omitempty"`
		References []Reference `json:"references,omitempty"`
		Schema     string      `json:"schema"`
	}{References: refs, Schema: schema}
	if typ != TypeAvro {
		out.SchemaType = typ
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) rawSchemaByID(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	_, schema, _, found := h.svc.state.SchemaByID(id)
	if !found {
		writeError(w, errSchemaIDNotFound(id))
		return
	}
	w.Header().Set("Content-Type", ContentType)
	_, _ = io.WriteString(w, schema)
}

func (h *handler) idSubjects(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if _, _, _, found := h.svc.state.SchemaByID(id); !found {
		writeError(w, errSchemaIDNotFound(id))
		return
	}
	out := []string{}
	for _, v := range h.svc.state.idUses(id, queryBool(r, "deleted")) {
		if len(out) == 0 || out[len(out)-1] != v.Subject {
			out = append(out, v.Subject)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) idVersions(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r)
	if !ok {
		return
	}
	if _, _, _, found := h.svc.state.SchemaByID(id); !found {
		writeError(w, errSchemaIDNotFound(id))
		return
	}
	type sv struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []sv{}
	for _, v := range h.svc.state.idUses(id, queryBool(r, "deleted")) {
		out = append(out, sv{v.Subject, v.Version})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) subjects(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, h.svc.state.subjectNames(r.URL.Query().Get("subjectPrefix"), queryBool(r, "deleted")))
}

func (h *handler) subjectVersions(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	vs := h.svc.state.versions(subject, queryBool(r, "deleted"))
	if len(vs) == 0 {
		writeError(w, errSubjectNotFound(subject))
		return
	}
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.Version)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) register(w http.ResponseWriter, r *http.Request) {
	var req RegisterRequest
	if !h.readBody(w, r, &req) {
		return
	}
	id, err := h.svc.Register(r.Context(), r.PathValue("subject"), req, queryBool(r, "normalize"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"id": id})
}

func (h *handler) getVersion(w http.ResponseWriter, r *http.Request) {
	v, err := h.svc.version(r.PathValue("subject"), r.PathValue("version"), queryBool(r, "deleted"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(v))
}

func (h *handler) getRawVersion(w http.ResponseWriter, r *http.Request) {
	v, err := h.svc.version(r.PathValue("subject"), r.PathValue("version"), queryBool(r, "deleted"))
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	_, _ = io.WriteString(w, v.Schema)
}

func (h *handler) referencedBy(w http.ResponseWriter, r *http.Request) {
	v, err := h.svc.version(r.PathValue("subject"), r.PathValue("version"), false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h.svc.state.referencedBy(v.Subject, v.Version))
}

func (h *handler) deleteVersion(w http.ResponseWriter, r *http.Request) {
	n, err := h.svc.DeleteVersion(r.Context(), r.PathValue("subject"), r.PathValue("version"), queryBool(r, "permanent"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, n)
}

func (h *handler) lookup(w http.ResponseWriter, r *http.Request) {
	var req RegisterRequest
	if !h.readBody(w, r, &req) {
		return
	}
	v, err := h.svc.Lookup(r.PathValue("subject"), req, queryBool(r, "deleted"), queryBool(r, "normalize"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, toJSON(v))
}

func (h *handler) deleteSubject(w http.ResponseWriter, r *http.Request) {
	vs, err := h.svc.DeleteSubject(r.Context(), r.PathValue("subject"), queryBool(r, "permanent"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, vs)
}

func (h *handler) getConfig(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if subject == "" {
		writeJSON(w, http.StatusOK, map[string]string{"compatibilityLevel": h.svc.effectiveCompat("")})
		return
	}
	if c, ok := h.svc.state.config(subject); ok {
		writeJSON(w, http.StatusOK, map[string]string{"compatibilityLevel": c})
		return
	}
	if queryBool(r, "defaultToGlobal") {
		writeJSON(w, http.StatusOK, map[string]string{"compatibilityLevel": h.svc.effectiveCompat("")})
		return
	}
	writeError(w, &Error{http.StatusNotFound, codeSubjectLevelCompatNotSet,
		fmt.Sprintf("Subject '%s' does not have subject-level compatibility configured", subject)})
}

func (h *handler) putConfig(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Compatibility string `json:"compatibility"`
	}
	if !h.readBody(w, r, &req) {
		return
	}
	level, err := h.svc.SetConfig(r.Context(), r.PathValue("subject"), req.Compatibility)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"compatibility": level})
}

func (h *handler) deleteConfig(w http.ResponseWriter, r *http.Request) {
	old, err := h.svc.DeleteConfig(r.Context(), r.PathValue("subject"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"compatibilityLevel": old})
}

func (h *handler) compatibility(w http.ResponseWriter, r *http.Request) {
	var req RegisterRequest
	if !h.readBody(w, r, &req) {
		return
	}
	msgs, err := h.svc.TestCompatibility(r.PathValue("subject"), r.PathValue("version"), req, queryBool(r, "normalize"))
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{"is_compatible": len(msgs) == 0}
	if queryBool(r, "verbose") {
		if msgs == nil {
			msgs = []string{}
		}
		out["messages"] = msgs
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) getMode(w http.ResponseWriter, r *http.Request) {
	subject := r.PathValue("subject")
	if subject == "" {
		writeJSON(w, http.StatusOK, map[string]string{"mode": h.svc.effectiveMode("")})
		return
	}
	if m, ok := h.svc.state.mode(subject); ok {
		writeJSON(w, http.StatusOK, map[string]string{"mode": m})
		return
	}
	if queryBool(r, "defaultToGlobal") {
		writeJSON(w, http.StatusOK, map[string]string{"mode": h.svc.effectiveMode("")})
		return
	}
	writeError(w, &Error{http.StatusNotFound, codeSubjectLevelModeNotSet,
		fmt.Sprintf("Subject '%s' does not have subject-level mode configured", subject)})
}

func (h *handler) putMode(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Mode string `json:"mode"`
	}
	if !h.readBody(w, r, &req) {
		return
	}
	m, err := h.svc.SetMode(r.Context(), r.PathValue("subject"), req.Mode, queryBool(r, "force"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"mode": m})
}

func (h *handler) deleteMode(w http.ResponseWriter, r *http.Request) {
	old, err := h.svc.DeleteMode(r.Context(), r.PathValue("subject"))
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"mode": old})
}
