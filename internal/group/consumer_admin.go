package group

// Consumer-protocol groups in the shared paths: offset commit and fetch
// validation (KIP-848 member epochs) and ConsumerGroupDescribe.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// validateConsumerCommitLocked is Kafka's ConsumerGroup.validateOffsetCommit:
// with no member (generation -1) only an empty group takes commits; a
// member must be in the group, commit with OffsetCommit v9+, and send its
// current member epoch as the generation (STALE_MEMBER_EPOCH otherwise).
func (g *Group) validateConsumerCommitLocked(req CommitRequest) error {
	cg := g.mu.consumer
	if req.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	m := cg.members[req.MemberID]
	if m == nil {
		return fmt.Errorf("%w: member %q is not in consumer group %s", kerr.UnknownMemberID, req.MemberID, g.id)
	}
	if m.isClassic() {
		// A classic member commits at any version with its
		// generation, which is its member epoch.
		if req.Generation != m.epoch {
			return fmt.Errorf("%w: member %s committed with generation %d, its epoch is %d", kerr.IllegalGeneration, m.id, req.Generation, m.epoch)
		}
		return nil
	}
	if !req.GroupIDNotFoundForUnknown {
		// That flag is set exactly for v9+.
		return fmt.Errorf("%w: OffsetCommit version 9 or above must be used by members using the consumer group protocol", kerr.UnsupportedVersion)
	}
	if req.Generation != m.epoch {
		return fmt.Errorf("%w: member %s committed with epoch %d, its epoch is %d", kerr.StaleMemberEpoch, m.id, req.Generation, m.epoch)
	}
	return nil
}

// FetchingMember names the member behind an OffsetFetch v9+.
type FetchingMember struct {
	MemberID *string
	Epoch    int32
}

// validateConsumerFetchLocked is Kafka's ConsumerGroup.validateOffsetFetch.
func (g *Group) validateConsumerFetchLocked(f *FetchingMember) error {
	cg := g.mu.consumer
	if cg == nil || f == nil || (f.Epoch < 0 && f.MemberID == nil) {
		return nil
	}
	id := ""
	if f.MemberID != nil {
		id = *f.MemberID
	}
	m := cg.members[id]
	if m == nil {
		return fmt.Errorf("%w: member %q is not in consumer group %s", kerr.UnknownMemberID, id, g.id)
	}
	if f.Epoch != m.epoch {
		return fmt.Errorf("%w: member %s fetched with epoch %d, its epoch is %d", kerr.StaleMemberEpoch, m.id, f.Epoch, m.epoch)
	}
	return nil
}

// ConsumerMemberDescription is one member as ConsumerGroupDescribe shows
// it. Assignments carry topic names resolved from the current metadata.
type ConsumerMemberDescription struct {
	MemberID             string
	InstanceID, RackID   *string
	MemberEpoch          int32
	ClientID, ClientHost string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	Assignment           []NamedTopicPartitions
	TargetAssignment     []NamedTopicPartitions
	// Classic is set for a member speaking the classic protocol.
	Classic bool
}

// NamedTopicPartitions are partitions of a topic known by id and name ("" if
// the topic no longer exists).
type NamedTopicPartitions struct {
	TopicID    [16]byte
	Topic      string
	Partitions []int32
}

// ConsumerGroupDescription is ConsumerGroupDescribe's view of one group.
type ConsumerGroupDescription struct {
	GroupID         string
	State           string
	Epoch           int32
	AssignmentEpoch int32
	AssignorName    string
	Members         []ConsumerMemberDescription
}

// DescribeConsumerGroup describes a consumer-protocol group:
// GROUP_ID_NOT_FOUND for an unknown group or a classic one, as Kafka.
func (c *Coordinator) DescribeConsumerGroup(groupID string) (ConsumerGroupDescription, error) {
	d := ConsumerGroupDescription{GroupID: groupID}
	if err := c.CheckOwner(groupID); err != nil {
		return d, err
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return d, err
	}
	if g == nil {
		return d, fmt.Errorf("%w: group %s not found", kerr.GroupIDNotFound, groupID)
	}
	defer g.mu.Unlock()
	cg := g.mu.consumer
	if cg == nil {
		return d, fmt.Errorf("%w: group %s is not a consumer group", kerr.GroupIDNotFound, groupID)
	}
	names := map[[16]byte]string{}
	for name, t := range c.topicsSnapshot() {
		names[t.id] = name
	}
	named := func(a assignment) []NamedTopicPartitions {
		out := []NamedTopicPartitions{}
		for _, id := range a.topicIDs() {
			out = append(out, NamedTopicPartitions{TopicID: id, Topic: names[id], Partitions: slices.Clone(a[id])})
		}
		return out
	}
	d.State, d.Epoch, d.AssignmentEpoch = cg.stateName(), cg.epoch, cg.assignmentEpoch
	d.AssignorName = preferredAssignor(c.cfg.ConsumerAssignors, cg.members)
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := cg.members[id]
		d.Members = append(d.Members, ConsumerMemberDescription{
			MemberID: m.id, InstanceID: m.instanceID, RackID: m.rackID, MemberEpoch: m.epoch,
			ClientID: m.clientID, ClientHost: m.clientHost,
			SubscribedTopicNames: slices.Clone(m.topics), SubscribedTopicRegex: m.regex,
			Assignment: named(m.assigned), TargetAssignment: named(cg.target[m.id]),
			Classic: m.isClassic(),
		})
	}
	return d, nil
}
