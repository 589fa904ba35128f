package group

// The admin views of groups: DescribeGroups, ListGroups, DeleteGroups.

import (
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MemberDescription is one member as DescribeGroups shows it.
type MemberDescription struct {
	MemberID   string
	InstanceID *string
	ClientID   string
	ClientHost string
	// Metadata and Assignment are only filled for a Stable group, as
	// Kafka does.
	Metadata   []byte
	Assignment []byte
}

// GroupDescription is DescribeGroups' view of one group.
type GroupDescription struct {
	GroupID      string
	State        string
	ProtocolType string
	Protocol     string // "" unless Stable
	Members      []MemberDescription
}

// DescribeGroup describes a group; an unknown group is described as Dead
// with no members, as Kafka's classic coordinator does.
func (c *Coordinator) DescribeGroup(groupID string) (GroupDescription, error) {
	d := GroupDescription{GroupID: groupID, State: StateDead.String()}
	if err := c.CheckOwner(groupID); err != nil {
		return d, err
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil || g == nil {
		return d, err
	}
	defer g.mu.Unlock()
	if g.mu.consumer != nil {
		// Kafka 4 describes only classic groups here ("not a
		// classic group" is GROUP_ID_NOT_FOUND from v6, KIP-1043;
		// Dead with no members before); ConsumerGroupDescribe
		// describes consumer groups.
		return d, nil
	}
	d.State = g.mu.state.String()
	d.ProtocolType = g.mu.protocolType
	stable := g.mu.state == StateStable
	if stable {
		d.Protocol = g.mu.protocolName
	}
	for _, id := range g.mu.order {
		m := g.mu.members[id]
		md := MemberDescription{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientHost: m.clientHost}
		if stable {
			md.Metadata = m.metadataFor(g.mu.protocolName)
			md.Assignment = m.assignment
		}
		d.Members = append(d.Members, md)
	}
	return d, nil
}

// GroupListing is one ListGroups entry.
type GroupListing struct {
	GroupID      string
	ProtocolType string
	State        string
	// Type is the group type (KIP-848): "classic" or "consumer".
	Type string
}

// ListGroups lists the groups of the partitions loaded here, filtered by
// state (ListGroups v4+) and type (v5+), both case-insensitive; an empty
// filter matches everything. Loading is reported as an error so the
// client retries rather than see a partial list.
func (c *Coordinator) ListGroups(states, types []string) ([]GroupListing, error) {
	c.mu.Lock()
	for _, s := range c.mu.shards {
		if !s.loaded {
			c.mu.Unlock()
			return nil, kerr.CoordinatorLoadInProgress
		}
	}
	c.mu.Unlock()
	match := func(filter []string, v string) bool {
		return len(filter) == 0 || slices.ContainsFunc(filter, func(f string) bool { return strings.EqualFold(f, v) })
	}
	var out []GroupListing
	for _, g := range c.groupsSnapshot() {
		g.mu.Lock()
		l := GroupListing{GroupID: g.id, ProtocolType: g.mu.protocolType, State: g.mu.state.String(), Type: "classic"}
		if cg := g.mu.consumer; cg != nil {
			l.State, l.Type = cg.stateName(), "consumer"
		}
		dead := g.mu.state == StateDead
		g.mu.Unlock()
		if !dead && match(states, l.State) && match(types, l.Type) {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GroupID < out[j].GroupID })
	return out, nil
}

// DeleteGroup deletes an empty group and its offsets, writing tombstones
// for each: NON_EMPTY_GROUP while it has members, GROUP_ID_NOT_FOUND when
// there is no such group.
func (c *Coordinator) DeleteGroup(groupID string) error {
	if err := c.CheckOwner(groupID); err != nil {
		return err
	}
	g, err := c.lockGroup(groupID, false)
	if err != nil {
		return err
	}
	if g == nil {
		return kerr.GroupIDNotFound
	}
	defer g.mu.Unlock()
	if g.mu.state != StateEmpty {
		return kerr.NonEmptyGroup
	}
	recs := make([]kv, 0, len(g.mu.offsets)+1)
	for tp := range g.mu.offsets {
		recs = append(recs, kv{key: offsetCommitKey(g.id, tp)})
	}
	recs = append(recs, g.deletionRecordsLocked()...)
	if err := c.appendRecords(g.partition, recs); err != nil {
		return err
	}
	g.mu.offsets = map[TopicPartition]CommittedOffset{}
	c.removeGroupLocked(g)
	g.shutdownLocked(kerr.GroupIDNotFound)
	return nil
}

// deletionRecordsLocked are the tombstones that delete the group's own
// records (not its offsets).
func (g *Group) deletionRecordsLocked() []kv {
	if g.mu.consumer != nil {
		return consumerGroupTombstones(g.id)
	}
	return []kv{{key: groupMetadataKey(g.id)}}
}
