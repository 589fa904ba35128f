package broker

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
)

// hostedPartition finds the partition a data request names, with Kafka's
// errors: UNKNOWN_TOPIC_OR_PARTITION when the topic or the partition does
// not exist, KAFKA_STORAGE_ERROR when its replica here is in an offline log
// dir (Kafka's HostedPartition.Offline), NOT_LEADER_OR_FOLLOWER when it
// exists but has no replica here or, with leaderOnly, is not led here.
func (b *Broker) hostedPartition(img *metadata.Image, t *metadata.TopicImage, index int32, leaderOnly bool) (*partition.Partition, error) {
	p := b.partitions.Get(t.Name, index)
	if p == nil {
		if b.partitions.Offline(t.Name, index) {
			return nil, kerr.KafkaStorageError
		}
		if _, exists := img.Partition(t.Name, index); exists {
			return nil, kerr.NotLeaderForPartition
		}
		return nil, kerr.UnknownTopicOrPartition
	}
	if leaderOnly && !p.IsLeader() {
		return nil, kerr.NotLeaderForPartition
	}
	return p, nil
}

// checkLeaderEpoch is KIP-320's fencing: a client that knows an older
// leader epoch than ours gets FENCED_LEADER_EPOCH, one that knows a newer
// one (we have not caught up) UNKNOWN_LEADER_EPOCH; -1 is not checked.
func checkLeaderEpoch(clientEpoch, ours int32) error {
	switch {
	case clientEpoch < 0 || clientEpoch == ours:
		return nil
	case clientEpoch < ours:
		return kerr.FencedLeaderEpoch
	default:
		return kerr.UnknownLeaderEpoch
	}
}
