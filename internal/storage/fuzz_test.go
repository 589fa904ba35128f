package storage

import (
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// The fuzz targets feed arbitrary bytes to what the broker reads back from
// disk at start-up: producer-state snapshots and the checkpoint files. A
// damaged file must be refused with an error, never crash the broker or
// load a state that breaks the invariants; what loads must write back and
// load again to the same state. The seed corpora, in testdata/fuzz/<target>,
// hold valid files and typical damage (truncation, a bad checksum, entries
// out of order, a wrong count).

// FuzzProducerSnapshot decodes producer-state snapshots (<offset>.snapshot).
func FuzzProducerSnapshot(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		for id, e := range got {
			if e.producerID != id || e.numBatches < 0 || e.numBatches > maxBatchesPerProducer {
				t.Fatalf("decoded entry %d: %+v", id, e)
			}
		}
		m := newProducerStateManager(t.TempDir(), 0)
		m.producers = got
		again, err := decodeSnapshot(m.encodeSnapshot())
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", got, again)
		}
	})
}

// FuzzOffsetCheckpoint reads the per-partition offset checkpoints:
// recovery-point-offset-checkpoint, log-start-offset-checkpoint,
// replication-offset-checkpoint and cleaner-offset-checkpoint share this
// format.
func FuzzOffsetCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, RecoveryPointCheckpointFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadOffsetCheckpoint(path)
		if err != nil {
			return
		}
		again := filepath.Join(dir, LogStartOffsetCheckpointFile)
		if err := WriteOffsetCheckpoint(again, got); err != nil {
			t.Fatal(err)
		}
		reread, err := ReadOffsetCheckpoint(again)
		if err != nil {
			t.Fatalf("a written checkpoint does not read back: %v", err)
		}
		if !maps.Equal(got, reread) {
			t.Fatalf("round trip changed the checkpoint: %v, then %v", got, reread)
		}
	})
}

// FuzzLeaderEpochCheckpoint loads leader-epoch-checkpoint files: what loads
// increases in epoch and start offset (the cache's invariant, which assign
// asserts), and writes back to the same entries.
func FuzzLeaderEpochCheckpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), LeaderEpochCheckpointFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := loadLeaderEpochCache(path)
		if err != nil {
			return
		}
		c.mu.Lock()
		c.assertOrderedLocked()
		c.changedLocked()
		c.mu.Unlock()
		got := c.snapshot()
		for _, e := range got {
			if e.Epoch < 0 || e.StartOffset < 0 {
				t.Fatalf("loaded a negative entry %+v", e)
			}
		}
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
		re, err := loadLeaderEpochCache(path)
		if err != nil {
			t.Fatalf("a written checkpoint does not load: %v", err)
		}
		if again := re.snapshot(); !slices.Equal(got, again) {
			t.Fatalf("round trip changed the entries: %v, then %v", got, again)
		}
	})
}

// FuzzTxnIndex decodes aborted-transaction indexes (<base>.txnindex):
// what decodes is whole entries in marker order, each with its data
// before its marker and below the segment end, and encodes back to the
// same bytes.
func FuzzTxnIndex(f *testing.F) {
	f.Add(encodeTxnIndex([]AbortedTxn{{7, 2, 6, 5}, {9, 10, 12, 13}}), int64(100))
	f.Add(append(encodeTxnIndex([]AbortedTxn{{1, 0, 1, 2}}), 0, 0), int64(10))
	f.Fuzz(func(t *testing.T, data []byte, segmentEnd int64) {
		got, err := decodeTxnIndex(data, segmentEnd)
		for i, e := range got {
			if e.FirstOffset > e.LastOffset || e.LastOffset >= segmentEnd || (i > 0 && e.LastOffset <= got[i-1].LastOffset) {
				t.Fatalf("decoded entry %d breaks the index's order: %+v", i, got)
			}
		}
		enc := encodeTxnIndex(got)
		if err == nil && !slices.Equal(enc, data) {
			t.Fatalf("a valid index does not encode back to its bytes")
		}
		if !slices.Equal(enc, data[:len(enc)]) {
			t.Fatalf("the decoded prefix does not encode back to the file's start")
		}
	})
}
