package storage

import (
	"os"
	"path/filepath"
	"testing"
)

// crash abandons a log the way a process crash would: files are closed but
// nothing is flushed, snapshotted or checkpointed.
func crash(l *Log) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.segmentList() {
		s.closeNoFlush()
	}
	l.mu.closed = true
}

func activeLogFile(t *testing.T, dir string) string {
	t.Helper()
	bases, err := cleanDirAndListSegments(dir)
	if err != nil || len(bases) == 0 {
		t.Fatalf("listing segments: %v %v", bases, err)
	}
	return segmentFileName(dir, bases[len(bases)-1], logFileSuffix)
}

func TestRecoveryDropsTornOrCorruptTail(t *testing.T) {
	tests := []struct {
		name    string
		damage  func(t *testing.T, path string, lastBatchSize int64)
		segSize int64
	}{
		{"torn write mid-batch", func(t *testing.T, path string, last int64) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()-last/2); err != nil {
				t.Fatal(err)
			}
		}, 1 << 20},
		{"torn write mid-header", func(t *testing.T, path string, last int64) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()-last+20); err != nil {
				t.Fatal(err)
			}
		}, 1 << 20},
		{"flipped byte fails CRC", func(t *testing.T, path string, last int64) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fi, _ := f.Stat()
			b := []byte{0}
			f.ReadAt(b, fi.Size()-3)
			b[0] ^= 0xff
			f.WriteAt(b, fi.Size()-3)
		}, 1 << 20},
		{"torn write in a multi-segment log", func(t *testing.T, path string, last int64) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()-1); err != nil {
				t.Fatal(err)
			}
		}, 2048},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.SegmentBytes = tc.segSize
			l := openTestLog(t, dir, cfg, OpenOptions{})
			const n = 30
			var lastSize int64
			for i := 0; i < n; i++ {
				b := simple(3, 50, int64(i))
				lastSize = int64(len(b))
				mustAppend(t, l, b, 1)
			}
			crash(l)
			tc.damage(t, activeLogFile(t, dir), lastSize)

			l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: false, RecoveryPoint: 0})
			defer l.Close()
			if got, want := l.LogEndOffset(), int64(3*(n-1)); got != want {
				t.Fatalf("LEO after recovery = %d, want %d", got, want)
			}
			got := readAll(t, l, 0)
			if len(got) != n-1 {
				t.Fatalf("recovered %d batches, want %d", len(got), n-1)
			}
			for i, h := range got {
				if h.BaseOffset != int64(3*i) {
					t.Fatalf("batch %d has base %d", i, h.BaseOffset)
				}
			}
			info := mustAppend(t, l, simple(1, 5, 99), 1)
			if info.BaseOffset != int64(3*(n-1)) {
				t.Fatalf("next append at %d, want %d", info.BaseOffset, 3*(n-1))
			}
		})
	}
}

func TestRecoveryDeletesSegmentsAfterCorruption(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := openTestLog(t, dir, cfg, OpenOptions{})
	for i := 0; i < 40; i++ {
		mustAppend(t, l, simple(1, 60, int64(i)), 0)
	}
	segs := l.segmentList()
	if len(segs) < 4 {
		t.Fatalf("need several segments, have %d", len(segs))
	}
	second := segs[1]
	crash(l)
	// Corrupt the first batch of the second segment.
	path := segmentFileName(dir, second.baseOffset, logFileSuffix)
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt([]byte{0xff, 0xff}, 40)
	f.Close()

	l = openTestLog(t, dir, cfg, OpenOptions{})
	defer l.Close()
	if l.LogEndOffset() != second.baseOffset {
		t.Fatalf("LEO = %d, want %d (start of corrupt segment)", l.LogEndOffset(), second.baseOffset)
	}
	if got := len(readAll(t, l, 0)); int64(got) != second.baseOffset {
		t.Fatalf("read %d batches", got)
	}
}

func TestMissingOrCorruptIndexesAreRebuilt(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := openTestLog(t, dir, cfg, OpenOptions{})
	for i := 0; i < 100; i++ {
		mustAppend(t, l, simple(2, 40, int64(1000+i)), 0)
	}
	segs := l.segmentList()
	if len(segs) < 3 {
		t.Fatalf("need 3 segments, have %d", len(segs))
	}
	entries := segs[0].offsetIndex.len()
	if entries == 0 {
		t.Fatal("first segment has no index entries to lose")
	}
	tsQuery := int64(1000 + 50)
	wantOff, wantTs, _, _ := l.OffsetForTimestamp(tsQuery)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Segment 0: index removed. Segment 1: index with a torn entry and time
	// index garbage. Segment 2: offset index pointing past the log.
	os.Remove(segmentFileName(dir, segs[0].baseOffset, indexFileSuffix))
	os.WriteFile(segmentFileName(dir, segs[1].baseOffset, indexFileSuffix), []byte{1, 2, 3}, 0o644)
	os.WriteFile(segmentFileName(dir, segs[1].baseOffset, timeIndexFileSuffix), []byte{0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2}, 0o644)
	os.WriteFile(segmentFileName(dir, segs[2].baseOffset, indexFileSuffix), []byte{0, 0, 0, 1, 0x7f, 0, 0, 0}, 0o644)

	l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: true})
	defer l.Close()
	re := l.segmentList()
	if got := re[0].offsetIndex.len(); got != entries {
		t.Fatalf("rebuilt index of segment 0 has %d entries, want %d", got, entries)
	}
	if re[1].offsetIndex.len() == 0 || re[1].timeIndex.len() == 0 {
		t.Fatal("segment 1 indexes not rebuilt")
	}
	if _, pos := re[2].offsetIndex.lastEntry(); pos >= re[2].size.Load() {
		t.Fatalf("segment 2 index still points past the log: %d", pos)
	}
	if got := len(readAll(t, l, 0)); got != 100 {
		t.Fatalf("read %d batches after rebuild", got)
	}
	off, ts, _, ok := l.OffsetForTimestamp(tsQuery)
	if !ok || off != wantOff || ts != wantTs {
		t.Fatalf("OffsetForTimestamp after rebuild = %d,%d,%v want %d,%d", off, ts, ok, wantOff, wantTs)
	}
	// The rebuilt index reaches disk on close.
	l.Close()
	fi, err := os.Stat(segmentFileName(dir, segs[0].baseOffset, indexFileSuffix))
	if err != nil || fi.Size() != int64(entries*offsetIndexEntrySize) {
		t.Fatalf("index file after close: %v %v", fi, err)
	}
}

func TestOpenRemovesLeftoverFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	mustAppend(t, l, simple(1, 10, 1), 0)
	l.Close()
	leftovers := []string{
		segmentFileName(dir, 5, logFileSuffix+deletedFileSuffix),
		segmentFileName(dir, 77, indexFileSuffix), // orphan index
		filepath.Join(dir, "x.tmp"),
	}
	for _, p := range leftovers {
		os.WriteFile(p, []byte("junk"), 0o644)
	}
	l = openTestLog(t, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	for _, p := range leftovers {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s survived open", filepath.Base(p))
		}
	}
}

func TestCleanReopenWithoutRecoveryKeepsState(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	for i := 0; i < 50; i++ {
		mustAppend(t, l, simple(2, 40, int64(i*10)), int32(i/10))
	}
	leo := l.LogEndOffset()
	maxOff, maxTs, _ := l.MaxTimestampOffset()
	l.Close()
	l = openTestLog(t, dir, testConfig(), OpenOptions{CleanShutdown: true, RecoveryPoint: leo})
	defer l.Close()
	if l.LogEndOffset() != leo || l.RecoveryPoint() != leo {
		t.Fatalf("LEO %d RP %d, want %d", l.LogEndOffset(), l.RecoveryPoint(), leo)
	}
	if o, ts, _ := l.MaxTimestampOffset(); o != maxOff || ts != maxTs {
		t.Fatalf("max timestamp after reopen %d@%d, want %d@%d", ts, o, maxTs, maxOff)
	}
	if l.LatestEpoch() != 4 {
		t.Fatalf("latest epoch %d", l.LatestEpoch())
	}
}
