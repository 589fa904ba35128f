package broker

// Incremental fetch sessions (KIP-227).
//
// A client opens a session with session id 0 and epoch 0; the broker
// remembers the partitions it fetched and answers later fetches in that
// session (same id, next epoch) with only the partitions that changed: new
// records, a new high watermark, last stable or log start offset, or an
// error. Requests add or update partitions by listing them and remove them
// with forgotten_topics_data. Epoch -1 closes a session. Session id 0 with
// epoch -1 is a sessionless full fetch.

import (
	"container/list"
	"math/rand/v2"
	"sync"
	"time"
)

const (
	fetchInitialEpoch = 0
	fetchFinalEpoch   = -1
	// fetchSessionIdleEviction is how long an unused session keeps its
	// slot when the cache is full (Kafka's eviction uses a similar
	// staleness rule).
	fetchSessionIdleEviction = 2 * time.Minute
)

// fetchSessionKey identifies a partition in a session: by topic id when
// the client speaks v13+, by name before.
type fetchSessionKey struct {
	topicID   [16]byte
	topic     string
	partition int32
}

// sessionPartition is what a session remembers of one partition: the
// client's fetch position and limits, and what was last sent so unchanged
// partitions can be left out of incremental responses.
type sessionPartition struct {
	key                fetchSessionKey
	fetchOffset        int64
	maxBytes           int32
	currentLeaderEpoch int32
	lastFetchedEpoch   int32

	sentHighWatermark    int64
	sentLastStableOffset int64
	sentLogStartOffset   int64
}

// fetchSession is one client's session. Requests of a session come from
// one connection one at a time, but a client may reuse a session id across
// connections, so mu guards the partitions and the epoch.
//
// mu is held only for bookkeeping, never across a read or a long-poll (as
// Kafka's FetchSession, whose lock covers the cached partitions only): a
// request updates the session and copies what it reads under mu, releases
// it, reads and parks, then takes mu again to record what it sent — unless
// the epoch moved meanwhile (finish).
type fetchSession struct {
	id int32

	mu    sync.Mutex
	epoch int32
	parts map[fetchSessionKey]*sessionPartition
	order []fetchSessionKey // insertion order, for stable responses

	// lastUsed and elem belong to the cache and are guarded by its lock,
	// so the cache never takes a session's lock.
	lastUsed time.Time
	elem     *list.Element
}

// fetchSessionCache holds the sessions, bounded by
// max.incremental.fetch.session.cache.slots.
//
// Lock order: the cache lock and a session's lock are never held together.
// The cache lock covers the map, the LRU list and each session's lastUsed;
// a session's lock covers its partitions and epoch.
type fetchSessionCache struct {
	maxSessions int

	mu struct {
		sync.Mutex
		sessions map[int32]*fetchSession
		lru      *list.List // front = least recently used
	}
}

func newFetchSessionCache(maxSessions int) *fetchSessionCache {
	c := &fetchSessionCache{maxSessions: maxSessions}
	c.mu.sessions = make(map[int32]*fetchSession)
	c.mu.lru = list.New()
	return c
}

// create opens a new session, evicting an idle one if the cache is full.
// It returns nil when no slot is free: the fetch then proceeds without a
// session (session id 0), as Kafka does.
func (c *fetchSessionCache) create(now time.Time) *fetchSession {
	if c.maxSessions <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.sessions) >= c.maxSessions {
		oldest := c.mu.lru.Front()
		if oldest == nil {
			return nil
		}
		s := oldest.Value.(*fetchSession)
		if now.Sub(s.lastUsed) < fetchSessionIdleEviction {
			return nil
		}
		c.removeLocked(s)
	}
	var id int32
	for id == 0 || c.mu.sessions[id] != nil {
		id = rand.Int32()
	}
	s := &fetchSession{id: id, epoch: 1, parts: make(map[fetchSessionKey]*sessionPartition), lastUsed: now}
	s.elem = c.mu.lru.PushBack(s)
	c.mu.sessions[id] = s
	return s
}

// get returns a session and marks it used at now.
func (c *fetchSessionCache) get(id int32, now time.Time) *fetchSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.sessions[id]
	if s != nil {
		s.lastUsed = now
		c.mu.lru.MoveToBack(s.elem)
	}
	return s
}

func (c *fetchSessionCache) remove(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.mu.sessions[id]; s != nil {
		c.removeLocked(s)
	}
}

func (c *fetchSessionCache) removeLocked(s *fetchSession) {
	delete(c.mu.sessions, s.id)
	c.mu.lru.Remove(s.elem)
}

// finish records what an answered request sent, under the session's lock
// taken again after the read (and the long-poll). It reports false when
// another request of the session moved its epoch meanwhile: the answer
// would then misstate what the client holds, and Kafka answers
// INVALID_FETCH_SESSION_EPOCH in that case.
func (s *fetchSession) finish(epoch int32, sent []sentUpdate) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch {
		return false
	}
	for _, u := range sent {
		u.apply()
	}
	return true
}

// upsertLocked adds or updates a partition the client listed.
func (s *fetchSession) upsertLocked(p sessionPartition) *sessionPartition {
	if old, ok := s.parts[p.key]; ok {
		old.fetchOffset = p.fetchOffset
		old.maxBytes = p.maxBytes
		old.currentLeaderEpoch = p.currentLeaderEpoch
		old.lastFetchedEpoch = p.lastFetchedEpoch
		return old
	}
	np := p
	np.sentHighWatermark, np.sentLastStableOffset, np.sentLogStartOffset = -1, -1, -1
	s.parts[p.key] = &np
	s.order = append(s.order, p.key)
	return &np
}

// forgetLocked removes a partition the client no longer fetches.
func (s *fetchSession) forgetLocked(key fetchSessionKey) {
	if _, ok := s.parts[key]; !ok {
		return
	}
	delete(s.parts, key)
	for i, k := range s.order {
		if k == key {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}
