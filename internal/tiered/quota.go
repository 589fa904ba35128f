package tiered

import (
	"math"
	"sync"
	"time"
)

// Quota is a byte rate limit of the remote log manager (KIP-956): the bytes
// recorded over the last num windows of size each, divided by the time they
// span, against the limit. As in Kafka, the check comes before the work and
// the bytes are recorded after it, so one segment copy or one remote fetch
// may overshoot; the rate then stays above the limit, and later work waits,
// until the windows holding it have passed. The limit changes at run time
// (SetLimit: the rates are dynamic broker configs); math.MaxInt64, Kafka's
// default, is none. A nil *Quota never limits.
type Quota struct {
	size time.Duration
	now  func() time.Time

	mu      sync.Mutex
	limit   int64         // bytes per second
	windows []quotaWindow // ring, num entries
}

type quotaWindow struct {
	start time.Time
	bytes int64
}

// NewQuota is a limit of bytesPerSecond measured over num windows of size.
func NewQuota(bytesPerSecond int64, num int, size time.Duration, now func() time.Time) *Quota {
	if num < 1 || size <= 0 {
		panic("tiered: a quota needs a window count and a window size")
	}
	if now == nil {
		now = time.Now
	}
	q := &Quota{size: size, now: now, windows: make([]quotaWindow, num)}
	q.SetLimit(bytesPerSecond)
	return q
}

// SetLimit changes the limit; the bytes already recorded still count.
func (q *Quota) SetLimit(bytesPerSecond int64) {
	if bytesPerSecond <= 0 {
		panic("tiered: a quota's rate must be positive")
	}
	q.mu.Lock()
	q.limit = bytesPerSecond
	q.mu.Unlock()
}

// slot returns the window holding t, started afresh when its time has come
// round again.
func (q *Quota) slot(t time.Time) *quotaWindow {
	n := t.UnixNano() / int64(q.size)
	w := &q.windows[n%int64(len(q.windows))]
	if start := time.Unix(0, n*int64(q.size)); !w.start.Equal(start) {
		*w = quotaWindow{start: start}
	}
	return w
}

// Record adds n bytes of work done now.
func (q *Quota) Record(n int64) {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.slot(q.now()).bytes += n
}

// rate is the bytes per second over the windows still current at t. The
// span is at least num-1 whole windows, as Kafka's Rate, so a first burst
// is not measured over a few milliseconds.
func (q *Quota) rateLocked(t time.Time) float64 {
	oldest := t.Add(-time.Duration(len(q.windows)) * q.size)
	var sum int64
	first := t
	for _, w := range q.windows {
		if w.start.After(oldest) && w.bytes > 0 {
			sum += w.bytes
			if w.start.Before(first) {
				first = w.start
			}
		}
	}
	span := max(t.Sub(first), time.Duration(len(q.windows)-1)*q.size)
	return float64(sum) / span.Seconds()
}

// Exceeded reports whether the rate is above the limit now, and if so how
// long until the oldest window holding bytes has passed (a time to wait
// before checking again).
func (q *Quota) Exceeded() (bool, time.Duration) {
	if q == nil {
		return false, 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.limit == math.MaxInt64 {
		return false, 0
	}
	t := q.now()
	q.slot(t)
	if q.rateLocked(t) <= float64(q.limit) {
		return false, 0
	}
	oldest := t
	for _, w := range q.windows {
		if w.bytes > 0 && w.start.After(t.Add(-time.Duration(len(q.windows))*q.size)) && w.start.Before(oldest) {
			oldest = w.start
		}
	}
	wait := oldest.Add(time.Duration(len(q.windows)) * q.size).Sub(t)
	return true, max(wait, time.Millisecond)
}
