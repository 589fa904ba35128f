package txn

// The records the coordinator keeps in __transaction_state, in Kafka's
// TransactionLog schemas (kmsg has them):
//
//	key   TransactionLogKey   v0 {transactional id}
//	value TransactionLogValue v1 {producer id, producer epoch, timeout,
//	                              state, partitions, last update and start
//	                              timestamps; tagged: previous and next
//	                              producer id, client transaction version}
//
// Kafka 4 writes value v1 (flexible, KIP-915) once transaction.version is
// 1 or more, v0 (no tagged fields) at level 0, and reads both; a null
// value is a tombstone (the id expired). Records are written one per batch
// with no producer id, uncompressed, as Kafka's TransactionStateManager
// writes them.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

func txnKey(id string) []byte {
	k := kmsg.NewTxnMetadataKey()
	k.Version = 0
	k.TransactionalID = id
	return k.AppendTo(nil)
}

// txnValue encodes m as TransactionLogValue of the given version (0 or 1).
func txnValue(m *Metadata, version int16) []byte {
	v := kmsg.NewTxnMetadataValue()
	v.Version = version
	v.ProducerID, v.ProducerEpoch = m.ProducerID, m.ProducerEpoch
	v.TimeoutMillis = m.TimeoutMs
	v.State = kmsg.TransactionState(m.State)
	for _, tp := range m.SortedPartitions() {
		if n := len(v.Topics); n > 0 && v.Topics[n-1].Topic == tp.Topic {
			v.Topics[n-1].Partitions = append(v.Topics[n-1].Partitions, tp.Partition)
			continue
		}
		t := kmsg.NewTxnMetadataValueTopic()
		t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
		v.Topics = append(v.Topics, t)
	}
	if m.State == StateEmpty || m.State == StateCompleteCommit || m.State == StateCompleteAbort {
		// Kafka writes an empty (not null) partition list then.
		v.Topics = []kmsg.TxnMetadataValueTopic{}
	}
	v.LastUpdateTimestamp, v.StartTimestamp = m.LastUpdateTimestamp, m.StartTimestamp
	v.PreviousProducerID, v.NextProducerID = m.PrevProducerID, m.NextProducerID
	v.ClientTransactionVersion = m.ClientTransactionVersion
	return v.AppendTo(nil)
}

// decodeTxnRecord parses one record. ok is false for keys of other
// versions, which Kafka skips on load too.
func decodeTxnRecord(key, value []byte) (id string, m *Metadata, ok bool, err error) {
	if len(key) < 2 {
		return "", nil, false, fmt.Errorf("%w: __transaction_state key of %d bytes", kerr.CorruptMessage, len(key))
	}
	if binary.BigEndian.Uint16(key) != 0 {
		return "", nil, false, nil
	}
	k := kmsg.NewTxnMetadataKey()
	if err := k.ReadFrom(key); err != nil {
		return "", nil, false, fmt.Errorf("%w: transaction log key: %v", kerr.CorruptMessage, err)
	}
	if value == nil {
		return k.TransactionalID, nil, true, nil
	}
	v := kmsg.NewTxnMetadataValue()
	if err := v.ReadFrom(value); err != nil {
		return "", nil, false, fmt.Errorf("%w: transaction log value of %q: %v", kerr.CorruptMessage, k.TransactionalID, err)
	}
	if _, known := stateNames[State(v.State)]; !known {
		return "", nil, false, fmt.Errorf("%w: transaction log value of %q: unknown state %d", kerr.CorruptMessage, k.TransactionalID, v.State)
	}
	m = &Metadata{
		TransactionalID:          k.TransactionalID,
		ProducerID:               v.ProducerID,
		PrevProducerID:           -1,
		NextProducerID:           -1,
		ProducerEpoch:            v.ProducerEpoch,
		LastProducerEpoch:        -1,
		TimeoutMs:                v.TimeoutMillis,
		State:                    State(v.State),
		Partitions:               map[TopicPartition]struct{}{},
		StartTimestamp:           v.StartTimestamp,
		LastUpdateTimestamp:      v.LastUpdateTimestamp,
		ClientTransactionVersion: 0,
	}
	if v.Version >= 1 {
		m.PrevProducerID, m.NextProducerID = v.PreviousProducerID, v.NextProducerID
		m.ClientTransactionVersion = v.ClientTransactionVersion
	}
	for _, t := range v.Topics {
		for _, p := range t.Partitions {
			m.Partitions[TopicPartition{t.Topic, p}] = struct{}{}
		}
	}
	return k.TransactionalID, m, true, nil
}

// buildBatch encodes one record as a v2 batch with no producer id.
func buildBatch(key, value []byte, now time.Time) ([]byte, error) {
	ts := now.UnixMilli()
	h := record.Header{
		PartitionLeaderEpoch: -1,
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
	return record.BuildBatch(h, []record.Record{{Key: key, Value: value}}, record.CodecNone)
}

// replayBatches applies every record of the batches in data, in log order:
// fn gets a nil Metadata for a tombstone. Control batches carry no
// transaction state.
func replayBatches(data []byte, fn func(id string, m *Metadata)) (next int64, err error) {
	next = -1
	it := record.NewBatches(data)
	for it.Next() {
		h := it.Header()
		next = h.LastOffset() + 1
		if h.IsControl() {
			continue
		}
		_, recs, err := record.DecodeRecords(it.Batch())
		if err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		for _, r := range recs {
			id, m, ok, err := decodeTxnRecord(r.Key, r.Value)
			if err != nil {
				return next, fmt.Errorf("record at offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
			if ok {
				fn(id, m)
			}
		}
	}
	return next, it.Err()
}
