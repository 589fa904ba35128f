package txn

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
)

// StateLog is the coordinator's access to the __transaction_state
// partitions led by this broker. PartitionLog implements it over the
// broker's partitions; tests use an in-memory log.
type StateLog interface {
	// Append appends one record batch and returns once the in-sync
	// replicas have it. Errors wrap kerr codes.
	Append(partition int32, batch []byte) error
	// Bounds returns the partition's log start offset and high watermark.
	Bounds(partition int32) (logStart, highWatermark int64, err error)
	// Read returns whole batches from offset on (at least one), below
	// the high watermark.
	Read(partition int32, offset int64, maxBytes int) ([]byte, error)
}

// PartitionLog is the StateLog over this broker's __transaction_state
// partitions. Appends go straight to the partition: the produce handler's
// refusal of client writes to internal topics does not apply here.
type PartitionLog struct {
	NodeID     int32
	Partitions *partition.Manager
	// Timeout bounds the wait for the in-sync replicas (Kafka's
	// transaction state writes use request.timeout.ms); zero is 30 s.
	Timeout time.Duration
}

func (l PartitionLog) led(p int32) (*partition.Partition, error) {
	part := l.Partitions.Get(metadata.TransactionStateTopic, p)
	if part == nil {
		return nil, fmt.Errorf("%w: %s-%d is not hosted here", kerr.NotLeaderForPartition, metadata.TransactionStateTopic, p)
	}
	if part.Leader() != l.NodeID {
		return nil, fmt.Errorf("%w: %s-%d is led by %d", kerr.NotLeaderForPartition, metadata.TransactionStateTopic, p, part.Leader())
	}
	return part, nil
}

// produceVersion is the Produce version the coordinator's batches are
// validated as (the newest; they are uncompressed).
const produceVersion = 11

// Append implements StateLog with acks=all, as Kafka's
// TransactionStateManager appends (min.insync.replicas is
// transaction.state.log.min.isr, the topic's config).
func (l PartitionLog) Append(p int32, batch []byte) error {
	part, err := l.led(p)
	if err != nil {
		return err
	}
	info, err := part.Append(batch, -1, produceVersion)
	if err != nil {
		return err
	}
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return part.AwaitReplication(ctx, info.LastOffset+1)
}

// Bounds implements StateLog.
func (l PartitionLog) Bounds(p int32) (int64, int64, error) {
	part, err := l.led(p)
	if err != nil {
		return 0, 0, err
	}
	return part.LogStartOffset(), part.HighWatermark(), nil
}

// Read implements StateLog.
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
