package storage

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMoveLogUnderLoad moves a log to the other log dir while it is
// appended to: every append that succeeded is in the moved log at its
// offset, appends resume on the new log, the old directory is gone, and a
// restart finds the log in its new dir only.
func TestMoveLogUnderLoad(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	tp := TopicPartition{Topic: "t", Partition: 0}
	if err := m.PreferDir(tp, d1); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	l, err := m.GetOrCreate(tp, [16]byte{7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.DirOf(tp) != d1 {
		t.Fatalf("created in %s, want the preferred %s", m.DirOf(tp), d1)
	}
	for range 50 {
		mustAppend(t, l, simple(3, 100, 1), 2)
	}
	l.SetHighWatermark(l.LogEndOffset())

	var mu sync.Mutex
	acked := map[int64]bool{} // base offsets of successful appends
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			cur := m.Get(tp)
			if cur == nil {
				continue
			}
			info, err := cur.Append(simple(2, 100, 2), 2)
			if err != nil {
				if !errors.Is(err, kerr.KafkaStorageError) {
					t.Errorf("append during the move: %v", err)
					return
				}
				continue // the old log closed under us: take the new one
			}
			mu.Lock()
			acked[info.BaseOffset] = true
			mu.Unlock()
		}
	}()

	nl, err := m.MoveLog(tp, d2)
	if err != nil {
		t.Fatal(err)
	}
	// Keep appending to the new log for a while.
	for deadline := 0; deadline < 1000; deadline++ {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n > 200 && nl.LogEndOffset() > l.LogEndOffset()+20 {
			break
		}
		mustAppend(t, nl, simple(1, 10, 3), 2)
	}
	close(stop)
	wg.Wait()

	if m.DirOf(tp) != d2 || m.Get(tp) != nl || nl.Dir() != filepath.Join(d2, tp.String()) {
		t.Fatalf("after the move: dir %s, log %s", m.DirOf(tp), nl.Dir())
	}
	if _, err := os.Stat(filepath.Join(d1, tp.String())); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old directory still there: %v", err)
	}
	if left, _ := filepath.Glob(filepath.Join(d1, tp.String()+".*")); len(left) != 0 {
		t.Fatalf("old directory left under another name: %v", left)
	}
	if nl.TopicID() != [16]byte{7} || nl.LogStartOffset() != 0 || nl.HighWatermark() < 150 {
		t.Fatalf("moved log: topic id %x, log start %d, high watermark %d", nl.TopicID(), nl.LogStartOffset(), nl.HighWatermark())
	}
	got := readAll(t, nl, 0)
	bases := map[int64]bool{}
	next := int64(0)
	for _, h := range got {
		if h.BaseOffset != next {
			t.Fatalf("gap or overlap in the moved log at offset %d (batch at %d)", next, h.BaseOffset)
		}
		bases[h.BaseOffset] = true
		next = h.LastOffset() + 1
	}
	if next != nl.LogEndOffset() {
		t.Fatalf("batches end at %d, log end offset %d", next, nl.LogEndOffset())
	}
	mu.Lock()
	for b := range acked {
		if !bases[b] {
			t.Errorf("acknowledged batch at offset %d lost by the move", b)
		}
	}
	mu.Unlock()
	leo := nl.LogEndOffset()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m2 := openTestManager(t, d1, d2)
	defer m2.Close()
	if got := m2.DirOf(tp); got != d2 {
		t.Fatalf("after restart the log is in %q, want %s", got, d2)
	}
	rl, err := m2.GetOrCreate(tp, [16]byte{7}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, rl, 0)); rl.LogEndOffset() != leo || n != len(got) {
		t.Fatalf("after restart: LEO %d and %d batches, want %d and %d", rl.LogEndOffset(), n, leo, len(got))
	}
}

// TestMoveLogRefusals: Kafka's errors for a bad destination.
func TestMoveLogRefusals(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	defer m.Close()
	tp := TopicPartition{Topic: "t", Partition: 0}
	if _, err := m.MoveLog(tp, t.TempDir()); !errors.Is(err, kerr.LogDirNotFound) {
		t.Fatalf("move to a dir outside log.dirs: %v, want LOG_DIR_NOT_FOUND", err)
	}
	if _, err := m.MoveLog(tp, d2); !errors.Is(err, kerr.ReplicaNotAvailable) {
		t.Fatalf("move of a log not hosted: %v, want REPLICA_NOT_AVAILABLE", err)
	}
	l, err := m.GetOrCreate(tp, [16]byte{1}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	same, err := m.MoveLog(tp, m.DirOf(tp))
	if err != nil || same != l {
		t.Fatalf("move to the dir it is in: %v (same log: %v)", err, same == l)
	}
}

// TestMoveLogKeepsCleanerCheckpoint: the moved log's cleaner checkpoint
// moves with it to the new dir's cleaner-offset-checkpoint.
func TestMoveLogKeepsCleanerCheckpoint(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	tp := TopicPartition{Topic: "t", Partition: 0}
	if err := m.PreferDir(tp, d1); err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate(tp, [16]byte{7}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		mustAppend(t, l, simple(2, 10, 1), 1)
	}
	src := m.dirByPath(d1)
	m.cleaner.mu.Lock()
	m.cleaner.mu.checkpoints[src][tp] = 6
	m.cleaner.mu.Unlock()
	if err := m.cleaner.writeCheckpoint(src); err != nil {
		t.Fatal(err)
	}
	if _, err := m.MoveLog(tp, d2); err != nil {
		t.Fatal(err)
	}
	if got := m.CleanerCheckpoint(tp); got != 6 {
		t.Fatalf("cleaner checkpoint after the move: %d, want 6", got)
	}
	for dir, want := range map[string]int64{d1: -1, d2: 6} {
		cp, err := ReadOffsetCheckpoint(filepath.Join(dir, CleanerCheckpointFile))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := cp[tp]
		if !ok {
			got = -1
		}
		if got != want {
			t.Fatalf("%s in %s: %d, want %d (-1: none)", CleanerCheckpointFile, dir, got, want)
		}
	}
}

// TestBeginMoveRegistersAtOnce: once BeginMove returns, the move is
// reported (DescribeLogDirs' future replica) and a second one is refused,
// before any byte is copied.
func TestBeginMoveRegistersAtOnce(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	tp := TopicPartition{Topic: "t", Partition: 0}
	if err := m.PreferDir(tp, d1); err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreate(tp, [16]byte{7}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simple(2, 10, 1), 1)
	run, err := m.BeginMove(tp, d2)
	if err != nil {
		t.Fatal(err)
	}
	if mv := m.Moving(tp); mv == nil || mv.Dir != d2 {
		t.Fatalf("after BeginMove: progress %+v, want a move to %s", mv, d2)
	}
	if _, err := m.BeginMove(tp, d2); !errors.Is(err, kerr.ReplicaNotAvailable) {
		t.Fatalf("second move: %v, want REPLICA_NOT_AVAILABLE", err)
	}
	nl, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if m.Moving(tp) != nil || m.DirOf(tp) != d2 || nl.LogEndOffset() != 2 {
		t.Fatalf("after the move: moving %v, dir %s, log end %d", m.Moving(tp), m.DirOf(tp), nl.LogEndOffset())
	}
}
