package storage

import (
	"sync"
	"sync/atomic"
	"time"
)

// throttle paces byte copying to a rate shared by all its users (Kafka's
// replica.alter.log.dirs.io.max.bytes.per.second quota): each caller
// reserves its bytes on a shared timeline and sleeps until the time they
// are due. A rate <= 0 means unthrottled. Callers must not hold locks.
type throttle struct {
	rate atomic.Int64 // bytes per second; <= 0: none

	mu   sync.Mutex
	next time.Time // when the bytes reserved so far have been paid for
}

func newThrottle(rate int64) *throttle {
	t := &throttle{}
	t.rate.Store(rate)
	return t
}

// setRate changes the rate (a dynamic broker config change).
func (t *throttle) setRate(rate int64) { t.rate.Store(rate) }

// wait blocks until n more bytes fit the rate, or stop is closed.
func (t *throttle) wait(n int64, stop <-chan struct{}) {
	rate := t.rate.Load()
	if rate <= 0 || rate == 1<<63-1 || n <= 0 {
		return
	}
	now := time.Now()
	t.mu.Lock()
	if t.next.Before(now) {
		t.next = now
	}
	t.next = t.next.Add(time.Duration(float64(n) / float64(rate) * float64(time.Second)))
	due := t.next
	t.mu.Unlock()
	if d := due.Sub(now); d > 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-stop:
		}
	}
}
