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
)

// waitResult is what a WaitBrokersApplied call returned.
type waitResult struct {
	lagging []int32
	err     error
}

// startWait runs WaitBrokersApplied in the background.
func startWait(a *Active, timeout time.Duration, offset int64) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		lagging, err := a.WaitBrokersApplied(ctx, offset)
		out <- waitResult{lagging, err}
	}()
	return out
}

// notYet fails the test if the wait already returned.
func notYet(t *testing.T, ch <-chan waitResult, why string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("WaitBrokersApplied returned %+v although %s", r, why)
	default:
	}
}

// returned waits for the wait's result, bounded.
func returned(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("WaitBrokersApplied did not return")
		return waitResult{}
	}
}

// TestWaitBrokersAppliedWaitsForEveryLiveBroker: the wait ends once every
// unfenced broker has reported the offset in a heartbeat; a broker fenced
// meanwhile no longer holds it up; a timeout names the brokers behind.
func TestWaitBrokersAppliedWaitsForEveryLiveBroker(t *testing.T) {
	a, c, q := newTestActive(t, time.Hour)
	ctx := context.Background()
	epochs := map[int32]int64{}
	for _, id := range []int32{1, 2, 3} {
		epochs[id] = register(t, a, q, id)
	}
	if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "t", NumPartitions: 1, ReplicationFactor: 3}}, false); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	target := q.Image().Offset()
	heartbeat := func(id int32, offset int64) {
		t.Helper()
		if _, err := a.Heartbeat(ctx, Heartbeat{BrokerID: id, BrokerEpoch: epochs[id], CurrentMetadataOffset: offset}); err != nil {
			t.Fatalf("heartbeat %d: %v", id, err)
		}
	}

	// Nobody has reported the topic yet: a short wait times out and names
	// all three.
	r := returned(t, startWait(a, 20*time.Millisecond, target))
	if !errors.Is(r.err, kerr.RequestTimedOut) || !slices.Equal(r.lagging, []int32{1, 2, 3}) {
		t.Fatalf("wait with no broker caught up: %+v, want REQUEST_TIMED_OUT and [1 2 3] behind", r)
	}

	wait := startWait(a, 10*time.Second, target)
	heartbeat(1, target)
	heartbeat(2, target-1) // behind still
	notYet(t, wait, "brokers 2 and 3 are behind")
	heartbeat(2, target)
	notYet(t, wait, "broker 3 is behind")
	heartbeat(3, target)
	if r := returned(t, wait); r.err != nil {
		t.Fatalf("wait after every broker caught up: %+v", r)
	}

	// A broker that stops heartbeating and is fenced drops out of the wait.
	if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "u", NumPartitions: 1, ReplicationFactor: 2}}, false); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	target = q.Image().Offset()
	wait = startWait(a, 10*time.Second, target)
	heartbeat(1, target)
	heartbeat(2, target)
	notYet(t, wait, "broker 3 is behind")
	if err := c.FenceBroker(ctx, 3, epochs[3]); err != nil {
		t.Fatal(err)
	}
	if r := returned(t, wait); r.err != nil {
		t.Fatalf("wait after the lagging broker was fenced: %+v", r)
	}
}

// TestLifecycleReportsAppliedMetadataAtOnce: with a heartbeat interval of
// an hour, a broker still tells the controller within moments that it has
// applied a new image, so an admin request waiting for it is not held up
// for a heartbeat interval.
func TestLifecycleReportsAppliedMetadataAtOnce(t *testing.T) {
	a, c, q := newTestActive(t, time.Hour)
	applied := NewAppliedOffset()
	q.Subscribe(func(_, img *metadata.Image) { applied.Advance(img.Offset()) })
	applied.Advance(q.Image().Offset())
	client := NewClient(ClientOptions{NodeID: 1, Quorum: q, Active: a, Controller: c})
	l := StartLifecycle(LifecycleOptions{
		Registration: rules.Registration{BrokerID: 1, IncarnationID: metadata.NewUuid(),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "h", Port: 9001}}},
		Client:            client,
		MetadataOffset:    applied.Load,
		MetadataApplied:   applied.Advanced(),
		HeartbeatInterval: time.Hour,
	})
	t.Cleanup(l.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := l.WaitUnfenced(ctx); err != nil {
		t.Fatalf("broker not unfenced: %v", err)
	}
	for i := range 3 {
		if r := c.CreateTopics(ctx, []rules.CreateTopic{{Name: "t" + string(rune('a'+i)), NumPartitions: 1, ReplicationFactor: 1}}, false); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		lagging, err := a.WaitBrokersApplied(wctx, q.Image().Offset())
		wcancel()
		if err != nil {
			t.Fatalf("create %d: the broker did not report the applied image (behind: %v): %v", i, lagging, err)
		}
	}
}

func TestAppliedOffsetCoalescesAndNeverMovesBack(t *testing.T) {
	o := NewAppliedOffset()
	if o.Load() != -1 {
		t.Fatalf("new AppliedOffset at %d, want -1", o.Load())
	}
	o.Advance(5)
	o.Advance(7)
	o.Advance(6)
	if o.Load() != 7 {
		t.Fatalf("offset %d after advancing to 5, 7, 6; want 7", o.Load())
	}
	<-o.Advanced()
	select {
	case <-o.Advanced():
		t.Fatal("two notifications pending for advances made while none was consumed")
	default:
	}
	o.Advance(7)
	select {
	case <-o.Advanced():
		t.Fatal("notified although the offset did not move")
	default:
	}
}
