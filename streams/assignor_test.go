package streams

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStandbyPlacement: every task gets its standbys on processes other
// than its active task's (and its previous owner's, while that still
// holds it), one per process, spread over the members, and no more than
// there are other processes.
func TestStandbyPlacement(t *testing.T) {
	var ms []*memberMeta
	for i, p := range []string{"p1", "p1", "p2", "p3"} {
		ms = append(ms, &memberMeta{id: fmt.Sprintf("m%d", i), process: p})
	}
	tb := &taskBalance{members: ms}
	var tasks []TaskID
	target, owner := map[TaskID]*memberMeta{}, map[TaskID]*memberMeta{}
	for p := int32(0); p < 8; p++ {
		id := TaskID{Subtopology: 0, Partition: p}
		tasks = append(tasks, id)
		target[id] = ms[int(p)%len(ms)]
	}
	moving := tasks[2] // active on m2 (p2) next, still owned by m3 (p3)
	owner[moving] = ms[3]
	for _, n := range []int{1, 2, 5} {
		got := tb.standbys(tasks, target, owner, n)
		per := map[TaskID][]*memberMeta{}
		for m, ids := range got {
			for _, id := range ids {
				per[id] = append(per[id], m)
			}
		}
		for _, id := range tasks {
			procs := map[string]bool{}
			for _, m := range per[id] {
				if m.process == target[id].process || (owner[id] != nil && m.process == owner[id].process) {
					t.Errorf("n=%d: task %s has a standby on %s (process %s), the process of its active task", n, id, m.id, m.process)
				}
				if procs[m.process] {
					t.Errorf("n=%d: task %s has two standbys on process %s", n, id, m.process)
				}
				procs[m.process] = true
			}
			want := min(n, 2) // three processes: two besides the active one
			if id == moving {
				want = min(n, 1) // p2 and p3 are both taken
			}
			if len(per[id]) != want {
				t.Errorf("n=%d: task %s has %d standbys, want %d", n, id, len(per[id]), want)
			}
		}
		if n == 1 {
			// 8 standbys over 4 members: none holds more than 3.
			for m, ids := range got {
				if len(ids) > 3 {
					t.Errorf("n=1: %s holds %d standbys of 8", m.id, len(ids))
				}
			}
		}
	}
	if got := tb.standbys(tasks, target, owner, 0); len(got) != 0 {
		t.Errorf("n=0: %d members got standbys", len(got))
	}
}

// TestCooperativeTaskMove: when a member joins, a moving task is first
// withheld (its owner is assigned the tasks it keeps, and revokes the
// rest), and only the next rebalance, with the owner no longer holding it,
// gives it to the new member (KIP-429); the tasks that stay never leave
// their owner. Until the move completes, the metadata names the old owner.
func TestCooperativeTaskMove(t *testing.T) {
	b := NewBuilder()
	NewStream(b, "in", String(), String()).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	a := &App{topo: topo, subPartitions: map[int]int32{0: 4}, subTopics: map[int][]string{0: {"in"}}}
	owned := func(ps ...int32) map[TaskID]bool {
		m := map[TaskID]bool{}
		for _, p := range ps {
			m[TaskID{Partition: p}] = true
		}
		return m
	}
	round := func(m1, m2 map[TaskID]bool) (got map[string]string, hosts map[string][]string) {
		ms := []*memberMeta{{id: "m1", server: "h1:1", process: "p1", owned: m1}, {id: "m2", server: "h2:1", process: "p2", owned: m2}}
		got = map[string]string{}
		for _, sa := range (&taskBalance{b: taskBalancer{app: a}, members: ms}).Balance(nil).IntoSyncAssignment() {
			var ca kmsg.ConsumerMemberAssignment
			if err := ca.ReadFrom(sa.MemberAssignment); err != nil {
				t.Fatal(err)
			}
			var info assignmentInfo
			if err := json.Unmarshal(ca.UserData, &info); err != nil {
				t.Fatal(err)
			}
			hosts = info.Hosts
			got[sa.MemberID] = fmt.Sprint(ca.Topics)
			if len(ca.Topics) == 1 {
				got[sa.MemberID] = fmt.Sprint(ca.Topics[0].Topic, ca.Topics[0].Partitions)
			}
		}
		return got, hosts
	}
	got, hosts := round(owned(0, 1, 2, 3), owned())
	if got["m1"] != "in[0 1]" || got["m2"] != "[]" {
		t.Errorf("first rebalance: %v, want m1 keeping in[0 1] and m2 nothing yet", got)
	}
	if fmt.Sprint(hosts) != "map[h1:1:[0_0 0_1 0_2 0_3]]" {
		t.Errorf("first rebalance hosts %v: want every task still on h1:1", hosts)
	}
	got, hosts = round(owned(0, 1), owned())
	if got["m1"] != "in[0 1]" || got["m2"] != "in[2 3]" {
		t.Errorf("second rebalance: %v, want m1 in[0 1] and m2 in[2 3]", got)
	}
	if fmt.Sprint(hosts) != "map[h1:1:[0_0 0_1] h2:1:[0_2 0_3]]" {
		t.Errorf("second rebalance hosts %v", hosts)
	}
}
