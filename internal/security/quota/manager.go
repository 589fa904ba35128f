package quota

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// Kind is a quota a Manager enforces, each with its own key and sensors.
type Kind int

const (
	// Produce is producer_byte_rate: produce request bytes per second.
	Produce Kind = iota
	// Fetch is consumer_byte_rate: fetch response bytes per second.
	Fetch
	// Request is request_percentage: handler time as a percentage of one
	// thread (100 = one thread busy all the time).
	Request
	// ControllerMutation is controller_mutation_rate: topic partitions
	// created or deleted per second (KIP-599).
	ControllerMutation
	numKinds
)

// Key is the quota key of a kind.
func (k Kind) Key() string {
	return [...]string{ProducerByteRate, ConsumerByteRate, RequestPercentage, ControllerMutationRate}[k]
}

// sensorIdle is how long an unused sensor is kept: Kafka expires quota
// sensors after an hour without activity.
const sensorIdle = time.Hour

// Manager measures clients against their quotas. It follows the quotas of
// the metadata image it is given (Sync) and keeps one sensor per client
// and kind that has a quota.
//
// Thread-safety: the table is an atomic pointer, replaced when the image's
// quotas change; each kind's sensor map has its own lock, held for a map
// lookup or insert only; each sensor has its own lock, held for the
// arithmetic of one recording. No lock is held across I/O or taken inside
// another.
type Manager struct {
	w   Window // quota.window.num × quota.window.size.seconds
	cw  Window // controller.quota.window.*: the mutation quota's burst
	now func() time.Time

	table   atomic.Pointer[table]
	syncMu  sync.Mutex // serializes rebuilding the table
	sensors [numKinds]sensorSet
}

// table is the quota configuration a Manager is following.
type table struct {
	src *metadata.ClientQuotas
	// has reports, per kind, whether any entity sets its key: when not,
	// nothing is measured.
	has [numKinds]bool
}

type sensorSet struct {
	mu struct {
		sync.Mutex
		m         map[SensorKey]*sensor
		lastSweep time.Time
	}
}

// sensor is one client's measurement of one kind.
type sensor struct {
	// used is when the sensor was last looked up; guarded by its
	// sensorSet's lock, which decides its expiry.
	used time.Time
	mu   struct {
		sync.Mutex
		rate   *rate
		bucket tokenBucket
	}
}

// Config configures a Manager.
type Config struct {
	// Window is quota.window.num and quota.window.size.seconds.
	Window Window
	// ControllerWindow is controller.quota.window.num and
	// controller.quota.window.size.seconds.
	ControllerWindow Window
	// Now is the clock; nil for time.Now.
	Now func() time.Time
}

// NewManager returns a Manager following no quotas until Sync.
func NewManager(c Config) *Manager {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Window.Samples < 1 || c.Window.Size <= 0 || c.ControllerWindow.Samples < 1 || c.ControllerWindow.Size <= 0 {
		panic("quota: window without samples")
	}
	m := &Manager{w: c.Window, cw: c.ControllerWindow, now: c.Now}
	m.table.Store(&table{})
	for i := range m.sensors {
		m.sensors[i].mu.m = map[SensorKey]*sensor{}
	}
	return m
}

// Window is the measurement window.
func (m *Manager) Window() Window { return m.w }

// Sync makes the Manager follow q, the current image's quotas. It costs
// an atomic load and a comparison when q has not changed.
func (m *Manager) Sync(q *metadata.ClientQuotas) *Manager {
	if m.table.Load().src == q {
		return m
	}
	m.syncMu.Lock()
	defer m.syncMu.Unlock()
	if m.table.Load().src == q {
		return m
	}
	t := &table{src: q}
	q.Each(func(e metadata.QuotaEntity, vals map[string]float64) {
		for k := range numKinds {
			if _, ok := vals[k.Key()]; ok && !e.IP.Set {
				t.has[k] = true
			}
		}
	})
	m.table.Store(t)
	return m
}

// Enabled reports whether any client has a quota of kind k.
func (m *Manager) Enabled(k Kind) bool { return m.table.Load().has[k] }

// Quota resolves a client's quota of kind k (Resolve); ok false without
// one.
func (m *Manager) Quota(k Kind, user, clientID string) (limit float64, sk SensorKey, ok bool) {
	t := m.table.Load()
	if !t.has[k] {
		return 0, SensorKey{}, false
	}
	limit, _, sk, ok = Resolve(t.src, k.Key(), user, clientID)
	return limit, sk, ok
}

// Record counts value against the client's rate quota of kind k (Produce,
// Fetch, Request) and returns how long it must be throttled: 0 within its
// quota or without one (Kafka's maybeRecordAndGetThrottleTimeMs).
func (m *Manager) Record(k Kind, user, clientID string, value float64) time.Duration {
	limit, sk, ok := m.Quota(k, user, clientID)
	if !ok {
		return 0
	}
	now := m.now()
	s := m.sensor(k, sk, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.rate.record(value, now)
	measured := s.mu.rate.measure(now)
	return throttleTime(measured, limit, s.mu.rate.windowSize(now), m.w.MaxThrottle())
}

// Unrecord takes back a value recorded for a response that was not sent
// (Kafka unrecords a throttled fetch, which is answered empty).
func (m *Manager) Unrecord(k Kind, user, clientID string, value float64) {
	_, sk, ok := m.Quota(k, user, clientID)
	if !ok {
		return
	}
	now := m.now()
	s := m.sensor(k, sk, now)
	s.mu.Lock()
	s.mu.rate.record(-value, now)
	s.mu.Unlock()
}

// MaxValueInWindow is the most a client may take in one quota window
// (Kafka's getMaxValueInQuotaWindow, which bounds a fetch's size): the
// quota times Samples-1 windows; ok false without a quota.
func (m *Manager) MaxValueInWindow(k Kind, user, clientID string) (float64, bool) {
	limit, _, ok := m.Quota(k, user, clientID)
	if !ok {
		return 0, false
	}
	return limit * float64(m.w.Samples-1) * m.w.Size.Seconds(), true
}

// MutationAllowed reports, for a strict request (CreateTopics v6+,
// CreatePartitions v3+, DeleteTopics v5+, KIP-599), whether the client's
// controller mutation quota may take more: false while it is in debt, with
// the time until it is not.
func (m *Manager) MutationAllowed(user, clientID string) (bool, time.Duration) {
	limit, sk, ok := m.Quota(ControllerMutation, user, clientID)
	if !ok {
		return true, 0
	}
	now := m.now()
	s := m.sensor(ControllerMutation, sk, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.bucket.refill(limit, m.cw, now)
	if d := s.mu.bucket.throttle(limit); d > 0 {
		return false, min(d, m.cw.MaxThrottle())
	}
	return true, 0
}

// RecordMutations takes n partition mutations from the client's
// controller mutation quota (a negative n gives back mutations that were
// taken but not made) and returns the throttle time it owes.
func (m *Manager) RecordMutations(user, clientID string, n int) time.Duration {
	limit, sk, ok := m.Quota(ControllerMutation, user, clientID)
	if !ok {
		return 0
	}
	now := m.now()
	s := m.sensor(ControllerMutation, sk, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.bucket.refill(limit, m.cw, now)
	s.mu.bucket.tokens -= float64(n)
	return min(s.mu.bucket.throttle(limit), m.cw.MaxThrottle())
}

// sensor returns the client's sensor of kind k, creating it; sensors idle
// for an hour are dropped, at most one sweep a minute.
func (m *Manager) sensor(k Kind, sk SensorKey, now time.Time) *sensor {
	set := &m.sensors[k]
	set.mu.Lock()
	defer set.mu.Unlock()
	s, ok := set.mu.m[sk]
	if !ok {
		s = &sensor{}
		s.mu.rate = newRate(m.w)
		set.mu.m[sk] = s
	}
	s.used = now
	if now.Sub(set.mu.lastSweep) >= time.Minute {
		set.mu.lastSweep = now
		for key, other := range set.mu.m {
			if now.Sub(other.used) >= sensorIdle {
				delete(set.mu.m, key)
			}
		}
	}
	return s
}
