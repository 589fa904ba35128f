package storage

import (
	"testing"
)

// BenchmarkAppend appends 1 KiB batches; the hot path should not allocate.
func BenchmarkAppend(b *testing.B) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 64 << 20
	l := openTestLog(b, b.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	batch := testBatch{records: 10, valueSize: 1024/10 - 8, firstTs: 1, tsStep: 1}.build()
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := l.Append(batch, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: appends thousands of batches to count allocations (make test never passes -short)")
	}
	cfg := DefaultConfig()
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{})
	defer l.Close()
	batch := simple(5, 100, 1)
	mustAppend(t, l, batch, 0)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := l.Append(batch, 0); err != nil {
			t.Fatal(err)
		}
	})
	// Index slices grow amortized; anything near one per append is a leak.
	if allocs > 0.1 {
		t.Fatalf("Append allocates %.2f times per call", allocs)
	}
}

// BenchmarkCreatePartitions creates 10,000 new partitions in one log dir
// through OpenAll, as a CreateTopics of that many partitions does; the
// time per op is the whole creation (see docs/PERFORMANCE.md).
func BenchmarkCreatePartitions(b *testing.B) {
	const n = 10_000
	cfg := testConfig()
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		m, err := OpenManager(ManagerConfig{Dirs: []string{dir}, Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		reqs := make([]OpenRequest, n)
		for i := range reqs {
			reqs[i] = OpenRequest{TP: TopicPartition{Topic: "many", Partition: int32(i)}, TopicID: [16]byte{1}, Cfg: cfg}
		}
		b.StartTimer()
		if _, err := m.OpenAll(reqs, 0); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := m.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
