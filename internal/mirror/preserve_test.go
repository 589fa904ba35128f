package mirror

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/record"
)

// runsOf cuts at every gap and at the batch size; a run's batch, and the
// halves of a split run, keep each record at its offset and timestamp.
func TestPreserveRuns(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	var recs []*kgo.Record
	for _, off := range []int64{5, 6, 7, 10, 11, 12, 13, 20} {
		recs = append(recs, &kgo.Record{Offset: off, Timestamp: t0.Add(time.Duration(off) * time.Second), Key: []byte{byte(off)}, Value: bytes.Repeat([]byte("v"), 10),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{byte(off)}}}})
	}
	runs := runsOf(recs)
	if len(runs) != 3 || runs[0].base != 5 || len(runs[0].recs) != 3 || runs[1].base != 10 || len(runs[1].recs) != 4 || runs[2].base != 20 {
		t.Fatalf("runs %+v", runs)
	}
	a, b := runs[1].split()
	for _, r := range []run{runs[0], runs[1], a, b, runs[2]} {
		batch, err := r.batch()
		if err != nil {
			t.Fatal(err)
		}
		h, got, err := record.DecodeRecords(batch)
		if err != nil {
			t.Fatal(err)
		}
		if h.BaseOffset != r.base || h.ProducerID != -1 || int(h.LastOffsetDelta) != len(got)-1 {
			t.Fatalf("header %+v for run at %d", h, r.base)
		}
		for i, rec := range got {
			off := h.BaseOffset + int64(rec.OffsetDelta)
			if rec.Key[0] != byte(off) || rec.Headers[0].Value[0] != byte(off) || h.FirstTimestamp+rec.TimestampDelta != t0.Add(time.Duration(off)*time.Second).UnixMilli() || int(rec.OffsetDelta) != i {
				t.Fatalf("record %d of the run at %d: %+v", i, r.base, rec)
			}
		}
	}

	// 1 KiB records: a source batch of 1 MB fits in one run; 2 MB takes two.
	recs = recs[:0]
	for i := int64(0); i < 2000; i++ {
		recs = append(recs, &kgo.Record{Offset: i, Timestamp: t0, Value: make([]byte, 1024)})
	}
	runs = runsOf(recs)
	if len(runs) != 2 || runs[1].base != int64(len(runs[0].recs)) || len(runs[0].recs) < 1000 {
		t.Fatalf("2000 records of 1 KiB in %d runs, the first of %d", len(runs), len(runs[0].recs))
	}
	batch, _ := runs[0].batch()
	if len(batch) > preserveBatchBytes || len(batch) > 1<<20 {
		t.Fatalf("batch of %d bytes", len(batch))
	}
}
