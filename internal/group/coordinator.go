package group

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
)

// OffsetsLog is the coordinator's access to the __consumer_offsets
// partitions led by this broker. PartitionLog implements it over the
// broker's partitions; tests use an in-memory log.
type OffsetsLog interface {
	// Append appends one record batch to the partition. Errors wrap kerr
	// codes (NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, ...).
	Append(partition int32, batch []byte) error
	// Bounds returns the partition's log start offset and high
	// watermark, once the high watermark covers the whole log as of the
	// call: what the load replays (partition.InternalLog.Bounds says why).
	Bounds(partition int32) (logStart, highWatermark int64, err error)
	// Read returns whole batches from offset on (at least one, however
	// large), below the high watermark.
	Read(partition int32, offset int64, maxBytes int) ([]byte, error)
}

// Coordinator is the group coordinator of one broker. It is safe for
// concurrent use; see the package doc for its locking.
type Coordinator struct {
	cfg    Config
	log    OffsetsLog
	logger *slog.Logger
	// now is the clock for timestamps (commit times, state times,
	// expiry); timers use the real clock.
	now func() time.Time

	mu struct {
		sync.Mutex
		// partitionCount is the number of __consumer_offsets partitions
		// groups are placed over.
		partitionCount int32
		// offsetsTopicExists is false until __consumer_offsets exists.
		offsetsTopicExists bool
		// shards are the __consumer_offsets partitions led here.
		shards map[int32]*shard
		// groups are the groups of loaded shards, by id.
		groups map[string]*Group
		// topics are the cluster's topics by name, from the last
		// metadata image; consumer groups resolve subscriptions
		// against them. The map is replaced whole, never modified.
		topics map[string]topicMeta
		closed bool
	}
	// groupTimeouts are the groups' session/heartbeat overrides from the
	// metadata image (group_config.go), replaced whole by ApplyImage.
	groupTimeouts atomic.Pointer[map[string]consumerTimeouts]
	closing       chan struct{}
	loads         sync.WaitGroup
	expiryRun     *time.Timer
}

// shard is one __consumer_offsets partition led here.
type shard struct {
	partition int32
	loaded    bool
	// leaderEpoch is the partition's leader epoch when this broker began
	// leading it (set by ApplyImage; -1 when unknown).
	leaderEpoch int32
}

// Options assemble a Coordinator.
type Options struct {
	Config Config
	Log    OffsetsLog
	Logger *slog.Logger
	// Now overrides the clock for timestamps (tests); nil is time.Now.
	Now func() time.Time
}

// NewCoordinator returns a coordinator leading no partitions; Reconcile or
// ApplyImage tells it which it leads.
func NewCoordinator(o Options) *Coordinator {
	c := &Coordinator{cfg: o.Config, log: o.Log, logger: o.Logger, now: o.Now, closing: make(chan struct{})}
	if c.logger == nil {
		c.logger = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.cfg.NumPartitions <= 0 {
		c.cfg.NumPartitions = 50
	}
	if c.cfg.LoadBufferSize <= 0 {
		c.cfg.LoadBufferSize = 5 << 20
	}
	c.cfg.setConsumerDefaults()
	c.mu.partitionCount = c.cfg.NumPartitions
	c.mu.shards = make(map[int32]*shard)
	c.mu.groups = make(map[string]*Group)
	if c.cfg.RetentionCheckInterval > 0 {
		c.expiryRun = time.AfterFunc(c.cfg.RetentionCheckInterval, c.runExpiry)
	}
	return c
}

// Close stops the timers and waits for loads in progress. Parked requests
// are answered with NOT_COORDINATOR.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	close(c.closing)
	var parts []int32
	for p := range c.mu.shards {
		parts = append(parts, p)
	}
	c.mu.Unlock()
	if c.expiryRun != nil {
		c.expiryRun.Stop()
	}
	for _, p := range parts {
		c.unload(p)
	}
	c.loads.Wait()
}

// PartitionFor is the __consumer_offsets partition that owns groupID.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	c.mu.Lock()
	n := c.mu.partitionCount
	c.mu.Unlock()
	return PartitionFor(groupID, n)
}

// ApplyImage makes the coordinator lead the __consumer_offsets partitions
// whose leader is this broker in img: newly led ones are loaded, ones led
// no more are unloaded. It is idempotent.
func (c *Coordinator) ApplyImage(img *metadata.Image) {
	c.setTopics(topicsOfImage(img))
	c.setGroupTimeouts(groupTimeoutsOfImage(img))
	t, ok := img.Topic(metadata.ConsumerOffsetsTopic)
	if !ok {
		c.Reconcile(nil, 0)
		return
	}
	var led []int32
	epochs := make(map[int32]int32)
	for _, p := range t.Partitions {
		if p.Leader == c.cfg.NodeID {
			led = append(led, p.Partition)
			epochs[p.Partition] = p.LeaderEpoch
		}
	}
	// A partition whose leader epoch moved while it stayed led here (the
	// image skipped a 1→2→1 change) may have been written by another
	// leader: unload it so it is loaded again from the log.
	c.mu.Lock()
	var stale []int32
	for p, e := range epochs {
		if s, ok := c.mu.shards[p]; ok && s.leaderEpoch >= 0 && s.leaderEpoch != e {
			stale = append(stale, p)
		}
	}
	c.mu.Unlock()
	if len(stale) > 0 {
		c.Reconcile(slices.DeleteFunc(slices.Clone(led), func(p int32) bool { return slices.Contains(stale, p) }), int32(len(t.Partitions)))
	}
	c.Reconcile(led, int32(len(t.Partitions)))
	c.mu.Lock()
	for p, e := range epochs {
		if s, ok := c.mu.shards[p]; ok {
			s.leaderEpoch = e
		}
	}
	c.mu.Unlock()
}

// Reconcile sets the partitions led here and the topic's partition count
// (0: the topic does not exist; groups are placed over
// offsets.topic.num.partitions).
func (c *Coordinator) Reconcile(led []int32, partitionCount int32) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.offsetsTopicExists = partitionCount > 0
	if partitionCount > 0 {
		c.mu.partitionCount = partitionCount
	} else {
		c.mu.partitionCount = c.cfg.NumPartitions
	}
	var gone []int32
	for p := range c.mu.shards {
		if !slices.Contains(led, p) {
			gone = append(gone, p)
		}
	}
	var load []*shard
	for _, p := range led {
		if _, ok := c.mu.shards[p]; !ok {
			s := &shard{partition: p, leaderEpoch: -1}
			c.mu.shards[p] = s
			load = append(load, s)
		}
	}
	c.loads.Add(len(load))
	c.mu.Unlock()
	for _, p := range gone {
		c.unload(p)
	}
	for _, s := range load {
		go c.load(s)
	}
}

// unload forgets partition p and its groups; their parked requests get
// NOT_COORDINATOR so the clients look for the new coordinator.
func (c *Coordinator) unload(p int32) {
	c.mu.Lock()
	delete(c.mu.shards, p)
	var gs []*Group
	for id, g := range c.mu.groups {
		if g.partition == p {
			gs = append(gs, g)
			delete(c.mu.groups, id)
		}
	}
	c.mu.Unlock()
	for _, g := range gs {
		g.mu.Lock()
		g.shutdownLocked(kerr.NotCoordinator)
		g.mu.Unlock()
	}
}

// load replays partition s and installs its groups, retrying on errors
// until it succeeds, the partition is no longer led here, or Close.
func (c *Coordinator) load(s *shard) {
	defer c.loads.Done()
	start := time.Now()
	for {
		groups, err := c.replay(s.partition)
		if err == nil {
			c.mu.Lock()
			if c.mu.shards[s.partition] != s {
				c.mu.Unlock()
				return
			}
			for _, g := range groups {
				c.mu.groups[g.id] = g
			}
			s.loaded = true
			c.mu.Unlock()
			for _, g := range groups {
				g.mu.Lock()
				g.afterLoadLocked()
				g.mu.Unlock()
			}
			c.logger.Info("loaded consumer groups", "partition", s.partition, "groups", len(groups), "took", time.Since(start))
			return
		}
		c.logger.Error("loading __consumer_offsets partition; retrying", "partition", s.partition, "err", err)
		select {
		case <-c.closing:
			return
		case <-time.After(time.Second):
		}
		c.mu.Lock()
		still := c.mu.shards[s.partition] == s
		c.mu.Unlock()
		if !still {
			return
		}
	}
}

// replay reads partition p from its log start to its high watermark and
// rebuilds its groups: the last record per key wins, tombstones delete.
func (c *Coordinator) replay(p int32) ([]*Group, error) {
	logStart, hw, err := c.log.Bounds(p)
	if err != nil {
		return nil, err
	}
	offsets := map[string]map[TopicPartition]CommittedOffset{}
	metas := map[string]*kmsg.GroupMetadataValue{}
	consumers := map[string]*consumerLoad{}
	apply := func(r groupRecord) {
		switch {
		case r.consumer != nil:
			applyConsumerRecord(consumers, r.consumer)
		case r.isOffset && r.tombstone:
			delete(offsets[r.group], r.tp)
		case r.isOffset:
			m := offsets[r.group]
			if m == nil {
				m = map[TopicPartition]CommittedOffset{}
				offsets[r.group] = m
			}
			m[r.tp] = r.offset
		case r.tombstone:
			delete(metas, r.group)
		default:
			metas[r.group] = r.meta
		}
	}
	txn := newTxnReplay()
	for off := logStart; off < hw; {
		data, err := c.log.Read(p, off, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, fmt.Errorf("reading offset %d: %w", off, err)
		}
		next, err := replayTxnBatches(data, apply, txn)
		if err != nil {
			return nil, err
		}
		if next <= off {
			return nil, fmt.Errorf("reading offset %d made no progress (high watermark %d)", off, hw)
		}
		off = next
	}
	var groups []*Group
	for id, meta := range metas {
		g := c.newGroup(id, p)
		g.restoreLocked(meta)
		if m := offsets[id]; m != nil {
			g.mu.offsets = m
		}
		delete(offsets, id)
		groups = append(groups, g)
	}
	for id, cl := range consumers {
		if !cl.exists {
			continue
		}
		// A group id has either classic or consumer records; if both
		// survive (a conversion whose tombstone was lost), the
		// consumer group is the newer.
		g := c.newGroup(id, p)
		g.restoreConsumerLocked(cl)
		if m := offsets[id]; m != nil {
			g.mu.offsets = m
		}
		delete(offsets, id)
		delete(metas, id)
		groups = slices.DeleteFunc(groups, func(o *Group) bool { return o.id == id })
		groups = append(groups, g)
	}
	for id, m := range offsets {
		if len(m) == 0 {
			continue
		}
		// Offsets with no group record: a group that only stores
		// offsets (standalone commits), as Kafka loads it.
		g := c.newGroup(id, p)
		g.mu.offsets = m
		groups = append(groups, g)
	}
	return restorePendingTxnOffsets(groups, txn, func(id string) *Group { return c.newGroup(id, p) }), nil
}

// ownerCheck returns the group's partition if it is led and loaded here,
// or NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) ownerCheckLocked(groupID string) (int32, error) {
	if c.mu.closed {
		return 0, kerr.NotCoordinator
	}
	p := PartitionFor(groupID, c.mu.partitionCount)
	if !c.mu.offsetsTopicExists {
		// No broker coordinates any group until __consumer_offsets
		// exists (it waits for offsets.topic.replication.factor
		// brokers): Kafka's COORDINATOR_NOT_AVAILABLE, retriable.
		return p, kerr.CoordinatorNotAvailable
	}
	s, ok := c.mu.shards[p]
	if !ok {
		return p, kerr.NotCoordinator
	}
	if !s.loaded {
		return p, kerr.CoordinatorLoadInProgress
	}
	return p, nil
}

// CheckOwner reports whether groupID can be served here now: nil, or
// NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) CheckOwner(groupID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.ownerCheckLocked(groupID)
	return err
}

// lookup returns the group, creating it (Empty) when create is set. It
// returns a nil group and no error when the group does not exist.
func (c *Coordinator) lookup(groupID string, create bool) (*Group, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := c.ownerCheckLocked(groupID)
	if err != nil {
		return nil, err
	}
	g := c.mu.groups[groupID]
	if g == nil && create {
		g = c.newGroup(groupID, p)
		c.mu.groups[groupID] = g
	}
	return g, nil
}

// lockGroup looks the group up (creating it if asked) and locks it,
// skipping a group that died between the lookup and the lock (it has
// already left the map, so the next lookup finds its successor or none).
func (c *Coordinator) lockGroup(groupID string, create bool) (*Group, error) {
	for {
		g, err := c.lookup(groupID, create)
		if err != nil || g == nil {
			return nil, err
		}
		g.mu.Lock()
		if g.mu.state != StateDead {
			return g, nil
		}
		// A group is marked Dead only after it left the map (under
		// its lock), so the next lookup finds its successor or none.
		g.mu.Unlock()
	}
}

// removeGroupLocked forgets a group that has become Dead; g.mu is held.
func (c *Coordinator) removeGroupLocked(g *Group) {
	c.mu.Lock()
	if c.mu.groups[g.id] == g {
		delete(c.mu.groups, g.id)
	}
	c.mu.Unlock()
}

// groupsSnapshot returns the groups of loaded partitions.
func (c *Coordinator) groupsSnapshot() []*Group {
	c.mu.Lock()
	defer c.mu.Unlock()
	gs := make([]*Group, 0, len(c.mu.groups))
	for _, g := range c.mu.groups {
		gs = append(gs, g)
	}
	return gs
}

// appendRecords writes recs to partition p as one batch. Storage errors
// become the codes Kafka's coordinator answers with: the partition moving
// away is NOT_COORDINATOR, the log being unavailable is
// COORDINATOR_NOT_AVAILABLE.
func (c *Coordinator) appendRecords(p int32, recs []kv) error {
	if len(recs) == 0 {
		return nil
	}
	batch, err := buildBatch(recs, c.now(), c.cfg.CommitCodec)
	if err != nil {
		return err
	}
	return c.appendBatch(p, batch)
}

// appendBatch appends one batch to partition p, its errors mapped to the
// coordinator's as Kafka maps them.
func (c *Coordinator) appendBatch(p int32, batch []byte) error {
	return mapAppendError(c.log.Append(p, batch))
}

// mapAppendError is Kafka's mapping of an offsets append's error to the
// coordinator's.
func mapAppendError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kerr.NotLeaderForPartition):
		return fmt.Errorf("%w: %v", kerr.NotCoordinator, err)
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.NotEnoughReplicas),
		errors.Is(err, kerr.NotEnoughReplicasAfterAppend), errors.Is(err, kerr.RequestTimedOut):
		return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
	}
	return err
}
