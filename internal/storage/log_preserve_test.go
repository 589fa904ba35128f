package storage

import (
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
)

// at returns a simple batch whose base offset is base, as an
// offset-preserving mirror sends it.
func at(base int64, n int) []byte {
	b := simple(n, 20, 1000+base)
	record.SetBaseOffset(b, base)
	return b
}

func appendKeeping(l *Log, batch []byte) (AppendInfo, error) {
	info, _, err := l.AppendTxnUnflushed(batch, 3, TxnAppend{KeepBaseOffset: true})
	return info, err
}

// A log of a vltava.preserve.offsets topic appends each batch at its own
// base offset: gaps are kept (also across a roll, and one past the 32-bit
// relative offsets of a segment), reads skip them as in a compacted log,
// a batch below the log end offset is refused without changing anything,
// and the offsets survive a restart.
func TestKeepBaseOffsetAppendsAtTheBatchOffsetKeepingGaps(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	steps := []struct {
		base int64
		n    int
	}{{5, 3}, {8, 2}, {20, 4}, {100, 1}, {101, 30}, {math.MaxInt32 + 500, 2}}
	for _, s := range steps {
		info, err := appendKeeping(l, at(s.base, s.n))
		if err != nil {
			t.Fatalf("append at %d: %v", s.base, err)
		}
		if info.BaseOffset != s.base || info.LastOffset != s.base+int64(s.n)-1 {
			t.Fatalf("append at %d: landed [%d, %d]", s.base, info.BaseOffset, info.LastOffset)
		}
	}
	leo := int64(math.MaxInt32 + 502)
	if l.LogEndOffset() != leo {
		t.Fatalf("log end offset %d, want %d", l.LogEndOffset(), leo)
	}

	for _, bad := range []struct {
		base int64
		n    int
	}{{0, 1}, {leo - 1, 3}, {leo - 2, 1}} {
		_, err := appendKeeping(l, at(bad.base, bad.n))
		if !errors.Is(err, kerr.OffsetOutOfRange) {
			t.Fatalf("append at %d below the log end offset %d: %v, want OFFSET_OUT_OF_RANGE", bad.base, leo, err)
		}
	}
	if l.LogEndOffset() != leo {
		t.Fatalf("a refused append moved the log end offset to %d", l.LogEndOffset())
	}

	check := func(l *Log) {
		t.Helper()
		var got []int64
		for _, h := range readAll(t, l, 0) {
			got = append(got, h.BaseOffset)
		}
		want := []int64{5, 8, 20, 100, 101, math.MaxInt32 + 500}
		if len(got) != len(want) {
			t.Fatalf("batches at %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("batches at %v, want %v", got, want)
			}
		}
		// A read inside a gap starts at the next batch.
		res, err := l.Read(50, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatalf("Read(50): %v", err)
		}
		if hs := splitBatches(t, res.Data); len(hs) == 0 || hs[0].BaseOffset != 100 {
			t.Fatalf("Read(50) starts at %v, want the batch at 100", hs)
		}
	}
	check(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, testConfig(), OpenOptions{})
	defer l.Close()
	if l.LogEndOffset() != leo {
		t.Fatalf("after a restart the log end offset is %d, want %d", l.LogEndOffset(), leo)
	}
	check(l)

	// Without the flag the next append takes the log end offset, whatever
	// the batch says.
	info, err := l.Append(simple(1, 20, 5000), 3)
	if err != nil || info.BaseOffset != leo {
		t.Fatalf("plain append: %+v, %v; want base %d", info, err, leo)
	}
}
