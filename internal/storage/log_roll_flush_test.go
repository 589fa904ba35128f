package storage

import (
	"testing"
	"time"
)

// TestRollFlushesRolledSegmentInBackground: after a roll, the recovery
// point reaches the new segment's base without any explicit flush (Kafka's
// roll schedules flushUptoOffsetExclusive).
func TestRollFlushesRolledSegmentInBackground(t *testing.T) {
	cfg := testConfig()
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	for l.NumSegments() < 3 {
		mustAppend(t, l, simple(5, 200, 1), 0)
	}
	segs := l.segmentList()
	want := segs[len(segs)-1].baseOffset
	deadline := time.Now().Add(10 * time.Second)
	for l.RecoveryPoint() < want {
		if time.Now().After(deadline) {
			t.Fatalf("recovery point %d, want %d (the active segment's base) after the rolled segments' flush", l.RecoveryPoint(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if rp := l.RecoveryPoint(); rp > want {
		t.Fatalf("recovery point %d passed the active segment's base %d, which was never flushed", rp, want)
	}
}
