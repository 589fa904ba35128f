package metadata

import (
	"math/rand/v2"
	"slices"
)

// placeReplicas assigns replicas for partitions firstPartition ..
// firstPartition+count-1 over brokers, the way Kafka's rack-unaware
// assignment does (AdminUtils.assignReplicasToBrokersRackUnaware): the first
// replica of partition p is broker (p+start) mod n, and the followers are
// spread by a shift that grows every n partitions, so leaders and followers
// are both balanced. start and shift are random per call (as in Kafka) so
// many small topics do not all lead on the same broker.
//
// brokers must be non-empty and rf in 1..len(brokers).
func placeReplicas(brokers []int32, firstPartition, count int32, rf int, rng *rand.Rand) [][]int32 {
	brokers = slices.Clone(brokers)
	slices.Sort(brokers)
	n := len(brokers)
	start, shift := rng.IntN(n), rng.IntN(n)
	out := make([][]int32, 0, count)
	for p := firstPartition; p < firstPartition+count; p++ {
		if p > 0 && int(p)%n == 0 {
			shift++
		}
		first := (int(p) + start) % n
		replicas := make([]int32, 0, rf)
		replicas = append(replicas, brokers[first])
		for j := 0; j < rf-1; j++ {
			// Followers skip the first replica: offsets 1..n-1 from it.
			step := 1 + (shift+j)%(n-1)
			replicas = append(replicas, brokers[(first+step)%n])
		}
		out = append(out, replicas)
	}
	return out
}
