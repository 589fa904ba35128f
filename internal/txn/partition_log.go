package txn

import (
	"time"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/storage"
)

// StateLog is the coordinator's access to the __transaction_state
// partitions led by this broker. PartitionLog implements it over the
// broker's partitions; tests use an in-memory log.
type StateLog interface {
	// Append appends one record batch and returns once the in-sync
	// replicas have it. Errors wrap kerr codes.
	Append(partition int32, batch []byte) error
	// Bounds returns the partition's log start offset and high
	// watermark, once the high watermark covers the whole log as of the
	// call: what the load replays (partition.InternalLog.Bounds says why).
	Bounds(partition int32) (logStart, highWatermark int64, err error)
	// Read returns whole batches from offset on (at least one), below
	// the high watermark.
	Read(partition int32, offset int64, maxBytes int) ([]byte, error)
}

// PartitionLog is the StateLog over this broker's __transaction_state
// partitions (partition.InternalLog).
type PartitionLog struct {
	NodeID     int32
	Partitions *partition.Manager
	// Timeout bounds the wait for the in-sync replicas (Kafka's
	// transaction state writes use request.timeout.ms); zero is 30 s.
	Timeout time.Duration
}

func (l PartitionLog) log() partition.InternalLog {
	timeout := l.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return partition.InternalLog{NodeID: l.NodeID, Partitions: l.Partitions, Topic: metadata.TransactionStateTopic, Timeout: timeout}
}

// Append implements StateLog with acks=all, as Kafka's
// TransactionStateManager appends (min.insync.replicas is
// transaction.state.log.min.isr, the topic's config).
func (l PartitionLog) Append(p int32, batch []byte) error {
	return l.log().Append(p, batch, storage.TxnAppend{})
}

// Bounds implements StateLog.
func (l PartitionLog) Bounds(p int32) (int64, int64, error) { return l.log().Bounds(p) }

// Read implements StateLog.
func (l PartitionLog) Read(p int32, offset int64, maxBytes int) ([]byte, error) {
	return l.log().Read(p, offset, maxBytes)
}
