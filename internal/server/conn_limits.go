package server

import (
	"context"
	"math"
	"net"
	"sync"
	"time"
)

// ConnectionLimits are Kafka's connection quotas (SocketServer's
// ConnectionQuotas): max.connections, its per-listener form
// listener.name.<listener>.max.connections, max.connections.per.ip and
// max.connections.per.ip.overrides, with Kafka's values (2147483647 is
// Kafka's "no limit" default). The zero value, Enforce false, applies none.
type ConnectionLimits struct {
	Enforce bool
	// Max is max.connections: connections open at once across the
	// listeners. When reached, a listener holds its newly accepted
	// connection unserved and accepts no other (Kafka's acceptor waits for
	// a slot; further connections wait in the kernel's backlog) until one
	// closes. Connections on the inter-broker listener
	// are not held back, so replication keeps working (KIP-402).
	Max int
	// PerListener is listener.name.<listener>.max.connections, by listener
	// name (as in ListenerConfig.Name): connections open at once on that
	// listener, counted on top of Max (a connection needs a slot of both).
	// At the limit the listener waits as it does for Max: Kafka's
	// acceptor blocks in ConnectionQuotas.waitForConnectionSlot, accepting
	// nothing more on that listener, until one of its connections closes
	// (it does not accept and close), while the other listeners go on
	// accepting. The inter-broker listener is held to its own limit too:
	// Kafka checks the listener's count before it exempts that listener
	// from the broker-wide one. A listener absent here has no limit of
	// its own. (Kafka gives such a listener the unprefixed max.connections
	// as its own limit; that binds only the inter-broker listener, which
	// is then capped at max.connections connections of its own, where
	// here it is exempt from Max altogether, as before this limit existed.)
	PerListener map[string]int
	// PerIP is max.connections.per.ip: a connection from an address that
	// already has this many open is closed at once, as Kafka does (0, with
	// overrides, admits only the addresses the overrides name).
	PerIP int
	// PerIPOverrides are max.connections.per.ip.overrides, by IP address
	// (host names resolved when the config is read).
	PerIPOverrides map[string]int
	// CreationRate is max.connection.creation.rate: new connections
	// accepted per second across the listeners; beyond it the accept loop
	// waits, as Kafka's acceptor is throttled (KIP-612). A burst of up to
	// one second's worth is accepted at once.
	CreationRate int
	// InterBrokerListener is exempt from Max and CreationRate (not from
	// its PerListener limit).
	InterBrokerListener string
}

// connQuotas counts open connections. Its lock guards the limits (changed
// at run time by SetConnectionLimits) and the counters: it is taken once
// per accept and once per close, never on a request path and never across
// I/O.
type connQuotas struct {
	mu struct {
		sync.Mutex
		limits ConnectionLimits
		total  int
		perIP  map[string]int
		// perListener counts the open connections of each listener
		// (for ConnectionLimits.PerListener).
		perListener map[string]int
		// freed is closed and replaced whenever a connection closes,
		// waking accept loops that wait for a slot.
		freed chan struct{}
		// tokens and refilled are max.connection.creation.rate's bucket.
		tokens   float64
		refilled time.Time
	}
}

func newConnQuotas(l ConnectionLimits) *connQuotas {
	q := &connQuotas{}
	q.mu.limits = l
	q.mu.perIP = map[string]int{}
	q.mu.perListener = map[string]int{}
	q.mu.freed = make(chan struct{})
	q.mu.tokens, q.mu.refilled = float64(l.CreationRate), time.Now()
	return q
}

// setLimits replaces the limits; accept loops waiting for a slot or for
// the creation rate look again. Connections already open stay open, as in
// Kafka.
func (q *connQuotas) setLimits(l ConnectionLimits) {
	q.mu.Lock()
	if l.CreationRate != q.mu.limits.CreationRate {
		q.mu.tokens = min(q.mu.tokens, float64(l.CreationRate))
	}
	q.mu.limits = l
	close(q.mu.freed)
	q.mu.freed = make(chan struct{})
	q.mu.Unlock()
}

// awaitCreationRate waits until max.connection.creation.rate allows one
// more connection on listener and takes it; false when ctx ends.
func (q *connQuotas) awaitCreationRate(ctx context.Context, listener string) bool {
	for {
		q.mu.Lock()
		l := q.mu.limits
		if !l.Enforce || l.CreationRate <= 0 || l.CreationRate == math.MaxInt32 || listener == l.InterBrokerListener {
			q.mu.Unlock()
			return true
		}
		rate := float64(l.CreationRate)
		now := time.Now()
		q.mu.tokens = min(rate, q.mu.tokens+now.Sub(q.mu.refilled).Seconds()*rate)
		q.mu.refilled = now
		if q.mu.tokens >= 1 {
			q.mu.tokens--
			q.mu.Unlock()
			return true
		}
		wait := time.Duration((1 - q.mu.tokens) / rate * float64(time.Second))
		changed := q.mu.freed
		q.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-changed: // a closed connection or new limits: look again
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return false
		}
	}
}

// reserve takes a slot of max.connections, and of listener's own
// max.connections if it has one, for a connection just accepted on
// listener, waiting until both are free (Kafka's connectionSlotAvailable).
// It returns false when ctx ends. Every successful reserve is matched by
// release, by a refusing admit or by closed, with the same listener.
func (q *connQuotas) reserve(ctx context.Context, listener string) bool {
	for {
		q.mu.Lock()
		l := q.mu.limits
		listenerMax, limited := l.PerListener[listener]
		if !l.Enforce || ((!limited || q.mu.perListener[listener] < listenerMax) &&
			(q.mu.total < l.Max || listener == l.InterBrokerListener)) {
			q.mu.total++
			q.mu.perListener[listener]++
			q.mu.Unlock()
			return true
		}
		freed := q.mu.freed
		q.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return false
		}
	}
}

// admit counts an accepted connection against its address's limit; false
// means the address is over max.connections.per.ip (or its override) and
// the connection must be closed. A refused connection gives its reserved
// slot back.
func (q *connQuotas) admit(listener string, remote net.Addr) (ip string, ok bool) {
	ip = remoteIP(remote)
	q.mu.Lock()
	defer q.mu.Unlock()
	limit := q.mu.limits.PerIP
	if o, found := q.mu.limits.PerIPOverrides[ip]; found {
		limit = o
	}
	if q.mu.limits.Enforce && q.mu.perIP[ip] >= limit {
		q.releaseLocked(listener)
		return ip, false
	}
	q.mu.perIP[ip]++
	return ip, true
}

// release gives back a slot reserved for a connection that was never
// admitted (the server closed while it waited for the creation rate).
func (q *connQuotas) release(listener string) {
	q.mu.Lock()
	q.releaseLocked(listener)
	q.mu.Unlock()
}

// closed accounts for an admitted connection of listener that ended.
func (q *connQuotas) closed(listener, ip string) {
	q.mu.Lock()
	if q.mu.perIP[ip]--; q.mu.perIP[ip] <= 0 {
		delete(q.mu.perIP, ip)
	}
	q.releaseLocked(listener)
	q.mu.Unlock()
}

func (q *connQuotas) releaseLocked(listener string) {
	q.mu.total--
	if q.mu.total < 0 {
		panic("server: connection count below zero")
	}
	if q.mu.perListener[listener]--; q.mu.perListener[listener] <= 0 {
		if q.mu.perListener[listener] < 0 {
			panic("server: connection count of listener " + listener + " below zero")
		}
		delete(q.mu.perListener, listener)
	}
	close(q.mu.freed)
	q.mu.freed = make(chan struct{})
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// throttleConnection applies connection_creation_rate (Config.ConnectionRate)
// to a connection just admitted from ip: over the rate, its slot is given
// back and it is closed after the throttle time, unserved; true then. As
// in Kafka's ConnectionQuotas, every listener is subject to it, the
// inter-broker one too (only max.connection.creation.rate spares that).
func (s *Server) throttleConnection(l *listener, nc net.Conn, ip string) bool {
	if s.cfg.ConnectionRate == nil {
		return false
	}
	d := s.cfg.ConnectionRate(ip)
	if d <= 0 {
		return false
	}
	s.log.Info("connection throttled: connection_creation_rate reached", "listener", l.cfg.Name, "ip", ip, "throttle_ms", d.Milliseconds())
	s.quotas.closed(l.cfg.Name, ip)
	// One goroutine per throttled connection, for at most the quota
	// window; Close ends them early.
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
		}
		nc.Close()
	}()
	return true
}
