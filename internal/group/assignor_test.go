package group

import (
	"fmt"
	"testing"

	"github.com/vltava/vltava/internal/metadata"
)

// checkValid fails unless every partition of a subscribed topic is
// assigned exactly once, to a member subscribed to it.
func checkValid(t *testing.T, members []assignorMember, topics map[metadata.Uuid]topicMeta, got map[string]assignment) {
	t.Helper()
	owner := map[partitionRef]string{}
	for _, m := range members {
		for id, ps := range got[m.id] {
			sub := false
			for _, s := range m.topics {
				sub = sub || s == id
			}
			if !sub {
				t.Fatalf("%s got topic %v it does not subscribe to", m.id, id)
			}
			for _, p := range ps {
				if o, ok := owner[partitionRef{id, p}]; ok {
					t.Fatalf("partition %v-%d assigned to %s and %s", id, p, o, m.id)
				}
				owner[partitionRef{id, p}] = m.id
			}
		}
	}
	for id, tm := range topics {
		for p := int32(0); p < tm.partitions; p++ {
			if _, ok := owner[partitionRef{id, p}]; !ok {
				t.Fatalf("partition %s-%d unassigned", tm.name, p)
			}
		}
	}
}

func spread(got map[string]assignment) (lo, hi int) {
	lo = 1 << 30
	for _, a := range got {
		lo, hi = min(lo, a.size()), max(hi, a.size())
	}
	return lo, hi
}

func membersOf(n int, topics ...metadata.Uuid) []assignorMember {
	var ms []assignorMember
	for i := range n {
		ms = append(ms, assignorMember{id: fmt.Sprintf("m%d", i), topics: topics})
	}
	return ms
}

func TestAssignorsBalanceAndStick(t *testing.T) {
	topics := map[metadata.Uuid]topicMeta{
		topicA: {name: "a", id: topicA, partitions: 7},
		topicB: {name: "b", id: topicB, partitions: 5},
	}
	for _, a := range []assignor{uniformAssignor{}, rangeAssignor{}} {
		t.Run(a.name(), func(t *testing.T) {
			for n := 1; n <= 13; n++ {
				ms := membersOf(n, topicA, topicB)
				got := a.assign(ms, topics)
				checkValid(t, ms, topics, got)
				lo, hi := spread(got)
				maxSpread := 1
				if a.name() == "range" {
					maxSpread = 2 // one extra per topic
				}
				if hi-lo > maxSpread {
					t.Fatalf("%d members: loads from %d to %d", n, lo, hi)
				}
				// A member joins: everyone else keeps what it can.
				for i := range ms {
					ms[i].current = got[ms[i].id]
				}
				ms = append(ms, assignorMember{id: "new", topics: []metadata.Uuid{topicA, topicB}})
				next := a.assign(ms, topics)
				checkValid(t, ms, topics, next)
				moved := 0
				for _, m := range ms[:n] {
					moved += m.current.minus(next[m.id]).size()
				}
				if moved > next["new"].size() {
					t.Fatalf("%d+1 members: %d partitions moved for %d given to the new member", n, moved, next["new"].size())
				}
			}
		})
	}
}

// Members subscribed to different topics get only those; the uniform
// assignor still balances what it can.
func TestUniformAssignorHeterogeneous(t *testing.T) {
	topics := map[metadata.Uuid]topicMeta{
		topicA: {name: "a", id: topicA, partitions: 6},
		topicB: {name: "b", id: topicB, partitions: 2},
	}
	ms := []assignorMember{
		{id: "ab", topics: []metadata.Uuid{topicA, topicB}},
		{id: "a1", topics: []metadata.Uuid{topicA}},
		{id: "a2", topics: []metadata.Uuid{topicA}},
		{id: "b", topics: []metadata.Uuid{topicB}},
	}
	got := uniformAssignor{}.assign(ms, topics)
	checkValid(t, ms, topics, got)
	if lo, hi := spread(got); hi-lo > 1 {
		t.Fatalf("loads from %d to %d: %v", lo, hi, got)
	}
}

// The range assignor gives co-subscribed members the same partition
// numbers of equally partitioned topics.
func TestRangeAssignorCoPartitions(t *testing.T) {
	topics := map[metadata.Uuid]topicMeta{
		topicA: {name: "a", id: topicA, partitions: 4},
		topicB: {name: "b", id: topicB, partitions: 4},
	}
	got := rangeAssignor{}.assign(membersOf(2, topicA, topicB), topics)
	for id, a := range got {
		if fmt.Sprint(a[topicA]) != fmt.Sprint(a[topicB]) {
			t.Fatalf("%s got %v of a and %v of b", id, a[topicA], a[topicB])
		}
	}
	if fmt.Sprint(got["m0"][topicA]) != "[0 1]" {
		t.Fatalf("m0 got %v, want [0 1]", got["m0"][topicA])
	}
}
