// Package server accepts Kafka protocol connections: it binds the listeners,
// reads size-prefixed request frames, decodes request headers and bodies with
// kmsg, hands each request to a Handler and writes the responses back in
// request order.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vltava/vltava/internal/security/tlsconf"
)

// ListenerConfig is one listener: a name (as in listeners=NAME://host:port),
// its security protocol and the address to bind.
type ListenerConfig struct {
	Name             string
	SecurityProtocol string
	Addr             string
	// TLS is set for SSL and SASL_SSL: connections start with a TLS
	// handshake.
	TLS *tlsconf.Provider
	// SASL is set for SASL_PLAINTEXT and SASL_SSL: connections must
	// authenticate before anything but ApiVersions is served.
	SASL *SASLConfig
}

// Config holds the server's settings.
type Config struct {
	Listeners []ListenerConfig
	// MaxRequestSize is socket.request.max.bytes: larger frames close the
	// connection.
	MaxRequestSize int32
	// IdleTimeout is connections.max.idle.ms: a connection with no request
	// for this long is closed. Zero disables it.
	IdleTimeout time.Duration
	// Limits are the connection quotas (max.connections*).
	Limits ConnectionLimits
	// SendBuffer and ReceiveBuffer are socket.send.buffer.bytes and
	// socket.receive.buffer.bytes: SO_SNDBUF / SO_RCVBUF of accepted
	// connections; zero or -1 keeps the operating system's.
	SendBuffer, ReceiveBuffer int
	// ConnectionRate, if set, is asked about every connection admitted
	// (on any listener): a positive
	// answer means its address is over its connection_creation_rate quota
	// (KIP-612), and the connection is closed after that long, unserved,
	// as Kafka's acceptor closes a throttled socket after its throttle
	// time so the client does not reconnect at once.
	ConnectionRate func(ip string) time.Duration
	// AuthenticationTimeout bounds the TLS handshake and the SASL
	// exchange of a new connection: one not authenticated by then is
	// closed. Zero means IdleTimeout (connections.max.idle.ms, which in
	// Kafka closes a client that stalls its handshake); both zero: none.
	AuthenticationTimeout time.Duration
	// RequestLogSampleRate is log.request.sample.rate: the fraction of
	// requests logged at debug level (request_log.go).
	RequestLogSampleRate float64
}

// Server owns the listeners and their connections.
type Server struct {
	cfg     Config
	handler Handler
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	nextID atomic.Uint64
	quotas *connQuotas

	mu struct {
		sync.Mutex
		listeners []*listener
		conns     map[*conn]struct{}
		closed    bool
	}
	wg sync.WaitGroup
}

type listener struct {
	cfg ListenerConfig
	ln  net.Listener
}

// New returns a server; Start binds its listeners.
func New(cfg Config, handler Handler, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	if cfg.MaxRequestSize <= 0 {
		cfg.MaxRequestSize = 100 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{cfg: cfg, handler: handler, log: log, ctx: ctx, cancel: cancel, quotas: newConnQuotas(cfg.Limits)}
	s.mu.conns = make(map[*conn]struct{})
	return s
}

// Start binds every listener and starts accepting. On error nothing stays
// bound.
func (s *Server) Start() error {
	var bound []*listener
	for _, lc := range s.cfg.Listeners {
		ln, err := net.Listen("tcp", lc.Addr)
		if err != nil {
			for _, l := range bound {
				l.ln.Close()
			}
			return fmt.Errorf("listener %s on %s: %w", lc.Name, lc.Addr, err)
		}
		bound = append(bound, &listener{cfg: lc, ln: ln})
	}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		for _, l := range bound {
			l.ln.Close()
		}
		return errors.New("server closed")
	}
	s.mu.listeners = append(s.mu.listeners, bound...)
	s.mu.Unlock()
	for _, l := range bound {
		s.wg.Add(1)
		go s.accept(l)
	}
	return nil
}

// Serve accepts connections from ln, which the caller has bound (e.g. the
// controller's share of the quorum port), and serves them as listener cfg
// (cfg.Addr is ignored). It returns at once; the server owns ln from then
// on, reports it in Addrs under cfg.Name and closes it on Close. It may be
// called before or after Start, which it does not affect.
func (s *Server) Serve(ln net.Listener, cfg ListenerConfig) error {
	l := &listener{cfg: cfg, ln: ln}
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		ln.Close()
		return errors.New("server closed")
	}
	s.mu.listeners = append(s.mu.listeners, l)
	s.wg.Add(1)
	s.mu.Unlock()
	go s.accept(l)
	return nil
}

// Addrs returns the bound address of each listener by name (useful when a
// listener was configured with port 0).
func (s *Server) Addrs() map[string]net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]net.Addr, len(s.mu.listeners))
	for _, l := range s.mu.listeners {
		m[l.cfg.Name] = l.ln.Addr()
	}
	return m
}

func (s *Server) accept(l *listener) {
	defer s.wg.Done()
	var backoff time.Duration
	for {
		nc, err := l.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.ctx.Err() != nil {
				return
			}
			// Out of file descriptors and the like: back off
			// rather than spin.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "listener", l.cfg.Name, "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		// max.connections (the broker's and the listener's), then
		// max.connection.creation.rate: the accepted connection waits,
		// unserved, for a slot and for the rate, as in Kafka's
		// ConnectionQuotas.inc; the listener accepts no other meanwhile.
		// Waiting after Accept rather than before keeps an idle listener
		// from holding a slot no connection uses.
		if !s.quotas.reserve(s.ctx, l.cfg.Name) {
			nc.Close()
			return
		}
		if !s.quotas.awaitCreationRate(s.ctx, l.cfg.Name) {
			s.quotas.release(l.cfg.Name)
			nc.Close()
			return
		}
		ip, ok := s.quotas.admit(l.cfg.Name, nc.RemoteAddr())
		if !ok {
			// Kafka's TooManyConnectionsException: closed at once.
			s.log.Info("connection refused: max.connections.per.ip reached", "listener", l.cfg.Name, "ip", ip)
			nc.Close()
			continue
		}
		if s.throttleConnection(l, nc, ip) {
			continue
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
			if s.cfg.SendBuffer > 0 {
				tc.SetWriteBuffer(s.cfg.SendBuffer)
			}
			if s.cfg.ReceiveBuffer > 0 {
				tc.SetReadBuffer(s.cfg.ReceiveBuffer)
			}
		}
		c := newConn(s, l, nc, s.nextID.Add(1))
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			nc.Close()
			s.quotas.closed(l.cfg.Name, ip)
			return
		}
		s.mu.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve()
			s.mu.Lock()
			delete(s.mu.conns, c)
			s.mu.Unlock()
			s.quotas.closed(l.cfg.Name, ip)
		}()
	}
}

// SetConnectionLimits applies new connection quotas (dynamic
// max.connections* configs) to connections accepted from now on.
func (s *Server) SetConnectionLimits(l ConnectionLimits) { s.quotas.setLimits(l) }

// Close stops accepting, closes every connection and waits for their
// goroutines to end.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	for _, l := range s.mu.listeners {
		l.ln.Close()
	}
	for c := range s.mu.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	return nil
}
