package broker

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/storage"
)

// countAppended adds an appended batch to BrokerTopicMetrics: MessagesIn
// counts the records of the batch (a duplicate idempotent retry appended
// nothing and counts none, as Kafka), BytesIn the batch bytes as they came
// on the wire.
func countAppended(topic string, info storage.AppendInfo, wireBytes int, converted bool) {
	if info.Duplicate || !metrics.Enabled() {
		return
	}
	n := uint64(info.LastOffset - info.BaseOffset + 1)
	t := metrics.Topic(topic)
	metrics.AllTopics.MessagesIn.Add(n)
	t.MessagesIn.Add(n)
	metrics.AllTopics.BytesIn.Add(uint64(wireBytes))
	t.BytesIn.Add(uint64(wireBytes))
	if converted {
		metrics.AllTopics.ProduceMessageConvs.Add(1)
		t.ProduceMessageConvs.Add(1)
	}
}

// countProduce counts one partition of a Produce request and whether it
// failed (TotalProduceRequestsPerSec and FailedProduceRequestsPerSec count
// per partition, as Kafka's ReplicaManager). A topic missing from the image
// counts broker-wide only: names a client makes up must not grow the
// per-topic counters.
func countProduce(img *metadata.Image, topic string, err error) {
	if !metrics.Enabled() {
		return
	}
	var t *metrics.TopicCounters
	if _, ok := img.Topic(topic); ok {
		t = metrics.Topic(topic)
		t.TotalProduceRequests.Add(1)
	}
	metrics.AllTopics.TotalProduceRequests.Add(1)
	if err == nil {
		return
	}
	metrics.AllTopics.FailedProduceRequests.Add(1)
	if t != nil {
		t.FailedProduceRequests.Add(1)
	}
	if errors.Is(err, kerr.CorruptMessage) {
		metrics.AllTopics.InvalidMessageCrcCount.Add(1)
		if t != nil {
			t.InvalidMessageCrcCount.Add(1)
		}
	}
}
