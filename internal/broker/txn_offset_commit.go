package broker

// TxnOffsetCommit (key 28), v0-v5.
//
// A transactional producer commits a consumer group's offsets inside its
// transaction (KIP-98; sendOffsetsToTransaction). The group coordinator
// (group.Coordinator.TxnCommitOffsets) writes them to __consumer_offsets
// as a transactional batch of the producer and holds them as pending: they
// become the group's committed offsets when the transaction's commit
// marker reaches the offsets partition (WriteTxnMarkers), and are dropped
// on abort. v2+ carries each partition's leader epoch; v3+ (KIP-447) the
// consumer's generation, member id and group.instance.id, checked as
// Kafka checks them (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
// FENCED_INSTANCE_ID) unless they are the defaults (-1, "", null) older
// consumers send. A partition missing from the metadata image is
// UNKNOWN_TOPIC_OR_PARTITION, as for OffsetCommit.
//
// With transaction.partition.verification.enable, the commit that opens
// the producer's transaction on the group's __consumer_offsets partition is
// first verified with the transaction coordinator (KIP-890 part 1, as for
// Produce: the partition is the one AddOffsetsToTxn added); a failed check
// is every partition's error, coordinator trouble COORDINATOR_NOT_AVAILABLE
// (retriable), TRANSACTION_ABORTABLE INVALID_TXN_STATE below v4 (whose
// clients predate it), and nothing is written. v5 (KIP-890 part 2,
// transaction.version 2 clients, which send no AddOffsetsToTxn) adds the
// offsets partition to the transaction instead of only verifying it.

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

func init() { register(kmsg.TxnOffsetCommit, 0, 5, (*Broker).handleTxnOffsetCommit) }

func (b *Broker) handleTxnOffsetCommit(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	cr := group.TxnCommitRequest{
		GroupID:         req.Group,
		TransactionalID: req.TransactionalID,
		ProducerID:      req.ProducerID,
		ProducerEpoch:   req.ProducerEpoch,
		Generation:      -1,
	}
	if r.Version >= 3 {
		cr.Generation, cr.MemberID, cr.InstanceID = req.Generation, req.MemberID, req.InstanceID
	}
	img := b.meta.Image()
	var unknown []bool
	for _, t := range req.Topics {
		ti, topicOK := img.Topic(t.Topic)
		for _, p := range t.Partitions {
			exists := topicOK && p.Partition >= 0 && int(p.Partition) < len(ti.Partitions) && ti.Partitions[p.Partition] != nil
			unknown = append(unknown, !exists)
			if !exists {
				continue
			}
			o := group.CommitOffset{
				TopicPartition:  group.TopicPartition{Topic: t.Topic, Partition: p.Partition},
				Offset:          p.Offset,
				LeaderEpoch:     -1,
				Metadata:        p.Metadata,
				CommitTimestamp: -1,
			}
			if r.Version >= 2 {
				o.LeaderEpoch = p.LeaderEpoch
			}
			cr.Offsets = append(cr.Offsets, o)
		}
	}
	var groupErr error
	var errs []error
	switch {
	case len(cr.Offsets) == 0 && len(unknown) > 0:
	case b.groups == nil:
		groupErr = errNoCoordinator
	default:
		if cr.Guard, groupErr = b.verifyTxnOffsetCommit(ctx, img, req, r.Version); groupErr == nil {
			groupErr, errs = b.groups.TxnCommitOffsets(ctx, cr)
		}
	}
	i, k := 0, 0
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			var err error
			switch {
			case unknown[i]:
				err = kerr.UnknownTopicOrPartition
			case groupErr != nil:
				err = groupErr
			default:
				err = errs[k]
			}
			if !unknown[i] {
				k++
			}
			rp.ErrorCode = b.errCode(err)
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// verifyTxnOffsetCommit checks with the transaction coordinator that the
// group's offsets partition is in the producer's transaction, unless the
// transaction is already open there, and returns the guard to append with.
func (b *Broker) verifyTxnOffsetCommit(ctx context.Context, img *metadata.Image, req *kmsg.TxnOffsetCommitRequest, version int16) (storage.VerificationGuard, error) {
	if version < 5 && !b.verificationEnabled(img) {
		return storage.NoVerification, nil // v5 adds the partition: always
	}
	t, ok := img.Topic(metadata.ConsumerOffsetsTopic)
	if !ok || len(t.Partitions) == 0 {
		return storage.NoVerification, nil // the coordinator answers for the group
	}
	idx := group.PartitionFor(req.Group, int32(len(t.Partitions)))
	p := b.partitions.Get(metadata.ConsumerOffsetsTopic, idx)
	if p == nil || !p.IsLeader() {
		return storage.NoVerification, nil // likewise: NOT_COORDINATOR
	}
	guard, needed := p.StartTransactionVerification(req.ProducerID, req.ProducerEpoch, version >= 5)
	if !needed {
		return guard, nil
	}
	err := b.txnVerifier.VerifyTransaction(ctx, img, TxnPartition{TransactionalID: req.TransactionalID, ProducerID: req.ProducerID,
		ProducerEpoch: req.ProducerEpoch, Topic: metadata.ConsumerOffsetsTopic, Partition: idx, Add: version >= 5})
	if err != nil {
		err = verificationError(err, version >= 4)
		if errors.Is(err, kerr.NotEnoughReplicas) {
			return storage.NoVerification, fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
		}
		return storage.NoVerification, err
	}
	return guard, nil
}
