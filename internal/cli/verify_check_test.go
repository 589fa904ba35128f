package cli

import "testing"

func TestCheckHistoryFindsEachAnomaly(t *testing.T) {
	acks := []VerifyAck{
		{Producer: 0, Seq: 0, Partition: 0, Offset: 0},
		{Producer: 0, Seq: 1, Partition: 0, Offset: 1},
		{Producer: 0, Seq: 2, Partition: 0, Offset: 2},
		{Producer: 0, Seq: 3, Partition: 0, Offset: 3}, // lost
		{Producer: 1, Seq: 0, Partition: 1, Offset: 0, Aborted: true},
		{Producer: 1, Seq: 1, Partition: 1, Offset: 5}, // read at 1: offset mismatch
	}
	reads := []VerifyRead{
		{Producer: 0, Seq: 0, Partition: 0, Offset: 0, Poll: 1},
		{Producer: 0, Seq: 2, Partition: 0, Offset: 1, Poll: 1},
		{Producer: 0, Seq: 1, Partition: 0, Offset: 2, Poll: 1}, // out of send order within the poll
		{Producer: 0, Seq: 2, Partition: 0, Offset: 4, Poll: 2}, // duplicated
		{Producer: 1, Seq: 0, Partition: 1, Offset: 0, Poll: 2}, // aborted read
		{Producer: 1, Seq: 1, Partition: 1, Offset: 1, Poll: 2},
		{Producer: 2, Seq: 0, Partition: 1, Offset: 2, Poll: 2}, // never acknowledged: allowed
		{Producer: 2, Seq: 1, Partition: 1, Offset: 1, Poll: 3}, // offset back across polls
	}
	r := CheckHistory(acks, reads)
	want := map[string]int64{AnomalyLost: 1, AnomalyDuplicated: 1, AnomalyIntNonMonotonic: 1, AnomalyExtNonMonotonic: 1,
		AnomalyAbortedRead: 1, AnomalyOffsetMismatch: 3}
	// Seqs 1 and 2 swapped places: both are also at the wrong offset.
	for k, n := range want {
		if r.Counts[k] != n {
			t.Errorf("%s: %d, want %d (anomalies %+v)", k, r.Counts[k], n, r.Anomalies)
		}
	}
	if r.Unacknowledged != 2 || r.Acknowledged != 5 || r.Aborted != 1 || r.Read != 8 {
		t.Errorf("totals %+v", r)
	}
	if r.OK() {
		t.Error("ok with anomalies")
	}
}

// TestCheckHistoryPipeline: the records of a consume-transform-produce
// pipeline, whose places are unknown (Offset -1) and which aborted
// transactions may have written before: only a read whose writer aborted
// is an aborted read.
func TestCheckHistoryPipeline(t *testing.T) {
	acks := []VerifyAck{
		{Producer: 0, Seq: 0, Partition: 2, Offset: -1},
		{Producer: 0, Seq: 1, Partition: 2, Offset: -1},
		{Producer: 1, Seq: 0, Partition: 0, Offset: -1},
	}
	clean := []VerifyRead{
		{Producer: 0, Seq: 0, Partition: 1, Offset: 7, Poll: 1},
		{Producer: 0, Seq: 1, Partition: 1, Offset: 9, Poll: 2},
		{Producer: 1, Seq: 0, Partition: 0, Offset: 3, Poll: 2},
	}
	if r := CheckHistory(acks, clean); !r.OK() {
		t.Fatalf("anomalies in a clean pipeline history: %+v", r.Anomalies)
	}
	dirty := append([]VerifyRead{{Producer: 0, Seq: 1, Partition: 1, Offset: 5, Poll: 1, Aborted: true}}, clean...)
	r := CheckHistory(acks, dirty)
	if r.Counts[AnomalyAbortedRead] != 1 || r.Counts[AnomalyDuplicated] != 1 || r.Counts[AnomalyOffsetMismatch] != 0 {
		t.Fatalf("counts %v, want one aborted read (also a duplicate) and no offset mismatch", r.Counts)
	}
}

func TestCheckHistoryCleanRun(t *testing.T) {
	var acks []VerifyAck
	var reads []VerifyRead
	for p := 0; p < 3; p++ {
		for s := int64(0); s < 100; s++ {
			part := int32(s % 4)
			off := int64(p)*100 + s
			acks = append(acks, VerifyAck{Producer: p, Seq: s, Partition: part, Offset: off})
			reads = append(reads, VerifyRead{Producer: p, Seq: s, Partition: part, Offset: off, Poll: int(s / 10)})
		}
	}
	if r := CheckHistory(acks, reads); !r.OK() {
		t.Fatalf("anomalies in a clean history: %+v", r.Anomalies)
	}
}
