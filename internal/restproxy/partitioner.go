package restproxy

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"
)

// explicitKey marks, in a record's Context, a partition chosen by the
// request (partition_id, or v2's partition): the partitioner keeps it.
type explicitKey struct{}

// explicitPartition is the Context of a record whose Partition is the
// request's.
var explicitPartition = context.WithValue(context.Background(), explicitKey{}, true)

// partitioner keeps a request's explicit partition and otherwise
// partitions as Kafka's producer does (murmur2 of the key, sticky without
// one).
type partitioner struct{ sticky kgo.Partitioner }

func newPartitioner() kgo.Partitioner { return partitioner{sticky: kgo.StickyKeyPartitioner(nil)} }

func (p partitioner) ForTopic(t string) kgo.TopicPartitioner {
	return topicPartitioner{p.sticky.ForTopic(t)}
}

type topicPartitioner struct{ kgo.TopicPartitioner }

func isExplicit(r *kgo.Record) bool { return r.Context == explicitPartition }

func (tp topicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return isExplicit(r) || tp.TopicPartitioner.RequiresConsistency(r)
}

func (tp topicPartitioner) Partition(r *kgo.Record, n int) int {
	if isExplicit(r) {
		return int(r.Partition)
	}
	return tp.TopicPartitioner.Partition(r, n)
}

// OnNewBatch lets the sticky partitioner move on to a new partition.
func (tp topicPartitioner) OnNewBatch() {
	if nb, ok := tp.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		nb.OnNewBatch()
	}
}
