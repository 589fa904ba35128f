package group

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
)

// PartitionLog is the OffsetsLog over this broker's __consumer_offsets
// partitions. Appends go straight to the partition: the produce handler's
// refusal of client writes to internal topics does not apply to the
// coordinator.
type PartitionLog struct {
	NodeID     int32
	Partitions *partition.Manager
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

// Append implements OffsetsLog. It waits for the in-sync replicas
// (acks=all), as Kafka's coordinator does.
func (l PartitionLog) Append(p int32, batch []byte) error {
	part, err := l.led(p)
	if err != nil {
		return err
	}
	_, err = part.Append(batch, -1, produceVersion)
	return err
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
