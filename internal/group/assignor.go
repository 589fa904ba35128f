package group

// Server-side assignors of consumer-protocol groups (KIP-848): the
// coordinator computes each member's target assignment from the members'
// subscriptions and the subscribed topics' partitions. group.consumer.assignors
// names the ones a group may use; the first is the default.

import (
	"bytes"
	"maps"
	"slices"

	"github.com/vltava/vltava/internal/metadata"
)

// assignment is a set of partitions by topic id; each partition list is
// sorted and free of duplicates. An empty assignment has no keys.
type assignment map[metadata.Uuid][]int32

// topicIDs returns the assignment's topics in byte order, the order they
// are written in.
func (a assignment) topicIDs() []metadata.Uuid {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y metadata.Uuid) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

func (a assignment) has(id metadata.Uuid, p int32) bool {
	_, ok := slices.BinarySearch(a[id], p)
	return ok
}

func (a assignment) add(id metadata.Uuid, p int32) {
	ps := a[id]
	i, ok := slices.BinarySearch(ps, p)
	if !ok {
		a[id] = slices.Insert(ps, i, p)
	}
}

func (a assignment) remove(id metadata.Uuid, p int32) {
	ps := a[id]
	if i, ok := slices.BinarySearch(ps, p); ok {
		ps = slices.Delete(slices.Clone(ps), i, i+1)
		if len(ps) == 0 {
			delete(a, id)
		} else {
			a[id] = ps
		}
	}
}

func (a assignment) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

func (a assignment) clone() assignment {
	out := make(assignment, len(a))
	for id, ps := range a {
		out[id] = slices.Clone(ps)
	}
	return out
}

func (a assignment) equal(b assignment) bool {
	return maps.EqualFunc(a, b, slices.Equal[[]int32])
}

// minus returns the partitions of a that are not in b.
func (a assignment) minus(b assignment) assignment {
	out := assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if !b.has(id, p) {
				out[id] = append(out[id], p)
			}
		}
	}
	return out
}

// intersect returns the partitions in both a and b.
func (a assignment) intersect(b assignment) assignment {
	out := assignment{}
	for id, ps := range a {
		for _, p := range ps {
			if b.has(id, p) {
				out[id] = append(out[id], p)
			}
		}
	}
	return out
}

// topicMeta is what an assignor knows of a subscribed topic.
type topicMeta struct {
	name       string
	id         metadata.Uuid
	partitions int32
}

// assignorMember is one member as an assignor sees it.
type assignorMember struct {
	id string
	// topics are the ids of the existing topics it subscribes to.
	topics []metadata.Uuid
	// current is its current target assignment, for stickiness.
	current assignment
}

// assignor computes target assignments. members are sorted by id; topics
// holds every topic some member subscribes to. The result has an entry
// (possibly empty) for every member and assigns every partition of a
// subscribed topic to exactly one member subscribed to it.
type assignor interface {
	name() string
	assign(members []assignorMember, topics map[metadata.Uuid]topicMeta) map[string]assignment
}

// assignors are the server-side assignors Kafka ships, by name.
var assignors = map[string]assignor{
	"uniform": uniformAssignor{},
	"range":   rangeAssignor{},
}

// sortedTopicIDs returns the ids of topics ordered by topic name, so that
// assignments do not depend on random ids.
func sortedTopicIDs(topics map[metadata.Uuid]topicMeta) []metadata.Uuid {
	ids := slices.Collect(maps.Keys(topics))
	slices.SortFunc(ids, func(a, b metadata.Uuid) int {
		if c := bytes.Compare([]byte(topics[a].name), []byte(topics[b].name)); c != 0 {
			return c
		}
		return bytes.Compare(a[:], b[:])
	})
	return ids
}
