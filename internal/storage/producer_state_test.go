package storage

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
)

func idem(pid int64, epoch int16, seq int32, n int) []byte {
	return testBatch{records: n, valueSize: 8, firstTs: 1, producerID: pid, producerEpoch: epoch, baseSeq: seq}.build()
}

func TestIdempotentProducerSequences(t *testing.T) {
	type step struct {
		batch   []byte
		wantErr error
		wantDup bool
		wantOff int64 // base offset expected (original one for duplicates)
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"in-order batches", []step{
			{idem(1, 0, 0, 3), nil, false, 0},
			{idem(1, 0, 3, 2), nil, false, 3},
		}},
		{"retry of the last batch is a duplicate", []step{
			{idem(1, 0, 0, 3), nil, false, 0},
			{idem(1, 0, 3, 2), nil, false, 3},
			{idem(1, 0, 3, 2), nil, true, 3},
			{idem(1, 0, 0, 3), nil, true, 0},
		}},
		{"only the last five batches are remembered", []step{
			{idem(1, 0, 0, 1), nil, false, 0},
			{idem(1, 0, 1, 1), nil, false, 1},
			{idem(1, 0, 2, 1), nil, false, 2},
			{idem(1, 0, 3, 1), nil, false, 3},
			{idem(1, 0, 4, 1), nil, false, 4},
			{idem(1, 0, 5, 1), nil, false, 5},
			{idem(1, 0, 1, 1), nil, true, 1},
			{idem(1, 0, 0, 1), kerr.OutOfOrderSequenceNumber, false, 0},
		}},
		{"gap in sequence", []step{
			{idem(1, 0, 0, 3), nil, false, 0},
			{idem(1, 0, 5, 1), kerr.OutOfOrderSequenceNumber, false, 0},
		}},
		{"unknown producer accepts any sequence", []step{
			{idem(9, 2, 42, 1), nil, false, 0},
			{idem(9, 2, 43, 1), nil, false, 1},
		}},
		{"fenced epoch", []step{
			{idem(1, 3, 0, 1), nil, false, 0},
			{idem(1, 2, 1, 1), kerr.InvalidProducerEpoch, false, 0},
		}},
		{"epoch bump must restart at zero", []step{
			{idem(1, 0, 0, 2), nil, false, 0},
			{idem(1, 1, 2, 1), kerr.OutOfOrderSequenceNumber, false, 0},
			{idem(1, 1, 0, 1), nil, false, 2},
			{idem(1, 0, 2, 1), kerr.InvalidProducerEpoch, false, 0},
		}},
		{"sequence wraps past MaxInt32", []step{
			{idem(1, 0, math.MaxInt32-1, 2), nil, false, 0},
			{idem(1, 0, 0, 1), nil, false, 2},
		}},
		{"producers are independent", []step{
			{idem(1, 0, 0, 1), nil, false, 0},
			{idem(2, 0, 0, 1), nil, false, 1},
			{idem(1, 0, 1, 1), nil, false, 2},
			{idem(2, 0, 0, 1), nil, true, 1},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
			defer l.Close()
			for i, s := range tc.steps {
				leo := l.LogEndOffset()
				info, err := l.Append(s.batch, 0)
				if !errors.Is(err, s.wantErr) {
					t.Fatalf("step %d: err = %v, want %v", i, err, s.wantErr)
				}
				if err != nil {
					if l.LogEndOffset() != leo {
						t.Fatalf("step %d: rejected batch moved LEO", i)
					}
					continue
				}
				if info.Duplicate != s.wantDup || info.BaseOffset != s.wantOff {
					t.Fatalf("step %d: got %+v, want dup=%v base=%d", i, info, s.wantDup, s.wantOff)
				}
				if s.wantDup && l.LogEndOffset() != leo {
					t.Fatalf("step %d: duplicate was written", i)
				}
			}
		})
	}
}

func TestProducerStateSurvivesReopen(t *testing.T) {
	for _, clean := range []bool{true, false} {
		name := map[bool]string{true: "clean close uses snapshot", false: "crash replays the log"}[clean]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := testConfig()
			cfg.SegmentBytes = 1024 // rolls take snapshots mid-way
			l := openTestLog(t, dir, cfg, OpenOptions{})
			var seq int32
			var lastBase int64
			for i := 0; i < 30; i++ {
				lastBase = mustAppend(t, l, idem(5, 1, seq, 2), 0).BaseOffset
				seq += 2
			}
			mustAppend(t, l, idem(6, 0, 0, 1), 0)
			if clean {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			} else {
				crash(l)
			}
			l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: clean})
			defer l.Close()
			info, err := l.Append(idem(5, 1, seq-2, 2), 0)
			if err != nil || !info.Duplicate || info.BaseOffset != lastBase {
				t.Fatalf("retry after reopen: %+v %v, want duplicate at %d", info, err, lastBase)
			}
			if _, err := l.Append(idem(5, 1, seq+1, 1), 0); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
				t.Fatalf("gap after reopen: %v", err)
			}
			if _, err := l.Append(idem(5, 0, 0, 1), 0); !errors.Is(err, kerr.InvalidProducerEpoch) {
				t.Fatalf("old epoch after reopen: %v", err)
			}
			if _, err := l.Append(idem(5, 1, seq, 1), 0); err != nil {
				t.Fatalf("next in sequence after reopen: %v", err)
			}
		})
	}
}

func TestCorruptSnapshotFallsBackToReplay(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	mustAppend(t, l, idem(3, 0, 0, 1), 0)
	mustAppend(t, l, idem(3, 0, 1, 1), 0)
	l.Close()
	path := segmentFileName(dir, 2, snapshotFileSuffix)
	if err := writeFileAtomically(path, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testConfig(), OpenOptions{CleanShutdown: true})
	defer l.Close()
	if info, err := l.Append(idem(3, 0, 1, 1), 0); err != nil || !info.Duplicate || info.BaseOffset != 1 {
		t.Fatalf("duplicate after snapshot loss: %+v %v", info, err)
	}
}

func TestExpiredProducersAreForgotten(t *testing.T) {
	clock := &fakeClock{ms: 10_000}
	cfg := testConfig()
	cfg.ProducerIDExpirationMs = 1000
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	defer l.Close()
	b := testBatch{records: 1, firstTs: 10_000, producerID: 4, baseSeq: 0}.build()
	mustAppend(t, l, b, 0)
	clock.ms = 10_999
	if n := l.RemoveExpiredProducers(); n != 0 {
		t.Fatalf("expired too early: %d", n)
	}
	clock.ms = 11_000
	if n := l.RemoveExpiredProducers(); n != 1 {
		t.Fatalf("removed %d producers, want 1", n)
	}
	// With no state any sequence is accepted again.
	if _, err := l.Append(idem(4, 0, 77, 1), 0); err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotEncodingRoundTrip(t *testing.T) {
	m := newProducerStateManager(t.TempDir(), 1000)
	for i := 0; i < 7; i++ {
		h := record.Header{BaseOffset: int64(i * 2), LastOffsetDelta: 1, ProducerID: 11, ProducerEpoch: 2, BaseSequence: int32(i * 2), MaxTimestamp: int64(i)}
		m.update(&h, nil)
	}
	txn := record.Header{BaseOffset: 20, ProducerID: 12, ProducerEpoch: 0, BaseSequence: 0, Attributes: 0x10 /* KIP-98 transactional bit */}
	m.update(&txn, nil)
	got, err := decodeSnapshot(m.encodeSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || *got[11] != *m.producers[11] || *got[12] != *m.producers[12] {
		t.Fatalf("round trip mismatch: %+v vs %+v", got, m.producers)
	}
	if got[11].numBatches != maxBatchesPerProducer || got[12].currentTxnFirstOffset != 20 {
		t.Fatalf("unexpected decoded state %+v %+v", got[11], got[12])
	}
	data := m.encodeSnapshot()
	data[len(data)-1] ^= 1
	if _, err := decodeSnapshot(data); !errors.Is(err, errBadSnapshot) {
		t.Fatalf("corrupted snapshot accepted: %v", err)
	}
}

// producer.id.expiration.check.interval.ms: the manager drops idle
// producers on that schedule, independently of retention checks.
func TestManagerExpiresProducersOnItsInterval(t *testing.T) {
	m, err := OpenManager(ManagerConfig{Dirs: []string{t.TempDir()}, Logger: quietLogger(), CleanerDisabled: true,
		RetentionCheckInterval: time.Hour, ProducerExpirationCheckInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := testConfig()
	cfg.ProducerIDExpirationMs = 1
	l, err := m.GetOrCreate(TopicPartition{Topic: "p", Partition: 0}, [16]byte{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, idem(4, 0, 0, 1), 0)
	m.Start()
	producers := func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.mu.producers.producers)
	}
	deadline := time.Now().Add(5 * time.Second)
	for producers() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("idle producer not expired by the periodic check")
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}
