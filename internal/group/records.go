package group

// The records the coordinator keeps in __consumer_offsets, in Kafka's
// schemas (kmsg has them):
//
//	offset commit:   key   OffsetCommitKey    v1 {group, topic, partition}
//	                 value OffsetCommitValue  v3 {offset, leader epoch, metadata,
//	                                              commit timestamp}, or v1 when
//	                                              an explicit expire timestamp
//	                                              is kept (OffsetCommit v2-v4
//	                                              retention_time_ms)
//	group metadata:  key   GroupMetadataKey   v2 {group}
//	                 value GroupMetadataValue v3 {protocol type, generation,
//	                                              protocol, leader, state
//	                                              timestamp, members}
//
// A null value is a tombstone: the offset or the group is gone. The key's
// leading int16 tells the records apart (0 and 1: offset commit, 2: classic
// group, 3 and 5-8: KIP-848 consumer group records, see consumer_records.go).
// Records are written in batches with no producer id, compressed with
// offsets.topic.compression.codec (0, none, by default), as Kafka's
// coordinator writes them.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
)

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// CommittedOffset is one committed offset as the coordinator keeps it.
type CommittedOffset struct {
	Offset      int64
	LeaderEpoch int32 // -1 when the committer did not say
	Metadata    string
	// CommitTimestamp is when it was committed, in Unix milliseconds.
	CommitTimestamp int64
	// ExpireTimestamp is an explicit expiry (OffsetCommit v2-v4
	// retention_time_ms), or -1 to follow offsets.retention.minutes.
	ExpireTimestamp int64
}

func offsetCommitKey(group string, tp TopicPartition) []byte {
	k := kmsg.NewOffsetCommitKey()
	k.Version = 1
	k.Group, k.Topic, k.Partition = group, tp.Topic, tp.Partition
	return k.AppendTo(nil)
}

func offsetCommitValue(o CommittedOffset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	if o.ExpireTimestamp >= 0 {
		// Only v1 carries an expire timestamp; Kafka writes v1 then.
		v.Version = 1
		v.ExpireTimestamp = o.ExpireTimestamp
	}
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp
	return v.AppendTo(nil)
}

func groupMetadataKey(group string) []byte {
	k := kmsg.NewGroupMetadataKey()
	k.Version = 2
	k.Group = group
	return k.AppendTo(nil)
}

// groupRecord is one replayed record of __consumer_offsets.
type groupRecord struct {
	group string
	// isOffset: an offset commit (tp, offset); otherwise group metadata
	// (meta).
	isOffset  bool
	tp        TopicPartition
	offset    CommittedOffset
	meta      *kmsg.GroupMetadataValue
	tombstone bool
	// consumer is set for a KIP-848 consumer group record (see
	// consumer_records.go); the fields above are then unused.
	consumer *consumerRecord
}

// decodeGroupRecord parses one record's key and value. Keys of unknown
// versions are skipped (ok=false), as Kafka skips them on load.
func decodeGroupRecord(key, value []byte) (groupRecord, bool, error) {
	if len(key) < 2 {
		return groupRecord{}, false, fmt.Errorf("%w: __consumer_offsets key of %d bytes", kerr.CorruptMessage, len(key))
	}
	switch binary.BigEndian.Uint16(key) {
	case 0, 1:
		k := kmsg.NewOffsetCommitKey()
		if err := k.ReadFrom(key); err != nil {
			return groupRecord{}, false, fmt.Errorf("%w: offset commit key: %v", kerr.CorruptMessage, err)
		}
		r := groupRecord{group: k.Group, isOffset: true, tp: TopicPartition{k.Topic, k.Partition}, tombstone: value == nil}
		if value != nil {
			v := kmsg.NewOffsetCommitValue()
			if err := v.ReadFrom(value); err != nil {
				return groupRecord{}, false, fmt.Errorf("%w: offset commit value: %v", kerr.CorruptMessage, err)
			}
			r.offset = CommittedOffset{Offset: v.Offset, LeaderEpoch: -1, Metadata: v.Metadata,
				CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: -1}
			if v.Version >= 3 {
				r.offset.LeaderEpoch = v.LeaderEpoch
			}
			if v.Version == 1 {
				r.offset.ExpireTimestamp = v.ExpireTimestamp
			}
		}
		return r, true, nil
	case 2:
		k := kmsg.NewGroupMetadataKey()
		if err := k.ReadFrom(key); err != nil {
			return groupRecord{}, false, fmt.Errorf("%w: group metadata key: %v", kerr.CorruptMessage, err)
		}
		r := groupRecord{group: k.Group, tombstone: value == nil}
		if value != nil {
			v := kmsg.NewGroupMetadataValue()
			if err := v.ReadFrom(value); err != nil {
				return groupRecord{}, false, fmt.Errorf("%w: group metadata value: %v", kerr.CorruptMessage, err)
			}
			r.meta = &v
		}
		return r, true, nil
	case recConsumerGroupMetadata, recConsumerMemberMetadata, recTargetAssignmentMetadata,
		recTargetAssignmentMember, recCurrentMemberAssignment:
		cr, err := decodeConsumerRecord(int16(binary.BigEndian.Uint16(key)), key, value)
		if err != nil {
			return groupRecord{}, false, err
		}
		return groupRecord{group: cr.group, tombstone: cr.tombstone, consumer: &cr}, true, nil
	default:
		// Share-group and other newer record types: not ours.
		return groupRecord{}, false, nil
	}
}

// kv is one key and value to write; a nil value is a tombstone.
type kv struct{ key, value []byte }

// buildBatch encodes records as one v2 batch with no producer id,
// timestamped now, compressed with codec.
func buildBatch(recs []kv, now time.Time, codec record.Codec) ([]byte, error) {
	ts := now.UnixMilli()
	rs := make([]record.Record, len(recs))
	for i, r := range recs {
		rs[i] = record.Record{OffsetDelta: int32(i), Key: r.key, Value: r.value}
	}
	h := record.Header{
		PartitionLeaderEpoch: -1,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       ts,
		MaxTimestamp:         ts,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
	return record.BuildBatch(h, rs, codec)
}

// replayBatches applies every record of the batches in data to fn, in log
// order, holding the records of transactional batches until their marker
// (replayTxnBatches with a replay of its own).
func replayBatches(data []byte, fn func(groupRecord)) (next int64, err error) {
	return replayTxnBatches(data, fn, newTxnReplay())
}

// txnReplay is the state of the open transactions while a partition is
// replayed: each producer's transactional records, in log order, until
// its marker applies them (commit) or drops them (abort).
type txnReplay struct {
	pending map[int64][]txnRecord
}

// txnRecord is a record of an open transaction; superseded: a plain
// commit of its partition follows it in the log, so its transaction's
// commit does not apply it.
type txnRecord struct {
	groupRecord
	superseded bool
}

func newTxnReplay() *txnReplay { return &txnReplay{pending: make(map[int64][]txnRecord)} }

// supersede marks the pending transactional records of a group's
// partition that a plain commit now follows in the log.
func (r *txnReplay) supersede(group string, tp TopicPartition) {
	for _, recs := range r.pending {
		for i := range recs {
			if recs[i].isOffset && recs[i].group == group && recs[i].tp == tp {
				recs[i].superseded = true
			}
		}
	}
}

// replayTxnBatches is replayBatches carrying txn across reads. Records of
// a transactional batch wait in txn; a commit marker applies its
// producer's to fn at the marker's place in the log, an abort marker drops
// them, so offsets of aborted transactions are never applied.
func replayTxnBatches(data []byte, fn func(groupRecord), txn *txnReplay) (next int64, err error) {
	next = -1
	it := record.NewBatches(data)
	for it.Next() {
		h := it.Header()
		next = h.LastOffset() + 1
		if h.IsControl() {
			m, err := record.ParseMarker(it.Batch())
			if err != nil {
				return next, fmt.Errorf("marker at offset %d: %w", h.BaseOffset, err)
			}
			if m.Type == record.ControlCommit {
				for _, r := range txn.pending[h.ProducerID] {
					if !r.superseded {
						fn(r.groupRecord)
					}
				}
			}
			delete(txn.pending, h.ProducerID)
			continue
		}
		_, recs, err := record.DecodeRecords(it.Batch())
		if err != nil {
			return next, fmt.Errorf("batch at offset %d: %w", h.BaseOffset, err)
		}
		for _, r := range recs {
			gr, ok, err := decodeGroupRecord(r.Key, r.Value)
			if err != nil {
				return next, fmt.Errorf("record at offset %d: %w", h.BaseOffset+int64(r.OffsetDelta), err)
			}
			switch {
			case !ok:
			case h.IsTransactional() && h.ProducerID >= 0:
				txn.pending[h.ProducerID] = append(txn.pending[h.ProducerID], txnRecord{groupRecord: gr})
			default:
				if gr.isOffset {
					txn.supersede(gr.group, gr.tp)
				}
				fn(gr)
			}
		}
	}
	return next, it.Err()
}
