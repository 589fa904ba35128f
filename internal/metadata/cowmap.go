package metadata

import "hash/maphash"

// cowShards is the number of shards of a cowMap. Applying a batch copies only
// the shards it touches, so an image change costs O(entries/cowShards) instead
// of O(entries): with 64 shards, 100k topics cost ~1.5k map entries per change.
const cowShards = 64

// cowSeed is per process: cowMaps are never persisted, so the hash only has to
// be stable for the life of the process.
var cowSeed = maphash.MakeSeed()

// cowMap is an immutable, sharded map used by Image. Reads never lock;
// changes go through a cowBuilder which copies a shard the first time it is
// written in a batch. A cowMap value must not be modified once published.
type cowMap[K comparable, V any] struct {
	shards [cowShards]map[K]V
	n      int
}

func cowShard[K comparable](k K) int {
	return int(maphash.Comparable(cowSeed, k) % cowShards)
}

func (m *cowMap[K, V]) get(k K) (V, bool) {
	v, ok := m.shards[cowShard(k)][k]
	return v, ok
}

func (m *cowMap[K, V]) len() int { return m.n }

// each calls fn for every entry in unspecified order.
func (m *cowMap[K, V]) each(fn func(K, V)) {
	for _, s := range m.shards {
		for k, v := range s {
			fn(k, v)
		}
	}
}

// cowBuilder accumulates changes to a copy of a cowMap. It remembers which
// shards it already owns so a batch copies each shard at most once.
type cowBuilder[K comparable, V any] struct {
	m     cowMap[K, V]
	owned uint64 // bit i set: shards[i] is private to this builder
}

func newCowBuilder[K comparable, V any](m cowMap[K, V]) *cowBuilder[K, V] {
	return &cowBuilder[K, V]{m: m}
}

func (b *cowBuilder[K, V]) get(k K) (V, bool) { return b.m.get(k) }

func (b *cowBuilder[K, V]) ownShard(i int) map[K]V {
	if b.owned&(1<<i) == 0 {
		old := b.m.shards[i]
		s := make(map[K]V, len(old)+1)
		for k, v := range old {
			s[k] = v
		}
		b.m.shards[i] = s
		b.owned |= 1 << i
	}
	return b.m.shards[i]
}

func (b *cowBuilder[K, V]) set(k K, v V) {
	s := b.ownShard(cowShard(k))
	if _, ok := s[k]; !ok {
		b.m.n++
	}
	s[k] = v
}

func (b *cowBuilder[K, V]) delete(k K) {
	i := cowShard(k)
	if _, ok := b.m.shards[i][k]; !ok {
		return
	}
	delete(b.ownShard(i), k)
	b.m.n--
}

// build returns the resulting map; the builder must not be used afterwards.
func (b *cowBuilder[K, V]) build() cowMap[K, V] { return b.m }
