package txn

// The client requests, with Kafka's TransactionCoordinator's checks in its
// order and its error codes. Errors wrap kerr values; PRODUCER_FENCED is
// returned as such and the handlers map it to INVALID_PRODUCER_EPOCH for
// request versions older than KIP-588.

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ProducerIDAndEpoch is a producer id and its epoch.
type ProducerIDAndEpoch struct {
	ID    int64
	Epoch int16
}

// noProducer is the absent producer id and epoch (-1, -1).
var noProducer = ProducerIDAndEpoch{-1, -1}

// InitProducerID is InitProducerId with a transactional id: a new id gets
// a producer id at epoch 0; a known one gets its epoch bumped, which
// fences the previous instance; an open transaction is fenced and aborted
// first (CONCURRENT_TRANSACTIONS until the abort is done, which the client
// retries). expected is the producer id and epoch the client holds
// (KIP-360), or (-1, -1).
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, expected ProducerIDAndEpoch) (ProducerIDAndEpoch, error) {
	if id == "" {
		return noProducer, fmt.Errorf("%w: empty transactional id", kerr.InvalidRequest)
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.cfg.MaxTimeout {
		return noProducer, fmt.Errorf("%w: transaction timeout %d ms is not in (0, transaction.max.timeout.ms=%d]",
			kerr.InvalidTransactionTimeout, timeoutMs, c.cfg.MaxTimeout.Milliseconds())
	}
	if err := c.CheckOwner(id); err != nil {
		return noProducer, err
	}
	e, coordEpoch, err := c.lockTxn(id, nil)
	if err != nil {
		return noProducer, err
	}
	if e == nil {
		// A new transactional id: a producer id first (it may take a
		// controller call), with no lock held.
		pid, err := c.ids(ctx)
		if err != nil {
			return noProducer, err
		}
		now := c.now().UnixMilli()
		e, coordEpoch, err = c.lockTxn(id, &Metadata{
			TransactionalID: id, ProducerID: pid, PrevProducerID: -1, NextProducerID: -1,
			ProducerEpoch: -1, LastProducerEpoch: -1, TimeoutMs: timeoutMs, State: StateEmpty,
			StartTimestamp: -1, LastUpdateTimestamp: now,
		})
		if err != nil {
			return noProducer, err
		}
	}
	defer e.mu.Unlock()
	m := e.meta
	// Kafka checks the producer the client holds before the state.
	if expected.ID >= 0 && !validExpectedProducer(&m, expected) {
		return noProducer, fmt.Errorf("%w: producer %d epoch %d is not the current producer of %q", kerr.ProducerFenced, expected.ID, expected.Epoch, id)
	}
	switch m.State {
	case StatePrepareCommit, StatePrepareAbort:
		return noProducer, fmt.Errorf("%w: transaction of %q is completing", kerr.ConcurrentTransactions, id)
	case StateOngoing:
		// Fence the producer holding the open transaction and abort it
		// (Kafka's PrepareEpochFence, then PrepareAbort at the bumped
		// epoch); the client retries and gets its epoch once the abort
		// completed.
		if err := c.fenceAndAbortLocked(e, coordEpoch); err != nil {
			return noProducer, err
		}
		return noProducer, fmt.Errorf("%w: aborting the open transaction of %q", kerr.ConcurrentTransactions, id)
	}
	next := m.clone()
	switch {
	case expected.ID >= 0 && expected.ID == m.PrevProducerID && expected.ID != m.ProducerID:
		// A retry after a rotation whose answer was lost: the current id.
		return ProducerIDAndEpoch{m.ProducerID, m.ProducerEpoch}, nil
	case epochExhausted(m.ProducerEpoch) && (expected.ID < 0 || expected.Epoch == m.ProducerEpoch):
		pid, err := c.ids(ctx)
		if err != nil {
			return noProducer, err
		}
		next.PrevProducerID, next.ProducerID, next.ProducerEpoch, next.LastProducerEpoch = m.ProducerID, pid, 0, -1
	case expected.ID < 0 || m.ProducerEpoch < 0 || expected.Epoch == m.ProducerEpoch:
		next.ProducerEpoch, next.LastProducerEpoch = m.ProducerEpoch+1, m.ProducerEpoch
	case expected.Epoch == m.LastProducerEpoch:
		// KIP-360: a retry of the bump just made; same epoch again.
	default:
		return noProducer, fmt.Errorf("%w: epoch %d of producer %d is neither the current (%d) nor the previous one", kerr.ProducerFenced, expected.Epoch, expected.ID, m.ProducerEpoch)
	}
	next.State = StateEmpty
	next.Partitions = map[TopicPartition]struct{}{}
	next.TimeoutMs = timeoutMs
	next.StartTimestamp = -1
	next.NextProducerID = -1
	next.LastUpdateTimestamp = c.now().UnixMilli()
	if err := c.persistLocked(e, next); err != nil {
		return noProducer, err
	}
	return ProducerIDAndEpoch{next.ProducerID, next.ProducerEpoch}, nil
}

// validExpectedProducer is Kafka's isValidProducerId: the id is fresh
// (epoch -1), or the expected id is the current one (the epoch is checked
// when bumping), or the previous one whose epoch was exhausted.
func validExpectedProducer(m *Metadata, exp ProducerIDAndEpoch) bool {
	return m.ProducerEpoch < 0 || exp.ID == m.ProducerID ||
		(exp.ID == m.PrevProducerID && epochExhausted(exp.Epoch))
}

// fenceAndAbortLocked bumps the epoch of e's ongoing transaction and
// aborts it at that epoch, so the producer that opened it is fenced
// (InitProducerId of a new instance, or the transaction timing out); e.mu
// is held.
func (c *Coordinator) fenceAndAbortLocked(e *txnEntry, coordEpoch int32) error {
	m := e.meta
	if !CanTransition(m.State, StatePrepareEpochFence) {
		panic(fmt.Sprintf("txn: fencing %q in state %s", e.id, m.State))
	}
	next := m.clone()
	if m.ProducerEpoch < math.MaxInt16 {
		next.ProducerEpoch = m.ProducerEpoch + 1
	}
	// The fenced epoch is nobody's to retry with.
	next.LastProducerEpoch = -1
	if c.transactionVersion.Load() >= 2 {
		// Kafka 4 aborts a fenced transaction as an EndTxn at the
		// cluster's transaction.version: at 2 that bumps the epoch once
		// more, so the fenced producer's epoch is two below the abort's
		// and its late EndTxn is PRODUCER_FENCED, never a retry.
		next.ClientTransactionVersion = 2
		if next.ProducerEpoch < math.MaxInt16 {
			next.LastProducerEpoch = next.ProducerEpoch
			next.ProducerEpoch++
		}
	}
	next.State = StatePrepareAbort
	next.LastUpdateTimestamp = c.now().UnixMilli()
	if err := c.persistLocked(e, next); err != nil {
		return err
	}
	c.sender.enqueue(c.markersFor(e, &next, coordEpoch))
	return nil
}

// checkProducerLocked is the producer id and epoch check of the
// AddPartitionsToTxn and AddOffsetsToTxn paths.
func checkProducerLocked(m *Metadata, p ProducerIDAndEpoch) error {
	if m.ProducerID != p.ID {
		return fmt.Errorf("%w: producer %d is not the producer of %q", kerr.InvalidProducerIDMapping, p.ID, m.TransactionalID)
	}
	if m.ProducerEpoch != p.Epoch {
		return fmt.Errorf("%w: epoch %d of producer %d is not the current epoch %d", kerr.ProducerFenced, p.Epoch, p.ID, m.ProducerEpoch)
	}
	return nil
}

// AddPartitions adds partitions to the transaction of id, starting it if
// none is ongoing: AddPartitionsToTxn from a client (v0-v3), from a
// partition leader adding for a KIP-890 part 2 client (v4+ with
// VerifyOnly false: tv2), and AddOffsetsToTxn (the group's
// __consumer_offsets partition).
func (c *Coordinator) AddPartitions(id string, p ProducerIDAndEpoch, tps []TopicPartition, tv2 bool) error {
	e, _, err := c.lockTxn(id, nil)
	if err != nil {
		return err
	}
	if e == nil {
		return fmt.Errorf("%w: unknown transactional id %q", kerr.InvalidProducerIDMapping, id)
	}
	defer e.mu.Unlock()
	m := e.meta
	if err := checkProducerLocked(&m, p); err != nil {
		return err
	}
	switch m.State {
	case StatePrepareCommit, StatePrepareAbort:
		return fmt.Errorf("%w: the previous transaction of %q is completing", kerr.ConcurrentTransactions, id)
	case StateOngoing:
		missing := false
		for _, tp := range tps {
			if _, ok := m.Partitions[tp]; !ok {
				missing = true
				break
			}
		}
		if !missing {
			return nil
		}
	}
	next := m.clone()
	if m.State != StateOngoing {
		next.StartTimestamp = c.now().UnixMilli()
	}
	next.State = StateOngoing
	for _, tp := range tps {
		next.Partitions[tp] = struct{}{}
	}
	if tv2 {
		next.ClientTransactionVersion = 2
	}
	next.LastUpdateTimestamp = c.now().UnixMilli()
	return c.persistLocked(e, next)
}

// VerifyPartitions answers AddPartitionsToTxn with VerifyOnly (KIP-890
// part 1, from a partition leader before a transactional append): an
// error for the whole transaction, or per partition nil if it is in the
// ongoing transaction and INVALID_TXN_STATE if not.
func (c *Coordinator) VerifyPartitions(id string, p ProducerIDAndEpoch, tps []TopicPartition) (map[TopicPartition]error, error) {
	e, _, err := c.lockTxn(id, nil)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("%w: unknown transactional id %q", kerr.InvalidProducerIDMapping, id)
	}
	defer e.mu.Unlock()
	m := &e.meta
	if err := checkProducerLocked(m, p); err != nil {
		return nil, err
	}
	if m.State == StatePrepareCommit || m.State == StatePrepareAbort {
		return nil, fmt.Errorf("%w: the transaction of %q is completing", kerr.ConcurrentTransactions, id)
	}
	out := make(map[TopicPartition]error, len(tps))
	for _, tp := range tps {
		if _, ok := m.Partitions[tp]; ok && m.State == StateOngoing {
			out[tp] = nil
			continue
		}
		out[tp] = fmt.Errorf("%w: %s-%d is not in the transaction of %q", kerr.InvalidTxnState, tp.Topic, tp.Partition, id)
	}
	return out, nil
}

// endTxnCompletionWait bounds how long EndTxn waits for the markers of the
// transaction it ended (see EndTxn).
const endTxnCompletionWait = 500 * time.Millisecond

// EndTxn commits or aborts the ongoing transaction of id: the Prepare
// record is written, and the markers are written in the background, after
// which the transaction is complete (a request meanwhile gets
// CONCURRENT_TRANSACTIONS). The answer waits for that completion, for at
// most endTxnCompletionWait: the outcome is decided once the Prepare
// record is written, as in Kafka, which answers there; waiting spares the
// producer's next transaction the CONCURRENT_TRANSACTIONS answers and the
// client's retry backoff (20 ms or more) while the markers are written,
// which would otherwise dominate transactions of a few milliseconds. tv2
// is EndTxn v5+ (KIP-890 part 2): the epoch is bumped by every EndTxn, a
// new producer id handed out when it overflows, and the answer carries the
// producer id and epoch to use next; without tv2 the answer's id and epoch
// are (-1, -1).
func (c *Coordinator) EndTxn(ctx context.Context, id string, p ProducerIDAndEpoch, commit, tv2 bool) (ProducerIDAndEpoch, error) {
	next, pm, err := c.endTxn(ctx, id, p, commit, tv2)
	if err != nil || pm == nil {
		return next, err
	}
	t := time.NewTimer(endTxnCompletionWait)
	defer t.Stop()
	select {
	case <-pm.done:
	case <-t.C:
	case <-ctx.Done():
	case <-c.closing:
	}
	return next, nil
}

// endTxn is EndTxn up to the answer: it returns the markers the caller may
// wait for when it prepared the end of a transaction.
func (c *Coordinator) endTxn(ctx context.Context, id string, p ProducerIDAndEpoch, commit, tv2 bool) (ProducerIDAndEpoch, *pendingMarkers, error) {
	e, coordEpoch, err := c.lockTxn(id, nil)
	if err != nil {
		return noProducer, nil, err
	}
	if e == nil {
		return noProducer, nil, fmt.Errorf("%w: unknown transactional id %q", kerr.InvalidProducerIDMapping, id)
	}
	defer e.mu.Unlock()
	m := e.meta
	// KIP-890 part 2, as Kafka 4's coordinator: a retry of an EndTxn that
	// bumped the epoch comes with the epoch just below the current one,
	// one that rotated the producer id with the old id at its last epoch.
	// Both are read from the persisted state (the previous epoch is not
	// persisted), so a retry sent to the coordinator that took over after
	// a failover is still recognised. A fence bumps twice at
	// transaction.version 2 (fenceAndAbortLocked), so the fenced
	// producer's epoch is never taken for a retry.
	retryOnOverflow := tv2 && p.ID == m.PrevProducerID && p.Epoch == math.MaxInt16-1 && m.ProducerEpoch == 0
	retryOnBump := tv2 && p.ID == m.ProducerID && int32(p.Epoch)+1 == int32(m.ProducerEpoch)
	retry := retryOnBump || retryOnOverflow
	if p.ID != m.ProducerID && !retryOnOverflow {
		return noProducer, nil, fmt.Errorf("%w: producer %d is not the producer of %q", kerr.InvalidProducerIDMapping, p.ID, id)
	}
	validEpoch := p.Epoch == m.ProducerEpoch
	if tv2 {
		// At transaction.version 2 the same epoch in a prepared state is
		// the next EndTxn, not a retry of this one; only the retry is
		// valid there, and in the completed states either.
		switch m.State {
		case StatePrepareCommit, StatePrepareAbort:
			validEpoch = retryOnBump
		case StateCompleteCommit, StateCompleteAbort:
			validEpoch = validEpoch || retry
		}
	}
	if !validEpoch {
		return noProducer, nil, fmt.Errorf("%w: epoch %d of producer %d is not the current epoch %d", kerr.ProducerFenced, p.Epoch, p.ID, m.ProducerEpoch)
	}
	current := func() ProducerIDAndEpoch {
		if !tv2 {
			return noProducer
		}
		return responseProducer(&e.meta)
	}
	invalid := func() error {
		return fmt.Errorf("%w: cannot %s the transaction of %q in state %s", kerr.InvalidTxnState, verb(commit), id, m.State)
	}
	switch m.State {
	case StateOngoing:
		pm, err := c.prepareEndLocked(ctx, e, coordEpoch, commit, tv2)
		if err != nil {
			return noProducer, nil, err
		}
		return current(), pm, nil
	case StateCompleteCommit:
		if commit && (retry || !tv2) {
			return current(), nil, nil
		}
		if !commit && tv2 && !retry {
			return withNoMarkers(c.abortEmptyLocked(ctx, e, coordEpoch))
		}
		return noProducer, nil, invalid()
	case StateCompleteAbort:
		if !commit && (retry || !tv2) {
			return current(), nil, nil
		}
		if !commit && tv2 {
			return withNoMarkers(c.abortEmptyLocked(ctx, e, coordEpoch))
		}
		return noProducer, nil, invalid()
	case StateEmpty:
		if !commit && tv2 && !retry {
			return withNoMarkers(c.abortEmptyLocked(ctx, e, coordEpoch))
		}
		return noProducer, nil, invalid()
	case StatePrepareCommit:
		if commit {
			return noProducer, nil, fmt.Errorf("%w: the commit of %q is completing", kerr.ConcurrentTransactions, id)
		}
		return noProducer, nil, invalid()
	case StatePrepareAbort:
		if !commit {
			return noProducer, nil, fmt.Errorf("%w: the abort of %q is completing", kerr.ConcurrentTransactions, id)
		}
		return noProducer, nil, invalid()
	}
	return noProducer, nil, invalid()
}

func verb(commit bool) string {
	if commit {
		return "commit"
	}
	return "abort"
}

// responseProducer is the producer id and epoch a TV2 client uses next:
// the new id at epoch 0 if this EndTxn overflowed the epoch.
func responseProducer(m *Metadata) ProducerIDAndEpoch {
	if m.NextProducerID >= 0 {
		return ProducerIDAndEpoch{m.NextProducerID, 0}
	}
	return ProducerIDAndEpoch{m.ProducerID, m.ProducerEpoch}
}

func withNoMarkers(p ProducerIDAndEpoch, err error) (ProducerIDAndEpoch, *pendingMarkers, error) {
	return p, nil, err
}

// prepareEndLocked writes PrepareCommit or PrepareAbort for e's ongoing
// transaction and queues its markers, which it returns; e.mu is held.
func (c *Coordinator) prepareEndLocked(ctx context.Context, e *txnEntry, coordEpoch int32, commit, tv2 bool) (*pendingMarkers, error) {
	m := e.meta
	next := m.clone()
	next.State = StatePrepareAbort
	if commit {
		next.State = StatePrepareCommit
	}
	next.LastUpdateTimestamp = c.now().UnixMilli()
	// The markers follow the EndTxn's version, as Kafka's coordinator
	// ends a transaction at the version of the request that ends it: a
	// transaction.version 2 marker is at an epoch above the data's.
	next.ClientTransactionVersion = 0
	if tv2 {
		if err := c.bumpForEndLocked(ctx, &next); err != nil {
			return nil, err
		}
	}
	if err := c.persistLocked(e, next); err != nil {
		return nil, err
	}
	pm := c.markersFor(e, &next, coordEpoch)
	c.sender.enqueue(pm)
	return pm, nil
}

// bumpForEndLocked is KIP-890 part 2's epoch bump at EndTxn: the markers
// go out at the bumped epoch; past the last usable epoch a new producer
// id is allocated, taken over once the markers are written.
func (c *Coordinator) bumpForEndLocked(ctx context.Context, next *Metadata) error {
	next.ClientTransactionVersion = 2
	next.LastProducerEpoch = next.ProducerEpoch
	next.ProducerEpoch++
	if epochExhausted(next.ProducerEpoch) {
		pid, err := c.ids(ctx)
		if err != nil {
			return err
		}
		next.NextProducerID = pid
	}
	return nil
}

// abortEmptyLocked is KIP-890 part 2's abort with nothing ongoing: the
// epoch is still bumped, so a produce in flight from this producer is
// fenced; there are no markers to write.
func (c *Coordinator) abortEmptyLocked(ctx context.Context, e *txnEntry, coordEpoch int32) (ProducerIDAndEpoch, error) {
	next := e.meta.clone()
	next.State = StatePrepareAbort
	next.Partitions = map[TopicPartition]struct{}{}
	next.LastUpdateTimestamp = c.now().UnixMilli()
	if err := c.bumpForEndLocked(ctx, &next); err != nil {
		return noProducer, err
	}
	if err := c.persistLocked(e, next); err != nil {
		return noProducer, err
	}
	c.sender.enqueue(c.markersFor(e, &next, coordEpoch))
	return responseProducer(&next), nil
}
