package herder

import (
	"sort"
	"time"
)

// item is one connector (task == connectorTask) or task.
type item struct {
	conn string
	task int32
}

func itemsOf(a allocation) []item {
	var out []item
	for c, ts := range a {
		for _, t := range ts {
			out = append(out, item{c, t})
		}
	}
	return out
}

func sortItems(is []item) {
	sort.Slice(is, func(i, j int) bool {
		if is[i].conn != is[j].conn {
			return is[i].conn < is[j].conn
		}
		return is[i].task < is[j].task
	})
}

// assignor is the leader's assignment logic; its memory (the previous
// round's owners and the scheduled reassignment deadline) lives on the
// member goroutine only.
type assignor struct {
	maxDelay time.Duration
	owners   map[item]string // previous round: item → member id
	deadline time.Time       // lost work is reassigned after it (zero: none scheduled)
}

// all lists every connector and task of the cluster state.
func allItems(st clusterState) []item {
	var out []item
	for name := range st.configs {
		out = append(out, item{name, connectorTask})
		for i := range st.tasks[name] {
			out = append(out, item{name, int32(i)})
		}
	}
	sortItems(out)
	return out
}

// eager assigns everything round-robin over the members sorted by id,
// connectors first, then tasks (Kafka's eager assignor).
func (a *assignor) eager(members []string, st clusterState) map[string]allocation {
	sort.Strings(members)
	out := map[string]allocation{}
	for _, m := range members {
		out[m] = allocation{}
	}
	all := allItems(st)
	i := 0
	for _, it := range all {
		if it.task == connectorTask {
			out[members[i%len(members)]].add(it.conn, it.task)
			i++
		}
	}
	for _, it := range all {
		if it.task != connectorTask {
			out[members[i%len(members)]].add(it.conn, it.task)
			i++
		}
	}
	a.owners = map[item]string{}
	for m, al := range out {
		for _, it := range itemsOf(al) {
			a.owners[it] = m
		}
	}
	return out
}

// cooperative is KIP-415's incremental cooperative assignment: members keep
// what they run; work of a member that left is held back for up to
// scheduled.rebalance.max.delay.ms in case it returns, then reassigned;
// new work goes to the least loaded members; an overloaded member gives
// work up (revoked) to be reassigned in the next round. It returns each
// member's new work, its revoked work, and the delay before lost work is
// reassigned.
func (a *assignor) cooperative(now time.Time, members map[string]allocation, st clusterState) (assigned, revoked map[string]allocation, delay time.Duration) {
	ids := make([]string, 0, len(members))
	for m := range members {
		ids = append(ids, m)
	}
	sort.Strings(ids)
	assigned, revoked = map[string]allocation{}, map[string]allocation{}
	load := map[string]int{}
	owner := map[item]string{}
	exists := map[item]bool{}
	for _, it := range allItems(st) {
		exists[it] = true
	}
	for _, m := range ids {
		assigned[m], revoked[m] = allocation{}, allocation{}
		cur := itemsOf(members[m])
		sortItems(cur)
		for _, it := range cur {
			if !exists[it] || owner[it] != "" {
				revoked[m].add(it.conn, it.task) // deleted, or run twice
				continue
			}
			owner[it] = m
			load[m]++
		}
	}
	var lost, unassigned []item
	for _, it := range allItems(st) {
		if owner[it] != "" {
			continue
		}
		if prev, ok := a.owners[it]; ok && members[prev] == nil {
			lost = append(lost, it)
		} else {
			unassigned = append(unassigned, it)
		}
	}
	if len(lost) > 0 {
		if a.deadline.IsZero() {
			a.deadline = now.Add(a.maxDelay)
		}
		if now.Before(a.deadline) {
			delay = a.deadline.Sub(now)
		} else {
			a.deadline = time.Time{}
			unassigned = append(unassigned, lost...)
		}
	} else {
		a.deadline = time.Time{}
	}
	sortItems(unassigned)
	leastLoaded := func() string {
		best := ids[0]
		for _, m := range ids[1:] {
			if load[m] < load[best] {
				best = m
			}
		}
		return best
	}
	for _, it := range unassigned {
		m := leastLoaded()
		assigned[m].add(it.conn, it.task)
		owner[it] = m
		load[m]++
	}
	// Balance when nothing is held back: members above the ceiling of the
	// mean give up their last tasks.
	if delay == 0 && len(ids) > 1 {
		total := 0
		for _, m := range ids {
			total += load[m]
		}
		ceil := (total + len(ids) - 1) / len(ids)
		floor := total / len(ids)
		under := false
		for _, m := range ids {
			if load[m] < floor {
				under = true
			}
		}
		if under {
			for _, m := range ids {
				for load[m] > ceil {
					it, ok := lastOwned(owner, m, assigned[m])
					if !ok {
						break
					}
					revoked[m].add(it.conn, it.task)
					delete(owner, it)
					load[m]--
				}
			}
		}
	}
	a.owners = map[item]string{}
	for it, m := range owner {
		a.owners[it] = m
	}
	return assigned, revoked, delay
}

// lastOwned picks a task (else a connector) m runs from before this round.
func lastOwned(owner map[item]string, m string, fresh allocation) (item, bool) {
	var mine []item
	for it, o := range owner {
		if o == m && !fresh.has(it.conn, it.task) {
			mine = append(mine, it)
		}
	}
	if len(mine) == 0 {
		return item{}, false
	}
	sortItems(mine)
	for i := len(mine) - 1; i >= 0; i-- {
		if mine[i].task != connectorTask {
			return mine[i], true
		}
	}
	return mine[len(mine)-1], true
}
