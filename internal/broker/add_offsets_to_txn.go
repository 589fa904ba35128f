package broker

// AddOffsetsToTxn (key 25), v0-v4.
//
// Adds the group's __consumer_offsets partition (the one its coordinator
// writes offsets to) to the transaction, so EndTxn sends that partition's
// leader a marker too and the TxnOffsetCommit offsets become visible (or
// are dropped) with the transaction. Errors as AddPartitionsToTxn's:
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2 (KIP-588).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

func init() { register(kmsg.AddOffsetsToTxn, 0, 4, (*Broker).handleAddOffsetsToTxn) }

func (b *Broker) handleAddOffsetsToTxn(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case b.txns == nil:
		resp.ErrorCode = b.errCode(errNoTxnCoordinator)
		return resp, nil
	case req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	case req.Group == "":
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp, nil
	}
	// The offsets topic must exist for its partition to be marked; it is
	// created as for FindCoordinator, which the client sends next anyway.
	if b.groups != nil {
		if err := b.ensureOffsetsTopic(ctx); err != nil {
			resp.ErrorCode = b.errCode(err)
			return resp, nil
		}
	}
	tp := txn.TopicPartition{Topic: metadata.ConsumerOffsetsTopic, Partition: b.offsetsPartitionFor(req.Group)}
	err := b.txns.AddPartitions(req.TransactionalID, txn.ProducerIDAndEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}, []txn.TopicPartition{tp}, false)
	resp.ErrorCode = b.txnErrCode(err, r.Version, 2)
	return resp, nil
}

// offsetsPartitionFor is the __consumer_offsets partition of a group.
func (b *Broker) offsetsPartitionFor(groupID string) int32 {
	if b.groups != nil {
		return b.groups.PartitionFor(groupID)
	}
	n := b.cfg.OffsetsTopicNumPartitions
	if t, ok := b.meta.Image().Topic(metadata.ConsumerOffsetsTopic); ok {
		n = int32(len(t.Partitions))
	}
	return group.PartitionFor(groupID, n)
}
