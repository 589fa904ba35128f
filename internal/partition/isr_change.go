package partition

import "context"

// ISRChange asks the controller to change a partition's ISR (Kafka's AlterPartition): the leader
// proposes newISR at its leaderEpoch and the partitionEpoch it last saw; the controller accepts
// (committing a PartitionChangeRecord that every node applies) or rejects (FENCED_LEADER_EPOCH,
// INVALID_UPDATE_VERSION, ...). The caller learns the outcome from the next image.
type ISRChange struct {
	TopicID        [16]byte
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// ControllerClient is how a partition leader reaches the controller. The
// node wires it (internal/controller implements it over the broker-to-
// controller channel); without one, a leader never changes its ISR, which is
// right for a single-replica partition and leaves a multi-replica one with
// the ISR the controller last wrote.
type ControllerClient interface {
	AlterPartition(ctx context.Context, c ISRChange) error
}
