package partition

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/storage"
)

// InternalLog is a coordinator's access to the partitions of its internal
// topic (__consumer_offsets for the group coordinator, __transaction_state
// for the transaction coordinator) that this broker leads. Appends go
// straight to the partition: the produce handler's refusal of client
// writes to internal topics does not apply to the coordinators.
type InternalLog struct {
	NodeID     int32
	Partitions *Manager
	Topic      string
	// Timeout bounds an append's wait for the in-sync replicas
	// (offsets.commit.timeout.ms, request.timeout.ms).
	Timeout time.Duration
}

// produceVersion is the Produce version coordinator batches are validated
// as (the newest; they are uncompressed).
const produceVersion = 11

// Led is partition p of the topic if this broker leads it, else
// NOT_LEADER_OR_FOLLOWER.
func (l InternalLog) Led(p int32) (*Partition, error) {
	part := l.Partitions.Get(l.Topic, p)
	if part == nil {
		return nil, fmt.Errorf("%w: %s-%d is not hosted here", kerr.NotLeaderForPartition, l.Topic, p)
	}
	if part.Leader() != l.NodeID {
		return nil, fmt.Errorf("%w: %s-%d is led by %d", kerr.NotLeaderForPartition, l.Topic, p, part.Leader())
	}
	return part, nil
}

// Append writes one batch with acks=all, as Kafka's coordinators do:
// min.insync.replicas is checked before the append, and it returns once
// every in-sync replica has the batch (the high watermark covers it), so
// the write survives the loss of the leader.
func (l InternalLog) Append(p int32, batch []byte, txn storage.TxnAppend) error {
	part, err := l.Led(p)
	if err != nil {
		return err
	}
	info, err := part.AppendTxn(batch, -1, produceVersion, txn)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.Timeout)
	defer cancel()
	return part.AwaitReplication(ctx, info.LastOffset+1)
}

// Bounds returns partition p's log start offset and the end a coordinator
// loads up to: the high watermark, once it covers the log end offset as of
// the call. A new leader learns the old leader's last high watermark only
// with its next fetch, which a killed leader never answers, so right after
// a leader change the records the old leader had acknowledged last (a
// transaction's PrepareCommit, a transactional offset commit) lie between
// the new leader's high watermark and its log end. Loading only up to the
// high watermark would forget them while the markers they decided are out;
// loading past it would act on records a further leader change could still
// truncate. So the load waits until the in-sync replicas have the whole
// log (REQUEST_TIMED_OUT after Timeout; the load retries).
func (l InternalLog) Bounds(p int32) (int64, int64, error) {
	part, err := l.Led(p)
	if err != nil {
		return 0, 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.Timeout)
	defer cancel()
	if err := part.AwaitHighWatermark(ctx, part.LogEndOffset()); err != nil {
		return 0, 0, err
	}
	return part.LogStartOffset(), part.HighWatermark(), nil
}

// Read returns whole batches of partition p from offset on, below the
// high watermark.
func (l InternalLog) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	part, err := l.Led(p)
	if err != nil {
		return nil, err
	}
	res, err := part.Read(offset, maxBytes, true)
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}
