package rules

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// assigned creates topic name with partition 0 on replicas (leader first).
func assigned(t *testing.T, c *Controller, name string, replicas ...int32) *metadata.TopicImage {
	t.Helper()
	res := createOne(t, c, CreateTopic{Name: name, NumPartitions: -1, ReplicationFactor: -1, Assignment: map[int32][]int32{0: replicas}})
	wantKafkaError(t, res.Err, nil)
	top, _ := c.Image().Topic(name)
	return top
}

func TestAlterPartitionValidation(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestController(t, 3, ControllerConfig{})
	top := assigned(t, c, "isr", 0, 1, 2)
	epochOf := func(id int32) int64 { b, _ := c.Image().Broker(id); return b.Epoch }
	for _, tc := range []struct {
		name   string
		broker int32
		item   AlterPartitionItem
		want   *kerr.Error
	}{
		{"stale leader epoch", 0, AlterPartitionItem{LeaderEpoch: -1, NewISR: []int32{0, 1}}, kerr.FencedLeaderEpoch},
		{"not the leader", 1, AlterPartitionItem{NewISR: []int32{0, 1}}, kerr.InvalidRequest},
		{"stale partition epoch", 0, AlterPartitionItem{PartitionEpoch: 7, NewISR: []int32{0, 1}}, kerr.InvalidUpdateVersion},
		{"leader missing from ISR", 0, AlterPartitionItem{NewISR: []int32{1, 2}}, kerr.InvalidRequest},
		{"non-replica in ISR", 0, AlterPartitionItem{NewISR: []int32{0, 5}}, kerr.InvalidRequest},
		{"unknown topic id", 0, AlterPartitionItem{TopicID: metadata.NewUuid(), NewISR: []int32{0}}, kerr.UnknownTopicID},
		{"shrink accepted", 0, AlterPartitionItem{NewISR: []int32{0, 1}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.item.TopicID == metadata.ZeroUuid {
				tc.item.TopicID = top.ID
			}
			res, err := c.AlterPartition(ctx, tc.broker, epochOf(tc.broker), []AlterPartitionItem{tc.item})
			wantKafkaError(t, err, nil)
			wantKafkaError(t, res[0].Err, tc.want)
		})
	}
	p, _ := c.Image().Partition("isr", 0)
	if !slices.Equal(p.ISR, []int32{0, 1}) || p.PartitionEpoch != 1 || p.LeaderEpoch != 0 {
		t.Errorf("after the shrink: ISR %v partition epoch %d leader epoch %d, want [0 1], 1, 0", p.ISR, p.PartitionEpoch, p.LeaderEpoch)
	}
	// A stale broker epoch fails the whole request.
	_, err := c.AlterPartition(ctx, 0, epochOf(0)+100, []AlterPartitionItem{{TopicID: top.ID, PartitionEpoch: 1, NewISR: []int32{0}}})
	wantKafkaError(t, err, kerr.StaleBrokerEpoch)
	// Expanding to a fenced broker is INELIGIBLE_REPLICA.
	if err := c.FenceBroker(ctx, 2, epochOf(2)); err != nil {
		t.Fatal(err)
	}
	res, err := c.AlterPartition(ctx, 0, epochOf(0), []AlterPartitionItem{{TopicID: top.ID, PartitionEpoch: 1, NewISR: []int32{0, 1, 2}}})
	wantKafkaError(t, err, nil)
	wantKafkaError(t, res[0].Err, kerr.IneligibleReplica)
}

func TestElectLeaders(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestController(t, 3, ControllerConfig{})
	assigned(t, c, "pref", 0, 1, 2)
	epochOf := func(id int32) int64 { b, _ := c.Image().Broker(id); return b.Epoch }
	tp := []TopicPartition{{"pref", 0}}
	wantKafkaError(t, c.ElectLeaders(ctx, PreferredElection, tp)[0].Err, kerr.ElectionNotNeeded)

	// Broker 0 fenced: leadership moves to 1; preferred election is not
	// possible while 0 is out of the ISR.
	if err := c.FenceBroker(ctx, 0, epochOf(0)); err != nil {
		t.Fatal(err)
	}
	p, _ := c.Image().Partition("pref", 0)
	if p.Leader != 1 {
		t.Fatalf("leader %d after fencing 0, want 1", p.Leader)
	}
	if err := c.UnfenceBroker(ctx, 0, epochOf(0)); err != nil {
		t.Fatal(err)
	}
	wantKafkaError(t, c.ElectLeaders(ctx, PreferredElection, tp)[0].Err, kerr.PreferredLeaderNotAvailable)
	// Once 0 is back in the ISR, the preferred election moves leadership.
	res, _ := c.AlterPartition(ctx, 1, epochOf(1), []AlterPartitionItem{{TopicID: topicNamed(t, c, "pref").ID, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{1, 2, 0}}})
	wantKafkaError(t, res[0].Err, nil)
	wantKafkaError(t, c.ElectLeaders(ctx, PreferredElection, tp)[0].Err, nil)
	if p, _ := c.Image().Partition("pref", 0); p.Leader != 0 {
		t.Errorf("leader %d after preferred election, want 0", p.Leader)
	}
	// All partitions: those needing nothing are left out.
	if got := c.ElectLeaders(ctx, PreferredElection, nil); len(got) != 0 {
		t.Errorf("election over all balanced partitions: %+v, want none", got)
	}
	wantKafkaError(t, c.ElectLeaders(ctx, PreferredElection, []TopicPartition{{"nope", 0}})[0].Err, kerr.UnknownTopicOrPartition)

	// Unclean: the only ISR member is gone; an out-of-sync replica may lead.
	assigned(t, c, "unclean", 2, 1)
	u := topicNamed(t, c, "unclean")
	res, _ = c.AlterPartition(ctx, 2, epochOf(2), []AlterPartitionItem{{TopicID: u.ID, NewISR: []int32{2}}})
	wantKafkaError(t, res[0].Err, nil)
	if err := c.FenceBroker(ctx, 2, epochOf(2)); err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Image().Partition("unclean", 0); p.Leader != metadata.NoLeader {
		t.Fatalf("leader %d with the only ISR member fenced, want none (no unclean election by default)", p.Leader)
	}
	wantKafkaError(t, c.ElectLeaders(ctx, UncleanElection, []TopicPartition{{"unclean", 0}})[0].Err, nil)
	if p, _ := c.Image().Partition("unclean", 0); p.Leader != 1 || !slices.Equal(p.ISR, []int32{1}) {
		t.Errorf("after unclean election: leader %d ISR %v, want 1 and [1]", p.Leader, p.ISR)
	}
}

func topicNamed(t *testing.T, c *Controller, name string) *metadata.TopicImage {
	t.Helper()
	top, ok := c.Image().Topic(name)
	if !ok {
		t.Fatalf("no topic %s", name)
	}
	return top
}

func TestReassignmentCopiesBeforeDropping(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestController(t, 4, ControllerConfig{})
	top := assigned(t, c, "move", 0, 1)
	epochOf := func(id int32) int64 { b, _ := c.Image().Broker(id); return b.Epoch }

	errs := c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, []int32{2, 3}}})
	wantKafkaError(t, errs[0], nil)
	p, _ := c.Image().Partition("move", 0)
	if !slices.Equal(p.Replicas, []int32{2, 3, 0, 1}) || !slices.Equal(p.AddingReplicas, []int32{2, 3}) || !slices.Equal(p.RemovingReplicas, []int32{0, 1}) {
		t.Fatalf("while reassigning: replicas %v adding %v removing %v", p.Replicas, p.AddingReplicas, p.RemovingReplicas)
	}
	if p.Leader != 0 {
		t.Errorf("leader moved to %d before the new replicas caught up", p.Leader)
	}
	if got := ListPartitionReassignments(c.Image(), nil); len(got) != 1 || got[0].Partition != 0 {
		t.Errorf("ListPartitionReassignments = %+v", got)
	}
	// One new replica in sync is not enough.
	res, _ := c.AlterPartition(ctx, 0, epochOf(0), []AlterPartitionItem{{TopicID: top.ID, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{0, 1, 2}}})
	wantKafkaError(t, res[0].Err, nil)
	if p, _ := c.Image().Partition("move", 0); !p.Reassigning() {
		t.Fatal("reassignment completed with replica 3 still catching up")
	}
	p, _ = c.Image().Partition("move", 0)
	res, _ = c.AlterPartition(ctx, 0, epochOf(0), []AlterPartitionItem{{TopicID: top.ID, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{0, 1, 2, 3}}})
	wantKafkaError(t, res[0].Err, nil)
	p, _ = c.Image().Partition("move", 0)
	if p.Reassigning() || !slices.Equal(p.Replicas, []int32{2, 3}) || !slices.Equal(p.ISR, []int32{2, 3}) || p.Leader != 2 {
		t.Errorf("after completion: replicas %v ISR %v leader %d adding %v, want [2 3] [2 3] 2 none", p.Replicas, p.ISR, p.Leader, p.AddingReplicas)
	}
	if res[0].Leader != 2 {
		t.Errorf("AlterPartition answered leader %d, want the new leader 2", res[0].Leader)
	}

	// Cancelling restores the original replicas.
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, []int32{0, 1}}})[0], nil)
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, nil}})[0], nil)
	p, _ = c.Image().Partition("move", 0)
	if p.Reassigning() || !slices.Equal(p.Replicas, []int32{2, 3}) {
		t.Errorf("after cancel: replicas %v adding %v, want [2 3] and none", p.Replicas, p.AddingReplicas)
	}
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, nil}})[0], kerr.NoReassignmentInProgress)
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, []int32{2, 2}}})[0], kerr.InvalidReplicaAssignment)
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, []int32{9}}})[0], kerr.InvalidReplicaAssignment)
	// Shrinking to replicas already in sync completes at once.
	wantKafkaError(t, c.AlterPartitionReassignments(ctx, []Reassignment{{TopicPartition{"move", 0}, []int32{3}}})[0], nil)
	if p, _ := c.Image().Partition("move", 0); !slices.Equal(p.Replicas, []int32{3}) || p.Leader != 3 {
		t.Errorf("shrink: replicas %v leader %d, want [3] and 3", p.Replicas, p.Leader)
	}
}

func TestRackAwarePlacementSpreadsRacks(t *testing.T) {
	racks := map[int32]string{0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}
	rackOf := func(id int32) string { return racks[id] }
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, seed))
		out := placeReplicas([]int32{0, 1, 2, 3, 4, 5}, rackOf, 0, 12, 3, rng)
		leaders := map[int32]int{}
		for p, replicas := range out {
			seen := map[string]bool{}
			for _, r := range replicas {
				seen[racks[r]] = true
			}
			if len(seen) != 3 {
				t.Fatalf("seed %d partition %d: replicas %v span racks %v, want all three", seed, p, replicas, seen)
			}
			leaders[replicas[0]]++
		}
		for b, n := range leaders {
			if n != 2 {
				t.Fatalf("seed %d: broker %d leads %d of 12 partitions, want 2 (balanced)", seed, b, n)
			}
		}
	}
	// rf above the rack count still places on distinct brokers.
	out := placeReplicas([]int32{0, 1, 2}, func(id int32) string { return map[int32]string{0: "a", 1: "a", 2: "b"}[id] }, 0, 3, 3, rand.New(rand.NewPCG(1, 1)))
	for _, r := range out {
		if s := slices.Clone(r); len(slices.Compact(slices.Sorted(slices.Values(s)))) != 3 {
			t.Errorf("replicas %v repeat a broker", r)
		}
	}
}

// auto.leader.rebalance.enable: partitions whose preferred replica is back
// in the ISR move back to it once the broker's share of misplaced
// leaderships exceeds leader.imbalance.per.broker.percentage.
func TestBalanceLeaders(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestController(t, 3, ControllerConfig{})
	epochOf := func(id int32) int64 { b, _ := c.Image().Broker(id); return b.Epoch }
	res := createOne(t, c, CreateTopic{Name: "bal", NumPartitions: -1, ReplicationFactor: -1,
		Assignment: map[int32][]int32{0: {0, 1, 2}, 1: {0, 2, 1}, 2: {1, 0, 2}}})
	wantKafkaError(t, res.Err, nil)
	if err := c.FenceBroker(ctx, 0, epochOf(0)); err != nil {
		t.Fatal(err)
	}
	if err := c.UnfenceBroker(ctx, 0, epochOf(0)); err != nil {
		t.Fatal(err)
	}
	// The new leaders take broker 0 back into their ISRs.
	top := topicNamed(t, c, "bal")
	for _, pi := range []int32{0, 1} {
		p, _ := c.Image().Partition("bal", pi)
		if p.Leader == 0 {
			t.Fatalf("partition %d still led by the fenced broker", pi)
		}
		isr := append(slices.Clone(p.ISR), 0)
		r, _ := c.AlterPartition(ctx, p.Leader, epochOf(p.Leader), []AlterPartitionItem{{TopicID: top.ID, Partition: pi, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr}})
		wantKafkaError(t, r[0].Err, nil)
	}
	// Broker 0 is preferred for 2 partitions and leads none: 100% misplaced.
	if n, err := c.BalanceLeaders(ctx, 100); err != nil || n != 0 {
		t.Fatalf("balance at 100%%: moved %d (%v), want none (not above the threshold)", n, err)
	}
	if n, err := c.BalanceLeaders(ctx, 10); err != nil || n != 2 {
		t.Fatalf("balance at 10%%: moved %d (%v), want 2", n, err)
	}
	for _, pi := range []int32{0, 1} {
		if p, _ := c.Image().Partition("bal", pi); p.Leader != 0 {
			t.Errorf("partition %d led by %d after balancing, want its preferred replica 0", pi, p.Leader)
		}
	}
	if p, _ := c.Image().Partition("bal", 2); p.Leader != 1 {
		t.Errorf("partition 2 led by %d, want 1 (already preferred)", p.Leader)
	}
}
