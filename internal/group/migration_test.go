package group

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// subscriptionMeta is a classic consumer's JoinGroup metadata for topics,
// reporting owned (topic name -> partitions).
func subscriptionMeta(topics []string, owned map[string][]int32) []byte {
	md := kmsg.NewConsumerMemberMetadata()
	md.Version = 1
	md.Topics = topics
	for t, ps := range owned {
		o := kmsg.NewConsumerMemberMetadataOwnedPartition()
		o.Topic, o.Partitions = t, ps
		md.OwnedPartitions = append(md.OwnedPartitions, o)
	}
	return md.AppendTo(nil)
}

func classicJoinReq(group, member string, owned map[string][]int32) JoinRequest {
	r := joinReq(group, member)
	r.Protocols = []Protocol{{Name: "cooperative-sticky", Metadata: subscriptionMeta([]string{"a"}, owned)}}
	return r
}

func decodeAssignment(t *testing.T, b []byte) map[string][]int32 {
	t.Helper()
	var ca kmsg.ConsumerMemberAssignment
	if err := ca.ReadFrom(b); err != nil {
		t.Fatalf("assignment: %v", err)
	}
	out := map[string][]int32{}
	for _, tp := range ca.Topics {
		out[tp.Topic] = append(out[tp.Topic], tp.Partitions...)
	}
	return out
}

// A classic group with a member is upgraded when a consumer-protocol
// member joins; the classic member keeps its partitions until it rejoins,
// revokes through JoinGroup/SyncGroup, and the group goes back to classic
// when the consumer-protocol member leaves (policy bidirectional).
func TestMigrationUpgradeAndDowngrade(t *testing.T) {
	log := newMemLog()
	c := newConsumerTestCoordinator(t, log, time.Minute)
	ctx := context.Background()
	const g = "mig"
	// A classic member owning all of "a".
	r := c.JoinGroup(ctx, classicJoinReq(g, "", nil))
	if r.Err != nil {
		t.Fatalf("classic join: %v", r.Err)
	}
	classic, gen := r.MemberID, r.Generation
	all := kmsg.NewConsumerMemberAssignment()
	at := kmsg.NewConsumerMemberAssignmentTopic()
	at.Topic, at.Partitions = "a", []int32{0, 1, 2, 3}
	all.Topics = append(all.Topics, at)
	if s := c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: classic, Generation: gen,
		Assignments: map[string][]byte{classic: all.AppendTo(nil)}}); s.Err != nil {
		t.Fatalf("classic sync: %v", s.Err)
	}

	// Upgrade: the consumer-protocol member joins. It gets nothing yet:
	// every partition is still the classic member's.
	cl := join(t, c, g, "next", "a")
	d := describe(t, c, g)
	if len(d.Members) != 2 || cl.owned.size() != 0 {
		t.Fatalf("after upgrade: %+v, next owns %v", d, cl.owned)
	}
	for _, m := range d.Members {
		if m.MemberID == classic && (!m.Classic || m.MemberEpoch != gen) {
			t.Fatalf("classic member after upgrade: %+v", m)
		}
	}
	// The classic member must rejoin.
	wantErr(t, "classic heartbeat", c.Heartbeat(g, classic, nil, gen), kerr.RebalanceInProgress)
	j := c.JoinGroup(ctx, classicJoinReq(g, classic, map[string][]int32{"a": {0, 1, 2, 3}}))
	if j.Err != nil || j.LeaderID != "" || j.ProtocolName != "cooperative-sticky" {
		t.Fatalf("classic rejoin: %+v", j)
	}
	s := c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: classic, Generation: j.Generation})
	if s.Err != nil {
		t.Fatalf("classic sync: %v", s.Err)
	}
	kept := decodeAssignment(t, s.Assignment)["a"]
	if len(kept) != 2 {
		t.Fatalf("classic member keeps %v, want 2 partitions", kept)
	}
	// It revoked the others: rejoining says so, and the new member then
	// gets them.
	j = c.JoinGroup(ctx, classicJoinReq(g, classic, map[string][]int32{"a": kept}))
	if j.Err != nil {
		t.Fatalf("classic rejoin after revoking: %v", j.Err)
	}
	wantErr(t, "classic heartbeat when reconciled", c.Heartbeat(g, classic, nil, j.Generation), nil)
	cl.mustHeartbeat()
	if cl.owned.size() != 2 {
		t.Fatalf("consumer member owns %v, want 2 partitions", cl.owned)
	}
	// A classic commit carries its generation (member epoch).
	if err, errs := c.CommitOffsets(ctx, CommitRequest{GroupID: g, MemberID: classic, Generation: j.Generation,
		Offsets: []CommitOffset{{TopicPartition: TopicPartition{Topic: "a", Partition: kept[0]}, Offset: 5, LeaderEpoch: -1, CommitTimestamp: -1}}}); err != nil || errs[0] != nil {
		t.Fatalf("classic commit: %v %v", err, errs)
	}

	// The group survives a reload as a consumer group with its classic
	// member.
	c2 := newConsumerTestCoordinator(t, log, time.Minute)
	d2 := describe(t, c2, g)
	if len(d2.Members) != 2 {
		t.Fatalf("reloaded: %+v", d2)
	}

	// Downgrade: the last consumer-protocol member leaves.
	if res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: g, MemberID: "next", MemberEpoch: leaveEpoch}); res.Err != nil {
		t.Fatalf("leave: %v", res.Err)
	}
	if _, err := c.DescribeConsumerGroup(g); !isErr(err, kerr.GroupIDNotFound) {
		t.Fatalf("after downgrade, ConsumerGroupDescribe: %v", err)
	}
	dg, err := c.DescribeGroup(g)
	if err != nil || dg.State != "PreparingRebalance" || len(dg.Members) != 1 {
		t.Fatalf("after downgrade: %+v %v", dg, err)
	}
	wantErr(t, "classic heartbeat after downgrade", c.Heartbeat(g, classic, nil, j.Generation), kerr.RebalanceInProgress)
	j2 := c.JoinGroup(ctx, classicJoinReq(g, classic, map[string][]int32{"a": kept}))
	if j2.Err != nil || j2.LeaderID != classic || j2.Generation <= j.Generation {
		t.Fatalf("rejoin after downgrade: %+v", j2)
	}
	// Reloaded, it is the classic group.
	c3 := newConsumerTestCoordinator(t, log, time.Minute)
	if _, err := c3.DescribeConsumerGroup(g); !isErr(err, kerr.GroupIDNotFound) {
		t.Fatalf("reloaded after downgrade: %v", err)
	}
}

// group.consumer.migration.policy governs the conversions: without upgrade
// a consumer-protocol member cannot join a live classic group
// (GROUP_ID_NOT_FOUND, as Kafka's validateOnlineUpgrade); without
// downgrade a consumer group left with classic members stays one. A
// classic member may join a live consumer group under every policy, as in
// Kafka (classicGroupJoinToConsumerGroup does not consult it).
func TestMigrationPolicies(t *testing.T) {
	ctx := context.Background()
	for _, policy := range []MigrationPolicy{MigrationDisabled, MigrationDowngrade, MigrationUpgrade, MigrationBidirectional} {
		cfg := testConfig()
		cfg.MigrationPolicy = policy
		cfg.ConsumerHeartbeatInterval = 50 * time.Millisecond
		c := newTestCoordinator(t, cfg, newMemLog(), nil)
		c.setTopics(map[string]topicMeta{"a": {name: "a", id: topicA, partitions: 4}})
		r := c.JoinGroup(ctx, classicJoinReq("classic", "", nil))
		if r.Err != nil {
			t.Fatalf("%s: classic join: %v", policy, r.Err)
		}
		res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "classic", MemberID: "m",
			RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}})
		if policy.upgradeAllowed() != (res.Err == nil) || (res.Err != nil && !isErr(res.Err, kerr.GroupIDNotFound)) {
			t.Fatalf("%s: consumer join to a classic group: %v", policy, res.Err)
		}

		res = c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "cg", MemberID: "m",
			RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}})
		if res.Err != nil {
			t.Fatalf("%s: consumer join: %v", policy, res.Err)
		}
		j := c.JoinGroup(ctx, classicJoinReq("cg", "", nil))
		if j.Err != nil {
			t.Fatalf("%s: classic join to a consumer group: %v", policy, j.Err)
		}
		c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "cg", MemberID: "m", MemberEpoch: leaveEpoch})
		_, err := c.DescribeConsumerGroup("cg")
		if downgraded := isErr(err, kerr.GroupIDNotFound); downgraded != policy.downgradeAllowed() {
			t.Fatalf("%s: downgraded %v (%v)", policy, downgraded, err)
		}
	}
}

// ClassicMemberMetadata round-trips through the member metadata record.
func TestClassicMemberMetadataRecord(t *testing.T) {
	meta := memberMetadata{clientID: "c", clientHost: "/h", topics: []string{"a"}, rebalanceTimeoutMs: 3000,
		classic: &classicMetadata{sessionTimeoutMs: 4500, protocols: []Protocol{{Name: "range", Metadata: []byte{0, 1, 2}}}}}
	rec := memberMetadataRecord("g", "m", meta)
	got, err := decodeConsumerRecord(recConsumerMemberMetadata, rec.key, rec.value)
	if err != nil {
		t.Fatal(err)
	}
	c := got.meta.classic
	if c == nil || c.sessionTimeoutMs != 4500 || len(c.protocols) != 1 || c.protocols[0].Name != "range" || string(c.protocols[0].Metadata) != "\x00\x01\x02" {
		t.Fatalf("classic metadata: %+v", c)
	}
	plain := memberMetadataRecord("g", "m", memberMetadata{clientID: "c"})
	if got, err := decodeConsumerRecord(recConsumerMemberMetadata, plain.key, plain.value); err != nil || got.meta.classic != nil {
		t.Fatalf("consumer member: %+v %v", got.meta, err)
	}
}

// A classic member of a consumer group must send SyncGroup after its
// JoinGroup, and rejoin once told REBALANCE_IN_PROGRESS, each within its
// rebalance timeout; otherwise it is fenced and its partitions move on.
func TestMigrationClassicMemberWaits(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), time.Minute)
	ctx := context.Background()
	const g = "waits"
	first := join(t, c, g, "first", "a")
	req := classicJoinReq(g, "slow", nil)
	req.RebalanceTimeout = 100 * time.Millisecond
	j := c.JoinGroup(ctx, req)
	if j.Err != nil {
		t.Fatalf("classic join: %v", j.Err)
	}
	// No SyncGroup: fenced.
	waitFor(t, func() bool { return len(describe(t, c, g).Members) == 1 })

	j = c.JoinGroup(ctx, req)
	if j.Err != nil {
		t.Fatalf("classic join: %v", j.Err)
	}
	if s := c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: j.MemberID, Generation: j.Generation}); s.Err != nil {
		t.Fatalf("sync: %v", s.Err)
	}
	// Synced: it stays past its rebalance timeout.
	time.Sleep(200 * time.Millisecond)
	if n := len(describe(t, c, g).Members); n != 2 {
		t.Fatalf("%d members after a sync, want 2", n)
	}
	// The group moves on (a member joins); told to rejoin, it does not.
	join(t, c, g, "third", "a")
	first.mustHeartbeat()
	wantErr(t, "classic heartbeat", c.Heartbeat(g, j.MemberID, nil, j.Generation), kerr.RebalanceInProgress)
	waitFor(t, func() bool {
		for _, m := range describe(t, c, g).Members {
			if m.MemberID == j.MemberID {
				return false
			}
		}
		return true
	})
}

// A classic member joining a consumer group must share a protocol with its
// classic members (INCONSISTENT_GROUP_PROTOCOL otherwise), and a JoinGroup
// that is not of the consumer protocol type is refused.
func TestMigrationClassicProtocolChecks(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), time.Minute)
	ctx := context.Background()
	const g = "protocols"
	join(t, c, g, "first", "a")
	if j := c.JoinGroup(ctx, classicJoinReq(g, "c1", nil)); j.Err != nil {
		t.Fatalf("classic join: %v", j.Err)
	}
	other := classicJoinReq(g, "c2", nil)
	other.Protocols[0].Name = "range"
	wantErr(t, "join with no shared protocol", c.JoinGroup(ctx, other).Err, kerr.InconsistentGroupProtocol)
	connect := joinReq(g, "c3")
	connect.ProtocolType = "connect"
	wantErr(t, "join of another protocol type", c.JoinGroup(ctx, connect).Err, kerr.InconsistentGroupProtocol)
	garbage := classicJoinReq(g, "c4", nil)
	garbage.Protocols[0].Metadata = []byte{0xff}
	wantErr(t, "join without a consumer subscription", c.JoinGroup(ctx, garbage).Err, kerr.InconsistentGroupProtocol)
}

// A static classic member of a consumer group: a new incarnation of its
// instance replaces it, a LeaveGroup by instance id removes it, and a
// wrong member id for the instance is FENCED_INSTANCE_ID.
func TestMigrationStaticClassicMember(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), time.Minute)
	ctx := context.Background()
	const g = "static"
	join(t, c, g, "first", "a")
	req := classicJoinReq(g, "", nil)
	req.InstanceID = strp("inst")
	j := c.JoinGroup(ctx, req)
	if j.Err != nil {
		t.Fatalf("static classic join: %v", j.Err)
	}
	again := c.JoinGroup(ctx, req)
	if again.Err != nil || again.MemberID == j.MemberID {
		t.Fatalf("new incarnation: %+v", again)
	}
	if d := describe(t, c, g); len(d.Members) != 2 {
		t.Fatalf("after the replacement: %d members", len(d.Members))
	}
	wantErr(t, "heartbeat of the replaced member", c.Heartbeat(g, j.MemberID, strp("inst"), j.Generation), kerr.FencedInstanceID)
	_, errs := c.LeaveGroup(g, []LeaveMember{{MemberID: "someone-else", InstanceID: strp("inst")}})
	wantErr(t, "leave with another member id", errs[0], kerr.FencedInstanceID)
	_, errs = c.LeaveGroup(g, []LeaveMember{{InstanceID: strp("inst")}})
	wantErr(t, "leave by instance id", errs[0], nil)
	if d := describe(t, c, g); len(d.Members) != 1 {
		t.Fatalf("after the leave: %d members", len(d.Members))
	}
}

// The last consumer-protocol member's session expiring downgrades the
// group too; the classic members keep their own (longer) sessions.
func TestMigrationDowngradeOnSessionExpiry(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 150*time.Millisecond)
	ctx := context.Background()
	const g = "expiry"
	join(t, c, g, "next", "a")
	j := c.JoinGroup(ctx, classicJoinReq(g, "classic", nil))
	if j.Err != nil {
		t.Fatalf("classic join: %v", j.Err)
	}
	if s := c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: "classic", Generation: j.Generation}); s.Err != nil {
		t.Fatalf("sync: %v", s.Err)
	}
	waitFor(t, func() bool {
		_, err := c.DescribeConsumerGroup(g)
		return isErr(err, kerr.GroupIDNotFound)
	})
	d, err := c.DescribeGroup(g)
	if err != nil || len(d.Members) != 1 || d.Members[0].MemberID != "classic" {
		t.Fatalf("after the downgrade: %+v %v", d, err)
	}
}
