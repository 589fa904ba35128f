// Package httpapi is the one HTTP layer of Vltava's services: the admin
// listener (/metrics, /v1/health, /debug/pprof) today, and the REST proxy,
// schema registry, Connect and console as they come. Each service gets its
// own Server from its own keys and default port, and mounts its handlers on
// it; the Server owns the listeners (http:// and https://), TLS, the
// authentication of every request (to a security.Principal, as a Kafka
// connection's), request logging and graceful shutdown.
//
// A service mounts in four steps:
//
//	opts, err := httpapi.Keys{Service: "rest", Prefix: "rest.",
//		DefaultListeners: "http://0.0.0.0:8082", DefaultRealm: "KafkaRest"}.Options(lookup)
//	if err != nil { return err } // names the key at fault: refuse to start
//	opts.Logger = log
//	srv := httpapi.New(opts)
//	srv.Handle("GET /topics", h) // handlers read httpapi.PrincipalOf(r)
//	err = srv.Start()            // binds every listener or none; Close on shutdown
//
// (ConfigFor(props, "rest.") is the same with a properties map.) Keys lists
// the settings read: <prefix>listeners, the https listeners'
// <prefix>ssl.* (Kafka's key and trust stores through
// internal/security/tlsconf, Confluent's ssl.client.authentication) and
// Confluent's <prefix>authentication.method=BASIC with its realm, roles,
// users file (Jetty's password properties format) and skip paths. Without
// BASIC, a verified client certificate's subject (mapped by
// ssl.principal.mapping.rules) is the principal; with neither, every
// request acts as security.Anonymous. Options.TLS and
// Options.Authenticator remain hooks, for a service with other needs.
package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security"
)

// Authenticator turns a request's credentials (basic auth, a TLS client
// certificate in r.TLS, a bearer token) into the principal it acts as. An
// error answers 401 without calling the service.
type Authenticator interface {
	Authenticate(r *http.Request) (security.Principal, error)
}

// Options configure a Server.
type Options struct {
	// Service names the service in logs ("admin", "rest-proxy", ...).
	Service   string
	Listeners []config.HTTPListener
	// TLS supplies the TLS config the https listeners serve with (http
	// ones serve plain text; an https listener without TLS fails Start).
	// It is called once per listener at Start, so certificates reloaded
	// by the supplier's GetCertificate or GetConfigForClient take effect
	// without a restart.
	TLS func() (*tls.Config, error)
	// Authenticator, if set, authenticates every request; nil: every
	// request is security.Anonymous.
	Authenticator Authenticator
	Logger        *slog.Logger
	// ShutdownTimeout bounds how long Close waits for requests in flight;
	// 0 means 5 s.
	ShutdownTimeout time.Duration
}

// Server serves one service's HTTP listeners. Handlers are mounted before
// Start; Start binds every listener or none.
type Server struct {
	opts Options
	log  *slog.Logger
	mux  *http.ServeMux

	mu      sync.Mutex // guards servers and addrs, set by Start and read by Addrs and Close
	servers []*http.Server
	addrs   []net.Addr
	done    sync.WaitGroup
}

// New returns a Server with nothing mounted.
func New(o Options) *Server {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	if o.ShutdownTimeout <= 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	return &Server{opts: o, log: log, mux: http.NewServeMux()}
}

// Handle mounts h at pattern (net/http ServeMux patterns, "GET /v1/health").
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// HandleFunc mounts f at pattern.
func (s *Server) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	s.mux.HandleFunc(pattern, f)
}

// Start binds every listener and serves them in the background.
func (s *Server) Start() error {
	var lns []net.Listener
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for _, l := range s.opts.Listeners {
		ln, err := net.Listen("tcp", l.Addr())
		if err != nil {
			closeAll()
			return fmt.Errorf("%s listener %s: %w", s.opts.Service, l.Addr(), err)
		}
		if l.Scheme == "https" {
			if s.opts.TLS == nil {
				ln.Close()
				closeAll()
				return fmt.Errorf("%s listener %s: https without TLS settings", s.opts.Service, l.Addr())
			}
			tc, err := s.opts.TLS()
			if err != nil {
				ln.Close()
				closeAll()
				return fmt.Errorf("%s listener %s: TLS: %w", s.opts.Service, l.Addr(), err)
			}
			ln = tls.NewListener(ln, tc)
		}
		lns = append(lns, ln)
	}
	handler := s.logged(s.authenticated(s.mux))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ln := range lns {
		hs := &http.Server{
			Handler:           handler,
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		}
		s.servers = append(s.servers, hs)
		s.addrs = append(s.addrs, ln.Addr())
		s.done.Add(1)
		go func() {
			defer s.done.Done()
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("http listener stopped", "service", s.opts.Service, "addr", ln.Addr().String(), "err", err)
			}
		}()
		s.log.Info("listening", "service", s.opts.Service, "addr", ln.Addr().String())
	}
	return nil
}

// Addrs are the bound addresses, in the order of Options.Listeners.
func (s *Server) Addrs() []net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]net.Addr(nil), s.addrs...)
}

// Close stops accepting, waits up to ShutdownTimeout for requests in flight
// (a long scrape, a profile) and then closes what is left.
func (s *Server) Close() error {
	s.mu.Lock()
	servers := s.servers
	s.servers = nil
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, hs := range servers {
		if err := hs.Shutdown(ctx); err != nil {
			errs = append(errs, hs.Close())
		}
	}
	s.done.Wait()
	return errors.Join(errs...)
}

type principalKey struct{}

// logSlotKey carries, from the request log to the authenticator, where to
// record the principal the log line names.
type logSlotKey struct{}

// PrincipalOf is the principal a request acts as (security.Anonymous when
// the Server has no Authenticator).
func PrincipalOf(r *http.Request) security.Principal {
	if p, ok := r.Context().Value(principalKey{}).(security.Principal); ok {
		return p
	}
	return security.Anonymous
}

// authenticated runs the Authenticator before the services.
func (s *Server) authenticated(next http.Handler) http.Handler {
	if s.opts.Authenticator == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.opts.Authenticator.Authenticate(r)
		if errors.Is(err, ErrForbidden) {
			s.log.Info("http request forbidden", "service", s.opts.Service, "remote", r.RemoteAddr, "err", err)
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if err != nil {
			s.log.Info("http authentication failed", "service", s.opts.Service, "remote", r.RemoteAddr, "err", err)
			challenge := `Basic realm="vltava"`
			if c, ok := s.opts.Authenticator.(Challenger); ok {
				challenge = c.Challenge()
			}
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			http.Error(w, "authentication failed", http.StatusUnauthorized)
			return
		}
		if slot, ok := r.Context().Value(logSlotKey{}).(*security.Principal); ok {
			*slot = p
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// statusWriter records the status a handler wrote, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush lets streaming handlers (pprof's trace) flush through the wrapper.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged writes one debug line per request (an error response at info).
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		principal := security.Anonymous
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), logSlotKey{}, &principal)))
		level := slog.LevelDebug
		if sw.status >= 500 {
			level = slog.LevelInfo
		}
		if !s.log.Enabled(r.Context(), level) {
			return
		}
		s.log.Log(r.Context(), level, "http request", "service", s.opts.Service, "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "bytes", sw.bytes, "duration", time.Since(start), "remote", r.RemoteAddr,
			"principal", principal.String())
	})
}
