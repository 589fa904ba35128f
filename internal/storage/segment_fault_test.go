package storage

import (
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// errInjected stands in for ENOSPC or EIO from the disk.
var errInjected = errors.New("injected disk write failure")

// faultyFile wraps a segment's real file. While failWrites is set, WriteAt
// writes the first half of the buffer (a torn write, as a full disk or a
// crash mid-write leaves) and fails; while failTruncate is set, Truncate
// fails without doing anything.
type faultyFile struct {
	segmentFile
	failWrites   atomic.Bool
	failTruncate atomic.Bool
}

func (f *faultyFile) WriteAt(b []byte, off int64) (int, error) {
	if f.failWrites.Load() {
		n, _ := f.segmentFile.WriteAt(b[:len(b)/2], off)
		return n, errInjected
	}
	return f.segmentFile.WriteAt(b, off)
}

func (f *faultyFile) Truncate(size int64) error {
	if f.failTruncate.Load() {
		return errInjected
	}
	return f.segmentFile.Truncate(size)
}

// TestFailedWriteLeavesLogValid is the "never a corrupted log" guarantee: an
// append whose write fails is reported as KAFKA_STORAGE_ERROR and leaves no
// trace a reader, the next append or a restart can see.
func TestFailedWriteLeavesLogValid(t *testing.T) {
	tests := []struct {
		name         string
		failTruncate bool // the cleanup cut fails too, until the next append
	}{
		{"torn write is cut off at once", false},
		{"torn write is cut off by the next append", true},
	}
	for _, tc := range tests {
		for _, clean := range []bool{true, false} {
			t.Run(tc.name+map[bool]string{true: "/clean restart", false: "/crash"}[clean], func(t *testing.T) {
				dir := t.TempDir()
				cfg := DefaultConfig()
				l := openTestLog(t, dir, cfg, OpenOptions{})
				for range 3 {
					mustAppend(t, l, simple(2, 50, 1), 4)
				} // offsets 0-5
				seg := l.activeSegment()
				ff := &faultyFile{segmentFile: seg.log}
				seg.log = ff
				sizeBefore := l.Size()

				ff.failWrites.Store(true)
				ff.failTruncate.Store(tc.failTruncate)
				_, err := l.Append(simple(3, 50, 2), 5)
				if !errors.Is(err, kerr.KafkaStorageError) || !errors.Is(err, errInjected) {
					t.Fatalf("Append during write failure: %v, want KAFKA_STORAGE_ERROR wrapping the disk error", err)
				}
				if l.LogEndOffset() != 6 || l.Size() != sizeBefore || l.LatestEpoch() != 4 {
					t.Fatalf("after failed append: LEO %d size %d epoch %d, want LEO 6 size %d epoch 4", l.LogEndOffset(), l.Size(), l.LatestEpoch(), sizeBefore)
				}
				if got := readAll(t, l, 0); len(got) != 3 {
					t.Fatalf("readers see %d batches after a failed append, want 3", len(got))
				}
				fi, err := os.Stat(segmentFileName(dir, seg.baseOffset, logFileSuffix))
				if err != nil {
					t.Fatal(err)
				}
				if tc.failTruncate != (fi.Size() > sizeBefore) {
					t.Fatalf("file size %d after failed append with truncate failing=%v (valid bytes %d)", fi.Size(), tc.failTruncate, sizeBefore)
				}

				ff.failWrites.Store(false)
				ff.failTruncate.Store(false)
				// A smaller batch than the torn one: without the pending cut
				// its tail would be left behind in the file.
				info := mustAppend(t, l, simple(1, 10, 3), 5)
				if info.BaseOffset != 6 || info.LastOffset != 6 {
					t.Fatalf("append after the failure got offsets [%d, %d], want [6, 6]", info.BaseOffset, info.LastOffset)
				}
				if fi, _ := os.Stat(segmentFileName(dir, seg.baseOffset, logFileSuffix)); fi.Size() != l.Size() {
					t.Fatalf("file holds %d bytes, log %d: a torn tail survived", fi.Size(), l.Size())
				}

				if clean {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				} else {
					crash(l)
				}
				l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: clean})
				defer l.Close()
				got := readAll(t, l, 0)
				if l.LogEndOffset() != 7 || len(got) != 4 || got[3].BaseOffset != 6 || got[3].PartitionLeaderEpoch != 5 {
					t.Fatalf("after restart: LEO %d, %d batches (%+v), want LEO 7 and 4 batches ending at offset 6 epoch 5", l.LogEndOffset(), len(got), got)
				}
			})
		}
	}
}
