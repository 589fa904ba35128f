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
