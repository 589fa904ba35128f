package rules

import "github.com/vltava/vltava/internal/metadata"
import "slices"

// This file holds the pure rules that turn a wanted partition state into a
// PartitionChangeRecord, like KRaft's PartitionChangeBuilder: who may lead,
// how the ISR shrinks when a broker goes away, and when a reassignment is
// complete. Nothing here commits; the Controller methods batch the records.

// partitionTarget is the state a change wants for one partition. A nil
// replicas keeps the assignment (and the reassignment state) unchanged.
type partitionTarget struct {
	replicas, adding, removing []int32
	isr                        []int32
	// eligible reports whether a broker may lead (active and not the
	// broker being fenced or shut down).
	eligible func(id int32) bool
	// unclean allows electing a replica outside the ISR when no ISR member
	// is eligible (unclean.leader.election.enable).
	unclean bool
	// preferred forces the election to the first eligible ISR member in
	// assignment order even when the current leader is still eligible.
	preferred bool
}

// electLeader picks the leader of p under t. It keeps the current leader
// while it is in the ISR and eligible (unless t.preferred); otherwise it takes
// the first replica in assignment order that is in the ISR and eligible, as
// Kafka does. If none is and t.unclean is set, it takes the first eligible
// replica and the ISR becomes that replica alone (Kafka's unclean election);
// otherwise the partition is left without a leader (NoLeader) and the ISR
// is returned unchanged.
func electLeader(current int32, replicas, isr []int32, t partitionTarget) (leader int32, newISR []int32) {
	inISR := func(id int32) bool { return slices.Contains(isr, id) }
	if !t.preferred && current != metadata.NoLeader && inISR(current) && t.eligible(current) && slices.Contains(replicas, current) {
		return current, isr
	}
	for _, r := range replicas {
		if inISR(r) && t.eligible(r) {
			return r, isr
		}
	}
	if t.unclean {
		for _, r := range replicas {
			if t.eligible(r) {
				return r, []int32{r}
			}
		}
	}
	return metadata.NoLeader, isr
}

// buildChange returns the record moving p (of topic id) to t, or nil when
// nothing would change.
func buildChange(id metadata.Uuid, p *metadata.PartitionImage, t partitionTarget) *metadata.PartitionChangeRecord {
	replicas := p.Replicas
	if t.replicas != nil {
		replicas = t.replicas
	}
	isr := t.isr
	if isr == nil {
		isr = p.ISR
	}
	// The ISR only holds replicas of the (new) assignment.
	isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !slices.Contains(replicas, r) })
	leader, isr := electLeader(p.Leader, replicas, isr, t)
	rec := &metadata.PartitionChangeRecord{TopicID: id, Partition: p.Partition}
	changed := false
	if leader != p.Leader {
		rec.Leader = metadata.Int32Ptr(leader)
		changed = true
	}
	if !slices.Equal(isr, p.ISR) {
		rec.ISR = slices.Clone(isr)
		if rec.ISR == nil {
			rec.ISR = []int32{}
		}
		changed = true
	}
	if t.replicas != nil && (!slices.Equal(t.replicas, p.Replicas) || !slices.Equal(t.adding, p.AddingReplicas) || !slices.Equal(t.removing, p.RemovingReplicas)) {
		rec.Replicas = slices.Clone(t.replicas)
		rec.AddingReplicas = slices.Clone(t.adding)
		rec.RemovingReplicas = slices.Clone(t.removing)
		changed = true
	}
	if !changed {
		return nil
	}
	return rec
}

// withoutBroker returns the ISR with broker removed, unless that would empty
// it: KIP-841 keeps the last member so the partition remembers who holds
// the committed data, and leaves it without a leader instead.
func withoutBroker(isr []int32, broker int32) []int32 {
	out := slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == broker })
	if len(out) == 0 {
		return slices.Clone(isr)
	}
	return out
}

// reassignmentTarget is where a reassignment of p ends: the target
// replicas (the current ones minus those being removed).
func reassignmentTarget(p *metadata.PartitionImage) []int32 {
	return slices.DeleteFunc(slices.Clone(p.Replicas), func(r int32) bool { return slices.Contains(p.RemovingReplicas, r) })
}

// completeReassignment returns the target that finishes p's reassignment
// if every adding replica is in isr (KIP-455: the old replicas are dropped
// only once the new ones have caught up), and false otherwise. The leader
// moves if it is being removed.
func completeReassignment(p *metadata.PartitionImage, isr []int32, eligible func(int32) bool) (partitionTarget, bool) {
	if !p.Reassigning() {
		return partitionTarget{}, false
	}
	for _, a := range p.AddingReplicas {
		if !slices.Contains(isr, a) {
			return partitionTarget{}, false
		}
	}
	target := reassignmentTarget(p)
	newISR := slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return !slices.Contains(target, r) })
	if len(newISR) == 0 {
		return partitionTarget{}, false
	}
	return partitionTarget{replicas: target, isr: newISR, eligible: eligible}, true
}
