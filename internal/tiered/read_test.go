package tiered

import (
	"bytes"
	"testing"

	"github.com/vltava/vltava/internal/record"
)

// segmentOf builds a segment of batches of n records each with valueLen
// bytes per value, starting at offset 0; it returns the data and where each
// batch starts.
func segmentOf(t *testing.T, batches, n, valueLen int) ([]byte, []int) {
	t.Helper()
	var data []byte
	var starts []int
	for b := 0; b < batches; b++ {
		recs := make([]record.Record, n)
		for i := range recs {
			recs[i] = record.Record{OffsetDelta: int32(i), Value: bytes.Repeat([]byte{byte(b)}, valueLen)}
		}
		h := record.Header{BaseOffset: int64(b * n), LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: 0}
		batch, err := record.BuildBatch(h, recs, record.CodecNone)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, len(data))
		data = append(data, batch...)
	}
	return data, starts
}

func TestWholeBatchesPicksBatchesHoldingTheOffset(t *testing.T) {
	data, starts := segmentOf(t, 4, 10, 100)
	size := starts[1]

	// An offset inside the second batch starts there; maxBytes bounds the rest.
	out, more, err := wholeBatches(data, 15, 2*size, false)
	if err != nil || more != 0 {
		t.Fatalf("err %v, needMore %d", err, more)
	}
	if !bytes.Equal(out, data[starts[1]:starts[3]]) {
		t.Fatalf("got %d bytes, want batches 1 and 2 (%d bytes)", len(out), starts[3]-starts[1])
	}

	// Too small a maxBytes gives nothing, unless one batch is wanted anyway.
	if out, _, _ := wholeBatches(data, 15, size-1, false); len(out) != 0 {
		t.Fatalf("maxBytes below one batch returned %d bytes", len(out))
	}
	if out, _, _ := wholeBatches(data, 15, size-1, true); !bytes.Equal(out, data[starts[1]:starts[2]]) {
		t.Fatalf("minOneBatch returned %d bytes, want one batch of %d", len(out), size)
	}

	// Past the last batch: nothing, and more data is asked for (the caller
	// stops when the segment has no more).
	out, more, err = wholeBatches(data, 40, 1<<20, true)
	if err != nil || len(out) != 0 || more != len(data)+record.BatchHeaderSize {
		t.Fatalf("past the end: %d bytes, needMore %d, err %v", len(out), more, err)
	}
}

func TestWholeBatchesAsksForMoreWhenCut(t *testing.T) {
	data, starts := segmentOf(t, 3, 10, 100)

	// The wanted batch is cut: the bytes up to its end are asked for.
	cut := data[:starts[1]+record.BatchHeaderSize+20]
	out, more, err := wholeBatches(cut, 12, 1<<20, true)
	if err != nil || len(out) != 0 || more != starts[2] {
		t.Fatalf("cut batch: %d bytes, needMore %d (want %d), err %v", len(out), more, starts[2], err)
	}

	// A skipped batch runs past the data: the next header is asked for.
	cut = data[:starts[0]+record.BatchHeaderSize+30]
	out, more, err = wholeBatches(cut, 25, 1<<20, true)
	if err != nil || len(out) != 0 || more != starts[1]+record.BatchHeaderSize {
		t.Fatalf("cut skipped batch: %d bytes, needMore %d (want %d), err %v", len(out), more, starts[1]+record.BatchHeaderSize, err)
	}

	// Once a batch is taken, a cut later one just ends the answer.
	cut = data[:starts[2]+5]
	out, more, err = wholeBatches(cut, 0, 1<<20, false)
	if err != nil || more != 0 || !bytes.Equal(out, data[:starts[2]]) {
		t.Fatalf("cut tail: %d bytes, needMore %d, err %v", len(out), more, err)
	}
}

func TestWholeBatchesRefusesABadLength(t *testing.T) {
	data, _ := segmentOf(t, 2, 5, 10)
	bad := append([]byte(nil), data...)
	bad[8], bad[9], bad[10], bad[11] = 0, 0, 0, 3
	if _, _, err := wholeBatches(bad, 0, 1<<20, true); err == nil {
		t.Fatal("a batch length of 3 was accepted")
	}
}
