package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestBatchesIteratesAndStopsAtTruncatedTail(t *testing.T) {
	var region []byte
	var starts []int
	for i, c := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		h := sampleHeader(3)
		h.BaseOffset = int64(10 * i)
		starts = append(starts, len(region))
		region = append(region, mustBuild(t, h, sampleRecords(3, 50), c)...)
	}
	full := len(region)
	for cut := 0; cut <= full; cut++ {
		it := NewBatches(region[:cut])
		n := 0
		for it.Next() {
			if it.Position() != starts[n] || it.Header().BaseOffset != int64(10*n) || len(it.Batch()) != it.Header().TotalSize() {
				t.Fatalf("cut %d: batch %d at %d header %+v", cut, n, it.Position(), it.Header())
			}
			n++
		}
		if it.Err() != nil {
			t.Fatalf("cut %d: truncation reported as error %v", cut, it.Err())
		}
		want := 0
		for _, s := range append(starts[1:], full) {
			if s <= cut {
				want++
			}
		}
		if n != want {
			t.Fatalf("cut %d: %d batches, want %d", cut, n, want)
		}
		end := 0
		for _, s := range append(starts[1:], full) {
			if s <= cut {
				end = s
			}
		}
		if len(it.Remaining()) != cut-end {
			t.Fatalf("cut %d: %d bytes remaining, want the %d-byte tail", cut, len(it.Remaining()), cut-end)
		}
	}
}

func TestNextBatchCorruption(t *testing.T) {
	good := mustBuild(t, sampleHeader(1), sampleRecords(1, 5), CodecNone)
	shortLen := bytes.Clone(good)
	binary.BigEndian.PutUint32(shortLen[offLength:], 48)
	badMagic := bytes.Clone(good)
	badMagic[offMagic] = 1
	for name, b := range map[string][]byte{"length below v2 minimum": shortLen, "magic 1": badMagic} {
		_, _, rest, err := NextBatch(b)
		if !errors.Is(err, kerr.CorruptMessage) || len(rest) != len(b) {
			t.Errorf("%s: err %v", name, err)
		}
		it := NewBatches(append(bytes.Clone(good), b...))
		if !it.Next() || it.Next() || !errors.Is(it.Err(), kerr.CorruptMessage) {
			t.Errorf("%s: iterator did not stop with corruption after the good batch: %v", name, it.Err())
		}
	}
	if _, _, _, err := NextBatch(nil); !errors.Is(err, ErrTruncated) {
		t.Errorf("empty: %v", err)
	}
}
