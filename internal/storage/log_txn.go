package storage

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
)

// This file holds the log's side of transactions (KIP-98): the open
// transactions that hold the last stable offset back, the abort markers
// that fill the segments' transaction indexes, the verification guards of
// KIP-890, and the reads a read_committed consumer needs.

// txnBounds is what the last stable offset is computed from, published
// whole after every change so readers need no lock (Kafka's
// ProducerStateManager.firstUnstableOffset over ongoingTxns and
// unreplicatedTxns).
type txnBounds struct {
	// firstOngoing is the first offset of the earliest open transaction,
	// math.MaxInt64 with none.
	firstOngoing int64
	// unreplicated are the transactions completed by a marker the high
	// watermark had not passed when it was written, by marker offset: the
	// last stable offset stays at their first offset until it does, so a
	// read_committed consumer never reads data whose marker could still be
	// lost with a leader change.
	unreplicated []completedTxn
}

// publishTxnBoundsLocked republishes the bounds after producer state
// changed; completed is a transaction just ended by a marker, if any. The
// append lock must be held.
//
// During a replay (l.mu.replay set) nothing is published: the state is
// partial until the replay ends, and readers keep the bounds from before
// it; the transactions completed meanwhile are collected for the final
// publish.
func (l *Log) publishTxnBoundsLocked(completed *completedTxn) {
	hw := l.highWatermark.Load()
	if r := l.mu.replay; r != nil {
		if completed != nil && completed.lastOffset >= hw {
			r.unreplicated = append(r.unreplicated, *completed)
		}
		return
	}
	old := l.txnBounds.Load()
	next := &txnBounds{firstOngoing: l.mu.producers.firstUnstableOffset()}
	if old != nil {
		for _, t := range old.unreplicated {
			if t.lastOffset >= hw {
				next.unreplicated = append(next.unreplicated, t)
			}
		}
	}
	if completed != nil && completed.lastOffset >= hw {
		next.unreplicated = append(next.unreplicated, *completed)
	}
	l.txnBounds.Store(next)
}

// beginTxnReplayLocked starts a producer-state replay (load, truncation):
// the bounds are rebuilt from it alone.
func (l *Log) beginTxnReplayLocked() { l.mu.replay = &txnReplay{} }

// endTxnReplayLocked publishes the bounds the replay rebuilt.
func (l *Log) endTxnReplayLocked() {
	r := l.mu.replay
	l.mu.replay = nil
	hw := l.highWatermark.Load()
	next := &txnBounds{firstOngoing: l.mu.producers.firstUnstableOffset()}
	for _, t := range r.unreplicated {
		if t.lastOffset >= hw {
			next.unreplicated = append(next.unreplicated, t)
		}
	}
	l.txnBounds.Store(next)
}

// txnReplay collects what a replay completes for endTxnReplayLocked.
type txnReplay struct {
	unreplicated []completedTxn
}

// resetTxnBoundsLocked forgets completed transactions (the log was
// emptied: the producer state is all there is).
func (l *Log) resetTxnBoundsLocked() {
	l.txnBounds.Store(&txnBounds{firstOngoing: l.mu.producers.firstUnstableOffset()})
}

// LastStableOffset is the offset below which every transaction is decided
// and replicated: the high watermark, or the first offset of the earliest
// transaction that is open, or whose marker the high watermark has not
// passed, if lower (Kafka's UnifiedLog.lastStableOffset). A transaction
// whose data retention already deleted holds it at the log start offset,
// as Kafka's maybeIncrementFirstUnstableOffset does.
func (l *Log) LastStableOffset() int64 {
	hw := l.highWatermark.Load()
	first := int64(math.MaxInt64)
	if b := l.txnBounds.Load(); b != nil {
		first = b.firstOngoing
		for _, t := range b.unreplicated {
			if t.lastOffset >= hw {
				first = min(first, t.firstOffset)
			}
		}
	}
	if first >= hw {
		return hw
	}
	return max(first, l.logStartOffset.Load())
}

// FirstUnstableOffset is the first offset of the earliest open
// transaction, and whether one is open.
func (l *Log) FirstUnstableOffset() (int64, bool) {
	b := l.txnBounds.Load()
	if b == nil || b.firstOngoing == math.MaxInt64 {
		return -1, false
	}
	return b.firstOngoing, true
}

// AbortedTransactions lists the aborted transactions a read_committed
// fetch from offset from, reading below upTo, must know of: those whose
// abort marker is at or after from and whose data starts before upTo
// (Kafka's collectAbortedTransactions). Their markers lie in the segment
// holding from or a later one; the walk stops at the first entry whose last
// stable offset passed upTo.
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	segs := l.segmentList()
	out := []AbortedTxn{}
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].baseOffset <= from {
			continue
		}
		var complete bool
		if out, complete = s.txn.collectAborted(out, from, upTo); complete {
			break
		}
	}
	return out
}

// StartTransactionVerification begins the KIP-890 check of a producer's
// transactional append: it returns the guard to append with once the
// coordinator confirmed the transaction, and whether the coordinator must
// be asked (not when the producer's transaction is already open here at
// that epoch). epochBump says the producer is at transaction.version 2
// (Produce v12+, TxnOffsetCommit v5+).
func (l *Log) StartTransactionVerification(producerID int64, producerEpoch int16, epochBump bool) (VerificationGuard, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.producers.startVerification(producerID, producerEpoch, epochBump, l.now().UnixMilli())
}

// ProducerState describes one active producer of the partition, as
// DescribeProducers reports it.
type ProducerState struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1 with no open transaction
}

// Producers lists the partition's active producers, by producer id.
func (l *Log) Producers() []ProducerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ProducerState, 0, len(l.mu.producers.producers))
	for _, e := range l.mu.producers.producers {
		ps := ProducerState{ProducerID: e.producerID, ProducerEpoch: e.epoch, LastSequence: -1,
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset}
		if b, ok := e.lastBatch(); ok {
			ps.LastSequence = b.lastSeq
		}
		out = append(out, ps)
	}
	slices.SortFunc(out, func(a, b ProducerState) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out
}

// applyBatchLocked brings producer state, the transaction index and the
// last stable offset up to date with a batch just written to seg, on every
// path that appends (leader, follower, replay at load). batch is the whole
// batch, needed for a marker's type; nil during a replay that has only the
// header, which never happens for a control batch.
func (l *Log) applyBatchLocked(seg *segment, h *record.Header, batch []byte) error {
	var marker *record.Marker
	if h.IsControl() && h.ProducerID >= 0 && batch != nil {
		m, err := record.ParseMarker(batch)
		if err != nil {
			return err
		}
		marker = &m
	}
	_, wasOpen := l.mu.producers.ongoing[h.ProducerID]
	t, completed := l.mu.producers.update(h, marker)
	if !completed {
		if h.IsTransactional() && !wasOpen {
			l.publishTxnBoundsLocked(nil) // a transaction opened
		}
		return nil
	}
	if t.aborted {
		e := AbortedTxn{ProducerID: t.producerID, FirstOffset: t.firstOffset, LastOffset: t.lastOffset,
			LastStableOffset: l.mu.producers.lastStableOffsetAfter(t)}
		if err := seg.txn.append(e); err != nil {
			l.publishTxnBoundsLocked(&t)
			return fmt.Errorf("%w: writing the transaction index of %s: %w", kerr.KafkaStorageError, l.dir, err)
		}
	}
	l.publishTxnBoundsLocked(&t)
	return nil
}

// markerOf decodes the marker of a control batch about to be appended by
// the leader, for the producer-state check.
func markerOf(batch []byte, h *record.Header) (*record.Marker, error) {
	if !h.IsControl() || h.ProducerID < 0 {
		return nil, nil
	}
	m, err := record.ParseMarker(batch)
	if err != nil {
		return nil, err
	}
	return &m, nil
}
