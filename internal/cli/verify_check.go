package cli

import (
	"fmt"
	"sort"
)

// The consistency check of `vltava verify`, as Jepsen's Kafka checker reads
// a history: what producers were told (acknowledgements, and which
// transactions aborted) against what a reader found in the log. The
// cluster tests check their exactly-once pipelines with it too.

// VerifyAck is one record that must be read exactly once: producer p's
// seq-th record, acknowledged at partition/offset. Offset -1 means its
// place is not known (a pipeline's input, written again by a transform),
// so only its presence, uniqueness and order are checked. Aborted marks a
// record of an aborted transaction (acknowledged by the broker, then
// rolled back), which must never be read.
type VerifyAck struct {
	Producer  int
	Seq       int64
	Partition int32
	Offset    int64
	Aborted   bool
}

// VerifyRead is one record read back, in the order the reader received
// it. Poll numbers the reader's polls (fetches): the order checks tell an
// order broken within one poll from one broken across polls. Aborted
// marks a record whose writer knows its transaction aborted (when the same
// producer and seq may be written by several transactions, as a pipeline
// retrying its input does).
type VerifyRead struct {
	Producer  int
	Seq       int64
	Partition int32
	Offset    int64
	Poll      int
	Aborted   bool
}

// VerifyAnomaly is one problem found, named as Jepsen's checker does.
type VerifyAnomaly struct {
	Kind      string `json:"kind"`
	Producer  int    `json:"producer"`
	Seq       int64  `json:"seq"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Detail    string `json:"detail,omitempty"`
}

// Anomaly kinds.
const (
	// AnomalyLost: acknowledged (committed) but never read.
	AnomalyLost = "lost"
	// AnomalyDuplicated: read more than once.
	AnomalyDuplicated = "duplicated"
	// AnomalyIntNonMonotonic: within one poll, a partition's offsets go
	// backwards, or a producer's records in a partition come out of
	// send order.
	AnomalyIntNonMonotonic = "int-nonmonotonic"
	// AnomalyExtNonMonotonic: the same across polls: a poll returns a
	// partition's records before (in offset or send order) what an
	// earlier poll returned.
	AnomalyExtNonMonotonic = "ext-nonmonotonic"
	// AnomalyAbortedRead: a record of an aborted transaction was read.
	AnomalyAbortedRead = "aborted-read"
	// AnomalyOffsetMismatch: read at another partition/offset than
	// acknowledged.
	AnomalyOffsetMismatch = "offset-mismatch"
)

// verifyKinds is the report's row order.
var verifyKinds = []string{AnomalyLost, AnomalyDuplicated, AnomalyIntNonMonotonic, AnomalyExtNonMonotonic, AnomalyAbortedRead, AnomalyOffsetMismatch}

// VerifyResult is the checker's outcome.
type VerifyResult struct {
	Acknowledged int64 `json:"acknowledged"`
	Aborted      int64 `json:"aborted"`
	Read         int64 `json:"read"`
	// Unacknowledged counts records read whose send failed or timed out:
	// Kafka allows them (the write may land after the client gave up), so
	// they are not anomalies.
	Unacknowledged int64            `json:"unacknowledged"`
	Counts         map[string]int64 `json:"counts"`
	Anomalies      []VerifyAnomaly  `json:"anomalies"`
}

// OK reports whether no anomaly was found.
func (r *VerifyResult) OK() bool { return len(r.Anomalies) == 0 }

// maxListedAnomalies bounds the anomalies kept in the report; the counts
// are always complete.
const maxListedAnomalies = 1000

func (r *VerifyResult) add(a VerifyAnomaly) {
	r.Counts[a.Kind]++
	if len(r.Anomalies) < maxListedAnomalies {
		r.Anomalies = append(r.Anomalies, a)
	}
}

type verifyKey struct {
	producer int
	seq      int64
}

// CheckHistory compares the acknowledgements with the records read, in
// the order the reader received them.
func CheckHistory(acks []VerifyAck, reads []VerifyRead) *VerifyResult {
	r := &VerifyResult{Counts: map[string]int64{}}
	for _, k := range verifyKinds {
		r.Counts[k] = 0
	}
	acked := make(map[verifyKey]VerifyAck, len(acks))
	for _, a := range acks {
		acked[verifyKey{a.Producer, a.Seq}] = a
		if a.Aborted {
			r.Aborted++
		} else {
			r.Acknowledged++
		}
	}
	seen := make(map[verifyKey]int, len(reads))
	// The last record read per (producer, partition), for the send order,
	// and per partition, for the offset order.
	type pp struct {
		producer  int
		partition int32
	}
	type last struct {
		seq, offset int64
		poll        int
	}
	lastSeq := map[pp]last{}
	lastOffset := map[int32]last{}
	order := func(rd VerifyRead, prevPoll int, detail string) {
		kind := AnomalyExtNonMonotonic
		if prevPoll == rd.Poll {
			kind = AnomalyIntNonMonotonic
		}
		r.add(VerifyAnomaly{Kind: kind, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset, Detail: detail})
	}
	for _, rd := range reads {
		r.Read++
		k := verifyKey{rd.Producer, rd.Seq}
		seen[k]++
		a, wasAcked := acked[k]
		if seen[k] == 2 {
			r.add(VerifyAnomaly{Kind: AnomalyDuplicated, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset})
		}
		switch {
		case rd.Aborted || wasAcked && a.Aborted:
			r.add(VerifyAnomaly{Kind: AnomalyAbortedRead, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset})
		case !wasAcked:
			r.Unacknowledged++
		case seen[k] == 1 && a.Offset >= 0 && (a.Partition != rd.Partition || a.Offset != rd.Offset):
			r.add(VerifyAnomaly{Kind: AnomalyOffsetMismatch, Producer: rd.Producer, Seq: rd.Seq, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("acknowledged at partition %d offset %d", a.Partition, a.Offset)})
		}
		if prev, ok := lastOffset[rd.Partition]; ok && rd.Offset <= prev.offset {
			order(rd, prev.poll, fmt.Sprintf("offset after offset %d of poll %d", prev.offset, prev.poll))
		}
		if prev, ok := lastOffset[rd.Partition]; !ok || rd.Offset > prev.offset {
			lastOffset[rd.Partition] = last{offset: rd.Offset, poll: rd.Poll}
		}
		key := pp{rd.Producer, rd.Partition}
		prev, ok := lastSeq[key]
		if ok && rd.Seq < prev.seq && seen[k] == 1 {
			order(rd, prev.poll, fmt.Sprintf("after seq %d of the same producer, read in poll %d", prev.seq, prev.poll))
		}
		if !ok || rd.Seq > prev.seq {
			lastSeq[key] = last{seq: rd.Seq, poll: rd.Poll}
		}
	}
	var lost []VerifyAck
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
		r.add(VerifyAnomaly{Kind: AnomalyLost, Producer: a.Producer, Seq: a.Seq, Partition: a.Partition, Offset: a.Offset})
	}
	return r
}
