package storage

import (
	"strings"
	"testing"
)

// mustPanic runs f and returns the panic message, failing if f returns.
func mustPanic(t *testing.T, what string, f func()) string {
	t.Helper()
	var msg string
	func() {
		defer func() {
			if r := recover(); r != nil {
				msg, _ = r.(string)
			}
		}()
		f()
		t.Fatalf("%s did not panic", what)
	}()
	return msg
}

func TestHighWatermarkInvariants(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	mustAppend(t, l, simple(5, 10, 0), 0)

	// A leader's high watermark only moves up.
	if !l.AdvanceHighWatermark(3) || l.HighWatermark() != 3 {
		t.Fatalf("AdvanceHighWatermark(3): high watermark %d", l.HighWatermark())
	}
	if l.AdvanceHighWatermark(2) || l.HighWatermark() != 3 {
		t.Fatalf("AdvanceHighWatermark(2) moved it back to %d", l.HighWatermark())
	}
	// Past the log end is a bug: asserted, not clamped.
	msg := mustPanic(t, "AdvanceHighWatermark past the log end", func() { l.AdvanceHighWatermark(6) })
	if !strings.Contains(msg, "past the log end offset 5") || l.HighWatermark() != 3 {
		t.Fatalf("panic %q, high watermark %d", msg, l.HighWatermark())
	}

	// The cheap checks name what broke.
	l.highWatermark.Store(7)
	l.mu.Lock()
	msg = mustPanic(t, "a high watermark past the log end", func() { l.assertOffsetsLocked("test") })
	l.mu.Unlock()
	if !strings.Contains(msg, "high watermark 7 ≤ log end 5") {
		t.Fatalf("panic %q", msg)
	}
	l.highWatermark.Store(5)
	if msg := mustPanic(t, "an append that does not advance", func() { l.assertAppendOffset(5, 5) }); !strings.Contains(msg, "from 5 to 5") {
		t.Fatalf("panic %q", msg)
	}
}

func TestLeaderEpochCacheOrderAsserted(t *testing.T) {
	c := &leaderEpochCache{path: "leader-epoch-checkpoint"}
	c.mu.entries = []epochEntry{{Epoch: 3, StartOffset: 10}, {Epoch: 2, StartOffset: 20}}
	c.mu.Lock()
	defer c.mu.Unlock()
	if msg := mustPanic(t, "an epoch cache out of order", c.assertOrderedLocked); !strings.Contains(msg, "out of order") {
		t.Fatalf("panic %q", msg)
	}
}
