package group

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// PartitionLog is the OffsetsLog over this broker's __consumer_offsets
// partitions. Appends go straight to the partition: the produce handler's
// refusal of client writes to internal topics does not apply to the
// coordinator.
type PartitionLog struct {
	NodeID     int32
	Partitions *partition.Manager
	// CommitTimeout is offsets.commit.timeout.ms: how long an append waits
	// for the in-sync replicas; zero means Kafka's default, 5 s.
	CommitTimeout time.Duration
}

func (l PartitionLog) led(p int32) (*partition.Partition, error) {
	part := l.Partitions.Get(metadata.ConsumerOffsetsTopic, p)
	if part == nil {
		return nil, fmt.Errorf("%w: %s-%d is not hosted here", kerr.NotLeaderForPartition, metadata.ConsumerOffsetsTopic, p)
	}
	if part.Leader() != l.NodeID {
		return nil, fmt.Errorf("%w: %s-%d is led by %d", kerr.NotLeaderForPartition, metadata.ConsumerOffsetsTopic, p, part.Leader())
	}
	return part, nil
}

// produceVersion is the Produce version the coordinator's batches count
// as for validation (the newest; the batches are uncompressed anyway).
const produceVersion = 11

// Append implements OffsetsLog. Like Kafka's coordinator it writes with
// acks=all: min.insync.replicas is checked before the append, and the
// append is acknowledged only once every in-sync replica has it (the high
// watermark covers it), so a commit survives the loss of the leader.
func (l PartitionLog) Append(p int32, batch []byte) error {
	return l.AppendVerified(p, batch, storage.NoVerification)
}

// AppendVerified is Append under a KIP-890 verification guard (a
// TxnOffsetCommit that opens the producer's transaction on the partition).
func (l PartitionLog) AppendVerified(p int32, batch []byte, guard storage.VerificationGuard) error {
	part, err := l.led(p)
	if err != nil {
		return err
	}
	// The coordinator's own batches: a transactional offset commit's
	// sequence is not a client's and is not checked.
	info, err := part.AppendTxn(batch, -1, produceVersion, storage.TxnAppend{FromCoordinator: true, Guard: guard})
	if err != nil {
		return err
	}
	timeout := l.CommitTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return part.AwaitReplication(ctx, info.LastOffset+1)
}

// Bounds implements OffsetsLog.
func (l PartitionLog) Bounds(p int32) (int64, int64, error) {
	part, err := l.led(p)
	if err != nil {
		return 0, 0, err
	}
	return part.LogStartOffset(), part.HighWatermark(), nil
}

// Read implements OffsetsLog.
func (l PartitionLog) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	part, err := l.led(p)
	if err != nil {
		return nil, err
	}
	res, err := part.Read(offset, maxBytes, true)
	if err != nil {
		return nil, err
	}
	return res.Data, nil
}
