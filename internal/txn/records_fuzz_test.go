package txn

import (
	"reflect"
	"testing"
	"time"
)

// FuzzDecodeTxnRecord feeds arbitrary __transaction_state records to the
// load path. Invariants: decoding never panics; a record that decodes is
// either skipped (another key version) or re-encodes to a record that
// decodes to the same state, so a reload keeps what was loaded; and whole
// batches of such records replay without error.
func FuzzDecodeTxnRecord(f *testing.F) {
	m := &Metadata{TransactionalID: "t", ProducerID: 7, PrevProducerID: -1, NextProducerID: -1, ProducerEpoch: 2,
		TimeoutMs: 60000, State: StateOngoing, StartTimestamp: 1, LastUpdateTimestamp: 2,
		Partitions: map[TopicPartition]struct{}{{"a", 0}: {}, {"b", 3}: {}}}
	f.Add(txnKey("t"), txnValue(m, 1), false)
	f.Add(txnKey("t"), txnValue(m, 0), false)
	f.Add(txnKey("t"), []byte(nil), true)
	m.State = StateCompleteCommit
	f.Add(txnKey("other"), txnValue(m, 1), false)
	f.Add([]byte{0, 1, 0, 0}, []byte{0, 0}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		}
		id, got, ok, err := decodeTxnRecord(key, value)
		if err != nil || !ok {
			return
		}
		if got == nil {
			return // a tombstone
		}
		id2, again, ok, err := decodeTxnRecord(txnKey(id), txnValue(got, 1))
		if err != nil || !ok || id2 != id {
			t.Fatalf("re-encoded record of %q: %q %v %v", id, id2, ok, err)
		}
		if got.State == StateEmpty || got.State == StateCompleteCommit || got.State == StateCompleteAbort {
			// Written with no partitions, whatever was decoded.
			got.Partitions = map[TopicPartition]struct{}{}
		}
		if !reflect.DeepEqual(got, again) {
			t.Fatalf("round trip changed the state:\n got %+v\nthen %+v", got, again)
		}
		batch, err := buildBatch(txnKey(id), txnValue(got, 1), time.UnixMilli(0))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if _, err := replayBatches(batch, func(string, *Metadata) { n++ }); err != nil || n != 1 {
			t.Fatalf("replaying the re-encoded batch: %d records, %v", n, err)
		}
	})
}
