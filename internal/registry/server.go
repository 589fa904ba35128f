package registry

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/vltava/vltava/internal/httpapi"
)

// Server is a running registry node: its store, its service and its
// HTTP listeners.
type Server struct {
	cfg  Config
	late *lateHandler
	http *httpapi.Server
	// store, svc and elector are set by Open, before the handler that
	// uses them is published.
	store   *Store
	svc     *Service
	elector *elector
}

// ServerOptions are what the embedding adds to a Config: the HTTP
// layer's hooks and the logger.
type ServerOptions struct {
	// TLS and Authenticator are passed to the HTTP layer as they are.
	TLS           func() (*tls.Config, error)
	Authenticator httpapi.Authenticator
	Logger        *slog.Logger
}

// ListenError is a listener that could not be bound.
type ListenError struct{ Err error }

func (e *ListenError) Error() string { return e.Err.Error() }

func (e *ListenError) Unwrap() error { return e.Err }

// Start binds the listeners (a *ListenError if one cannot be bound), then
// opens the store (creating the topic, reading it to the end); until the
// store is open requests are answered 503.
func Start(ctx context.Context, cfg Config, o ServerOptions) (*Server, error) {
	s, err := Listen(cfg, o)
	if err != nil {
		return nil, err
	}
	if err := s.Open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Listen binds the listeners (a *ListenError if one cannot be bound) and
// answers every request 503 until Open. An embedding node binds while it
// starts, so a taken port is known at once and the node's other services
// can be given the registry's address, and opens once its broker serves
// the store's client.
func Listen(cfg Config, o ServerOptions) (*Server, error) {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	cfg.Store.Logger = log
	if o.TLS == nil {
		o.TLS = cfg.TLS
	}
	if o.Authenticator == nil {
		o.Authenticator = cfg.Authenticator
	}
	late := &lateHandler{}
	hs := httpapi.New(httpapi.Options{Service: "schema-registry", Listeners: cfg.Listeners, TLS: o.TLS,
		Authenticator: o.Authenticator, Logger: log})
	hs.Handle("/", late)
	if err := hs.Start(); err != nil {
		return nil, &ListenError{err}
	}
	return &Server{cfg: cfg, late: late, http: hs}, nil
}

// Open opens the store (creating the topic, reading it to the end) and
// starts serving the API. It is called once.
func (s *Server) Open(ctx context.Context) error {
	state := NewState()
	store, err := OpenStore(ctx, s.cfg.Store, state)
	if err != nil {
		return err
	}
	clusterID := ""
	if md, err := kadm.NewClient(store.cl).BrokerMetadata(ctx); err == nil {
		clusterID = md.Cluster
	}
	svc := NewService(state, store, s.cfg.CompatibilityLevel)
	el := newElector(store.cl, s.cfg.GroupID, s.advertisedURL(), s.cfg.Store.Logger)
	s.store, s.svc, s.elector = store, svc, el
	s.late.h.Store(&struct{ http.Handler }{NewHandler(svc, HandlerOptions{MaxRequestBytes: s.cfg.MaxRequestBytes, ClusterID: clusterID,
		Leader: el.wait})})
	return nil
}

// lateHandler serves 503 until the store is open.
type lateHandler struct {
	h atomic.Pointer[struct{ http.Handler }]
}

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		h.ServeHTTP(w, r)
		return
	}
	writeError(w, &Error{http.StatusServiceUnavailable, codeOperationTimeout, "The schema registry is starting: its store is being read"})
}

// Addrs are the bound listener addresses.
func (s *Server) Addrs() []net.Addr { return s.http.Addrs() }

// URL is the first listener's URL with its bound port
// (http://127.0.0.1:8081), for the clients of the node's own registry.
func (s *Server) URL() string {
	addrs := s.http.Addrs()
	if len(addrs) == 0 || len(s.cfg.Listeners) == 0 {
		return ""
	}
	return s.cfg.Listeners[0].Scheme + "://" + addrs[0].String()
}

// advertisedURL is the URL other registry nodes forward writes to: the
// first listener's, with the host name for a wildcard address.
func (s *Server) advertisedURL() string {
	addrs := s.http.Addrs()
	if len(addrs) == 0 || len(s.cfg.Listeners) == 0 {
		return ""
	}
	host, port, err := net.SplitHostPort(addrs[0].String())
	if err != nil {
		return s.URL()
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return s.cfg.Listeners[0].Scheme + "://" + net.JoinHostPort(host, port)
}

// Service is the node's service (for the broker's schema validation);
// nil before Open.
func (s *Server) Service() *Service { return s.svc }

// Close stops serving and closes the store.
func (s *Server) Close() error {
	err := s.http.Close()
	if s.elector != nil {
		s.elector.close() // leaves the group: another node leads at once
	}
	if s.store != nil {
		s.store.Close()
	}
	if err != nil {
		return fmt.Errorf("schema registry: %w", err)
	}
	return nil
}
