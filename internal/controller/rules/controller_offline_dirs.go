package rules

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// ReplicaRef names one partition by topic id (a replica of it on the broker
// making the request).
type ReplicaRef struct {
	TopicID   metadata.Uuid
	Partition int32
}

// MoveOfflineReplicas is the controller's reaction to replicas in a
// broker's failed log dir (KIP-858's handleDirectoriesOffline): for each
// partition the broker leads or is in the ISR of, it takes the broker out
// of the ISR (unless it is the last member, KIP-841) and elects another
// leader among the remaining ISR, as a controlled shutdown does for all
// of a broker's partitions; with no other eligible ISR member the
// partition is left without a leader. The broker stays registered and
// keeps its other partitions. It returns a verdict per replica:
// UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, or NOT_LEADER_OR_FOLLOWER
// when the broker holds no replica of the partition.
func (c *Controller) MoveOfflineReplicas(ctx context.Context, broker int32, epoch int64, refs []ReplicaRef) (map[ReplicaRef]error, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	if _, err := checkBrokerEpoch(img, broker, epoch); err != nil {
		return nil, err
	}
	verdicts := make(map[ReplicaRef]error, len(refs))
	eligible := func(r int32) bool { return r != broker && img.BrokerActive(r) }
	var recs []metadata.Record
	for _, ref := range refs {
		t, ok := img.TopicByID(ref.TopicID)
		if !ok {
			verdicts[ref] = kerr.UnknownTopicID
			continue
		}
		if ref.Partition < 0 || int(ref.Partition) >= len(t.Partitions) || t.Partitions[ref.Partition] == nil {
			verdicts[ref] = kerr.UnknownTopicOrPartition
			continue
		}
		p := t.Partitions[ref.Partition]
		if !slices.Contains(p.Replicas, broker) {
			verdicts[ref] = kerr.NotLeaderForPartition
			continue
		}
		verdicts[ref] = nil
		if p.Leader != broker && !slices.Contains(p.ISR, broker) {
			continue
		}
		tgt := partitionTarget{isr: withoutBroker(p.ISR, broker), eligible: eligible, unclean: c.uncleanLocked(img, t.Name)}
		if ch := buildChange(t.ID, p, tgt); ch != nil {
			recs = append(recs, ch)
		}
	}
	if len(recs) == 0 {
		return verdicts, nil
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return nil, fmt.Errorf("moving replicas of an offline log dir of broker %d: %w", broker, err)
	}
	c.logger.Info("moved leadership and ISR membership off a failed log dir", "broker", broker, "partition_changes", len(recs))
	return verdicts, nil
}
