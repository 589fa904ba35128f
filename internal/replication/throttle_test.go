package replication

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// The quota measures throttled bytes over Kafka's 11 one-second samples:
// above the limit it is exceeded, and it recovers once the window has moved
// past the burst. Without a limit nothing is ever exceeded.
func TestQuotaWindow(t *testing.T) {
	q := NewQuota()
	q.Record(1 << 30)
	if q.Exceeded() || q.Limited() {
		t.Fatal("an unlimited quota is exceeded")
	}
	clock := time.Unix(1000, 0)
	q.now = func() time.Time { return clock }
	q.SetLimit(1000)
	// As Kafka's Rate, bytes count over at least ten seconds, however
	// recent: 9000 B are within 1000 B/s, 15000 B are not, for as long as
	// they stay in the eleven-second window.
	q.Record(9000)
	if q.Exceeded() {
		t.Fatal("9000 B, rated over ten seconds, exceed 1000 B/s")
	}
	q.Record(6000)
	if !q.Exceeded() {
		t.Fatal("15000 B, rated over ten seconds, are within 1000 B/s")
	}
	clock = clock.Add(4 * time.Second) // 15000 B over 10 s: still over
	if !q.Exceeded() {
		t.Fatal("15000 B over 10 s is within 1000 B/s")
	}
	clock = clock.Add(7 * time.Second) // the burst's sample has expired
	if q.Exceeded() {
		t.Fatal("exceeded after the window moved past the burst")
	}
	q.Record(15000)
	clock = clock.Add(20 * time.Second)
	if q.Exceeded() {
		t.Fatal("exceeded after an idle spell longer than the window")
	}
	q.SetLimit(math.MaxInt64)
	if q.Limited() {
		t.Fatal("Long.MAX is a limit")
	}
}

func setConfig(c *testController, typ int8, name, key string, value *string) {
	c.commit(&metadata.ConfigRecord{ResourceType: typ, ResourceName: name, Name: key, Value: value})
}

// Replication throttles (KIP-73) hold back a replica outside the ISR and
// only that: with leader.replication.throttled.rate (or the follower's
// follower.replication.throttled.rate) at 1 byte/s and the replica listed in
// the topic's throttled replicas, a follower that fell out of the ISR stays
// behind; with the rate lifted it catches up and rejoins. The in-sync
// follower keeps replicating throughout.
func TestReplicationThrottleHoldsBackOutOfSyncReplica(t *testing.T) {
	one := metadata.StringPtr("1")
	for _, side := range []struct {
		name, rateKey, replicasKey, broker, replicas string
	}{
		{"leader", "leader.replication.throttled.rate", "leader.replication.throttled.replicas", "1", "0:1"},
		{"follower", "follower.replication.throttled.rate", "follower.replication.throttled.replicas", "3", "0:3"},
	} {
		t.Run(side.name, func(t *testing.T) {
			// Small fetches, so catching up takes several.
			c, _ := startClusterWith(t, map[string]string{"replica.fetch.max.bytes": "200"})
			leader := c.node(1)
			c.stopFetching(3)
			for range 30 {
				if err, _ := produce(t, leader, 1, 2, 5*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			eventually(t, "the ISR to shrink to [1 2]", func() bool {
				return slices.Equal(c.partitionImage().ISR, []int32{1, 2})
			})
			setConfig(c, metadata.ConfigResourceTopic, testTopic, side.replicasKey, metadata.StringPtr(side.replicas))
			setConfig(c, metadata.ConfigResourceBroker, side.broker, side.rateKey, one)
			c.startFetching(3)
			end := leader.partition().LogEndOffset()
			eventually(t, "the throttled follower to fetch something", func() bool {
				return c.node(3).partition().LogEndOffset() > 2
			})
			// Over a second at 1 B/s it cannot catch up (poll to see it
			// does not).
			for until := time.Now().Add(time.Second); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
				if leo := c.node(3).partition().LogEndOffset(); leo >= end {
					t.Fatalf("throttled follower caught up to %d", leo)
				}
			}
			// The in-sync follower is not throttled.
			if err, _ := produce(t, leader, -1, 2, 5*time.Second); err != nil {
				t.Fatalf("acks=all with the ISR [1 2] while throttling: %v", err)
			}
			setConfig(c, metadata.ConfigResourceBroker, side.broker, side.rateKey, nil)
			eventually(t, "the unthrottled follower to rejoin the ISR", func() bool {
				return slices.Equal(c.partitionImage().ISR, []int32{1, 2, 3})
			})
		})
	}
}
