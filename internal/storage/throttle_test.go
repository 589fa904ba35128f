package storage

import (
	"testing"
	"time"
)

// TestThrottleReservesAtItsRate: every byte waited for pushes the shared
// timeline by 1/rate seconds, whoever waits; the unthrottled rate reserves
// nothing.
func TestThrottleReservesAtItsRate(t *testing.T) {
	stopped := make(chan struct{})
	close(stopped) // do not actually sleep
	th := newThrottle(1 << 20)
	start := time.Now()
	th.wait(1<<20, stopped)
	th.wait(1<<19, stopped)
	th.mu.Lock()
	reserved := th.next.Sub(start)
	th.mu.Unlock()
	if reserved < 1500*time.Millisecond || reserved > 1600*time.Millisecond {
		t.Fatalf("1.5 MiB at 1 MiB/s reserved %v, want 1.5s", reserved)
	}
	free := newThrottle(1<<63 - 1)
	free.wait(1<<30, stopped)
	if !free.next.IsZero() {
		t.Fatalf("the unthrottled rate reserved time: %v", free.next)
	}
}
