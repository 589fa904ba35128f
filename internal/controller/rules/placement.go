package rules

import (
	"math/rand/v2"
	"slices"

	"github.com/vltava/vltava/internal/metadata"
)

// placeReplicas assigns replicas for partitions firstPartition ..
// firstPartition+count-1 over brokers. Without racks (every rack "") it is
// Kafka's rack-unaware assignment (AdminUtils.assignReplicasToBrokersRackUnaware):
// the first replica of partition p is broker (p+start) mod n, and the
// followers are spread by a shift that grows every n partitions, so leaders
// and followers are both balanced. With racks it is the rack-aware variant
// (assignReplicasToBrokersRackAware): brokers are ordered alternating
// between racks, and a follower is skipped while its rack already holds a
// replica of the partition and some rack does not, so each partition spans
// min(rf, racks) racks. A broker without a rack counts as a rack of its own
// name "" (as KRaft's placer does). start and shift are random per call (as in
// Kafka) so many small topics do not all lead on the same broker.
//
// brokers must be non-empty and rf in 1..len(brokers); rackOf returns a
// broker's rack.
func placeReplicas(brokers []int32, rackOf func(int32) string, firstPartition, count int32, rf int, rng *rand.Rand) [][]int32 {
	brokers = slices.Clone(brokers)
	slices.Sort(brokers)
	racks := map[string][]int32{}
	for _, b := range brokers {
		racks[rackOf(b)] = append(racks[rackOf(b)], b)
	}
	if len(racks) > 1 {
		brokers = rackAlternated(racks)
	}
	n, numRacks := len(brokers), len(racks)
	start, shift := rng.IntN(n), rng.IntN(n)
	out := make([][]int32, 0, count)
	for p := firstPartition; p < firstPartition+count; p++ {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + start) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		if numRacks <= 1 {
			for j := 0; j < rf-1; j++ {
				replicas = append(replicas, brokers[followerIndex(first, shift, j, n)])
			}
			out = append(out, replicas)
			continue
		}
		usedRacks := map[string]bool{rackOf(brokers[first]): true}
		for k := 0; len(replicas) < rf; k++ {
			b := brokers[followerIndex(first, shift*numRacks, k, n)]
			if slices.Contains(replicas, b) {
				continue
			}
			if usedRacks[rackOf(b)] && len(usedRacks) < numRacks {
				continue
			}
			replicas = append(replicas, b)
			usedRacks[rackOf(b)] = true
		}
		out = append(out, replicas)
	}
	return out
}

// followerIndex is the position of follower j of a partition whose first
// replica is at first: offsets 1..n-1 from it, shifted.
func followerIndex(first, shift, j, n int) int {
	step := 1 + (shift+j)%(n-1)
	return (first + step) % n
}

// rackAlternated orders brokers rack by rack in turn (racks sorted by name,
// brokers by id within a rack): r1b1, r2b1, r3b1, r1b2, ...
func rackAlternated(racks map[string][]int32) []int32 {
	names := slices.Sorted(mapKeys(racks))
	var out []int32
	for i := 0; ; i++ {
		added := false
		for _, r := range names {
			if i < len(racks[r]) {
				out = append(out, racks[r][i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// rackLookup returns the rack of each registered broker of img ("" if none).
func rackLookup(img *metadata.Image) func(int32) string {
	return func(id int32) string {
		b, _ := img.Broker(id)
		return b.Rack
	}
}
