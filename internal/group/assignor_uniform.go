package group

// The uniform assignor (Kafka's UniformAssignor, the default): spreads
// partitions so that member loads differ by at most one where the
// subscriptions allow it, while keeping as many current assignments as
// possible (sticky), so a rebalance moves only what balance requires.

import (
	"slices"

	"github.com/vltava/vltava/internal/metadata"
)

type uniformAssignor struct{}

func (uniformAssignor) name() string { return "uniform" }

type partitionRef struct {
	topic     metadata.Uuid
	partition int32
}

func (uniformAssignor) assign(members []assignorMember, topics map[metadata.Uuid]topicMeta) map[string]assignment {
	out := make(map[string]assignment, len(members))
	subscribed := make(map[string]map[metadata.Uuid]bool, len(members))
	subscribers := map[metadata.Uuid][]int{} // topic -> member indexes
	for i, m := range members {
		out[m.id] = assignment{}
		subscribed[m.id] = map[metadata.Uuid]bool{}
		for _, t := range m.topics {
			if _, ok := topics[t]; ok {
				subscribed[m.id][t] = true
				subscribers[t] = append(subscribers[t], i)
			}
		}
	}
	// Quota for the common case of identical subscriptions: every member
	// keeps at most ceil(P/N) of its partitions, and only as many members
	// as P mod N keep that many, so the rest can be spread without
	// taking partitions that would have to move again.
	total := 0
	for _, t := range topics {
		if len(subscribers[t.id]) > 0 {
			total += int(t.partitions)
		}
	}
	n := len(members)
	if n == 0 {
		return out
	}
	minQuota, extra := total/n, total%n
	// 1. Sticky: keep current partitions that are still valid, up to the
	// quota, each partition at most once.
	taken := map[partitionRef]bool{}
	for _, m := range members {
		a := out[m.id]
		limit := minQuota
		if extra > 0 {
			limit++
		}
		kept := 0
		for _, t := range m.current.topicIDs() {
			meta, ok := topics[t]
			if !ok || !subscribed[m.id][t] {
				continue
			}
			for _, p := range m.current[t] {
				ref := partitionRef{t, p}
				if p >= meta.partitions || taken[ref] || kept >= limit {
					continue
				}
				taken[ref] = true
				a.add(t, p)
				kept++
			}
		}
		if kept > minQuota && extra > 0 {
			extra--
		}
	}
	// 2. Every free partition goes to the least loaded member subscribed
	// to its topic (ties to the lower member id).
	for _, t := range sortedTopicIDs(topics) {
		subs := subscribers[t]
		if len(subs) == 0 {
			continue
		}
		for p := int32(0); p < topics[t].partitions; p++ {
			if taken[partitionRef{t, p}] {
				continue
			}
			best := subs[0]
			for _, i := range subs[1:] {
				if out[members[i].id].size() < out[members[best].id].size() {
					best = i
				}
			}
			out[members[best].id].add(t, p)
		}
	}
	// 3. Balance what subscriptions allow: move a partition from a member
	// to another subscribed one carrying at least two fewer. Each move
	// lowers the sum of squared loads, so this ends.
	for moved := true; moved; {
		moved = false
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return out[members[b].id].size() - out[members[a].id].size() })
		for _, i := range order {
			from := out[members[i].id]
			if moveOne(from, members, out, subscribers) {
				moved = true
				break
			}
		}
	}
	return out
}

// moveOne moves one partition of from to the least loaded eligible member
// with at least two fewer partitions, taking the highest partition first
// so that low partitions stay put.
func moveOne(from assignment, members []assignorMember, out map[string]assignment, subscribers map[metadata.Uuid][]int) bool {
	load := from.size()
	ids := from.topicIDs()
	for k := len(ids) - 1; k >= 0; k-- {
		t := ids[k]
		best := -1
		for _, j := range subscribers[t] {
			s := out[members[j].id].size()
			if s <= load-2 && (best < 0 || s < out[members[best].id].size()) {
				best = j
			}
		}
		if best < 0 {
			continue
		}
		ps := from[t]
		p := ps[len(ps)-1]
		from.remove(t, p)
		out[members[best].id].add(t, p)
		return true
	}
	return false
}
