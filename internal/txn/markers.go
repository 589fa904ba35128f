package txn

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MarkerTransport reaches the leaders of the partitions a transaction
// touched. The broker implements it over the metadata image and
// inter-broker connections; tests stub it.
type MarkerTransport interface {
	// Leader returns the partition's current leader. exists is false
	// when the topic or partition is gone from the metadata (its marker
	// is then dropped, as Kafka drops markers of deleted partitions); ok
	// is false while it has no leader.
	Leader(tp TopicPartition) (leader int32, ok, exists bool)
	// WriteTxnMarkers sends req to broker node and returns its answer.
	WriteTxnMarkers(ctx context.Context, node int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// pendingMarkers are the markers of one transaction still to be written.
type pendingMarkers struct {
	id               string
	statePartition   int32
	coordinatorEpoch int32
	producerID       int64
	producerEpoch    int16
	commit           bool
	// transactionVersion is the client's (0 or 2), sent from
	// WriteTxnMarkers v2 on.
	transactionVersion int16
	remaining          map[TopicPartition]struct{}

	// done is closed once the markers' sender is finished with the
	// transaction: completed, or left to another coordinator.
	done     chan struct{}
	doneOnce sync.Once
}

// finish closes done.
func (pm *pendingMarkers) finish() { pm.doneOnce.Do(func() { close(pm.done) }) }

// markersFor is the markers that complete m, prepared in e.
func (c *Coordinator) markersFor(e *txnEntry, m *Metadata, coordinatorEpoch int32) *pendingMarkers {
	pm := &pendingMarkers{
		id: e.id, statePartition: e.partition, coordinatorEpoch: coordinatorEpoch,
		producerID: m.ProducerID, producerEpoch: m.ProducerEpoch,
		commit: m.State == StatePrepareCommit, transactionVersion: m.ClientTransactionVersion,
		remaining: map[TopicPartition]struct{}{},
		done:      make(chan struct{}),
	}
	for tp := range m.Partitions {
		pm.remaining[tp] = struct{}{}
	}
	return pm
}

// markerSender writes the markers of prepared transactions: each round
// takes everything queued, sends one WriteTxnMarkers per destination
// broker (all brokers in parallel), and queues again what failed, after a
// backoff, following leader moves through the transport's Leader. A
// transaction whose markers are all written is completed (its Complete
// record appended) on a goroutine of its own. mu is a leaf lock.
type markerSender struct {
	c         *Coordinator
	transport MarkerTransport
	wake      chan struct{}
	done      chan struct{}

	mu struct {
		sync.Mutex
		queue []*pendingMarkers
	}
}

func newMarkerSender(c *Coordinator, t MarkerTransport) *markerSender {
	return &markerSender{c: c, transport: t, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (s *markerSender) enqueue(pm *pendingMarkers) {
	s.mu.Lock()
	s.mu.queue = append(s.mu.queue, pm)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// wait returns once run has stopped (after Close).
func (s *markerSender) wait() { <-s.done }

// PendingMarkers returns how many transactions have markers still to write.
func (c *Coordinator) PendingMarkers() int {
	c.sender.mu.Lock()
	defer c.sender.mu.Unlock()
	return len(c.sender.mu.queue)
}

func (s *markerSender) run() {
	defer close(s.done)
	var retry <-chan time.Time
	for {
		select {
		case <-s.c.closing:
			return
		case <-s.wake:
		case <-retry:
		}
		retry = nil
		s.mu.Lock()
		batch := s.mu.queue
		s.mu.queue = nil
		s.mu.Unlock()
		if len(batch) == 0 {
			continue
		}
		again := s.round(batch)
		if len(again) > 0 {
			s.mu.Lock()
			s.mu.queue = append(again, s.mu.queue...)
			s.mu.Unlock()
			retry = time.After(s.c.cfg.MarkerRetryBackoff)
		}
	}
}

// destination is one broker's share of a round: per pending transaction,
// the partitions it leads.
type destination struct {
	node  int32
	parts map[*pendingMarkers][]TopicPartition
}

// round sends the markers of batch once and returns the transactions with
// markers left to write.
func (s *markerSender) round(batch []*pendingMarkers) []*pendingMarkers {
	dests := map[int32]*destination{}
	var live []*pendingMarkers
	for _, pm := range batch {
		if !s.c.ownsEpoch(pm.statePartition, pm.coordinatorEpoch) {
			// No longer the coordinator of this transaction: the new
			// one completes it from the log.
			pm.finish()
			continue
		}
		for tp := range pm.remaining {
			if s.transport == nil {
				break
			}
			leader, ok, exists := s.transport.Leader(tp)
			if !exists {
				delete(pm.remaining, tp)
				continue
			}
			if !ok {
				continue
			}
			d := dests[leader]
			if d == nil {
				d = &destination{node: leader, parts: map[*pendingMarkers][]TopicPartition{}}
				dests[leader] = d
			}
			d.parts[pm] = append(d.parts[pm], tp)
		}
		live = append(live, pm)
	}
	var wg sync.WaitGroup
	var resMu sync.Mutex
	written := map[*pendingMarkers][]TopicPartition{}
	fenced := map[*pendingMarkers]bool{}
	for _, d := range dests {
		wg.Add(1)
		go func(d *destination) {
			defer wg.Done()
			ok, stale := s.send(d)
			resMu.Lock()
			for pm, tps := range ok {
				written[pm] = append(written[pm], tps...)
			}
			for pm := range stale {
				fenced[pm] = true
			}
			resMu.Unlock()
		}(d)
	}
	wg.Wait()
	var again []*pendingMarkers
	for _, pm := range live {
		if fenced[pm] {
			pm.finish()
			continue
		}
		for _, tp := range written[pm] {
			delete(pm.remaining, tp)
		}
		if len(written[pm]) > 0 {
			s.c.markersWritten(pm, written[pm])
		}
		if len(pm.remaining) == 0 {
			s.c.completions.Add(1)
			go s.c.complete(pm)
			continue
		}
		again = append(again, pm)
	}
	return again
}

// send writes one destination's markers and returns the partitions
// written, and the transactions a leader refused as coming from a deposed
// coordinator or an old producer epoch. Any other error (a leader that
// moved: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION; too few
// replicas; a timeout) is retried next round, against the leader the
// metadata names then; a partition deleted from the metadata is dropped
// there.
func (s *markerSender) send(d *destination) (map[*pendingMarkers][]TopicPartition, map[*pendingMarkers]bool) {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	order := make([]*pendingMarkers, 0, len(d.parts))
	for pm, tps := range d.parts {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed = pm.producerID, pm.producerEpoch, pm.commit
		m.CoordinatorEpoch = pm.coordinatorEpoch
		m.TransactionVersion = int8(pm.transactionVersion)
		byTopic := map[string]int{}
		for _, tp := range tps {
			i, ok := byTopic[tp.Topic]
			if !ok {
				t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				t.Topic = tp.Topic
				m.Topics = append(m.Topics, t)
				i = len(m.Topics) - 1
				byTopic[tp.Topic] = i
			}
			m.Topics[i].Partitions = append(m.Topics[i].Partitions, tp.Partition)
		}
		req.Markers = append(req.Markers, m)
		order = append(order, pm)
	}
	ctx, cancel := context.WithTimeout(s.c.ctx, s.c.cfg.MarkerTimeout)
	defer cancel()
	resp, err := s.transport.WriteTxnMarkers(ctx, d.node, req)
	if err != nil {
		s.c.logger.Warn("writing transaction markers; retrying", "broker", d.node, "err", err)
		return nil, nil
	}
	written := map[*pendingMarkers][]TopicPartition{}
	fenced := map[*pendingMarkers]bool{}
	for i, m := range resp.Markers {
		var pm *pendingMarkers
		if i < len(order) && order[i].producerID == m.ProducerID {
			pm = order[i]
		} else {
			for _, o := range order {
				if o.producerID == m.ProducerID {
					pm = o
				}
			}
		}
		if pm == nil {
			continue
		}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				tp := TopicPartition{t.Topic, p.Partition}
				err := kerr.ErrorForCode(p.ErrorCode)
				switch {
				case err == nil:
					written[pm] = append(written[pm], tp)
				case errors.Is(err, kerr.TransactionCoordinatorFenced), errors.Is(err, kerr.InvalidProducerEpoch),
					errors.Is(err, kerr.ProducerFenced):
					// The coordinator or producer epoch moved on:
					// this transaction is someone else's to finish,
					// as Kafka's marker handler drops it.
					fenced[pm] = true
				default:
					s.c.logger.Debug("transaction marker refused; retrying", "partition", tp, "broker", d.node, "err", err)
				}
			}
		}
	}
	return written, fenced
}

// complete appends the Complete record of a transaction whose markers are
// written, retrying while this broker still coordinates it.
func (c *Coordinator) complete(pm *pendingMarkers) {
	defer c.completions.Done()
	defer pm.finish()
	for {
		err := c.completeOnce(pm)
		if err == nil {
			return
		}
		c.logger.Warn("completing transaction; retrying", "transactional_id", pm.id, "err", err)
		select {
		case <-c.closing:
			return
		case <-time.After(c.cfg.MarkerRetryBackoff):
		}
		if !c.ownsEpoch(pm.statePartition, pm.coordinatorEpoch) {
			return
		}
	}
}

// errStale means the transaction moved on while its markers were written.
var errStale = errors.New("transaction changed meanwhile")

func (c *Coordinator) completeOnce(pm *pendingMarkers) error {
	e, epoch, err := c.lockTxn(pm.id, nil)
	if err != nil || e == nil {
		return nil // not ours any more, or gone
	}
	defer e.mu.Unlock()
	if epoch != pm.coordinatorEpoch {
		return nil
	}
	m := e.meta
	want := StatePrepareAbort
	if pm.commit {
		want = StatePrepareCommit
	}
	if m.State != want || m.ProducerID != pm.producerID || m.ProducerEpoch != pm.producerEpoch {
		c.logger.Warn("transaction completion skipped", "transactional_id", pm.id, "err", errStale, "state", m.State)
		return nil
	}
	next := m.clone()
	next.State = StateCompleteAbort
	if pm.commit {
		next.State = StateCompleteCommit
	}
	next.Partitions = map[TopicPartition]struct{}{}
	next.LastUpdateTimestamp = c.now().UnixMilli()
	if next.NextProducerID >= 0 {
		// KIP-890: the epoch overflowed at this EndTxn; the new producer
		// id (already handed to the client) takes over now.
		next.PrevProducerID = next.ProducerID
		next.ProducerID, next.ProducerEpoch = next.NextProducerID, 0
		next.NextProducerID = -1
		next.LastProducerEpoch = -1
	}
	return c.persistLocked(e, next)
}

// markersWritten drops partitions whose markers are written from the
// transaction's in-memory partitions, so DescribeTransactions shows, while
// a transaction completes, only the partitions still to be marked, as
// Kafka's coordinator does. The log keeps the full set until the Complete
// record: a new coordinator marks them all again, which leaders ignore.
func (c *Coordinator) markersWritten(pm *pendingMarkers, tps []TopicPartition) {
	e, epoch, err := c.lockTxn(pm.id, nil)
	if err != nil || e == nil {
		return
	}
	defer e.mu.Unlock()
	m := &e.meta
	if epoch != pm.coordinatorEpoch || m.ProducerID != pm.producerID || m.ProducerEpoch != pm.producerEpoch ||
		(m.State != StatePrepareCommit && m.State != StatePrepareAbort) {
		return
	}
	for _, tp := range tps {
		delete(m.Partitions, tp)
	}
}
