package replication

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Kafka's replication quota window: replication.quota.window.num (11)
// samples of replication.quota.window.size.seconds (1 s).
const (
	quotaSamples      = 11
	quotaSampleLength = time.Second
)

// Quota is one side of Kafka's ReplicationQuotaManager: a byte rate limit
// (leader.replication.throttled.rate or follower.replication.throttled.rate)
// and the rate measured over the last quotaSamples seconds of throttled
// replication traffic. The limit is applied at run time: SetLimit is called
// with each new metadata image.
//
// Thread-safety: the limit is atomic; mu guards the samples and is held only
// for arithmetic, never across I/O, and no other lock is taken under it.
type Quota struct {
	limit atomic.Int64 // bytes per second; math.MaxInt64: unlimited
	now   func() time.Time

	mu struct {
		sync.Mutex
		start   time.Time // start of samples[current]
		current int
		samples [quotaSamples]int64
	}
}

// NewQuota returns an unlimited quota.
func NewQuota() *Quota {
	q := &Quota{now: time.Now}
	q.limit.Store(math.MaxInt64)
	return q
}

// SetLimit sets the rate limit in bytes per second.
func (q *Quota) SetLimit(bytesPerSec int64) { q.limit.Store(bytesPerSec) }

// Limited reports whether a limit is set at all.
func (q *Quota) Limited() bool { return q != nil && q.limit.Load() != math.MaxInt64 }

// Exceeded reports whether the measured rate is above the limit (Kafka's
// isQuotaExceeded).
func (q *Quota) Exceeded() bool {
	if !q.Limited() {
		return false
	}
	limit := q.limit.Load()
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	q.rollLocked(now)
	var total int64
	for _, s := range q.mu.samples {
		total += s
	}
	if total == 0 {
		return false
	}
	// Kafka's Rate.windowSize: the time since the oldest sample began, at
	// least quotaSamples-1 whole samples, so the first bytes are spread
	// over that long rather than over the moment they took.
	window := (quotaSamples-1)*quotaSampleLength + now.Sub(q.mu.start)
	return float64(total)/window.Seconds() > float64(limit)
}

// Record counts n bytes of throttled replication traffic.
func (q *Quota) Record(n int) {
	if !q.Limited() || n <= 0 {
		return
	}
	q.mu.Lock()
	now := q.now()
	if q.mu.start.IsZero() {
		q.mu.start = now
	}
	q.rollLocked(now)
	q.mu.samples[q.mu.current] += int64(n)
	q.mu.Unlock()
}

// rollLocked advances the sample ring to now, zeroing expired samples.
func (q *Quota) rollLocked(now time.Time) {
	if q.mu.start.IsZero() {
		return
	}
	for i := 0; now.Sub(q.mu.start) >= quotaSampleLength && i <= quotaSamples; i++ {
		q.mu.current = (q.mu.current + 1) % quotaSamples
		q.mu.samples[q.mu.current] = 0
		q.mu.start = q.mu.start.Add(quotaSampleLength)
	}
	if now.Sub(q.mu.start) >= quotaSampleLength {
		// Idle for longer than the whole window: start afresh.
		q.mu.start = now
	}
}

// Quotas are a broker's two replication quotas.
type Quotas struct {
	// Leader limits what this broker, as leader, sends to followers
	// outside the ISR for the replicas in
	// leader.replication.throttled.replicas.
	Leader *Quota
	// Follower limits what this broker, as a follower outside the ISR,
	// fetches for the replicas in follower.replication.throttled.replicas.
	Follower *Quota
}

// NewQuotas returns unlimited quotas.
func NewQuotas() Quotas { return Quotas{Leader: NewQuota(), Follower: NewQuota()} }
