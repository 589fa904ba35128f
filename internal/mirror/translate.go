package mirror

import (
	"sort"
	"sync"
)

// maxSyncsPerPartition bounds the syncs kept per partition; older ones are
// thinned so that the kept ones stay spread over the history (KAFKA-14666:
// a group far behind still translates, to an earlier sync).
const maxSyncsPerPartition = 64

type partitionKey struct {
	topic     string
	partition int32
}

// SyncStore holds the offset syncs read from the offset-syncs topic and
// translates source offsets with them. It is safe for concurrent use; its
// lock guards syncs only, never I/O.
type SyncStore struct {
	mu    sync.Mutex
	syncs map[partitionKey][]OffsetSync // ascending Upstream
}

// NewSyncStore makes an empty store.
func NewSyncStore() *SyncStore { return &SyncStore{syncs: map[partitionKey][]OffsetSync{}} }

// Add records a sync. A sync whose upstream offset is below the last one
// (the source partition was recreated or truncated) starts the history over.
func (s *SyncStore) Add(o OffsetSync) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := partitionKey{o.Topic, o.Partition}
	l := s.syncs[k]
	if n := len(l); n > 0 && o.Upstream < l[n-1].Upstream {
		l = l[:0]
	}
	if n := len(l); n > 0 && o.Upstream == l[n-1].Upstream {
		l[n-1] = o
	} else {
		l = append(l, o)
	}
	if len(l) > maxSyncsPerPartition {
		// Keep the newest half whole, every other of the older half.
		half := len(l) / 2
		kept := l[:0:0]
		for i := 0; i < half; i += 2 {
			kept = append(kept, l[i])
		}
		l = append(kept, l[half:]...)
	}
	s.syncs[k] = l
}

// Translate returns the downstream offset for upstream offset off of a
// source partition: the nearest sync at or before off gives its downstream
// offset, plus one when off is past it (records after a sync may have been
// written later downstream, so a consumer resuming there re-reads rather
// than skips). ok is false when no sync is at or before off.
func (s *SyncStore) Translate(topic string, partition int32, off int64) (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.syncs[partitionKey{topic, partition}]
	i := sort.Search(len(l), func(i int) bool { return l[i].Upstream > off }) - 1
	if i < 0 {
		return 0, false
	}
	if l[i].Upstream == off {
		return l[i].Downstream, true
	}
	return l[i].Downstream + 1, true
}
