package group

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

var (
	topicA = metadata.Uuid{1}
	topicB = metadata.Uuid{2}
)

// newConsumerTestCoordinator has topics "a" (4 partitions) and "b" (2).
func newConsumerTestCoordinator(t *testing.T, log *memLog, session time.Duration) *Coordinator {
	t.Helper()
	cfg := testConfig()
	cfg.ConsumerSessionTimeout = session
	cfg.ConsumerHeartbeatInterval = 50 * time.Millisecond
	cfg.ConsumerMaxSize = 3
	c := newTestCoordinator(t, cfg, log, nil)
	c.setTopics(map[string]topicMeta{
		"a": {name: "a", id: topicA, partitions: 4},
		"b": {name: "b", id: topicB, partitions: 2},
	})
	return c
}

// client is one consumer-protocol member as a test drives it: it owns
// exactly what the coordinator last assigned it.
type client struct {
	t     *testing.T
	c     *Coordinator
	group string
	id    string
	epoch int32
	owned assignment
}

func join(t *testing.T, c *Coordinator, group, id string, topics ...string) *client {
	t.Helper()
	cl := &client{t: t, c: c, group: group, id: id}
	res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: group, MemberID: id,
		RebalanceTimeoutMs: 5000, SubscribedTopicNames: topics, Owned: []TopicPartitions{}})
	if res.Err != nil {
		t.Fatalf("join %s: %v", id, res.Err)
	}
	cl.apply(res)
	return cl
}

func (cl *client) apply(res ConsumerHeartbeatResult) {
	cl.epoch = res.MemberEpoch
	if res.HasAssignment {
		cl.owned = ownedAssignment(res.Assignment)
	}
}

// heartbeat sends a full heartbeat reporting what the client owns.
func (cl *client) heartbeat() ConsumerHeartbeatResult {
	cl.t.Helper()
	res := cl.c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: cl.group, MemberID: cl.id,
		MemberEpoch: cl.epoch, RebalanceTimeoutMs: -1, Owned: assignmentList(cl.owned)})
	if res.Err == nil {
		cl.apply(res)
	}
	return res
}

func (cl *client) mustHeartbeat() {
	cl.t.Helper()
	if res := cl.heartbeat(); res.Err != nil {
		cl.t.Fatalf("heartbeat %s: %v", cl.id, res.Err)
	}
}

func describe(t *testing.T, c *Coordinator, group string) ConsumerGroupDescription {
	t.Helper()
	d, err := c.DescribeConsumerGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// settle heartbeats every client until the group is Stable, checking on
// the way that no partition ever has two owners.
func settle(t *testing.T, clients ...*client) {
	t.Helper()
	for round := 0; round < 10; round++ {
		for _, cl := range clients {
			cl.mustHeartbeat()
			seen := map[partitionRef]string{}
			for _, o := range clients {
				for id, ps := range o.owned {
					for _, p := range ps {
						if prev, ok := seen[partitionRef{id, p}]; ok {
							t.Fatalf("partition %v-%d owned by %s and %s", id, p, prev, o.id)
						}
						seen[partitionRef{id, p}] = o.id
					}
				}
			}
		}
		if describe(t, clients[0].c, clients[0].group).State == "Stable" {
			return
		}
	}
	t.Fatalf("group not stable: %+v", describe(t, clients[0].c, clients[0].group))
}

func TestConsumerJoinAssignsEverything(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	m := join(t, c, "g", "m1", "a", "b")
	if m.epoch != 1 || m.owned.size() != 6 {
		t.Fatalf("epoch %d owned %v, want epoch 1 with all 6 partitions", m.epoch, m.owned)
	}
	d := describe(t, c, "g")
	if d.State != "Stable" || d.Epoch != 1 || d.AssignmentEpoch != 1 || d.AssignorName != "uniform" {
		t.Fatalf("describe: %+v", d)
	}
}

// A partition moves only after its previous owner revoked it.
func TestConsumerRevokeBeforeAssign(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	m1 := join(t, c, "g", "m1", "a")
	m2 := join(t, c, "g", "m2", "a")
	if m2.epoch != 2 || m2.owned.size() != 0 {
		t.Fatalf("m2 joined at epoch %d owning %v; want epoch 2 and nothing yet (m1 still owns all)", m2.epoch, m2.owned)
	}
	if s := describe(t, c, "g").State; s != "Reconciling" {
		t.Fatalf("state %s, want Reconciling", s)
	}
	// m1 learns what to revoke but keeps its epoch until it has.
	m1.mustHeartbeat()
	if m1.epoch != 1 || m1.owned.size() != 2 {
		t.Fatalf("m1 epoch %d owned %v, want epoch 1 keeping 2", m1.epoch, m1.owned)
	}
	m2.mustHeartbeat()
	if m2.owned.size() != 0 {
		t.Fatalf("m2 got %v before m1 acknowledged the revocation", m2.owned)
	}
	m1.mustHeartbeat() // reports the revocation done
	if m1.epoch != 2 {
		t.Fatalf("m1 epoch %d after revoking, want 2", m1.epoch)
	}
	m2.mustHeartbeat()
	if m2.owned.size() != 2 || m2.owned.intersect(m1.owned).size() != 0 {
		t.Fatalf("m2 owns %v, m1 %v", m2.owned, m1.owned)
	}
	if s := describe(t, c, "g").State; s != "Stable" {
		t.Fatalf("state %s, want Stable", s)
	}
}

func TestConsumerLeaveAndRejoin(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	m1 := join(t, c, "g", "m1", "a")
	m2 := join(t, c, "g", "m2", "a")
	settle(t, m1, m2)
	res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "m2", MemberEpoch: -1, RebalanceTimeoutMs: -1})
	if res.Err != nil || res.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", res)
	}
	settle(t, m1)
	if m1.owned.size() != 4 {
		t.Fatalf("m1 owns %v after m2 left, want all 4", m1.owned)
	}
	if res := m2.heartbeat(); !isErr(res.Err, kerr.UnknownMemberID) {
		t.Fatalf("heartbeat after leaving: %v, want UNKNOWN_MEMBER_ID", res.Err)
	}
}

func isErr(err error, want *kerr.Error) bool {
	var ke *kerr.Error
	return err != nil && asKerr(err, &ke) && ke == want
}

func TestConsumerSessionExpiry(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 150*time.Millisecond)
	m1 := join(t, c, "g", "m1", "a")
	join(t, c, "g", "m2", "a") // never heartbeats again
	deadline := time.Now().Add(5 * time.Second)
	for len(describe(t, c, "g").Members) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("m2 was not fenced after its session")
		}
		m1.mustHeartbeat()
		time.Sleep(20 * time.Millisecond)
	}
	settle(t, m1)
	if m1.owned.size() != 4 {
		t.Fatalf("m1 owns %v, want all 4", m1.owned)
	}
}

func TestConsumerHeartbeatErrors(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	m1 := join(t, c, "g", "m1", "a")
	inst := "i1"
	static := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s1", InstanceID: &inst,
		RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}})
	if static.Err != nil {
		t.Fatal(static.Err)
	}
	bad := "nope"
	regex := "a("
	for _, tc := range []struct {
		name string
		req  ConsumerHeartbeatRequest
		want *kerr.Error
	}{
		{"v1 requires a client member id", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, kerr.InvalidRequest},
		{"join without rebalance timeout", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", RebalanceTimeoutMs: -1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, kerr.InvalidRequest},
		{"join owning partitions", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{{TopicID: topicA, Partitions: []int32{0}}}}, kerr.InvalidRequest},
		{"join without subscription", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", RebalanceTimeoutMs: 1, Owned: []TopicPartitions{}}, kerr.InvalidRequest},
		{"epoch below -2", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", MemberEpoch: -3}, kerr.InvalidRequest},
		{"bad regex", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", RebalanceTimeoutMs: 1, SubscribedTopicRegex: &regex, Owned: []TopicPartitions{}}, kerr.InvalidRegularExpression},
		{"unknown assignor", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", RebalanceTimeoutMs: 1, ServerAssignor: &bad, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, kerr.UnsupportedAssignor},
		{"unknown member", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "x", MemberEpoch: 1, RebalanceTimeoutMs: -1}, kerr.UnknownMemberID},
		{"epoch from the future", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "m1", MemberEpoch: m1.epoch + 5, RebalanceTimeoutMs: -1}, kerr.FencedMemberEpoch},
		{"instance in use", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s2", InstanceID: &inst, RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, kerr.UnreleasedInstanceID},
		{"group full", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "m3", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, nil},
		{"group over max size", ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "m4", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}, kerr.GroupMaxSizeReached},
		{"unknown group", ConsumerHeartbeatRequest{Version: 1, GroupID: "none", MemberID: "x", MemberEpoch: 3, RebalanceTimeoutMs: -1}, kerr.GroupIDNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := c.ConsumerGroupHeartbeat(tc.req)
			if tc.want == nil {
				if res.Err != nil {
					t.Fatalf("got %v, want success", res.Err)
				}
				return
			}
			if !isErr(res.Err, tc.want) {
				t.Fatalf("got %v, want %s", res.Err, tc.want.Message)
			}
		})
	}
	// v0: the coordinator generates the member id.
	res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 0, GroupID: "v0", RebalanceTimeoutMs: 1, SubscribedTopicNames: []string{"b"}, Owned: []TopicPartitions{}})
	if res.Err != nil || res.MemberID == "" || res.MemberEpoch != 1 {
		t.Fatalf("v0 join: %+v", res)
	}
}

// A static member that leaves with epoch -2 keeps its partitions; its
// instance rejoining under a new member id takes them over.
func TestConsumerStaticMemberRejoin(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	inst := "i1"
	req := ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s1", InstanceID: &inst,
		RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}
	first := c.ConsumerGroupHeartbeat(req)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	leave := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s1", InstanceID: &inst, MemberEpoch: -2, RebalanceTimeoutMs: -1})
	if leave.Err != nil || leave.MemberEpoch != -2 {
		t.Fatalf("static leave: %+v", leave)
	}
	req.MemberID = "s1-again"
	back := c.ConsumerGroupHeartbeat(req)
	if back.Err != nil || back.MemberEpoch != first.MemberEpoch || ownedAssignment(back.Assignment).size() != 4 {
		t.Fatalf("static rejoin: %+v, want epoch %d with all 4 partitions", back, first.MemberEpoch)
	}
	d := describe(t, c, "g")
	if len(d.Members) != 1 || d.Members[0].MemberID != "s1-again" || d.Epoch != 1 {
		t.Fatalf("describe after static rejoin: %+v", d)
	}
}

// A consumer group's members, epochs and assignments survive a reload
// from the log.
func TestConsumerGroupSurvivesReload(t *testing.T) {
	log := newMemLog()
	c := newConsumerTestCoordinator(t, log, 10*time.Second)
	m1 := join(t, c, "g", "m1", "a", "b")
	m2 := join(t, c, "g", "m2", "a", "b")
	settle(t, m1, m2)
	before := describe(t, c, "g")
	c.Close()

	c2 := newConsumerTestCoordinator(t, log, 10*time.Second)
	after := describe(t, c2, "g")
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
	m1.c, m2.c = c2, c2
	m1.mustHeartbeat()
	if m1.epoch != before.Epoch {
		t.Fatalf("m1 epoch %d after reload, want %d (no spurious rebalance)", m1.epoch, before.Epoch)
	}
	groups, _ := c2.ListGroups(nil, []string{"consumer"})
	if len(groups) != 1 || groups[0].State != "Stable" || groups[0].ProtocolType != "consumer" {
		t.Fatalf("ListGroups: %+v", groups)
	}
}

// Offsets of a consumer group are committed with the member epoch as
// generation (OffsetCommit v9).
func TestConsumerGroupOffsetCommit(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), 10*time.Second)
	m1 := join(t, c, "g", "m1", "a")
	commit := func(member string, gen int32, v9 bool) error {
		err, errs := c.CommitOffsets(t.Context(), CommitRequest{GroupID: "g", MemberID: member, Generation: gen,
			GroupIDNotFoundForUnknown: v9, Offsets: []CommitOffset{{TopicPartition: TopicPartition{"a", 0}, Offset: 7, LeaderEpoch: -1, CommitTimestamp: -1}}})
		if err == nil && len(errs) > 0 {
			err = errs[0]
		}
		return err
	}
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		v9     bool
		want   *kerr.Error
	}{
		{"current epoch", "m1", m1.epoch, true, nil},
		{"stale epoch", "m1", m1.epoch - 1, true, kerr.StaleMemberEpoch},
		{"unknown member", "zz", m1.epoch, true, kerr.UnknownMemberID},
		{"before v9", "m1", m1.epoch, false, kerr.UnsupportedVersion},
		{"standalone on a non-empty group", "", -1, true, kerr.UnknownMemberID},
	} {
		err := commit(tc.member, tc.gen, tc.v9)
		if (tc.want == nil && err != nil) || (tc.want != nil && !isErr(err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	id := "m1"
	if _, err := c.FetchOffsetsAsMember("g", &FetchingMember{MemberID: &id, Epoch: m1.epoch + 1}, nil); !isErr(err, kerr.StaleMemberEpoch) {
		t.Fatalf("fetch with a stale epoch: %v", err)
	}
	got, err := c.FetchOffsetsAsMember("g", &FetchingMember{MemberID: &id, Epoch: m1.epoch}, nil)
	if err != nil || len(got) != 1 || got[0].Offset != 7 {
		t.Fatalf("fetch: %+v %v", got, err)
	}
}

func asKerr(err error, ke **kerr.Error) bool { return errors.As(err, ke) }

// A regex subscription matches whole topic names, internal topics
// included when the regex names them (Kafka 4 resolves against every topic
// of the image), and is resolved again when topics appear: the next
// heartbeat bumps the group epoch and assigns the new topic.
func TestConsumerRegexSubscription(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), time.Minute)
	internalID := metadata.Uuid{9}
	c.setTopics(map[string]topicMeta{
		"a":                  {name: "a", id: topicA, partitions: 4},
		"ab":                 {name: "ab", id: topicB, partitions: 2},
		"__consumer_offsets": {name: "__consumer_offsets", id: internalID, partitions: 1},
	})
	hb := func(id string, epoch int32, regex string, owned assignment) ConsumerHeartbeatResult {
		req := ConsumerHeartbeatRequest{Version: 1, GroupID: "re-" + id, MemberID: id, MemberEpoch: epoch,
			RebalanceTimeoutMs: 5000, Owned: assignmentList(owned)}
		if regex != "" {
			req.SubscribedTopicRegex = &regex
		}
		return c.ConsumerGroupHeartbeat(req)
	}
	// Full match: "a" does not match "ab".
	r := hb("full", 0, "a", assignment{})
	if r.Err != nil || ownedAssignment(r.Assignment).size() != 4 || !ownedAssignment(r.Assignment).has(topicA, 0) {
		t.Fatalf("regex a: %+v", r)
	}
	// An internal topic is matched when the regex names it.
	r = hb("internal", 0, "__.*", assignment{})
	if r.Err != nil || ownedAssignment(r.Assignment).size() != 1 || !ownedAssignment(r.Assignment).has(internalID, 0) {
		t.Fatalf("regex __.*: %+v", r)
	}
	// Java-only or non-RE2 syntax is refused, as RE2/J refuses it.
	for _, bad := range []string{"a(?=b)", "(a)\\1", "a*+", "[a"} {
		if r := hb("bad", 0, bad, assignment{}); !errors.Is(r.Err, kerr.InvalidRegularExpression) {
			t.Errorf("regex %q: %v, want INVALID_REGULAR_EXPRESSION", bad, r.Err)
		}
	}
	// A topic created later is picked up on the next heartbeat.
	r = hb("later", 0, "new-.*", assignment{})
	if r.Err != nil || ownedAssignment(r.Assignment).size() != 0 {
		t.Fatalf("regex new-.* before the topic: %+v", r)
	}
	epoch := r.MemberEpoch
	topics := c.topicsSnapshot()
	next := map[string]topicMeta{"new-1": {name: "new-1", id: metadata.Uuid{7}, partitions: 3}}
	for k, v := range topics {
		next[k] = v
	}
	c.setTopics(next)
	r = hb("later", epoch, "new-.*", assignment{})
	if r.Err != nil || r.MemberEpoch <= epoch || ownedAssignment(r.Assignment).size() != 3 {
		t.Fatalf("regex new-.* after the topic: %+v", r)
	}
}

// A static member's new incarnation that changes the subscription bumps
// the epoch; the old incarnation takes no part in the new target, so the
// new one alone gets every partition, also after a reload.
func TestConsumerStaticRejoinWithNewSubscription(t *testing.T) {
	log := newMemLog()
	c := newConsumerTestCoordinator(t, log, 10*time.Second)
	inst := "i1"
	req := ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s1", InstanceID: &inst,
		RebalanceTimeoutMs: 5000, SubscribedTopicNames: []string{"a"}, Owned: []TopicPartitions{}}
	if res := c.ConsumerGroupHeartbeat(req); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := c.ConsumerGroupHeartbeat(ConsumerHeartbeatRequest{Version: 1, GroupID: "g", MemberID: "s1", InstanceID: &inst, MemberEpoch: -2, RebalanceTimeoutMs: -1}); res.Err != nil {
		t.Fatal(res.Err)
	}
	req.MemberID, req.SubscribedTopicNames = "s1-again", []string{"a", "b"}
	back := c.ConsumerGroupHeartbeat(req)
	if back.Err != nil {
		t.Fatal(back.Err)
	}
	cl := &client{t: t, c: c, group: "g", id: "s1-again"}
	cl.apply(back)
	settle(t, cl)
	if cl.owned.size() != 6 {
		t.Fatalf("new incarnation owns %v, want all 6 partitions", cl.owned)
	}
	before := describe(t, c, "g")
	c.Close()
	after := describe(t, newConsumerTestCoordinator(t, log, 10*time.Second), "g")
	if !reflect.DeepEqual(before, after) || len(after.Members) != 1 {
		t.Fatalf("after reload:\n%+v\nbefore:\n%+v", after, before)
	}
}
