package streams

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// murmur2 is Kafka's default-partitioner hash (Utils.murmur2), so keys
// land where a Java producer would put them and QueryMetadataForKey agrees
// with the brokers' data.
func murmur2(data []byte) int32 {
	const m = 0x5bd1e995
	const r = 24
	length := len(data)
	h := uint32(0x9747b28c) ^ uint32(length)
	for i := 0; i+4 <= length; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	rem := length % 4
	tail := length - rem
	switch rem {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// keyPartition is Kafka's default partition of a serialized key.
func keyPartition(key []byte, n int32) int32 {
	return (murmur2(key) & 0x7fffffff) % n
}

type explicitPartitionKey struct{}

// explicitPartition marks a record whose Partition field was chosen by
// the topology (a task's changelog partition, a StreamPartitioner).
var explicitPartition = context.WithValue(context.Background(), explicitPartitionKey{}, true)

// streamsPartitioner honours explicit partitions, puts keyed records
// where Kafka's default partitioner would (murmur2), and spreads null-key
// records round-robin.
type streamsPartitioner struct{ rr atomic.Uint32 }

func (p *streamsPartitioner) ForTopic(string) kgo.TopicPartitioner { return topicPartitioner{p} }

type topicPartitioner struct{ p *streamsPartitioner }

func (topicPartitioner) RequiresConsistency(*kgo.Record) bool { return true }

func (t topicPartitioner) Partition(r *kgo.Record, n int) int {
	if r.Context == explicitPartition {
		return int(r.Partition)
	}
	if r.Key != nil {
		return int(keyPartition(r.Key, int32(n)))
	}
	return int(t.p.rr.Add(1) % uint32(n))
}
