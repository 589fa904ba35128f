package cli

import (
	"fmt"
	"sort"
)

// The consistency check of `vltava verify`, as Jepsen's Kafka checker reads
// a history: what producers were told (acknowledgements, and which
// transactions aborted) against what a reader found in the log.

// verifyAck is one acknowledged record: producer p's seq-th record, placed
// at partition/offset. Aborted marks a record of an aborted transaction
// (acknowledged by the broker, then rolled back).
type verifyAck struct {
	Producer  int
	Seq       int64
	Partition int32
	Offset    int64
	Aborted   bool
}

// verifyRead is one record read back, in log order per partition.
type verifyRead struct {
	Producer  int
	Seq       int64
	Partition int32
	Offset    int64
}

// verifyAnomaly is one problem found, named as Jepsen's checker does.
type verifyAnomaly struct {
	Kind      string `json:"kind"`
	Producer  int    `json:"producer"`
	Seq       int64  `json:"seq"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Detail    string `json:"detail,omitempty"`
}

// Anomaly kinds.
const (
	anomalyLost           = "lost"            // acknowledged (committed) but never read
	anomalyDuplicated     = "duplicated"      // read more than once
	anomalyReordered      = "reordered"       // a producer's records in a partition out of send order
	anomalyAbortedRead    = "aborted-read"    // a record of an aborted transaction was read
	anomalyOffsetMismatch = "offset-mismatch" // read at another partition/offset than acknowledged
)

// verifyKinds is the report's row order.
var verifyKinds = []string{anomalyLost, anomalyDuplicated, anomalyReordered, anomalyAbortedRead, anomalyOffsetMismatch}

// verifyResult is the checker's outcome.
type verifyResult struct {
	Acknowledged int64 `json:"acknowledged"`
	Aborted      int64 `json:"aborted"`
	Read         int64 `json:"read"`
	// Unacknowledged counts records read whose send failed or timed out:
	// Kafka allows them (the write may land after the client gave up), so
	// they are not anomalies.
	Unacknowledged int64            `json:"unacknowledged"`
	Counts         map[string]int64 `json:"counts"`
	Anomalies      []verifyAnomaly  `json:"anomalies"`
}

// ok reports whether no anomaly was found.
func (r *verifyResult) ok() bool { return len(r.Anomalies) == 0 }

// maxListedAnomalies bounds the anomalies kept in the report; the counts
// are always complete.
const maxListedAnomalies = 1000

func (r *verifyResult) add(a verifyAnomaly) {
	r.Counts[a.Kind]++
	if len(r.Anomalies) < maxListedAnomalies {
		r.Anomalies = append(r.Anomalies, a)
	}
}

type verifyKey struct {
	producer int
	seq      int64
}

// checkHistory compares the acknowledgements with the records read.
// reads must be in log order within each partition.
func checkHistory(acks []verifyAck, reads []verifyRead) *verifyResult {
	r := &verifyResult{Counts: map[string]int64{}}
	for _, k := range verifyKinds {
		r.Counts[k] = 0
	}
	acked := make(map[verifyKey]verifyAck, len(acks))
	for _, a := range acks {
		acked[verifyKey{a.Producer, a.Seq}] = a
		if a.Aborted {
			r.Aborted++
		} else {
			r.Acknowledged++
		}
	}
	seen := make(map[verifyKey]int, len(reads))
	// last seq read per (producer, partition), for the order check.
	type pp struct {
		producer  int
		partition int32
	}
	lastSeq := map[pp]int64{}
	for _, rd := range reads {
		r.Read++
		k := verifyKey{rd.Producer, rd.Seq}
		seen[k]++
		a, wasAcked := acked[k]
		if seen[k] == 2 {
			r.add(verifyAnomaly{Kind: anomalyDuplicated, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset})
		}
		switch {
		case !wasAcked:
			r.Unacknowledged++
		case a.Aborted:
			r.add(verifyAnomaly{Kind: anomalyAbortedRead, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset})
		case seen[k] == 1 && (a.Partition != rd.Partition || a.Offset != rd.Offset):
			r.add(verifyAnomaly{Kind: anomalyOffsetMismatch, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("acknowledged at partition %d offset %d", a.Partition, a.Offset)})
		}
		key := pp{rd.Producer, rd.Partition}
		if prev, ok := lastSeq[key]; ok && rd.Seq < prev && seen[k] == 1 {
			r.add(verifyAnomaly{Kind: anomalyReordered, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("after seq %d of the same producer", prev)})
		}
		if rd.Seq > lastSeq[key] || !hasKey(lastSeq, key) {
			lastSeq[key] = rd.Seq
		}
	}
	var lost []verifyAck
	for k, a := range acked {
		if !a.Aborted && seen[k] == 0 {
			lost = append(lost, a)
		}
	}
	sort.Slice(lost, func(i, j int) bool {
		if lost[i].Producer != lost[j].Producer {
			return lost[i].Producer < lost[j].Producer
		}
		return lost[i].Seq < lost[j].Seq
	})
	for _, a := range lost {
		r.add(verifyAnomaly{Kind: anomalyLost, Producer: a.Producer, Seq: a.Seq, Partition: a.Partition, Offset: a.Offset})
	}
	return r
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
