package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// Config is the coordinator's share of the broker config.
type Config struct {
	NodeID int32
	// NumPartitions is transaction.state.log.num.partitions, used until
	// __transaction_state exists (then its partition count).
	NumPartitions int32
	// MaxTimeout is transaction.max.timeout.ms.
	MaxTimeout time.Duration
	// IDExpiration is transactional.id.expiration.ms.
	IDExpiration time.Duration
	// AbortInterval is
	// transaction.abort.timed.out.transaction.cleanup.interval.ms; zero
	// disables the check (tests drive AbortTimedOut themselves).
	AbortInterval time.Duration
	// RemoveInterval is
	// transaction.remove.expired.transaction.cleanup.interval.ms; zero
	// disables the check.
	RemoveInterval time.Duration
	// LoadBufferSize is transaction.state.log.load.buffer.size.
	LoadBufferSize int
	// MarkerTimeout bounds one WriteTxnMarkers call (request.timeout.ms).
	MarkerTimeout time.Duration
	// MarkerRetryBackoff is the pause before markers that failed are
	// sent again; zero is 100 ms.
	MarkerRetryBackoff time.Duration
}

// Options assemble a Coordinator.
type Options struct {
	Config Config
	Log    StateLog
	// ProducerIDs hands out new producer ids (the broker's block from
	// the controller).
	ProducerIDs func(ctx context.Context) (int64, error)
	// Markers reaches the partition leaders.
	Markers MarkerTransport
	Logger  *slog.Logger
	// Now overrides the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Coordinator is the transaction coordinator of one broker. It is safe
// for concurrent use; the package doc describes its locking.
type Coordinator struct {
	cfg    Config
	log    StateLog
	ids    func(ctx context.Context) (int64, error)
	logger *slog.Logger
	now    func() time.Time
	sender *markerSender
	// transactionVersion is the finalized transaction.version of the
	// last metadata image: at 0 the state records are written as value
	// v0, as Kafka does.
	transactionVersion atomic.Int32

	mu struct {
		sync.Mutex
		partitionCount int32
		topicExists    bool
		shards         map[int32]*shard
		txns           map[string]*txnEntry
		closed         bool
	}
	closing chan struct{}
	// ctx is cancelled by Close: it bounds the marker calls in flight.
	ctx     context.Context
	cancel  context.CancelFunc
	loads   sync.WaitGroup
	tickers sync.WaitGroup
	// completions are the Complete records being written.
	completions sync.WaitGroup
}

// shard is one __transaction_state partition led here.
type shard struct {
	partition int32
	loaded    bool
	// coordinatorEpoch is the partition's leader epoch when this broker
	// began leading it: the coordinator epoch markers carry, so a
	// partition leader refuses markers of a deposed coordinator.
	coordinatorEpoch int32
}

// txnEntry is one transactional id. mu guards meta and is held for a
// whole transition, including the append of its record.
type txnEntry struct {
	id        string
	partition int32
	mu        sync.Mutex
	meta      Metadata
}

// NewCoordinator returns a coordinator that leads no partition yet;
// ApplyImage or Reconcile tells it which it leads.
func NewCoordinator(o Options) *Coordinator {
	c := &Coordinator{cfg: o.Config, log: o.Log, ids: o.ProducerIDs, logger: o.Logger, now: o.Now, closing: make(chan struct{})}
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
	if c.cfg.MaxTimeout <= 0 {
		c.cfg.MaxTimeout = 15 * time.Minute
	}
	if c.cfg.IDExpiration <= 0 {
		c.cfg.IDExpiration = 7 * 24 * time.Hour
	}
	if c.cfg.MarkerTimeout <= 0 {
		c.cfg.MarkerTimeout = 30 * time.Second
	}
	if c.cfg.MarkerRetryBackoff <= 0 {
		c.cfg.MarkerRetryBackoff = 100 * time.Millisecond
	}
	// Until an image says otherwise, Kafka 4's default level.
	c.transactionVersion.Store(2)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.partitionCount = c.cfg.NumPartitions
	c.mu.shards = make(map[int32]*shard)
	c.mu.txns = make(map[string]*txnEntry)
	c.sender = newMarkerSender(c, o.Markers)
	go c.sender.run()
	c.startTicker(c.cfg.AbortInterval, c.AbortTimedOut)
	c.startTicker(c.cfg.RemoveInterval, c.RemoveExpired)
	return c
}

func (c *Coordinator) startTicker(every time.Duration, fn func()) {
	if every <= 0 {
		return
	}
	c.tickers.Add(1)
	go func() {
		defer c.tickers.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-c.closing:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

// Close stops the background work and waits for loads in progress.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	close(c.closing)
	c.mu.Unlock()
	c.cancel()
	c.tickers.Wait()
	c.sender.wait()
	c.completions.Wait()
	c.loads.Wait()
}

// PartitionFor is the __transaction_state partition that owns id.
func (c *Coordinator) PartitionFor(id string) int32 {
	c.mu.Lock()
	n := c.mu.partitionCount
	c.mu.Unlock()
	return PartitionFor(id, n)
}

// ApplyImage makes the coordinator lead the __transaction_state
// partitions led by this broker in img: newly led ones are loaded, ones
// led no more are dropped, and one whose leader epoch moved is loaded
// again (another leader may have written it meanwhile).
func (c *Coordinator) ApplyImage(img *metadata.Image) {
	c.transactionVersion.Store(int32(img.Features()[metadata.FeatureTransactionVersion]))
	t, ok := img.Topic(metadata.TransactionStateTopic)
	if !ok {
		c.Reconcile(nil, 0)
		return
	}
	led := map[int32]int32{}
	for _, p := range t.Partitions {
		if p.Leader == c.cfg.NodeID {
			led[p.Partition] = p.LeaderEpoch
		}
	}
	c.Reconcile(led, int32(len(t.Partitions)))
}

// Reconcile sets the partitions led here, each with its leader epoch, and
// the topic's partition count (0: the topic does not exist yet).
func (c *Coordinator) Reconcile(led map[int32]int32, partitionCount int32) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.topicExists = partitionCount > 0
	if partitionCount > 0 {
		c.mu.partitionCount = partitionCount
	} else {
		c.mu.partitionCount = c.cfg.NumPartitions
	}
	var gone []int32
	for p, s := range c.mu.shards {
		if e, ok := led[p]; !ok || e != s.coordinatorEpoch {
			gone = append(gone, p)
		}
	}
	c.mu.Unlock()
	for _, p := range gone {
		c.unload(p)
	}
	c.mu.Lock()
	var load []*shard
	for p, e := range led {
		if _, ok := c.mu.shards[p]; !ok {
			s := &shard{partition: p, coordinatorEpoch: e}
			c.mu.shards[p] = s
			load = append(load, s)
		}
	}
	c.loads.Add(len(load))
	c.mu.Unlock()
	for _, s := range load {
		go c.load(s)
	}
}

// unload forgets partition p and its transactional ids. Markers still
// queued for them are dropped by the sender (the shard is gone); the new
// coordinator completes those transactions from the log.
func (c *Coordinator) unload(p int32) {
	c.mu.Lock()
	delete(c.mu.shards, p)
	for id, e := range c.mu.txns {
		if e.partition == p {
			delete(c.mu.txns, id)
		}
	}
	c.mu.Unlock()
}

// load replays partition s, installs its transactional ids and completes
// the transactions it finds prepared, retrying until it succeeds, the
// partition is no longer led here, or Close.
func (c *Coordinator) load(s *shard) {
	defer c.loads.Done()
	start := time.Now()
	for {
		metas, err := c.replay(s.partition)
		if err == nil {
			c.mu.Lock()
			if c.mu.shards[s.partition] != s {
				c.mu.Unlock()
				return
			}
			entries := make([]*txnEntry, 0, len(metas))
			for id, m := range metas {
				e := &txnEntry{id: id, partition: s.partition, meta: *m}
				c.mu.txns[id] = e
				entries = append(entries, e)
			}
			s.loaded = true
			c.mu.Unlock()
			// A transaction left prepared by the previous coordinator
			// is completed: its markers are written again (a partition
			// leader ignores a marker it already has) and then the
			// Complete record.
			for _, e := range entries {
				e.mu.Lock()
				m := e.meta.clone()
				e.mu.Unlock()
				if m.State == StatePrepareCommit || m.State == StatePrepareAbort {
					c.sender.enqueue(c.markersFor(e, &m, s.coordinatorEpoch))
				}
			}
			c.logger.Info("loaded transaction state", "partition", s.partition, "transactional_ids", len(entries), "took", time.Since(start))
			return
		}
		c.logger.Error("loading __transaction_state partition; retrying", "partition", s.partition, "err", err)
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

// replay reads partition p from its log start to its high watermark: the
// last record per transactional id wins, a tombstone removes it.
func (c *Coordinator) replay(p int32) (map[string]*Metadata, error) {
	logStart, hw, err := c.log.Bounds(p)
	if err != nil {
		return nil, err
	}
	out := map[string]*Metadata{}
	for off := logStart; off < hw; {
		data, err := c.log.Read(p, off, c.cfg.LoadBufferSize)
		if err != nil {
			return nil, fmt.Errorf("reading offset %d: %w", off, err)
		}
		next, err := replayBatches(data, func(id string, m *Metadata) {
			if m == nil {
				delete(out, id)
				return
			}
			out[id] = m
		})
		if err != nil {
			return nil, err
		}
		if next <= off {
			return nil, fmt.Errorf("reading offset %d made no progress (high watermark %d)", off, hw)
		}
		off = next
	}
	for id, m := range out {
		if m.State == StateDead {
			delete(out, id)
		}
	}
	return out, nil
}

// ownerCheckLocked returns the id's partition if it is led and loaded
// here, else NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS /
// COORDINATOR_NOT_AVAILABLE (no __transaction_state yet).
func (c *Coordinator) ownerCheckLocked(id string) (*shard, error) {
	if c.mu.closed {
		return nil, kerr.NotCoordinator
	}
	if !c.mu.topicExists {
		return nil, kerr.CoordinatorNotAvailable
	}
	p := PartitionFor(id, c.mu.partitionCount)
	s, ok := c.mu.shards[p]
	if !ok {
		return nil, kerr.NotCoordinator
	}
	if !s.loaded {
		return nil, kerr.CoordinatorLoadInProgress
	}
	return s, nil
}

// CheckOwner reports whether id can be served here now.
func (c *Coordinator) CheckOwner(id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.ownerCheckLocked(id)
	return err
}

// lockTxn returns the id's entry locked, with its coordinator epoch, or
// nil (and no error) if the id is unknown. create makes an entry with
// init (not yet persisted) when there is none.
func (c *Coordinator) lockTxn(id string, create *Metadata) (*txnEntry, int32, error) {
	for {
		c.mu.Lock()
		s, err := c.ownerCheckLocked(id)
		if err != nil {
			c.mu.Unlock()
			return nil, 0, err
		}
		e := c.mu.txns[id]
		if e == nil && create != nil {
			e = &txnEntry{id: id, partition: s.partition, meta: create.clone()}
			c.mu.txns[id] = e
		}
		epoch := s.coordinatorEpoch
		c.mu.Unlock()
		if e == nil {
			return nil, 0, nil
		}
		e.mu.Lock()
		if e.meta.State != StateDead && c.isCurrent(e) {
			return e, epoch, nil
		}
		// Removed (expired, or its partition unloaded) between the
		// lookup and the lock: look again.
		e.mu.Unlock()
	}
}

// isCurrent reports whether e is still the map's entry for its id.
func (c *Coordinator) isCurrent(e *txnEntry) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.txns[e.id] == e
}

// ownsEpoch reports whether partition p is still led and loaded here
// with that coordinator epoch.
func (c *Coordinator) ownsEpoch(p, epoch int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.mu.shards[p]
	return ok && s.loaded && s.coordinatorEpoch == epoch
}

// persistLocked writes next as e's record and, once the in-sync replicas
// have it, makes it e's state; e.mu is held. The transition is checked
// against the state machine: an invalid one is a coordinator bug.
// Storage errors become the codes Kafka's coordinator answers with.
func (c *Coordinator) persistLocked(e *txnEntry, next Metadata) error {
	if !CanTransition(e.meta.State, next.State) {
		panic(fmt.Sprintf("txn: transactional id %q: invalid transition %s → %s", e.id, e.meta.State, next.State))
	}
	var value []byte
	if next.State != StateDead {
		version := int16(1)
		if c.transactionVersion.Load() == 0 {
			version = 0
		}
		value = txnValue(&next, version)
	}
	batch, err := buildBatch(txnKey(e.id), value, c.now())
	if err != nil {
		return err
	}
	if err := c.log.Append(e.partition, batch); err != nil {
		switch {
		case errors.Is(err, kerr.NotLeaderForPartition), errors.Is(err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("%w: %v", kerr.NotCoordinator, err)
		case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend),
			errors.Is(err, kerr.RequestTimedOut):
			return fmt.Errorf("%w: %v", kerr.CoordinatorNotAvailable, err)
		}
		return fmt.Errorf("%w: writing the transaction state: %v", kerr.UnknownServerError, err)
	}
	e.meta = next
	return nil
}

// entries returns the loaded entries, sorted by id, for the background
// checks and listing.
func (c *Coordinator) entries() []*txnEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*txnEntry, 0, len(c.mu.txns))
	for _, e := range c.mu.txns {
		if s, ok := c.mu.shards[e.partition]; ok && s.loaded {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *txnEntry) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return out
}

// coordinatorEpochOf returns partition p's coordinator epoch, if led.
func (c *Coordinator) coordinatorEpochOf(p int32) (int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.mu.shards[p]
	if !ok {
		return 0, false
	}
	return s.coordinatorEpoch, true
}
