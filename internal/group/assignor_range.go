package group

// The range assignor (Kafka's server-side RangeAssignor): per topic, the
// members subscribed to it, in member id order, get contiguous ranges of
// partitions; the first P mod N get one more. Members subscribed to the
// same co-partitioned topics therefore get the same partition numbers of
// each. It is sticky within a topic: a member keeps its current partitions
// up to its quota, and the free ones fill the members below quota in order.

import (
	"slices"

	"github.com/vltava/vltava/internal/metadata"
)

type rangeAssignor struct{}

func (rangeAssignor) name() string { return "range" }

func (rangeAssignor) assign(members []assignorMember, topics map[metadata.Uuid]topicMeta) map[string]assignment {
	out := make(map[string]assignment, len(members))
	for _, m := range members {
		out[m.id] = assignment{}
	}
	for _, t := range sortedTopicIDs(topics) {
		var subs []assignorMember
		for _, m := range members {
			if slices.Contains(m.topics, t) {
				subs = append(subs, m)
			}
		}
		if len(subs) == 0 {
			continue
		}
		total := int(topics[t].partitions)
		quota := func(i int) int {
			q := total / len(subs)
			if i < total%len(subs) {
				q++
			}
			return q
		}
		taken := make([]bool, total)
		count := make([]int, len(subs))
		for i, m := range subs {
			for _, p := range m.current[t] {
				if int(p) < total && !taken[p] && count[i] < quota(i) {
					taken[p] = true
					count[i]++
					out[m.id].add(t, p)
				}
			}
		}
		i := 0
		for p := 0; p < total; p++ {
			if taken[p] {
				continue
			}
			for count[i] >= quota(i) {
				i++
			}
			count[i]++
			out[subs[i].id].add(t, int32(p))
		}
	}
	return out
}
