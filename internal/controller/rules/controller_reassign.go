package rules

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// Reassignment asks to move one partition to Replicas (KIP-455); nil
// Replicas cancels the reassignment in progress.
type Reassignment struct {
	TopicPartition
	Replicas []int32
}

// OngoingReassignment is one partition of ListPartitionReassignments.
type OngoingReassignment struct {
	TopicPartition
	Replicas, Adding, Removing []int32
}

// AlterPartitionReassignments starts or cancels reassignments, with the
// rules of Kafka's ReplicationControlManager. While a reassignment runs,
// the partition's replicas are the target followed by the original replicas
// not in it; the adding replicas are the target's new brokers and the
// removing ones the originals not in the target. The new replicas fetch
// from the leader like any follower; once all of them are in the ISR
// (see AlterPartition and CompleteReassignments), the replicas become the
// target and the removed ones leave the ISR (and leadership). A target that
// adds no replica completes at once. Errors are per partition, in request
// order.
func (c *Controller) AlterPartitionReassignments(ctx context.Context, reqs []Reassignment) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	errs := make([]error, len(reqs))
	var recs []metadata.Record
	var committed []int
	for i, r := range reqs {
		t, ok := img.Topic(r.Topic)
		if !ok || r.Partition < 0 || int(r.Partition) >= len(t.Partitions) {
			errs[i] = fmt.Errorf("%w: %s-%d", kerr.UnknownTopicOrPartition, r.Topic, r.Partition)
			continue
		}
		p := t.Partitions[r.Partition]
		tgt, err := c.reassignmentTargetLocked(img, t.Name, p, r.Replicas)
		if err != nil {
			errs[i] = err
			continue
		}
		if ch := buildChange(t.ID, p, tgt); ch != nil {
			recs = append(recs, ch)
			committed = append(committed, i)
		}
	}
	if len(recs) == 0 {
		return errs
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		for _, i := range committed {
			errs[i] = err
		}
	}
	return errs
}

func (c *Controller) reassignmentTargetLocked(img *metadata.Image, topic string, p *metadata.PartitionImage, target []int32) (partitionTarget, error) {
	eligible := img.BrokerActive
	// The original replicas: what the partition had before any reassignment.
	orig := slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.AddingReplicas, r) })
	if target == nil {
		if !p.Reassigning() {
			return partitionTarget{}, fmt.Errorf("%w: %s-%d", kerr.NoReassignmentInProgress, topic, p.Partition)
		}
		isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(orig, r) })
		if len(isr) == 0 {
			isr = nil // keep the ISR; the leader election below leaves it leaderless if need be
		}
		return partitionTarget{replicas: orig, isr: isr, eligible: eligible}, nil
	}
	if len(target) == 0 {
		return partitionTarget{}, fmt.Errorf("%w: the replica list is empty", kerr.InvalidReplicaAssignment)
	}
	seen := map[int32]bool{}
	for _, b := range target {
		if seen[b] {
			return partitionTarget{}, fmt.Errorf("%w: broker %d is listed twice", kerr.InvalidReplicaAssignment, b)
		}
		seen[b] = true
		if _, ok := img.Broker(b); !ok {
			return partitionTarget{}, fmt.Errorf("%w: broker %d is not registered", kerr.InvalidReplicaAssignment, b)
		}
	}
	var adding, removing []int32
	for _, b := range target {
		if !slices.Contains(orig, b) {
			adding = append(adding, b)
		}
	}
	for _, b := range orig {
		if !slices.Contains(target, b) {
			removing = append(removing, b)
		}
	}
	if len(adding) == 0 {
		// Nothing to copy: the target holds only replicas that already
		// have the data; finish now, keeping the ISR members among them.
		isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !seen[r] })
		if len(isr) == 0 {
			return partitionTarget{}, fmt.Errorf("%w: no replica of the target %v is in the ISR %v", kerr.InvalidReplicaAssignment, target, p.ISR)
		}
		return partitionTarget{replicas: slices.Clone(target), isr: isr, eligible: eligible}, nil
	}
	replicas := slices.Clone(target)
	replicas = append(replicas, removing...)
	return partitionTarget{replicas: replicas, adding: adding, removing: removing, isr: slices.Clone(p.ISR), eligible: eligible}, nil
}

// ListPartitionReassignments returns the reassignments in progress, of the
// given partitions or (nil) of all, sorted by topic and partition.
func ListPartitionReassignments(img *metadata.Image, partitions []TopicPartition) []OngoingReassignment {
	var out []OngoingReassignment
	add := func(name string, p *metadata.PartitionImage) {
		if p.Reassigning() {
			out = append(out, OngoingReassignment{
				TopicPartition: TopicPartition{name, p.Partition},
				Replicas:       slices.Clone(p.Replicas), Adding: slices.Clone(p.AddingReplicas), Removing: slices.Clone(p.RemovingReplicas),
			})
		}
	}
	if partitions == nil {
		for _, t := range img.Topics() {
			for _, p := range t.Partitions {
				add(t.Name, p)
			}
		}
		return out
	}
	for _, tp := range partitions {
		if p, ok := img.Partition(tp.Topic, tp.Partition); ok {
			add(tp.Topic, p)
		}
	}
	return out
}

// CompleteReassignments finishes every reassignment whose adding replicas
// are all in the ISR. AlterPartition completes them as the ISR grows; this
// catches those whose replicas were already in sync (or whose completion
// lost a race with another change). It returns how many completed.
func (c *Controller) CompleteReassignments(ctx context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	img := c.log.Image()
	var recs []metadata.Record
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if tgt, ok := completeReassignment(p, p.ISR, img.BrokerActive); ok {
				if ch := buildChange(t.ID, p, tgt); ch != nil {
					recs = append(recs, ch)
				}
			}
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return 0, err
	}
	c.logger.Info("completed partition reassignments", "partitions", len(recs))
	return len(recs), nil
}
