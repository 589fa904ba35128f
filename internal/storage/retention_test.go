package storage

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fillSegments appends batches with timestamps 1000*i until the log has at
// least n segments, returning the log.
func fillSegments(t *testing.T, cfg Config, clock *fakeClock, n int) *Log {
	t.Helper()
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	for i := 0; l.NumSegments() < n; i++ {
		mustAppend(t, l, simple(1, 100, int64(1000*i)), 0)
	}
	return l
}

func TestRetentionByTime(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 4)
	defer l.Close()
	segs := l.segmentList()
	l.SetHighWatermark(l.LogEndOffset())
	// Retention deletes segments whose max timestamp is older than
	// now - retention.ms; set now so only the first two qualify.
	ts1, _ := segs[1].maxTimestamp()
	cfg.RetentionMs = 10_000
	l.UpdateConfig(cfg)
	clock.ms = ts1 + cfg.RetentionMs + 1
	n, err := l.EnforceRetention()
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("deleted %d segments, want 2", n)
	}
	if got := l.LogStartOffset(); got != segs[2].baseOffset {
		t.Fatalf("log start %d, want %d", got, segs[2].baseOffset)
	}
	if _, err := l.Read(0, 100, l.LogEndOffset(), true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("reading deleted data: %v", err)
	}
	if got := readAll(t, l, l.LogStartOffset()); len(got) == 0 || got[0].BaseOffset != segs[2].baseOffset {
		t.Fatalf("remaining data starts at %+v", got)
	}
}

func TestRetentionNeverPassesHighWatermark(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 4)
	defer l.Close()
	segs := l.segmentList()
	// HW inside segment 1: only segment 0 is wholly below it.
	l.SetHighWatermark(segs[1].baseOffset + 1)
	cfg.RetentionMs = 0
	l.UpdateConfig(cfg)
	clock.ms = 1 << 40
	if n, err := l.EnforceRetention(); err != nil || n != 1 {
		t.Fatalf("deleted %d (err %v), want 1", n, err)
	}
	if l.LogStartOffset() != segs[1].baseOffset {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
}

func TestRetentionRollsAndDeletesExpiredActiveSegment(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 3)
	defer l.Close()
	leo := l.LogEndOffset()
	l.SetHighWatermark(leo)
	cfg.RetentionMs = 1
	l.UpdateConfig(cfg)
	clock.ms = 1 << 40
	if n, err := l.EnforceRetention(); err != nil || n != 3 {
		t.Fatalf("deleted %d (err %v), want all 3", n, err)
	}
	if l.NumSegments() != 1 || l.LogStartOffset() != leo || l.LogEndOffset() != leo || l.Size() != 0 {
		t.Fatalf("after deleting everything: segs %d start %d end %d size %d", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset(), l.Size())
	}
	// The empty active segment is never deleted, and appends continue.
	if n, _ := l.EnforceRetention(); n != 0 {
		t.Fatalf("deleted the empty active segment")
	}
	if info := mustAppend(t, l, simple(1, 10, 5), 0); info.BaseOffset != leo {
		t.Fatalf("append after retention at %d, want %d", info.BaseOffset, leo)
	}
}

func TestRetentionBySize(t *testing.T) {
	// Kafka deletes the oldest segments while the whole segment fits in the
	// excess over retention.bytes, so the log may stay slightly above it.
	tests := []struct {
		name   string
		excess func(segs []*segment) int64
		want   int
	}{
		{"excess exactly two segments", func(s []*segment) int64 { return s[0].size.Load() + s[1].size.Load() }, 2},
		{"excess just above one segment", func(s []*segment) int64 { return s[0].size.Load() + 1 }, 1},
		{"excess below one segment", func(s []*segment) int64 { return s[0].size.Load() - 1 }, 0},
		{"under the limit", func(s []*segment) int64 { return -5 }, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{ms: 0}
			cfg := testConfig()
			cfg.SegmentBytes = 1024
			l := fillSegments(t, cfg, clock, 5)
			defer l.Close()
			l.SetHighWatermark(l.LogEndOffset())
			segs := l.segmentList()
			cfg.RetentionBytes = l.Size() - tc.excess(segs)
			l.UpdateConfig(cfg)
			n, err := l.EnforceRetention()
			if err != nil || n != tc.want {
				t.Fatalf("deleted %d (err %v), want %d", n, err, tc.want)
			}
			if l.LogStartOffset() != segs[tc.want].baseOffset {
				t.Fatalf("log start %d, want %d", l.LogStartOffset(), segs[tc.want].baseOffset)
			}
		})
	}
}

func TestRetentionOnlyWithDeletePolicy(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.Delete, cfg.Compact = false, true
	cfg.RetentionMs, cfg.RetentionBytes = 0, 0
	l := fillSegments(t, cfg, clock, 3)
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	clock.ms = 1 << 40
	if n, err := l.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("compact-only log lost %d segments (err %v)", n, err)
	}
}

func TestDeleteRecordsBefore(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 4)
	segs := l.segmentList()
	dir := l.Dir()
	hw := segs[2].baseOffset + 2
	l.SetHighWatermark(hw)

	if _, err := l.DeleteRecordsBefore(hw + 1); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("beyond HW: err = %v", err)
	}
	target := segs[1].baseOffset + 1
	got, err := l.DeleteRecordsBefore(target)
	if err != nil || got != target {
		t.Fatalf("DeleteRecordsBefore = %d, %v", got, err)
	}
	if l.NumSegments() != len(segs)-1 {
		t.Fatalf("segments %d, want %d", l.NumSegments(), len(segs)-1)
	}
	if _, err := l.Read(target-1, 100, hw, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read below new log start: %v", err)
	}
	res, err := l.Read(target, 1<<20, hw, true)
	if err != nil || len(splitBatches(t, res.Data)) == 0 || res.LogStartOffset != target {
		t.Fatalf("read at new log start: %+v %v", res, err)
	}
	if got, _ := l.DeleteRecordsBefore(2); got != target {
		t.Fatalf("moving backwards changed log start to %d", got)
	}
	l.Close()
	// The log start offset comes back from the checkpoint the manager keeps.
	l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: true, LogStartOffset: target})
	defer l.Close()
	if l.LogStartOffset() != target {
		t.Fatalf("log start after reopen %d", l.LogStartOffset())
	}
}

func TestTruncate(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	for i := 0; i < 40; i++ {
		mustAppend(t, l, simple(2, 60, int64(i)), int32(i/10))
	}
	l.SetHighWatermark(80)
	tests := []struct{ to, wantLEO int64 }{
		{100, 80}, // beyond LEO: no-op
		{61, 60},  // inside a batch: the whole batch goes
		{30, 30},
		{1, 0},
	}
	for _, tc := range tests {
		if err := l.Truncate(tc.to); err != nil {
			t.Fatal(err)
		}
		if l.LogEndOffset() != tc.wantLEO || l.HighWatermark() > tc.wantLEO {
			t.Fatalf("Truncate(%d): LEO %d HW %d, want LEO %d", tc.to, l.LogEndOffset(), l.HighWatermark(), tc.wantLEO)
		}
		if got := len(readAll(t, l, 0)); int64(got) != tc.wantLEO/2 {
			t.Fatalf("Truncate(%d): %d batches left", tc.to, got)
		}
		if ep, _ := l.EndOffsetForEpoch(l.LatestEpoch()); tc.wantLEO > 0 && ep != int32((tc.wantLEO/2-1)/10) {
			t.Fatalf("Truncate(%d): latest epoch %d", tc.to, ep)
		}
	}
	if l.LatestEpoch() != -1 {
		t.Fatalf("epochs survive truncation to 0: %d", l.LatestEpoch())
	}
	if info := mustAppend(t, l, simple(1, 10, 1), 7); info.BaseOffset != 0 || l.LatestEpoch() != 7 {
		t.Fatalf("append after truncation: %+v epoch %d", info, l.LatestEpoch())
	}
}
