package storage

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// failure is one call of the DirFailureHandler.
type failure struct {
	dir        string
	partitions []TopicPartition
	all        bool
}

// failureRecorder collects DirFailureHandler calls.
type failureRecorder struct {
	mu    sync.Mutex
	calls []failure
}

func (r *failureRecorder) handle(dir string, tps []TopicPartition, all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, failure{dir, slices.Clone(tps), all})
}

// waitCalls polls until n failures were handled.
func (r *failureRecorder) waitCalls(t *testing.T, n int) []failure {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		calls := slices.Clone(r.calls)
		r.mu.Unlock()
		if len(calls) >= n {
			return calls
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dir failures handled within 10s, want %d", len(calls), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// openFaultyManager opens a Manager over dirs whose files go through a
// fault-injecting file system.
func openFaultyManager(t *testing.T, dirs ...string) (*Manager, *vfs.Faulty, *failureRecorder) {
	t.Helper()
	faulty := vfs.NewFaulty(vfs.OS)
	m, err := OpenManager(ManagerConfig{Dirs: dirs, Logger: quietLogger(), FS: faulty})
	if err != nil {
		t.Fatal(err)
	}
	rec := &failureRecorder{}
	m.SetDirFailureHandler(rec.handle)
	t.Cleanup(func() { m.Close() })
	return m, faulty, rec
}

// TestWriteErrorTakesOnlyItsDirOffline is KIP-858's behaviour in the log
// manager: a write error on one dir's segment takes that dir (and only it)
// offline, its partitions cannot be opened or created again, and appends
// and reads in the other dir carry on.
func TestWriteErrorTakesOnlyItsDirOffline(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	m, faulty, rec := openFaultyManager(t, good, bad)
	cfg := testConfig()
	logs := map[TopicPartition]*Log{}
	for p := range int32(4) {
		tp := TopicPartition{Topic: "t", Partition: p}
		l, err := m.GetOrCreate(tp, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		logs[tp] = l
		mustAppend(t, l, simple(2, 50, 1), 0)
	}
	var inBad, inGood []TopicPartition
	for tp := range logs {
		if m.DirOf(tp) == bad {
			inBad = append(inBad, tp)
		} else {
			inGood = append(inGood, tp)
		}
	}
	if len(inBad) != 2 || len(inGood) != 2 {
		t.Fatalf("placement put %d partitions in one dir and %d in the other, want 2 and 2", len(inBad), len(inGood))
	}

	faulty.SetFailing(bad)
	if _, err := logs[inBad[0]].Append(simple(1, 50, 2), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append to a failing dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	calls := rec.waitCalls(t, 1)
	slices.SortFunc(calls[0].partitions, func(a, b TopicPartition) int { return int(a.Partition - b.Partition) })
	slices.SortFunc(inBad, func(a, b TopicPartition) int { return int(a.Partition - b.Partition) })
	if calls[0].dir != bad || !slices.Equal(calls[0].partitions, inBad) || calls[0].all {
		t.Fatalf("failure handled as %+v, want dir %s with %v, not all dirs", calls[0], bad, inBad)
	}
	for _, d := range m.Dirs() {
		if d.Offline != (d.Path == bad) {
			t.Fatalf("dir %s offline=%v", d.Path, d.Offline)
		}
		if d.Offline && (d.TotalBytes != -1 || d.UsableBytes != -1) {
			t.Fatalf("offline dir %s: total %d usable %d bytes, want -1 (unknown)", d.Path, d.TotalBytes, d.UsableBytes)
		}
	}
	// The failed dir's other partition is closed too, and none of them
	// comes back in a healthy dir.
	if _, err := logs[inBad[1]].Append(simple(1, 50, 2), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append to another partition of the offline dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if _, err := m.GetOrCreate(inBad[0], [16]byte{1}, cfg); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("GetOrCreate of an offline partition: %v, want KAFKA_STORAGE_ERROR", err)
	}

	for _, tp := range inGood {
		l := logs[tp]
		mustAppend(t, l, simple(3, 50, 3), 0)
		if got := readAll(t, l, 0); len(got) != 2 || l.LogEndOffset() != 5 {
			t.Fatalf("healthy dir's %s: %d batches, LEO %d; want 2 batches, LEO 5", tp, len(got), l.LogEndOffset())
		}
	}
	nl, err := m.GetOrCreate(TopicPartition{Topic: "new", Partition: 0}, [16]byte{2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, nl, simple(1, 50, 4), 0)
	if m.DirOf(TopicPartition{Topic: "new", Partition: 0}) != good {
		t.Fatalf("new partition placed in %s, want the online dir %s", m.DirOf(TopicPartition{Topic: "new", Partition: 0}), good)
	}
	if err := m.CheckpointAll(); err != nil {
		t.Fatalf("checkpoints of the online dir: %v", err)
	}

	faulty.SetFailing(good, bad)
	if _, err := nl.Append(simple(1, 50, 5), 0); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("append with every dir failing: %v", err)
	}
	if calls := rec.waitCalls(t, 2); calls[1].dir != good || !calls[1].all {
		t.Fatalf("second failure handled as %+v, want dir %s and all dirs offline", calls[1], good)
	}
	if _, err := m.GetOrCreate(TopicPartition{Topic: "other", Partition: 0}, [16]byte{3}, cfg); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("creating a partition with every dir offline: %v, want KAFKA_STORAGE_ERROR", err)
	}
}

// TestReadErrorTakesDirOffline: a failing read (a fetch) is a disk error
// like any other.
func TestReadErrorTakesDirOffline(t *testing.T) {
	dir := t.TempDir()
	m, faulty, rec := openFaultyManager(t, dir)
	l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, simple(2, 50, 1), 0)
	faulty.SetFailing(dir)
	if _, err := l.ReadRegion(0, 1<<20, l.LogEndOffset(), true); err == nil {
		t.Fatal("read from a failing dir succeeded")
	}
	if calls := rec.waitCalls(t, 1); calls[0].dir != dir || !calls[0].all {
		t.Fatalf("failure handled as %+v", calls[0])
	}
}

// TestPlacementPrefersFewestPartitionsThenFreeSpace pins the rule: fewest
// partitions first, most usable bytes among equals.
func TestPlacementPrefersFewestPartitionsThenFreeSpace(t *testing.T) {
	d1, d2 := t.TempDir(), t.TempDir()
	m := openTestManager(t, d1, d2)
	defer m.Close()
	m.dirs[0].usableBytes.Store(100)
	m.dirs[1].usableBytes.Store(200)
	m.mu.Lock()
	first := m.leastLoadedDirLocked()
	m.mu.Unlock()
	if first.path != d2 {
		t.Fatalf("with equal counts placed in %s, want %s (more free space)", first.path, d2)
	}
	if _, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, testConfig()); err != nil {
		t.Fatal(err)
	}
	m.dirs[0].usableBytes.Store(100)
	m.dirs[1].usableBytes.Store(200)
	m.mu.Lock()
	second := m.leastLoadedDirLocked()
	m.mu.Unlock()
	if second.path != d1 {
		t.Fatalf("placed in %s, want %s (fewer partitions despite less space)", second.path, d1)
	}
}

// TestDirUnreadableAtStartStaysOffline: a dir failing I/O at start is
// offline from the beginning (the broker starts on the others); partitions
// found in the healthy dir open, and one found nowhere is not created
// elsewhere (it may be in the dead dir) but reported offline. With every
// dir failing the Manager does not open.
func TestDirUnreadableAtStartStaysOffline(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	cfg := testConfig()
	// A first run puts one partition in each dir.
	m := openTestManager(t, good, bad)
	for p := range int32(2) {
		l, err := m.GetOrCreate(TopicPartition{Topic: "t", Partition: p}, [16]byte{1}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, simple(1, 10, 1), 0)
	}
	inGood := TopicPartition{Topic: "t", Partition: 0}
	inBad := TopicPartition{Topic: "t", Partition: 1}
	if m.DirOf(inGood) != good {
		inGood, inBad = inBad, inGood
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	faulty := vfs.NewFaulty(vfs.OS)
	faulty.SetFailing(bad)
	m, err := OpenManager(ManagerConfig{Dirs: []string{good, bad}, Logger: quietLogger(), FS: faulty})
	if err != nil {
		t.Fatalf("opening with one dir unreadable: %v", err)
	}
	defer m.Close()
	rec := &failureRecorder{}
	m.SetDirFailureHandler(rec.handle)
	if calls := rec.waitCalls(t, 1); calls[0].dir != bad || calls[0].all || len(calls[0].partitions) != 0 {
		t.Fatalf("dir offline at start handled as %+v", calls[0])
	}
	if ds := m.Dirs(); ds[0].Offline || !ds[1].Offline {
		t.Fatalf("dirs %+v: want %s online and %s offline", ds, good, bad)
	}
	if l, err := m.GetOrCreate(inGood, [16]byte{1}, cfg); err != nil || l.LogEndOffset() != 1 {
		t.Fatalf("partition in the healthy dir: %v", err)
	}
	if _, err := m.GetOrCreate(inBad, [16]byte{1}, cfg); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("partition that may be in the unreadable dir: %v, want KAFKA_STORAGE_ERROR", err)
	}
	if calls := rec.waitCalls(t, 2); calls[1].dir != bad || !slices.Equal(calls[1].partitions, []TopicPartition{inBad}) {
		t.Fatalf("unplaceable partition reported as %+v", calls[1])
	}
	if m.DirOf(inBad) != "" {
		t.Fatalf("the partition was created in %s", m.DirOf(inBad))
	}

	faulty.SetFailing(good, bad)
	if _, err := OpenManager(ManagerConfig{Dirs: []string{good, bad}, Logger: quietLogger(), FS: faulty}); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("opening with every dir unreadable: %v, want KAFKA_STORAGE_ERROR", err)
	}
}
