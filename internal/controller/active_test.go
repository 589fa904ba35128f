package controller

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/testing/poll"
)

// leaderQuorum is a metadata log whose node always leads: a LocalLog, so the
// duties can be tested without raft.
type leaderQuorum struct{ *metadata.LocalLog }

func (leaderQuorum) IsLeader() bool          { return true }
func (leaderQuorum) LeaderID() (int32, bool) { return 1, true }
func (leaderQuorum) LeaderCh() <-chan bool   { return nil }

func newTestActive(t *testing.T, session time.Duration) (*Active, *rules.Controller, leaderQuorum) {
	t.Helper()
	l, err := metadata.OpenLocalLog(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	q := leaderQuorum{l}
	c := rules.NewController(l, rules.ControllerConfig{NodeID: 1})
	a := NewActive(ActiveOptions{NodeID: 1, Quorum: q, Controller: c, SessionTimeout: session})
	t.Cleanup(a.Close)
	eventually(t, "activation", a.IsActive)
	return a, c, q
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, 5*time.Second, what, cond)
}

// register registers and unfences broker id, returning its epoch.
func register(t *testing.T, a *Active, q leaderQuorum, id int32) int64 {
	t.Helper()
	ctx := context.Background()
	res, err := a.Register(ctx, rules.Registration{BrokerID: id, IncarnationID: metadata.NewUuid(),
		Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9000 + id}}})
	if err != nil {
		t.Fatalf("register %d: %v", id, err)
	}
	if b, _ := q.Image().Broker(id); !b.Fenced {
		t.Fatalf("broker %d unfenced right after registering; KIP-631 registers fenced", id)
	}
	// A heartbeat from behind the registration does not unfence.
	hb, err := a.Heartbeat(ctx, Heartbeat{BrokerID: id, BrokerEpoch: res.BrokerEpoch, CurrentMetadataOffset: res.Offset - 1})
	if err != nil || !hb.IsFenced || hb.IsCaughtUp {
		t.Fatalf("heartbeat behind the registration: %+v %v, want fenced and not caught up", hb, err)
	}
	hb, err = a.Heartbeat(ctx, Heartbeat{BrokerID: id, BrokerEpoch: res.BrokerEpoch, CurrentMetadataOffset: q.Image().Offset()})
	if err != nil || hb.IsFenced || !hb.IsCaughtUp {
		t.Fatalf("caught-up heartbeat: %+v %v, want unfenced", hb, err)
	}
	return res.BrokerEpoch
}

func TestHeartbeatErrors(t *testing.T) {
	a, _, q := newTestActive(t, time.Hour)
	epoch := register(t, a, q, 2)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		hb   Heartbeat
		want *kerr.Error
	}{
		{"unknown broker", Heartbeat{BrokerID: 9, BrokerEpoch: 0}, kerr.BrokerIDNotRegistered},
		{"old epoch", Heartbeat{BrokerID: 2, BrokerEpoch: epoch - 1}, kerr.StaleBrokerEpoch},
		{"current epoch", Heartbeat{BrokerID: 2, BrokerEpoch: epoch, CurrentMetadataOffset: q.Image().Offset()}, nil},
	} {
		_, err := a.Heartbeat(ctx, tc.hb)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

func TestSessionExpiryFencesAndMovesLeadership(t *testing.T) {
	a, c, q := newTestActive(t, 300*time.Millisecond)
	ctx := context.Background()
	epochs := map[int32]int64{}
	for _, id := range []int32{1, 2, 3} {
		epochs[id] = register(t, a, q, id)
	}
	// Partition 0 on 2,1,3, led by 2.
	if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "led-by-2", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {2, 1, 3}}}}, false); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	// Brokers 1 and 3 keep heartbeating; 2 goes silent.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, id := range []int32{1, 3} {
				a.Heartbeat(ctx, Heartbeat{BrokerID: id, BrokerEpoch: epochs[id], CurrentMetadataOffset: q.Image().Offset()})
			}
		}
	}()
	eventually(t, "broker 2 fenced", func() bool { b, _ := q.Image().Broker(2); return b.Fenced })
	p, _ := q.Image().Partition("led-by-2", 0)
	if p.Leader != 1 {
		t.Errorf("leader %d after broker 2 was fenced, want 1 (next ISR member in assignment order)", p.Leader)
	}
	if !slices.Equal(p.ISR, []int32{1, 3}) {
		t.Errorf("ISR %v, want [1 3]", p.ISR)
	}
	if p.LeaderEpoch != 1 {
		t.Errorf("leader epoch %d, want 1", p.LeaderEpoch)
	}
	for _, id := range []int32{1, 3} {
		if b, _ := q.Image().Broker(id); b.Fenced {
			t.Errorf("heartbeating broker %d was fenced", id)
		}
	}
	// Broker 2 comes back with the same registration: unfenced again, but
	// not leader (the ISR decides; its follower rejoins via AlterPartition).
	hb, err := a.Heartbeat(ctx, Heartbeat{BrokerID: 2, BrokerEpoch: epochs[2], CurrentMetadataOffset: q.Image().Offset()})
	if err != nil || hb.IsFenced {
		t.Fatalf("returning broker: %+v %v, want unfenced", hb, err)
	}
}

func TestLastISRMemberFencedLeavesPartitionOffline(t *testing.T) {
	a, c, q := newTestActive(t, time.Hour)
	ctx := context.Background()
	e1 := register(t, a, q, 1)
	e2 := register(t, a, q, 2)
	if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "solo", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {2}}}}, false); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if err := c.FenceBroker(ctx, 2, e2); err != nil {
		t.Fatal(err)
	}
	p, _ := q.Image().Partition("solo", 0)
	if p.Leader != metadata.NoLeader || !slices.Equal(p.ISR, []int32{2}) {
		t.Errorf("after fencing the only replica: leader %d ISR %v, want -1 and [2] (KIP-841 keeps the last member)", p.Leader, p.ISR)
	}
	// Unfencing it elects it again.
	if _, err := a.Heartbeat(ctx, Heartbeat{BrokerID: 2, BrokerEpoch: e2, CurrentMetadataOffset: q.Image().Offset()}); err != nil {
		t.Fatal(err)
	}
	p, _ = q.Image().Partition("solo", 0)
	if p.Leader != 2 || p.LeaderEpoch != 2 {
		t.Errorf("after unfencing: leader %d epoch %d, want 2 and 2", p.Leader, p.LeaderEpoch)
	}
	_ = e1
}

func TestControlledShutdownHandshake(t *testing.T) {
	a, c, q := newTestActive(t, time.Hour)
	ctx := context.Background()
	e1 := register(t, a, q, 1)
	e2 := register(t, a, q, 2)
	if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "cs", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {1, 2}}}}, false); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	// The broker has not yet applied the change that moved its leadership:
	// it may not stop yet.
	stale := q.Image().Offset()
	hb, err := a.Heartbeat(ctx, Heartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: stale, WantShutDown: true})
	if err != nil || hb.ShouldShutDown {
		t.Fatalf("first shutdown heartbeat: %+v %v, want should_shut_down=false", hb, err)
	}
	p, _ := q.Image().Partition("cs", 0)
	if p.Leader != 2 || slices.Contains(p.ISR, 1) {
		t.Errorf("leader %d ISR %v after WantShutDown, want leader 2 without 1 in the ISR", p.Leader, p.ISR)
	}
	if b, _ := q.Image().Broker(1); !b.InControlledShutdown || b.Fenced {
		t.Errorf("broker 1 state %+v, want in controlled shutdown, not yet fenced", b)
	}
	hb, err = a.Heartbeat(ctx, Heartbeat{BrokerID: 1, BrokerEpoch: e1, CurrentMetadataOffset: q.Image().Offset(), WantShutDown: true})
	if err != nil || !hb.ShouldShutDown {
		t.Fatalf("caught-up shutdown heartbeat: %+v %v, want should_shut_down", hb, err)
	}
	if b, _ := q.Image().Broker(1); !b.Fenced {
		t.Error("broker 1 not fenced after its controlled shutdown")
	}
	_ = e2
}

func TestDuplicateRegistrationWhileSessionAlive(t *testing.T) {
	a, _, q := newTestActive(t, time.Hour)
	register(t, a, q, 2)
	_, err := a.Register(context.Background(), rules.Registration{BrokerID: 2, IncarnationID: metadata.NewUuid()})
	if !errors.Is(err, kerr.DuplicateBrokerRegistration) {
		t.Errorf("second incarnation of a live broker: %v, want DUPLICATE_BROKER_REGISTRATION", err)
	}
	// This node's own id is exempt: its previous process cannot be alive.
	register(t, a, q, 1)
	if _, err := a.Register(context.Background(), rules.Registration{BrokerID: 1, IncarnationID: metadata.NewUuid()}); err != nil {
		t.Errorf("re-registering the controller's own id: %v", err)
	}
}
