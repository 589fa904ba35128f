package storage

import (
	"slices"

	"github.com/vltava/vltava/internal/record"
)

// Transactions under compaction, as Kafka's cleaner treats them
// (CleanedTransactionMetadata):
//   - records of aborted transactions are removed (and never enter the
//     offset map, so they cannot shadow a committed record of their key);
//     the producer's last batch stays as an empty batch, as for idempotence;
//   - an abort marker stays, with its .txnindex entry (copied into the
//     cleaned segment), while any batch of its transaction is left in the
//     cleaned range; a commit marker while any batch of its transaction is;
//   - a marker with nothing left of its transaction gets a delete horizon
//     of now + delete.retention.ms (KIP-534) the first time it is cleaned,
//     and is removed by the first clean after the horizon, by which time
//     every consumer that read the transaction's data has read the marker.
// Only data below the last stable offset is cleaned, so every transaction
// met here is decided.

// txnCleanState follows the transactions through one group of segments
// being cleaned (or the dirty range the offset map is built over).
type txnCleanState struct {
	pending []AbortedTxn // aborted transactions not yet reached, by first offset
	// aborted are the aborted transactions whose data has been reached,
	// by producer, with whether a batch of theirs was seen here.
	aborted map[int64]*abortedInClean
	// committed are the producers with a batch of an undecided-here
	// (hence committed) transaction seen in this range.
	committed map[int64]bool
	// kept are the index entries of abort markers that stay with data of
	// their transaction: the cleaned segment's .txnindex.
	kept []AbortedTxn
}

type abortedInClean struct {
	txn      AbortedTxn
	observed bool
}

// newTxnCleanState starts from the aborted transactions of the log whose
// marker is at or after from.
func newTxnCleanState(l *Log, from int64) *txnCleanState {
	var pending []AbortedTxn
	for _, s := range l.segmentList() {
		for _, e := range s.txn.list() {
			if e.LastOffset >= from {
				pending = append(pending, e)
			}
		}
	}
	slices.SortFunc(pending, func(a, b AbortedTxn) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	return &txnCleanState{pending: pending, aborted: map[int64]*abortedInClean{}, committed: map[int64]bool{}}
}

func (s *txnCleanState) reach(offset int64) {
	for len(s.pending) > 0 && s.pending[0].FirstOffset <= offset {
		e := s.pending[0]
		s.pending = s.pending[1:]
		s.aborted[e.ProducerID] = &abortedInClean{txn: e}
	}
}

// onData reports whether a data batch belongs to an aborted transaction,
// whose records are then dropped.
func (s *txnCleanState) onData(h *record.Header) bool {
	s.reach(h.LastOffset())
	if !h.IsTransactional() || h.ProducerID < 0 {
		return false
	}
	if a := s.aborted[h.ProducerID]; a != nil {
		a.observed = true
		return true
	}
	s.committed[h.ProducerID] = true
	return false
}

// onMarker reports whether a marker has nothing of its transaction left in
// the range, so it may go once its delete horizon passed.
func (s *txnCleanState) onMarker(h *record.Header, m record.Marker) bool {
	s.reach(h.LastOffset())
	if m.Type == record.ControlAbort {
		a := s.aborted[h.ProducerID]
		delete(s.aborted, h.ProducerID)
		if a != nil && a.observed {
			s.kept = append(s.kept, a.txn)
			return false
		}
		return true
	}
	had := s.committed[h.ProducerID]
	delete(s.committed, h.ProducerID)
	return !had
}
