package rules

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// AlterPartitionItem is one partition of an AlterPartition request (Kafka's
// API 56): the leader proposes NewISR at LeaderEpoch, based on the
// PartitionEpoch it last saw.
type AlterPartitionItem struct {
	TopicID        metadata.Uuid
	Partition      int32
	LeaderEpoch    int32
	PartitionEpoch int32
	NewISR         []int32
}

// AlterPartitionResult is the outcome for one item, in request order: the
// partition's state after the change (or its current state with Err).
type AlterPartitionResult struct {
	Err            error
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	PartitionEpoch int32
}

// AlterPartition validates and commits ISR changes proposed by leader
// brokerID (registration brokerEpoch), with the checks of Kafka's
// ReplicationControlManager: a stale leader epoch is FENCED_LEADER_EPOCH, a
// request from a broker that is not the leader INVALID_REQUEST (Kafka's
// answer too), a stale partition epoch INVALID_UPDATE_VERSION, and an ISR
// naming a broker that is not an active replica INELIGIBLE_REPLICA. An ISR
// expansion that brings every adding replica of a reassignment into the ISR
// completes the reassignment in the same batch. The whole request fails with
// STALE_BROKER_EPOCH if brokerEpoch is not the broker's current one.
func (c *Controller) AlterPartition(ctx context.Context, brokerID int32, brokerEpoch int64, items []AlterPartitionItem) ([]AlterPartitionResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	if brokerEpoch >= 0 { // -1: a request that does not state it (v0 peers)
		if _, err := checkBrokerEpoch(img, brokerID, brokerEpoch); err != nil {
			return nil, err
		}
	}
	results := make([]AlterPartitionResult, len(items))
	var recs []metadata.Record
	var committed []int
	for i, it := range items {
		res := &results[i]
		t, ok := img.TopicByID(it.TopicID)
		if !ok {
			res.Err = fmt.Errorf("%w: unknown topic id %v", kerr.UnknownTopicID, it.TopicID)
			continue
		}
		if it.Partition < 0 || int(it.Partition) >= len(t.Partitions) {
			res.Err = fmt.Errorf("%w: %s has no partition %d", kerr.UnknownTopicOrPartition, t.Name, it.Partition)
			continue
		}
		p := t.Partitions[it.Partition]
		fillState(res, p)
		if res.Err = checkAlterPartition(img, brokerID, p, it); res.Err != nil {
			continue
		}
		if slices.Equal(it.NewISR, p.ISR) {
			continue // nothing to change: answer the current state
		}
		eligible := img.BrokerActive
		tgt := partitionTarget{isr: slices.Clone(it.NewISR), eligible: eligible}
		scratch := *p
		scratch.ISR = tgt.isr
		if done, ok := completeReassignment(&scratch, tgt.isr, eligible); ok {
			tgt = done
		}
		if ch := buildChange(t.ID, p, tgt); ch != nil {
			recs = append(recs, ch)
			committed = append(committed, i)
		}
	}
	if len(recs) == 0 {
		return results, nil
	}
	next, err := c.log.Commit(ctx, recs)
	if err != nil {
		for _, i := range committed {
			results[i].Err = err
		}
		return results, nil
	}
	for _, i := range committed {
		t, _ := next.TopicByID(items[i].TopicID)
		fillState(&results[i], t.Partitions[items[i].Partition])
	}
	return results, nil
}

func fillState(res *AlterPartitionResult, p *metadata.PartitionImage) {
	res.Leader, res.LeaderEpoch, res.PartitionEpoch = p.Leader, p.LeaderEpoch, p.PartitionEpoch
	res.ISR = slices.Clone(p.ISR)
}

func checkAlterPartition(img *metadata.Image, brokerID int32, p *metadata.PartitionImage, it AlterPartitionItem) error {
	switch {
	case it.LeaderEpoch < p.LeaderEpoch:
		return fmt.Errorf("%w: leader epoch %d is older than the current %d", kerr.FencedLeaderEpoch, it.LeaderEpoch, p.LeaderEpoch)
	case it.LeaderEpoch > p.LeaderEpoch:
		// The controller has not seen this epoch: its image is behind
		// (Kafka answers NOT_CONTROLLER so the leader retries).
		return fmt.Errorf("%w: leader epoch %d is newer than the controller's %d", kerr.NotController, it.LeaderEpoch, p.LeaderEpoch)
	case p.Leader != brokerID:
		return fmt.Errorf("%w: broker %d is not the leader (%d)", kerr.InvalidRequest, brokerID, p.Leader)
	case it.PartitionEpoch != p.PartitionEpoch:
		return fmt.Errorf("%w: partition epoch %d is not the current %d", kerr.InvalidUpdateVersion, it.PartitionEpoch, p.PartitionEpoch)
	}
	if !slices.Contains(it.NewISR, brokerID) {
		return fmt.Errorf("%w: the new ISR %v does not contain the leader %d", kerr.InvalidRequest, it.NewISR, brokerID)
	}
	seen := map[int32]bool{}
	for _, r := range it.NewISR {
		if seen[r] || !slices.Contains(p.Replicas, r) {
			return fmt.Errorf("%w: the new ISR %v holds %d twice or a non-replica", kerr.InvalidRequest, it.NewISR, r)
		}
		seen[r] = true
		if !img.BrokerActive(r) && !slices.Contains(p.ISR, r) {
			return fmt.Errorf("%w: replica %d is fenced or shutting down", kerr.IneligibleReplica, r)
		}
	}
	return nil
}

// ElectionType is ElectLeaders' election_type (KIP-460).
type ElectionType int8

const (
	PreferredElection ElectionType = 0
	UncleanElection   ElectionType = 1
)

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// ElectionResult is the outcome for one partition.
type ElectionResult struct {
	TopicPartition
	Err error
}

// ElectLeaders runs elections as Kafka's ElectLeaders (key 43): preferred
// moves leadership to the first replica when it is in the ISR and active
// (PREFERRED_LEADER_NOT_AVAILABLE otherwise, ELECTION_NOT_NEEDED if it
// already leads); unclean elects a leader for a partition without one,
// taking an out-of-sync replica if no ISR member can lead
// (ELIGIBLE_LEADERS_NOT_AVAILABLE if none is active). nil partitions means
// every partition, and then partitions needing no election are left out of
// the results, as in Kafka.
func (c *Controller) ElectLeaders(ctx context.Context, typ ElectionType, partitions []TopicPartition) []ElectionResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	all := partitions == nil
	if all {
		for _, t := range img.Topics() {
			for _, p := range t.Partitions {
				partitions = append(partitions, TopicPartition{t.Name, p.Partition})
			}
		}
	}
	var results []ElectionResult
	var recs []metadata.Record
	var committed []int
	for _, tp := range partitions {
		res := ElectionResult{TopicPartition: tp}
		t, ok := img.Topic(tp.Topic)
		if !ok || tp.Partition < 0 || int(tp.Partition) >= len(t.Partitions) {
			res.Err = fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, tp.Topic, tp.Partition)
			results = append(results, res)
			continue
		}
		p := t.Partitions[tp.Partition]
		ch, err := electionChange(img, t.ID, p, typ)
		if err != nil {
			if !all || !errorsIsElectionNotNeeded(err) {
				res.Err = err
				results = append(results, res)
			}
			continue
		}
		recs = append(recs, ch)
		committed = append(committed, len(results))
		results = append(results, res)
	}
	if len(recs) == 0 {
		return results
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range committed {
			results[i].Err = err
		}
	}
	return results
}

func errorsIsElectionNotNeeded(err error) bool {
	ke, ok := kerrOf(err)
	return ok && ke == kerr.ElectionNotNeeded
}

func electionChange(img *metadata.Image, id metadata.Uuid, p *metadata.PartitionImage, typ ElectionType) (*metadata.PartitionChangeRecord, error) {
	switch typ {
	case PreferredElection:
		preferred := p.Replicas[0]
		if p.Leader == preferred {
			return nil, fmt.Errorf("%w: %d already leads", kerr.ElectionNotNeeded, preferred)
		}
		if !slices.Contains(p.ISR, preferred) || !img.BrokerActive(preferred) {
			return nil, fmt.Errorf("%w: preferred replica %d is not in the ISR or not active", kerr.PreferredLeaderNotAvailable, preferred)
		}
		return &metadata.PartitionChangeRecord{TopicID: id, Partition: p.Partition, Leader: metadata.Int32Ptr(preferred)}, nil
	case UncleanElection:
		if p.Leader != metadata.NoLeader {
			return nil, fmt.Errorf("%w: %d leads", kerr.ElectionNotNeeded, p.Leader)
		}
		ch := buildChange(id, p, partitionTarget{eligible: img.BrokerActive, unclean: true})
		if ch == nil || ch.Leader == nil || *ch.Leader == metadata.NoLeader {
			return nil, fmt.Errorf("%w: no replica is active", kerr.EligibleLeadersNotAvailable)
		}
		return ch, nil
	}
	return nil, fmt.Errorf("%w: unknown election type %d", kerr.InvalidRequest, typ)
}

// BalanceLeaders moves leadership back to preferred replicas where the
// preferred replica is in the ISR and active (auto.leader.rebalance.enable).
// Like KRaft, it does so for every such partition; a broker whose share of
// non-preferred leaderships is within imbalancePct percent of the
// partitions it prefers is left alone, as the ZooKeeper controller's
// leader.imbalance.per.broker.percentage did. It returns how many
// partitions moved.
func (c *Controller) BalanceLeaders(ctx context.Context, imbalancePct int32) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	preferredCount := map[int32]int{}
	misplaced := map[int32][]*metadata.PartitionChangeRecord{}
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			pref := p.Replicas[0]
			preferredCount[pref]++
			if ch, err := electionChange(img, t.ID, p, PreferredElection); err == nil {
				misplaced[pref] = append(misplaced[pref], ch)
			}
		}
	}
	var recs []metadata.Record
	for _, b := range slices.Sorted(mapKeys(misplaced)) {
		chs := misplaced[b]
		if imbalancePct > 0 && len(chs)*100 <= int(imbalancePct)*preferredCount[b] {
			continue
		}
		for _, ch := range chs {
			recs = append(recs, ch)
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return 0, err
	}
	c.logger.Info("moved leaders back to preferred replicas", "partitions", len(recs))
	return len(recs), nil
}
