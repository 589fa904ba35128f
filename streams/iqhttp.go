package streams

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// StoreHandler serves interactive queries on one key-value store over
// HTTP, for an App started with application.server. Mount it under a
// prefix with http.StripPrefix. It answers
//
//	GET /keys/{key}      the key's value: 200 {"key","value"}, or 404;
//	                     a key held by another instance is redirected
//	                     (307) to the same path on that instance's
//	                     application.server
//	GET /metadata/{key}  KeyQueryMetadata: the instance holding the key
//	GET /all             every local entry, as [{"key","value"}]
//	GET /range?from=&to= the local entries between two keys
//
// parseKey turns the path's key into K; values are written with
// encoding/json. While the store is moving between instances a read may
// answer 503 with Retry-After; the client retries.
func StoreHandler[K, V any](a *App, store string, keySerde Serde[K], valueSerde Serde[V], parseKey func(string) (K, error)) http.Handler {
	h := &storeHandler[K, V]{a: a, store: store, ks: keySerde, vs: valueSerde, parse: parseKey}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /keys/{key}", h.get)
	mux.HandleFunc("GET /metadata/{key}", h.metadata)
	mux.HandleFunc("GET /all", h.all)
	mux.HandleFunc("GET /range", h.rangeQ)
	return mux
}

type storeHandler[K, V any] struct {
	a     *App
	store string
	ks    Serde[K]
	vs    Serde[V]
	parse func(string) (K, error)
}

type kvJSON struct {
	Key   any `json:"key"`
	Value any `json:"value"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error_code": code, "message": msg})
}

// guard answers 503 if a read hit a store closed under it (its task
// moved to another instance while the read ran).
func guard(w http.ResponseWriter) {
	if r := recover(); r != nil {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, fmt.Sprintf("store not available: %v", r))
	}
}

func (h *storeHandler[K, V]) key(w http.ResponseWriter, r *http.Request) (K, bool) {
	k, err := h.parse(r.PathValue("key"))
	if err != nil {
		httpError(w, http.StatusBadRequest, fmt.Sprintf("key %q: %v", r.PathValue("key"), err))
		return k, false
	}
	return k, true
}

func (h *storeHandler[K, V]) open(w http.ResponseWriter) (*ReadOnlyKeyValueStore[K, V], bool) {
	if st := h.a.State(); st != StateRunning {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "application is "+st.String())
		return nil, false
	}
	s, err := QueryKeyValueStore(h.a, h.store, h.ks, h.vs)
	if err != nil {
		httpError(w, http.StatusNotFound, err.Error())
		return nil, false
	}
	return s, true
}

func (h *storeHandler[K, V]) get(w http.ResponseWriter, r *http.Request) {
	defer guard(w)
	k, ok := h.key(w, r)
	if !ok {
		return
	}
	md, err := QueryMetadataForKey(h.a, h.store, k, h.ks)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	// A request another instance forwarded is answered here, so stale
	// metadata cannot bounce it back and forth.
	if md.ActiveHost != "" && md.ActiveHost != h.a.cfg.ApplicationServer && r.URL.Query().Get("forwarded") == "" {
		// RequestURI keeps the prefix http.StripPrefix took off the path.
		orig, err := url.ParseRequestURI(r.RequestURI)
		if err != nil {
			orig = r.URL
		}
		q := orig.Query()
		q.Set("forwarded", h.a.cfg.ApplicationServer)
		u := url.URL{Scheme: "http", Host: md.ActiveHost, Path: orig.Path, RawPath: orig.RawPath, RawQuery: q.Encode()}
		http.Redirect(w, r, u.String(), http.StatusTemporaryRedirect)
		return
	}
	s, ok := h.open(w)
	if !ok {
		return
	}
	v, found, err := s.Get(k)
	switch {
	case err != nil:
		httpError(w, http.StatusInternalServerError, err.Error())
	case !found && md.ActiveHost != h.a.cfg.ApplicationServer:
		// Not local, and the owner is not known (yet): retry.
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, "the instance holding the key is not known yet")
	case !found:
		httpError(w, http.StatusNotFound, fmt.Sprintf("key %v not found in store %s", k, h.store))
	default:
		writeJSON(w, http.StatusOK, kvJSON{Key: k, Value: v})
	}
}

func (h *storeHandler[K, V]) metadata(w http.ResponseWriter, r *http.Request) {
	k, ok := h.key(w, r)
	if !ok {
		return
	}
	md, err := QueryMetadataForKey(h.a, h.store, k, h.ks)
	if err != nil {
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"active_host": md.ActiveHost, "partition": md.Partition, "task": md.Task.String()})
}

func (h *storeHandler[K, V]) all(w http.ResponseWriter, r *http.Request) {
	defer guard(w)
	s, ok := h.open(w)
	if !ok {
		return
	}
	h.list(w, func(fn func(K, V) bool) error { return s.All(fn) })
}

func (h *storeHandler[K, V]) rangeQ(w http.ResponseWriter, r *http.Request) {
	defer guard(w)
	from, err1 := h.parse(r.URL.Query().Get("from"))
	to, err2 := h.parse(r.URL.Query().Get("to"))
	if err := firstErr(err1, err2); err != nil {
		httpError(w, http.StatusBadRequest, "from/to: "+err.Error())
		return
	}
	s, ok := h.open(w)
	if !ok {
		return
	}
	h.list(w, func(fn func(K, V) bool) error { return s.Range(from, to, fn) })
}

func (h *storeHandler[K, V]) list(w http.ResponseWriter, scan func(func(K, V) bool) error) {
	out := []kvJSON{}
	if err := scan(func(k K, v V) bool { out = append(out, kvJSON{Key: k, Value: v}); return true }); err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, out)
}
