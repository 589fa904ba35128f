package group

import (
	"time"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// PartitionLog is the OffsetsLog over this broker's __consumer_offsets
// partitions (partition.InternalLog).
type PartitionLog struct {
	NodeID     int32
	Partitions *partition.Manager
	// CommitTimeout is offsets.commit.timeout.ms: how long an append waits
	// for the in-sync replicas; zero means Kafka's default, 5 s.
	CommitTimeout time.Duration
}

func (l PartitionLog) log() partition.InternalLog {
	timeout := l.CommitTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return partition.InternalLog{NodeID: l.NodeID, Partitions: l.Partitions, Topic: metadata.ConsumerOffsetsTopic, Timeout: timeout}
}

// Append implements OffsetsLog, with acks=all as Kafka's coordinator.
func (l PartitionLog) Append(p int32, batch []byte) error {
	return l.AppendVerified(p, batch, storage.NoVerification)
}

// AppendVerified is Append under a KIP-890 verification guard (a
// TxnOffsetCommit that opens the producer's transaction on the partition).
// The coordinator's own batches: a transactional offset commit's sequence
// is not a client's and is not checked.
func (l PartitionLog) AppendVerified(p int32, batch []byte, guard storage.VerificationGuard) error {
	return l.log().Append(p, batch, storage.TxnAppend{FromCoordinator: true, Guard: guard})
}

// Bounds implements OffsetsLog.
func (l PartitionLog) Bounds(p int32) (int64, int64, error) { return l.log().Bounds(p) }

// Read implements OffsetsLog.
func (l PartitionLog) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	return l.log().Read(p, offset, maxBytes)
}
