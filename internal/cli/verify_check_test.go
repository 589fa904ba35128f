package cli

import "testing"

func TestCheckHistoryFindsEachAnomaly(t *testing.T) {
	acks := []verifyAck{
		{Producer: 0, Seq: 0, Partition: 0, Offset: 0},
		{Producer: 0, Seq: 1, Partition: 0, Offset: 1},
		{Producer: 0, Seq: 2, Partition: 0, Offset: 2},
		{Producer: 0, Seq: 3, Partition: 0, Offset: 3}, // lost
		{Producer: 1, Seq: 0, Partition: 1, Offset: 0, Aborted: true},
		{Producer: 1, Seq: 1, Partition: 1, Offset: 5}, // read at 1: offset mismatch
	}
	reads := []verifyRead{
		{Producer: 0, Seq: 0, Partition: 0, Offset: 0},
		{Producer: 0, Seq: 2, Partition: 0, Offset: 1},
		{Producer: 0, Seq: 1, Partition: 0, Offset: 2}, // reordered
		{Producer: 0, Seq: 2, Partition: 0, Offset: 4}, // duplicated
		{Producer: 1, Seq: 0, Partition: 1, Offset: 0}, // aborted read
		{Producer: 1, Seq: 1, Partition: 1, Offset: 1},
		{Producer: 2, Seq: 0, Partition: 1, Offset: 2}, // never acknowledged: allowed
	}
	r := checkHistory(acks, reads)
	want := map[string]int64{anomalyLost: 1, anomalyDuplicated: 1, anomalyReordered: 1, anomalyAbortedRead: 1, anomalyOffsetMismatch: 3}
	// Seqs 1 and 2 swapped places: both are also at the wrong offset.
	for k, n := range want {
		if r.Counts[k] != n {
			t.Errorf("%s: %d, want %d (anomalies %+v)", k, r.Counts[k], n, r.Anomalies)
		}
	}
	if r.Unacknowledged != 1 || r.Acknowledged != 5 || r.Aborted != 1 || r.Read != 7 {
		t.Errorf("totals %+v", r)
	}
	if r.ok() {
		t.Error("ok with anomalies")
	}
}

func TestCheckHistoryCleanRun(t *testing.T) {
	var acks []verifyAck
	var reads []verifyRead
	for p := 0; p < 3; p++ {
		for s := int64(0); s < 100; s++ {
			part := int32(s % 4)
			off := int64(p)*100 + s
			acks = append(acks, verifyAck{Producer: p, Seq: s, Partition: part, Offset: off})
			reads = append(reads, verifyRead{Producer: p, Seq: s, Partition: part, Offset: off})
		}
	}
	if r := checkHistory(acks, reads); !r.ok() {
		t.Fatalf("anomalies in a clean history: %+v", r.Anomalies)
	}
}
