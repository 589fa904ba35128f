package storage

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestAppendReadRoundTripAcrossRolledSegments(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	var want []int64 // base offset of each batch
	var next int64
	for i := 0; i < 200; i++ {
		n := 1 + i%5
		info := mustAppend(t, l, simple(n, 40, int64(1000+i)), 3)
		if info.BaseOffset != next || info.LastOffset != next+int64(n-1) {
			t.Fatalf("batch %d: got offsets [%d,%d], want [%d,%d]", i, info.BaseOffset, info.LastOffset, next, next+int64(n-1))
		}
		want = append(want, next)
		next += int64(n)
	}
	if l.NumSegments() < 5 {
		t.Fatalf("expected many segments with segment.bytes=4096, got %d", l.NumSegments())
	}
	check := func(l *Log) {
		t.Helper()
		got := readAll(t, l, 0)
		if len(got) != len(want) {
			t.Fatalf("read %d batches, want %d", len(got), len(want))
		}
		for i, h := range got {
			if h.BaseOffset != want[i] || h.PartitionLeaderEpoch != 3 {
				t.Fatalf("batch %d: base %d epoch %d, want base %d epoch 3", i, h.BaseOffset, h.PartitionLeaderEpoch, want[i])
			}
		}
		// Reading from an offset inside a batch returns that whole batch.
		for i := range want {
			if i+1 < len(want) && want[i+1]-want[i] > 1 {
				res, err := l.Read(want[i]+1, 1, l.LogEndOffset(), true)
				if err != nil {
					t.Fatal(err)
				}
				if hs := splitBatches(t, res.Data); len(hs) != 1 || hs[0].BaseOffset != want[i] {
					t.Fatalf("read inside batch %d returned %+v", want[i], hs)
				}
			}
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	if l.LogEndOffset() != next {
		t.Fatalf("LEO after reopen = %d, want %d", l.LogEndOffset(), next)
	}
	check(l)
}

func TestReadLimits(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	var sizes []int
	for i := 0; i < 10; i++ {
		b := simple(2, 50, 1)
		sizes = append(sizes, len(b))
		mustAppend(t, l, b, 0)
	} // offsets 0..19, batches of 2
	tests := []struct {
		name        string
		offset      int64
		maxBytes    int
		maxOffset   int64
		minOne      bool
		wantBatches int
		wantFirst   int64
		wantErr     error
	}{
		{"everything", 0, 1 << 20, 20, true, 10, 0, nil},
		{"maxBytes cuts at batch boundary", 0, sizes[0]*3 + 5, 20, true, 3, 0, nil},
		{"minOneBatch exceeds maxBytes", 4, 1, 20, true, 1, 4, nil},
		{"no minOneBatch and too small", 4, 1, 20, false, 0, 0, nil},
		{"high watermark excludes batch ending at it", 0, 1 << 20, 5, true, 2, 0, nil},
		{"high watermark on boundary", 0, 1 << 20, 6, true, 3, 0, nil},
		{"offset at LEO is empty", 20, 1 << 20, 20, true, 0, 0, nil},
		{"offset at high watermark is empty", 6, 1 << 20, 6, true, 0, 0, nil},
		{"offset beyond LEO", 21, 1 << 20, 21, true, 0, 0, kerr.OffsetOutOfRange},
		{"negative offset", -1, 1 << 20, 20, true, 0, 0, kerr.OffsetOutOfRange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := l.Read(tc.offset, tc.maxBytes, tc.maxOffset, tc.minOne)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if res.LogEndOffset != 20 || res.LogStartOffset != 0 {
				t.Fatalf("offsets in result: %+v", res)
			}
			hs := splitBatches(t, res.Data)
			if len(hs) != tc.wantBatches {
				t.Fatalf("got %d batches, want %d", len(hs), tc.wantBatches)
			}
			if len(hs) > 0 && hs[0].BaseOffset != tc.wantFirst {
				t.Fatalf("first batch %d, want %d", hs[0].BaseOffset, tc.wantFirst)
			}
		})
	}
}

func TestAppendRejectsOversizedAndMalformedBatches(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 500
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	if _, err := l.Append(simple(1, 600, 1), 0); !errors.Is(err, kerr.RecordListTooLarge) {
		t.Fatalf("oversized batch: err = %v", err)
	}
	b := simple(1, 10, 1)
	if _, err := l.Append(b[:len(b)-1], 0); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("short batch: err = %v", err)
	}
	if l.LogEndOffset() != 0 {
		t.Fatalf("LEO moved to %d", l.LogEndOffset())
	}
}

func TestSegmentMsRollsByBatchTimestamp(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.SegmentMs = 1000
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	mustAppend(t, l, simple(1, 10, 10_000), 0)
	mustAppend(t, l, simple(1, 10, 10_900), 0)
	if l.NumSegments() != 1 {
		t.Fatalf("rolled too early: %d segments", l.NumSegments())
	}
	mustAppend(t, l, simple(1, 10, 11_001), 0)
	if l.NumSegments() != 2 {
		t.Fatalf("segment.ms did not roll: %d segments", l.NumSegments())
	}
}

func TestFullIndexForcesRoll(t *testing.T) {
	cfg := testConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 0 // an entry for every batch after the first
	cfg.SegmentIndexBytes = 4 * offsetIndexEntrySize
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	for i := 0; i < 12; i++ {
		// A constant timestamp keeps the (smaller) time index from filling.
		mustAppend(t, l, simple(1, 10, 5), 0)
	}
	// 1 unindexed + 4 indexed batches fill a segment's 4-entry offset index.
	if got := l.NumSegments(); got != 3 {
		t.Fatalf("got %d segments, want 3", got)
	}
	if got := readAll(t, l, 0); len(got) != 12 {
		t.Fatalf("read %d batches", len(got))
	}
}

func TestFlushMessagesAdvancesRecoveryPoint(t *testing.T) {
	cfg := testConfig()
	cfg.FlushMessages = 3
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	mustAppend(t, l, simple(2, 10, 1), 0)
	if l.RecoveryPoint() != 0 {
		t.Fatalf("flushed too early: recovery point %d", l.RecoveryPoint())
	}
	mustAppend(t, l, simple(1, 10, 1), 0)
	if l.RecoveryPoint() != 3 {
		t.Fatalf("recovery point %d, want 3", l.RecoveryPoint())
	}
}

func TestFlushIfDueHonoursFlushMs(t *testing.T) {
	clock := &fakeClock{ms: 1000}
	cfg := testConfig()
	cfg.FlushMs = 500
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	defer l.Close()
	mustAppend(t, l, simple(1, 10, 1), 0)
	clock.ms += 499
	if err := l.FlushIfDue(); err != nil || l.RecoveryPoint() != 0 {
		t.Fatalf("flushed before flush.ms: rp=%d err=%v", l.RecoveryPoint(), err)
	}
	clock.ms += 1
	if err := l.FlushIfDue(); err != nil || l.RecoveryPoint() != 1 {
		t.Fatalf("not flushed after flush.ms: rp=%d err=%v", l.RecoveryPoint(), err)
	}
}

func TestHighWatermarkIsClamped(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	mustAppend(t, l, simple(5, 10, 1), 0)
	for _, tc := range []struct{ set, want int64 }{{3, 3}, {99, 5}, {-4, 0}} {
		l.SetHighWatermark(tc.set)
		if got := l.HighWatermark(); got != tc.want {
			t.Errorf("SetHighWatermark(%d): got %d want %d", tc.set, got, tc.want)
		}
	}
}

func TestConcurrentReadersDuringAppends(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	done := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 3; r++ {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				leo := l.LogEndOffset()
				res, err := l.Read(0, 1<<16, leo, true)
				if err != nil {
					errs <- err
					return
				}
				var next int64
				for d := res.Data; len(d) > 0; {
					h, err := parseStoredHeader(d)
					if err != nil || h.BaseOffset != next || verifyBatchCRC(d[:h.TotalSize()]) != nil {
						errs <- errors.New("reader saw a broken or out-of-order batch")
						return
					}
					next = h.LastOffset() + 1
					d = d[h.TotalSize():]
				}
			}
		}()
	}
	for i := 0; i < 300; i++ {
		mustAppend(t, l, simple(2, 30, int64(i)), 0)
	}
	close(done)
	for r := 0; r < 3; r++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A compacted log rolls by max.compaction.lag.ms when that is shorter than
// segment.ms, so its records become cleanable (Kafka's maxSegmentMs).
func TestCompactedLogRollsByMaxCompactionLag(t *testing.T) {
	tests := []struct {
		name      string
		compact   bool
		maxLagMs  int64
		wantRolls bool
	}{
		{"compacted, lag shorter than segment.ms", true, 100, true},
		{"compacted, no lag bound", true, math.MaxInt64, false},
		{"delete policy ignores the lag", false, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.SegmentBytes = 1 << 30
			cfg.SegmentMs = 7 * 24 * 3600 * 1000
			cfg.Compact, cfg.Delete = tt.compact, !tt.compact
			cfg.MaxCompactionLagMs = tt.maxLagMs
			l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
			defer l.Close()
			mustAppend(t, l, simple(1, 10, 1_000_000), 0)
			mustAppend(t, l, simple(1, 10, 1_000_500), 0)
			if rolled := l.NumSegments() > 1; rolled != tt.wantRolls {
				t.Fatalf("%d segments, want a roll: %v", l.NumSegments(), tt.wantRolls)
			}
		})
	}
}
