package storage

import (
	"math"
	"sync"
	"time"
)

// cleanerThrottleCheckInterval is how often the throttle compares the
// observed rate with the limit (Kafka's Throttler checks every 300 ms).
const cleanerThrottleCheckInterval = 300 * time.Millisecond

// ioThrottle limits the log cleaner's disk I/O to
// log.cleaner.io.max.bytes.per.second, shared by every cleaner goroutine,
// as Kafka's Throttler does for its cleaner threads: bytes read and written
// are counted, and once per check interval a goroutine that finds the
// observed rate above the limit sleeps long enough to bring it back down.
//
// Thread-safety: mu guards the counters; nobody sleeps while holding it.
// The cleaner holds only its log's cleanMu (never the append lock) while
// it waits here, so appends and fetches are not slowed.
type ioThrottle struct {
	bytesPerSec float64
	now         func() time.Time
	// sleep waits d or until stop is closed.
	sleep func(d time.Duration, stop <-chan struct{})

	mu struct {
		sync.Mutex
		periodStart time.Time
		observed    float64
	}
}

// newIOThrottle returns a throttle for rate bytes per second; nil (no
// throttling) for a rate that is not positive and finite, Kafka's default
// being Double.MAX_VALUE.
func newIOThrottle(rate float64) *ioThrottle {
	if !(rate > 0) || math.IsInf(rate, 1) || rate >= math.MaxFloat64 {
		return nil
	}
	t := &ioThrottle{bytesPerSec: rate, now: time.Now, sleep: sleepOrStop}
	t.mu.periodStart = t.now()
	return t
}

// maybeThrottle counts n bytes of I/O and sleeps if the cleaner has been
// going faster than the limit. A nil throttle does nothing.
func (t *ioThrottle) maybeThrottle(n int, stop <-chan struct{}) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	t.mu.observed += float64(n)
	now := t.now()
	elapsed := now.Sub(t.mu.periodStart)
	if elapsed < cleanerThrottleCheckInterval {
		t.mu.Unlock()
		return
	}
	var wait time.Duration
	if rate := t.mu.observed / elapsed.Seconds(); rate > t.bytesPerSec {
		wait = time.Duration(t.mu.observed/t.bytesPerSec*float64(time.Second)) - elapsed
	}
	// The next period starts when this wait ends.
	t.mu.periodStart, t.mu.observed = now.Add(wait), 0
	t.mu.Unlock()
	if wait > 0 {
		t.sleep(wait, stop)
	}
}

func sleepOrStop(d time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-stop:
	}
}
