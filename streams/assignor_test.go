package streams

import (
	"fmt"
	"testing"
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
