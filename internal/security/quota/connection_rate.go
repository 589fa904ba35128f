package quota

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// ConnectionRates is connection_creation_rate for ip entities (KIP-612,
// Kafka's ConnectionQuotas IP throttling): new connections per second
// from an address, its own entity's quota or the default ip entity's,
// measured over the quota window like the other rates. A connection beyond
// it is refused, and not counted.
//
// Thread-safety: the limits are an atomic pointer; mu guards the rates,
// held for the arithmetic of one connection, never across I/O.
type ConnectionRates struct {
	w   Window
	now func() time.Time

	table atomic.Pointer[ipTable]
	mu    struct {
		sync.Mutex
		rates     map[string]*rate
		lastSweep time.Time
	}
}

type ipTable struct {
	src *metadata.ClientQuotas
	any bool // some ip entity sets connection_creation_rate
}

// NewConnectionRates returns rates measured over w.
func NewConnectionRates(w Window, now func() time.Time) *ConnectionRates {
	if now == nil {
		now = time.Now
	}
	r := &ConnectionRates{w: w, now: now}
	r.table.Store(&ipTable{})
	r.mu.rates = map[string]*rate{}
	return r
}

// Sync follows the image's quotas; cheap when they have not changed.
func (r *ConnectionRates) Sync(q *metadata.ClientQuotas) *ConnectionRates {
	if r.table.Load().src == q {
		return r
	}
	t := &ipTable{src: q}
	q.Each(func(e metadata.QuotaEntity, vals map[string]float64) {
		if _, ok := vals[ConnectionCreationRate]; ok && e.IP.Set {
			t.any = true
		}
	})
	r.table.Store(t)
	return r
}

// Admit counts a new connection from ip and returns 0 when its quota
// allows it, else how long until it would (the connection is then not
// counted).
func (r *ConnectionRates) Admit(ip string) time.Duration {
	t := r.table.Load()
	if !t.any {
		return 0
	}
	limit, ok := ResolveIP(t.src, ip)
	if !ok {
		return 0
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	rt, ok := r.mu.rates[ip]
	if !ok {
		rt = newRate(r.w)
		r.mu.rates[ip] = rt
	}
	if now.Sub(r.mu.lastSweep) >= time.Minute {
		r.mu.lastSweep = now
		for addr, other := range r.mu.rates {
			if other != rt && other.measure(now) == 0 {
				delete(r.mu.rates, addr)
			}
		}
	}
	rt.record(1, now)
	d := throttleTime(rt.measure(now), limit, rt.windowSize(now), r.w.MaxThrottle())
	if d > 0 {
		rt.record(-1, now)
	}
	return d
}
