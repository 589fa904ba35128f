package group

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

func joinReq(group, member string) JoinRequest {
	return JoinRequest{
		GroupID: group, MemberID: member, ClientID: "c",
		SessionTimeout: 5 * time.Second, RebalanceTimeout: 2 * time.Second,
		ProtocolType: "consumer", Protocols: []Protocol{{Name: "range", Metadata: []byte("r")}},
	}
}

func strp(s string) *string { return &s }

// joinAlone joins a fresh dynamic member and completes its generation with
// a SyncGroup, returning its id and generation.
func joinAlone(t *testing.T, c *Coordinator, group string) (string, int32) {
	t.Helper()
	ctx := context.Background()
	r := c.JoinGroup(ctx, joinReq(group, ""))
	if r.Err != nil {
		t.Fatalf("join: %v", r.Err)
	}
	s := c.SyncGroup(ctx, SyncRequest{GroupID: group, MemberID: r.MemberID, Generation: r.Generation,
		Assignments: map[string][]byte{r.MemberID: []byte("all")}})
	if s.Err != nil || string(s.Assignment) != "all" {
		t.Fatalf("sync: %v %q", s.Err, s.Assignment)
	}
	return r.MemberID, r.Generation
}

func wantErr(t *testing.T, what string, got error, want *kerr.Error) {
	t.Helper()
	if want == nil {
		if got != nil {
			t.Fatalf("%s: %v, want success", what, got)
		}
		return
	}
	if !errors.Is(got, want) {
		t.Fatalf("%s: %v, want %s", what, got, want.Message)
	}
}

// The error answers of the membership APIs, each from a group set up with
// one stable dynamic member and one stable static member ("inst").
func TestMembershipErrors(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	ctx := context.Background()
	const g = "errors"
	dyn, gen := joinAlone(t, c, g)
	// A static member joins: the group rebalances; both rejoin.
	var wg sync.WaitGroup
	var static, again JoinResult
	wg.Add(2)
	go func() {
		defer wg.Done()
		r := joinReq(g, "")
		r.InstanceID = strp("inst")
		static = c.JoinGroup(ctx, r)
	}()
	go func() {
		defer wg.Done()
		waitFor(t, func() bool { return c.Heartbeat(g, dyn, nil, gen) != nil })
		again = c.JoinGroup(ctx, joinReq(g, dyn))
	}()
	wg.Wait()
	if static.Err != nil || again.Err != nil || static.Generation != again.Generation {
		t.Fatalf("rejoin: %+v / %+v", static, again)
	}
	gen = static.Generation
	leader := again
	if static.LeaderID == static.MemberID {
		leader = static
	}
	go c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: static.MemberID, InstanceID: strp("inst"), Generation: gen})
	if s := c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: leader.MemberID, Generation: gen, InstanceID: leader.instanceIDIfStatic(static)}); s.Err != nil {
		t.Fatalf("leader sync: %v", s.Err)
	}

	long := make([]byte, 17)
	for _, tc := range []struct {
		name string
		call func() error
		want *kerr.Error
	}{
		{"join with an empty group id", func() error { return c.JoinGroup(ctx, joinReq("", "")).Err }, kerr.InvalidGroupID},
		{"session timeout below group.min.session.timeout.ms", func() error {
			r := joinReq(g, "")
			r.SessionTimeout = time.Millisecond
			return c.JoinGroup(ctx, r).Err
		}, kerr.InvalidSessionTimeout},
		{"session timeout above group.max.session.timeout.ms", func() error {
			r := joinReq(g, "")
			r.SessionTimeout = time.Hour
			return c.JoinGroup(ctx, r).Err
		}, kerr.InvalidSessionTimeout},
		{"known member id for a group that does not exist", func() error { return c.JoinGroup(ctx, joinReq("nope", "m-1")).Err }, kerr.UnknownMemberID},
		{"v4+ first join needs a member id (KIP-394)", func() error {
			r := joinReq("fresh", "")
			r.RequireKnownMemberID = true
			res := c.JoinGroup(ctx, r)
			if res.MemberID == "" {
				return errors.New("no member id handed out")
			}
			return res.Err
		}, kerr.MemberIDRequired},
		{"another protocol type", func() error {
			r := joinReq(g, "")
			r.ProtocolType = "connect"
			return c.JoinGroup(ctx, r).Err
		}, kerr.InconsistentGroupProtocol},
		{"no protocol in common", func() error {
			r := joinReq(g, "")
			r.Protocols = []Protocol{{Name: "other"}}
			return c.JoinGroup(ctx, r).Err
		}, kerr.InconsistentGroupProtocol},
		{"group.max.size reached", func() error {
			// A stable group at its size admits no new member.
			cfg := testConfig()
			cfg.MaxSize = 1
			c2 := newTestCoordinator(t, cfg, newMemLog(), nil)
			joinAlone(t, c2, "full")
			return c2.JoinGroup(ctx, joinReq("full", "")).Err
		}, kerr.GroupMaxSizeReached},
		{"heartbeat with a stale generation", func() error { return c.Heartbeat(g, dyn, nil, gen-1) }, kerr.IllegalGeneration},
		{"heartbeat from an unknown member", func() error { return c.Heartbeat(g, "who", nil, gen) }, kerr.UnknownMemberID},
		{"heartbeat of a replaced static member", func() error { return c.Heartbeat(g, dyn, strp("inst"), gen) }, kerr.FencedInstanceID},
		{"heartbeat of an unknown instance", func() error { return c.Heartbeat(g, dyn, strp("zzz"), gen) }, kerr.UnknownMemberID},
		{"heartbeat of a stable member", func() error { return c.Heartbeat(g, dyn, nil, gen) }, nil},
		{"sync with a stale generation", func() error {
			return c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: dyn, Generation: gen + 1}).Err
		}, kerr.IllegalGeneration},
		{"sync with another protocol name (v5+)", func() error {
			return c.SyncGroup(ctx, SyncRequest{GroupID: g, MemberID: dyn, Generation: gen, ProtocolName: strp("x")}).Err
		}, kerr.InconsistentGroupProtocol},
		{"commit from an unknown member", func() error {
			err, _ := c.CommitOffsets(ctx, CommitRequest{GroupID: g, Generation: gen, MemberID: "who"})
			return err
		}, kerr.UnknownMemberID},
		{"commit with a stale generation", func() error {
			err, _ := c.CommitOffsets(ctx, CommitRequest{GroupID: g, Generation: gen - 1, MemberID: dyn})
			return err
		}, kerr.IllegalGeneration},
		{"standalone commit to a group with members", func() error {
			err, _ := c.CommitOffsets(ctx, CommitRequest{GroupID: g, Generation: -1})
			return err
		}, kerr.UnknownMemberID},
		{"generation commit to a missing group", func() error {
			err, _ := c.CommitOffsets(ctx, CommitRequest{GroupID: "missing", Generation: 3, MemberID: "m"})
			return err
		}, kerr.IllegalGeneration},
		{"metadata beyond offset.metadata.max.bytes", func() error {
			_, errs := c.CommitOffsets(ctx, CommitRequest{GroupID: g, Generation: gen, MemberID: dyn,
				Offsets: []CommitOffset{{TopicPartition: TopicPartition{"t", 0}, Offset: 1, Metadata: strp(string(long)), CommitTimestamp: -1}}})
			return errs[0]
		}, kerr.OffsetMetadataTooLarge},
		{"delete a group with members", func() error { return c.DeleteGroup(g) }, kerr.NonEmptyGroup},
		{"delete a group that does not exist", func() error { return c.DeleteGroup("missing") }, kerr.GroupIDNotFound},
		{"leave of an unknown member", func() error { _, errs := c.LeaveGroup(g, []LeaveMember{{MemberID: "who"}}); return errs[0] }, kerr.UnknownMemberID},
		{"leave of a static member with another id", func() error {
			_, errs := c.LeaveGroup(g, []LeaveMember{{MemberID: dyn, InstanceID: strp("inst")}})
			return errs[0]
		}, kerr.FencedInstanceID},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErr(t, tc.name, tc.call(), tc.want) })
	}
}

// instanceIDIfStatic returns the static member's instance id when r is it.
func (r JoinResult) instanceIDIfStatic(static JoinResult) *string {
	if r.MemberID == static.MemberID {
		return strp("inst")
	}
	return nil
}

func TestNotCoordinatorAndLoading(t *testing.T) {
	log := newMemLog()
	release := log.Hold()
	c := NewCoordinator(Options{Config: testConfig(), Log: log})
	defer c.Close()
	g := "some-group"
	p := PartitionFor(g, 4)
	// Before __consumer_offsets exists no broker coordinates the group.
	wantErr(t, "before the offsets topic exists", c.JoinGroup(context.Background(), joinReq(g, "")).Err, kerr.CoordinatorNotAvailable)
	err, _ := c.CommitOffsets(context.Background(), CommitRequest{GroupID: g, Generation: -1})
	wantErr(t, "commit before the offsets topic exists", err, kerr.CoordinatorNotAvailable)
	c.Reconcile(nil, 4)
	wantErr(t, "before leading", c.JoinGroup(context.Background(), joinReq(g, "")).Err, kerr.NotCoordinator)
	c.Reconcile([]int32{p}, 4)
	wantErr(t, "while loading", c.JoinGroup(context.Background(), joinReq(g, "")).Err, kerr.CoordinatorLoadInProgress)
	err, _ = c.CommitOffsets(context.Background(), CommitRequest{GroupID: g, Generation: -1})
	wantErr(t, "commit while loading", err, kerr.CoordinatorLoadInProgress)
	release()
	waitFor(t, func() bool { return c.CheckOwner(g) == nil })
	c.Reconcile(nil, 4)
	wantErr(t, "after moving away", c.CheckOwner(g), kerr.NotCoordinator)
}

// Two members joining together get one generation; the leader gets both
// members' metadata, picks the protocol both support that most prefer,
// and its assignment reaches the other member through SyncGroup.
func TestRebalanceDeliversAssignment(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	ctx := context.Background()
	a, b := joinReq("g", ""), joinReq("g", "")
	a.Protocols = []Protocol{{Name: "roundrobin", Metadata: []byte("a-rr")}, {Name: "range", Metadata: []byte("a-range")}}
	b.Protocols = []Protocol{{Name: "sticky"}, {Name: "range", Metadata: []byte("b-range")}, {Name: "roundrobin", Metadata: []byte("b-rr")}}
	a.InstanceID, b.InstanceID = strp("a"), strp("b")
	first := c.JoinGroup(ctx, a) // alone: generation 1 with a only
	if first.Err != nil || first.ProtocolName != "roundrobin" {
		t.Fatalf("first join: %+v", first)
	}
	var wg sync.WaitGroup
	res := make([]JoinResult, 2)
	wg.Add(2)
	go func() { defer wg.Done(); res[1] = c.JoinGroup(ctx, b) }()
	waitFor(t, func() bool { return c.Heartbeat("g", first.MemberID, strp("a"), first.Generation) != nil })
	go func() { defer wg.Done(); a.MemberID = first.MemberID; res[0] = c.JoinGroup(ctx, a) }()
	wg.Wait()
	for i, r := range res {
		if r.Err != nil || r.Generation != first.Generation+1 {
			t.Fatalf("member %d: %+v", i, r)
		}
	}
	// Common protocols: range and roundrobin; a votes roundrobin, b range:
	// a tie, resolved by the leader's (a's) preference.
	if res[0].ProtocolName != "roundrobin" || res[0].LeaderID != first.MemberID || len(res[0].Members) != 2 || len(res[1].Members) != 0 {
		t.Fatalf("leader's view: %+v; follower's: %+v", res[0], res[1])
	}
	if string(res[0].Members[1].Metadata) != "b-rr" {
		t.Fatalf("leader got b's metadata %q, want its roundrobin metadata", res[0].Members[1].Metadata)
	}
	syncs := make(chan SyncResult, 1)
	go func() {
		syncs <- c.SyncGroup(ctx, SyncRequest{GroupID: "g", MemberID: res[1].MemberID, InstanceID: strp("b"), Generation: res[1].Generation})
	}()
	ls := c.SyncGroup(ctx, SyncRequest{GroupID: "g", MemberID: res[0].MemberID, InstanceID: strp("a"), Generation: res[0].Generation,
		Assignments: map[string][]byte{res[0].MemberID: []byte("A"), res[1].MemberID: []byte("B")}})
	fs := <-syncs
	if ls.Err != nil || string(ls.Assignment) != "A" || fs.Err != nil || string(fs.Assignment) != "B" {
		t.Fatalf("sync: leader %+v, follower %+v", ls, fs)
	}
	d, _ := c.DescribeGroup("g")
	if d.State != "Stable" || d.Protocol != "roundrobin" || len(d.Members) != 2 {
		t.Fatalf("described %+v", d)
	}

	// Static member b restarts (joins with no member id): it replaces its
	// old id without a rebalance.
	b.MemberID = ""
	re := c.JoinGroup(ctx, b)
	if re.Err != nil || re.Generation != res[1].Generation || re.MemberID == res[1].MemberID {
		t.Fatalf("static rejoin: %+v", re)
	}
	wantErr(t, "old id of the replaced static member", c.Heartbeat("g", res[1].MemberID, strp("b"), re.Generation), kerr.FencedInstanceID)
	if s := c.SyncGroup(ctx, SyncRequest{GroupID: "g", MemberID: re.MemberID, InstanceID: strp("b"), Generation: re.Generation}); string(s.Assignment) != "B" {
		t.Fatalf("static member's assignment after rejoin: %+v", s)
	}
}

// A member that stops heartbeating is removed after its session timeout;
// the group becomes Empty.
func TestSessionTimeoutRemovesMember(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	ctx := context.Background()
	r := joinReq("g", "")
	r.SessionTimeout = 50 * time.Millisecond
	j := c.JoinGroup(ctx, r)
	c.SyncGroup(ctx, SyncRequest{GroupID: "g", MemberID: j.MemberID, Generation: j.Generation})
	waitFor(t, func() bool { d, _ := c.DescribeGroup("g"); return d.State == "Empty" })
	wantErr(t, "heartbeat after expiry", c.Heartbeat("g", j.MemberID, nil, j.Generation), kerr.UnknownMemberID)
}

// group.initial.rebalance.delay.ms holds an empty group's first rebalance.
func TestInitialRebalanceDelay(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = 150 * time.Millisecond
	c := newTestCoordinator(t, cfg, newMemLog(), nil)
	start := time.Now()
	j := c.JoinGroup(context.Background(), joinReq("g", ""))
	if j.Err != nil {
		t.Fatal(j.Err)
	}
	if took := time.Since(start); took < cfg.InitialRebalanceDelay {
		t.Fatalf("first rebalance completed after %v, before the %v initial delay", took, cfg.InitialRebalanceDelay)
	}
}

// A JoinGroup whose connection goes away stops waiting.
func TestParkedJoinEndsWithItsContext(t *testing.T) {
	cfg := testConfig()
	cfg.InitialRebalanceDelay = time.Hour
	c := newTestCoordinator(t, cfg, newMemLog(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan JoinResult)
	go func() { done <- c.JoinGroup(ctx, joinReq("g", "")) }()
	cancel()
	select {
	case r := <-done:
		if !errors.Is(r.Err, context.Canceled) {
			t.Fatalf("parked join ended with %v", r.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("parked join did not end with its context")
	}
}

// LeaveGroup v3+ removes several members at once, static ones by
// instance id.
func TestLeaveGroupBatch(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	id, _ := joinAlone(t, c, "g")
	groupErr, errs := c.LeaveGroup("g", []LeaveMember{{MemberID: id}, {MemberID: "ghost"}})
	if groupErr != nil || errs[0] != nil || !errors.Is(errs[1], kerr.UnknownMemberID) {
		t.Fatalf("leave: %v %v", groupErr, errs)
	}
	waitFor(t, func() bool { d, _ := c.DescribeGroup("g"); return d.State == "Empty" })
}
