package txn

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestTransitions is Kafka's TransactionState.validPreviousStates (with
// KIP-890 part 2's abort of an empty transaction) as a table: every pair
// of states not listed is refused.
func TestTransitions(t *testing.T) {
	valid := map[[2]State]bool{}
	for _, p := range [][2]State{
		{StateEmpty, StateEmpty}, {StateCompleteCommit, StateEmpty}, {StateCompleteAbort, StateEmpty},
		{StateEmpty, StateOngoing}, {StateOngoing, StateOngoing}, {StateCompleteCommit, StateOngoing}, {StateCompleteAbort, StateOngoing},
		{StateOngoing, StatePrepareCommit},
		{StateOngoing, StatePrepareAbort}, {StatePrepareEpochFence, StatePrepareAbort},
		{StateEmpty, StatePrepareAbort}, {StateCompleteCommit, StatePrepareAbort}, {StateCompleteAbort, StatePrepareAbort},
		{StatePrepareCommit, StateCompleteCommit}, {StatePrepareAbort, StateCompleteAbort},
		{StateOngoing, StatePrepareEpochFence},
		{StateEmpty, StateDead}, {StateCompleteCommit, StateDead}, {StateCompleteAbort, StateDead},
	} {
		valid[p] = true
	}
	for from := StateEmpty; from <= StatePrepareEpochFence; from++ {
		for to := StateEmpty; to <= StatePrepareEpochFence; to++ {
			if got := CanTransition(from, to); got != valid[[2]State{from, to}] {
				t.Errorf("%s → %s: allowed %v, want %v", from, to, got, !got)
			}
		}
	}
	for s, name := range stateNames {
		if got, ok := ParseState(name); !ok || got != s {
			t.Errorf("ParseState(%q) = %v, %v", name, got, ok)
		}
	}
}

func TestInitProducerID(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	first := h.init("t1")
	if first.Epoch != 0 || first.ID <= 0 {
		t.Fatalf("first init: %+v, want a producer id at epoch 0", first)
	}
	second := h.init("t1")
	if second.ID != first.ID || second.Epoch != 1 {
		t.Fatalf("second init: %+v, want id %d epoch 1 (the first instance fenced)", second, first.ID)
	}
	// KIP-360: the client holding the current epoch bumps it; a retry of
	// that bump (the previous epoch) gets the same epoch again.
	third, err := h.c.InitProducerID(ctx, "t1", 60_000, second)
	wantErr(t, "init with the current epoch", err, nil)
	if third.Epoch != 2 {
		t.Fatalf("bump: %+v, want epoch 2", third)
	}
	retry, err := h.c.InitProducerID(ctx, "t1", 60_000, second)
	wantErr(t, "retry of the bump", err, nil)
	if retry != third {
		t.Fatalf("retry: %+v, want %+v", retry, third)
	}
	_, err = h.c.InitProducerID(ctx, "t1", 60_000, first)
	wantErr(t, "init with a fenced epoch", err, kerr.ProducerFenced)

	_, err = h.c.InitProducerID(ctx, "t2", 60_001, noProducer)
	wantErr(t, "timeout above transaction.max.timeout.ms", err, kerr.InvalidTransactionTimeout)
	_, err = h.c.InitProducerID(ctx, "t2", 0, noProducer)
	wantErr(t, "timeout 0", err, kerr.InvalidTransactionTimeout)
	_, err = h.c.InitProducerID(ctx, "", 1000, noProducer)
	wantErr(t, "empty transactional id", err, kerr.InvalidRequest)
}

func TestInitProducerIDEpochOverflow(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	e, _, _ := h.c.lockTxn("t", nil)
	e.meta.ProducerEpoch = math.MaxInt16 - 1
	e.mu.Unlock()
	next := h.init("t")
	if next.ID == p.ID || next.Epoch != 0 {
		t.Fatalf("init at an exhausted epoch: %+v, want a new producer id at epoch 0", next)
	}
	if m := h.state("t"); m.PrevProducerID != p.ID {
		t.Errorf("previous producer id %d, want %d", m.PrevProducerID, p.ID)
	}
}

// TestInitFencesOngoing: a new instance's InitProducerId aborts the old
// instance's open transaction at a bumped epoch (CONCURRENT_TRANSACTIONS
// meanwhile), after which the old instance is fenced.
func TestInitFencesOngoing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	old := h.init("t")
	wantErr(t, "add", h.c.AddPartitions("t", old, []TopicPartition{tpA, tpB}, false), nil)
	// The producer the client holds is checked first: a stranger's id
	// fences nothing.
	_, err := h.c.InitProducerID(ctx, "t", 60_000, ProducerIDAndEpoch{old.ID + 99, 0})
	wantErr(t, "init with another producer id", err, kerr.ProducerFenced)
	if m := h.state("t"); m.State != StateOngoing {
		t.Fatalf("a refused init changed the state to %s", m.State)
	}
	_, err = h.c.InitProducerID(ctx, "t", 60_000, noProducer)
	wantErr(t, "init over an open transaction", err, kerr.ConcurrentTransactions)
	h.waitState("t", StateCompleteAbort)
	sent := h.leader.sent()
	if len(sent) != 1 || len(sent[0].req.Markers) != 1 {
		t.Fatalf("markers sent: %+v, want one abort", sent)
	}
	// At transaction.version 2 the fence bumps the epoch and the abort
	// bumps it again, as Kafka 4's coordinator does.
	m := sent[0].req.Markers[0]
	if m.Committed || m.ProducerID != old.ID || m.ProducerEpoch != old.Epoch+2 || m.CoordinatorEpoch != 1 || m.TransactionVersion != 2 {
		t.Errorf("abort marker %+v, want an abort of producer %d at epoch %d, coordinator epoch 1, version 2", m, old.ID, old.Epoch+2)
	}
	fresh, err := h.c.InitProducerID(ctx, "t", 60_000, noProducer)
	wantErr(t, "init once the abort is done", err, nil)
	if fresh.ID != old.ID || fresh.Epoch != old.Epoch+3 {
		t.Errorf("new instance %+v, want epoch %d", fresh, old.Epoch+3)
	}
	wantErr(t, "the old instance adds", h.c.AddPartitions("t", old, []TopicPartition{tpA}, false), kerr.ProducerFenced)
	_, err = h.c.EndTxn(ctx, "t", old, true, false)
	wantErr(t, "the old instance commits", err, kerr.ProducerFenced)

	// The fence's abort was at version 2; the new instance's EndTxn v4
	// commit writes version 1 markers at its own epoch (a version 2 marker
	// there would be refused as not above the data's epoch).
	wantErr(t, "the new instance adds", h.c.AddPartitions("t", fresh, []TopicPartition{tpA}, false), nil)
	_, err = h.c.EndTxn(ctx, "t", fresh, true, false)
	wantErr(t, "the new instance commits", err, nil)
	h.waitState("t", StateCompleteCommit)
	sent = h.leader.sent()
	if m := sent[len(sent)-1].req.Markers[0]; !m.Committed || m.ProducerEpoch != fresh.Epoch || m.TransactionVersion != 0 {
		t.Errorf("commit marker %+v, want a commit at epoch %d, version 0", m, fresh.Epoch)
	}
}

func TestAddPartitionsErrors(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	wantErr(t, "unknown transactional id", h.c.AddPartitions("nope", p, []TopicPartition{tpA}, false), kerr.InvalidProducerIDMapping)
	wantErr(t, "other producer id", h.c.AddPartitions("t", ProducerIDAndEpoch{p.ID + 1, p.Epoch}, []TopicPartition{tpA}, false), kerr.InvalidProducerIDMapping)
	wantErr(t, "stale epoch", h.c.AddPartitions("t", ProducerIDAndEpoch{p.ID, p.Epoch - 1}, []TopicPartition{tpA}, false), kerr.ProducerFenced)
	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), nil)
	if m := h.state("t"); m.State != StateOngoing || len(m.Partitions) != 1 || m.StartTimestamp != h.clock.now().UnixMilli() {
		t.Fatalf("after add: %+v", m)
	}
	// Adding what is there already writes nothing.
	before := h.log.End(h.c.PartitionFor("t"))
	wantErr(t, "add again", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), nil)
	if after := h.log.End(h.c.PartitionFor("t")); after != before {
		t.Errorf("adding a partition already in the transaction wrote %d records", after-before)
	}
	// While the markers of the commit are pending: CONCURRENT_TRANSACTIONS.
	h.leader.setHold(true)
	_, err := h.c.EndTxn(context.Background(), "t", p, true, false)
	wantErr(t, "commit", err, nil)
	wantErr(t, "add while the commit completes", h.c.AddPartitions("t", p, []TopicPartition{tpB}, false), kerr.ConcurrentTransactions)
	_, err = h.c.VerifyPartitions("t", p, []TopicPartition{tpA})
	wantErr(t, "verify while the commit completes", err, kerr.ConcurrentTransactions)
	_, err = h.c.InitProducerID(context.Background(), "t", 1000, noProducer)
	wantErr(t, "init while the commit completes", err, kerr.ConcurrentTransactions)
	h.leader.setHold(false)
	h.waitState("t", StateCompleteCommit)
	wantErr(t, "add after the commit", h.c.AddPartitions("t", p, []TopicPartition{tpB}, false), nil)
}

// TestVerifyPartitions is KIP-890 part 1's check from a partition leader.
func TestVerifyPartitions(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	res, err := h.c.VerifyPartitions("t", p, []TopicPartition{tpA})
	wantErr(t, "verify before any add", err, nil)
	wantErr(t, "partition never added", res[tpA], kerr.InvalidTxnState)
	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), nil)
	res, err = h.c.VerifyPartitions("t", p, []TopicPartition{tpA, tpB})
	wantErr(t, "verify", err, nil)
	wantErr(t, "added partition", res[tpA], nil)
	wantErr(t, "partition not added", res[tpB], kerr.InvalidTxnState)
	_, err = h.c.VerifyPartitions("nope", p, []TopicPartition{tpA})
	wantErr(t, "unknown id", err, kerr.InvalidProducerIDMapping)
	_, err = h.c.VerifyPartitions("t", ProducerIDAndEpoch{p.ID, p.Epoch + 1}, []TopicPartition{tpA})
	wantErr(t, "other epoch", err, kerr.ProducerFenced)
}

func TestEndTxn(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := h.init("t")
	_, err := h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit with nothing ongoing", err, kerr.InvalidTxnState)
	_, err = h.c.EndTxn(ctx, "nope", p, true, false)
	wantErr(t, "unknown id", err, kerr.InvalidProducerIDMapping)

	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA, tpB}, false), nil)
	_, err = h.c.EndTxn(ctx, "t", ProducerIDAndEpoch{p.ID, p.Epoch + 1}, true, false)
	wantErr(t, "commit with another epoch", err, kerr.ProducerFenced)
	h.leader.setHold(true)
	got, err := h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit", err, nil)
	if got != noProducer {
		t.Errorf("TV1 answer %+v, want no producer id", got)
	}
	if m := h.state("t"); m.State != StatePrepareCommit {
		t.Fatalf("state %s, want PrepareCommit", m.State)
	}
	_, err = h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit retried while completing", err, kerr.ConcurrentTransactions)
	_, err = h.c.EndTxn(ctx, "t", p, false, false)
	wantErr(t, "abort while committing", err, kerr.InvalidTxnState)
	h.leader.setHold(false)
	h.waitState("t", StateCompleteCommit)
	if m := h.state("t"); len(m.Partitions) != 0 {
		t.Errorf("complete transaction keeps partitions %v", m.Partitions)
	}
	sent := h.leader.sent()
	if len(sent) != 1 {
		t.Fatalf("%d WriteTxnMarkers requests, want 1 (both partitions on broker 1)", len(sent))
	}
	m := sent[0].req.Markers[0]
	if !m.Committed || m.ProducerID != p.ID || m.ProducerEpoch != p.Epoch || len(m.Topics) != 2 {
		t.Errorf("commit marker %+v", m)
	}
	_, err = h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit retried after completion", err, nil)
	_, err = h.c.EndTxn(ctx, "t", p, false, false)
	wantErr(t, "abort after the commit", err, kerr.InvalidTxnState)

	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), nil)
	h.leader.setHold(true)
	_, err = h.c.EndTxn(ctx, "t", p, false, false)
	wantErr(t, "abort", err, nil)
	_, err = h.c.EndTxn(ctx, "t", p, false, false)
	wantErr(t, "abort retried while completing", err, kerr.ConcurrentTransactions)
	_, err = h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit while aborting", err, kerr.InvalidTxnState)
	h.leader.setHold(false)
	h.waitState("t", StateCompleteAbort)
	_, err = h.c.EndTxn(ctx, "t", p, true, false)
	wantErr(t, "commit after the abort", err, kerr.InvalidTxnState)
}

// TestEndTxnTV2 is KIP-890 part 2: every EndTxn bumps the epoch and
// answers with it, a retry comes with the old epoch, an abort of nothing
// still bumps, and an overflowing epoch brings a new producer id.
func TestEndTxnTV2(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := h.init("t")
	wantErr(t, "implicit add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, true), nil)
	next, err := h.c.EndTxn(ctx, "t", p, true, true)
	wantErr(t, "commit", err, nil)
	if next.ID != p.ID || next.Epoch != p.Epoch+1 {
		t.Fatalf("answer %+v, want epoch %d", next, p.Epoch+1)
	}
	h.waitState("t", StateCompleteCommit)
	if m := h.leader.sent()[0].req.Markers[0]; m.ProducerEpoch != next.Epoch || m.TransactionVersion != 2 {
		t.Errorf("marker at epoch %d, version %d; want the bumped epoch %d, version 2", m.ProducerEpoch, m.TransactionVersion, next.Epoch)
	}
	retry, err := h.c.EndTxn(ctx, "t", p, true, true)
	wantErr(t, "commit retried with the old epoch", err, nil)
	if retry != next {
		t.Errorf("retry answer %+v, want %+v", retry, next)
	}
	_, err = h.c.EndTxn(ctx, "t", p, false, true)
	wantErr(t, "abort with the old epoch after a commit", err, kerr.InvalidTxnState)

	// After InitProducerId the previous epoch is a fenced instance's, not
	// a retry.
	h2 := h.init("z")
	h.init("z")
	_, err = h.c.EndTxn(ctx, "z", h2, false, true)
	wantErr(t, "EndTxn v5 of a fenced instance", err, kerr.ProducerFenced)

	empty, err := h.c.EndTxn(ctx, "t", next, false, true)
	wantErr(t, "abort of nothing", err, nil)
	if empty.Epoch != next.Epoch+1 {
		t.Errorf("abort of nothing: %+v, want epoch %d", empty, next.Epoch+1)
	}
	h.waitState("t", StateCompleteAbort)

	e, _, _ := h.c.lockTxn("t", nil)
	e.meta.ProducerEpoch = math.MaxInt16 - 2
	e.mu.Unlock()
	at := ProducerIDAndEpoch{p.ID, math.MaxInt16 - 2}
	wantErr(t, "add", h.c.AddPartitions("t", at, []TopicPartition{tpA}, true), nil)
	rotated, err := h.c.EndTxn(ctx, "t", at, true, true)
	wantErr(t, "commit at the last epoch", err, nil)
	if rotated.ID == p.ID || rotated.Epoch != 0 {
		t.Fatalf("overflow answer %+v, want a new producer id at epoch 0", rotated)
	}
	h.waitState("t", StateCompleteCommit)
	if m := h.state("t"); m.ProducerID != rotated.ID || m.ProducerEpoch != 0 || m.PrevProducerID != p.ID {
		t.Errorf("after the rotation: %+v", m)
	}
	again, err := h.c.EndTxn(ctx, "t", ProducerIDAndEpoch{p.ID, math.MaxInt16 - 1}, true, true)
	wantErr(t, "commit retried with the old producer id", err, nil)
	if again != rotated {
		t.Errorf("retry after the rotation: %+v, want %+v", again, rotated)
	}
}

// TestReloadCompletesPrepared: a coordinator that stopped after writing
// PrepareCommit, before the markers, is replaced by one that loads the
// log, writes the markers with its own coordinator epoch and completes
// the commit.
func TestReloadCompletesPrepared(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA, tpB}, false), nil)
	h.leader.setHold(true)
	_, err := h.c.EndTxn(context.Background(), "t", p, true, false)
	wantErr(t, "commit", err, nil)
	h.c.Close()

	h.leader.setHold(false)
	h.start(2)
	h.waitState("t", StateCompleteCommit)
	sent := h.leader.sent()
	if len(sent) != 1 {
		t.Fatalf("%d marker requests, want 1", len(sent))
	}
	m := sent[0].req.Markers[0]
	if !m.Committed || m.CoordinatorEpoch != 2 || m.ProducerID != p.ID || len(m.Topics) != 2 {
		t.Errorf("marker after reload %+v, want a commit at coordinator epoch 2 over both partitions", m)
	}
	// And the completed state survives another reload.
	h.start(3)
	if m := h.state("t"); m.State != StateCompleteCommit || m.ProducerEpoch != p.Epoch {
		t.Errorf("after a second reload: %+v", m)
	}
}

// TestDeposedCoordinatorStops: markers refused as coming from an old
// coordinator epoch are not retried, and the transaction is left for the
// new coordinator.
func TestDeposedCoordinatorStops(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), nil)
	h.leader.mu.Lock()
	h.leader.answer = func(TopicPartition) int16 { return kerr.TransactionCoordinatorFenced.Code }
	h.leader.mu.Unlock()
	_, err := h.c.EndTxn(context.Background(), "t", p, true, false)
	wantErr(t, "commit", err, nil)
	poll.True(t, 5*time.Second, "the marker sent", func() bool { return len(h.leader.sent()) > 0 })
	poll.True(t, 5*time.Second, "nothing pending", func() bool { return h.c.PendingMarkers() == 0 })
	if m := h.state("t"); m.State != StatePrepareCommit {
		t.Errorf("state %s, want PrepareCommit left for the new coordinator", m.State)
	}
}

// TestMarkersPerBroker: one WriteTxnMarkers per destination broker per
// round, carrying the markers of every transaction it leads partitions
// of; a partition without a leader waits and follows the leader once
// there is one; a deleted partition is dropped.
func TestMarkersPerBroker(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	gone := TopicPartition{"deleted", 0}
	h.leader.mu.Lock()
	h.leader.leaders[tpB] = 2
	h.leader.leaders[TopicPartition{"c", 0}] = -1
	h.leader.mu.Unlock()
	p1, p2 := h.init("t1"), h.init("t2")
	wantErr(t, "add t1", h.c.AddPartitions("t1", p1, []TopicPartition{tpA, tpB}, false), nil)
	wantErr(t, "add t2", h.c.AddPartitions("t2", p2, []TopicPartition{tpA, tpB, {"c", 0}, gone}, false), nil)
	h.leader.mu.Lock()
	h.leader.answer = func(tp TopicPartition) int16 {
		if tp == gone {
			// A leader that lost the partition: retried until
			// the metadata says the topic is gone.
			return kerr.UnknownTopicOrPartition.Code
		}
		return 0
	}
	h.leader.mu.Unlock()
	h.leader.setHold(true)
	_, err := h.c.EndTxn(ctx, "t1", p1, true, false)
	wantErr(t, "commit t1", err, nil)
	_, err = h.c.EndTxn(ctx, "t2", p2, false, false)
	wantErr(t, "abort t2", err, nil)
	// A round may have taken t1's markers alone before t2 ended: release
	// the hold only once a round has carried both, so the next one does.
	poll.True(t, 10*time.Second, "a round with both transactions' markers", func() bool { return h.leader.heldMax() >= 2 })
	h.leader.setHold(false)
	h.waitState("t1", StateCompleteCommit)
	poll.True(t, 5*time.Second, "the first round", func() bool { return len(h.leader.sent()) >= 2 })
	perNode := map[int32]int{}
	for _, s := range h.leader.sent()[:2] {
		perNode[s.node]++
		if len(s.req.Markers) != 2 {
			t.Errorf("request to broker %d carries %d markers, want both transactions'", s.node, len(s.req.Markers))
		}
	}
	if perNode[1] != 1 || perNode[2] != 1 {
		t.Errorf("requests per broker %v, want one to each of 1 and 2", perNode)
	}
	if m := h.state("t2"); m.State != StatePrepareAbort {
		t.Fatalf("t2 %s while c-0 has no leader, want PrepareAbort", m.State)
	}
	h.leader.mu.Lock()
	h.leader.leaders[TopicPartition{"c", 0}] = 3
	h.leader.mu.Unlock()
	poll.True(t, 5*time.Second, "c-0 marked on its new leader", func() bool {
		for _, s := range h.leader.sent() {
			if s.node == 3 {
				return true
			}
		}
		return false
	})
	if m := h.state("t2"); m.State != StatePrepareAbort {
		t.Fatalf("t2 %s while deleted-0 refuses its marker, want PrepareAbort", m.State)
	}
	// DescribeTransactions shows only the partitions still to be marked.
	poll.True(t, 5*time.Second, "only deleted-0 left to mark", func() bool {
		m := h.state("t2")
		_, left := m.Partitions[gone]
		return len(m.Partitions) == 1 && left
	})
	h.leader.mu.Lock()
	h.leader.deleted = map[TopicPartition]bool{gone: true}
	h.leader.mu.Unlock()
	h.waitState("t2", StateCompleteAbort)
}

// TestTimeoutAbort: a transaction past its timeout is aborted at a
// bumped epoch (bumped twice at transaction.version 2, as Kafka 4's
// coordinator ends it as an EndTxn of that version); the commit or abort
// that raced it is PRODUCER_FENCED (EndTxn v5 only exists at level 2).
func TestTimeoutAbort(t *testing.T) {
	for _, tc := range []struct {
		level int32
		bump  int16
	}{{2, 2}, {0, 1}} {
		t.Run(fmt.Sprintf("transaction.version=%d", tc.level), func(t *testing.T) {
			h := newHarness(t)
			h.c.transactionVersion.Store(tc.level)
			ctx := context.Background()
			p, err := h.c.InitProducerID(ctx, "t", 1000, noProducer)
			wantErr(t, "init", err, nil)
			wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, tc.level >= 2), nil)
			h.clock.add(999 * time.Millisecond)
			h.c.AbortTimedOut()
			if m := h.state("t"); m.State != StateOngoing {
				t.Fatalf("aborted before its timeout: %s", m.State)
			}
			h.clock.add(2 * time.Millisecond)
			h.c.AbortTimedOut()
			h.waitState("t", StateCompleteAbort)
			if m := h.state("t"); m.ProducerEpoch != p.Epoch+tc.bump {
				t.Errorf("epoch after the timeout abort %d, want %d", m.ProducerEpoch, p.Epoch+tc.bump)
			}
			if m := h.leader.sent()[0].req.Markers[0]; m.Committed || m.ProducerEpoch != p.Epoch+tc.bump {
				t.Errorf("timeout marker %+v", m)
			}
			for _, commit := range []bool{true, false} {
				_, err = h.c.EndTxn(ctx, "t", p, commit, false)
				wantErr(t, verb(commit)+" after the timeout (TV1)", err, kerr.ProducerFenced)
				if tc.level >= 2 {
					_, err = h.c.EndTxn(ctx, "t", p, commit, true)
					wantErr(t, verb(commit)+" after the timeout (TV2)", err, kerr.ProducerFenced)
				}
			}
		})
	}
}

// TestEndTxnTV2RetryAfterFailover: an EndTxn v5 whose answer was lost is
// retried, with the epoch before the bump, at the coordinator that took
// over; that one knows the bump only from the log (the previous epoch is
// not persisted) and still answers the retry, CONCURRENT_TRANSACTIONS
// while the markers are out, then the bumped epoch. The same epoch as the
// prepared state's is the next EndTxn, PRODUCER_FENCED there, as in
// Kafka 4.
func TestEndTxnTV2RetryAfterFailover(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := h.init("t")
	wantErr(t, "add", h.c.AddPartitions("t", p, []TopicPartition{tpA}, true), nil)
	h.leader.setHold(true)
	next, err := h.c.EndTxn(ctx, "t", p, true, true)
	wantErr(t, "commit", err, nil)
	h.c.Close()
	h.start(2)
	poll.True(t, 5*time.Second, "loaded", func() bool { return h.c.CheckOwner("t") == nil })
	_, err = h.c.EndTxn(ctx, "t", p, true, true)
	wantErr(t, "commit retried while prepared", err, kerr.ConcurrentTransactions)
	_, err = h.c.EndTxn(ctx, "t", p, false, true)
	wantErr(t, "abort with the pre-bump epoch while the commit is prepared", err, kerr.InvalidTxnState)
	_, err = h.c.EndTxn(ctx, "t", next, true, true)
	wantErr(t, "commit at the prepared epoch", err, kerr.ProducerFenced)
	h.leader.setHold(false)
	h.waitState("t", StateCompleteCommit)
	retry, err := h.c.EndTxn(ctx, "t", p, true, true)
	wantErr(t, "commit retried once complete", err, nil)
	if retry != next {
		t.Errorf("retry answer %+v, want %+v", retry, next)
	}
	_, err = h.c.EndTxn(ctx, "t", p, false, true)
	wantErr(t, "abort retried after the commit", err, kerr.InvalidTxnState)
	_, err = h.c.EndTxn(ctx, "t", next, true, true)
	wantErr(t, "commit of nothing at the current epoch", err, kerr.InvalidTxnState)
	_, err = h.c.EndTxn(ctx, "t", ProducerIDAndEpoch{p.ID, p.Epoch - 1}, true, true)
	wantErr(t, "commit two epochs back", err, kerr.ProducerFenced)
}

// TestExpiry: transactional.id.expiration.ms after its last use an idle
// id is removed with a tombstone, also after a reload; one in a
// transaction is kept.
func TestExpiry(t *testing.T) {
	h := newHarness(t)
	h.init("idle")
	busy := h.init("busy")
	wantErr(t, "add", h.c.AddPartitions("busy", busy, []TopicPartition{tpA}, false), nil)
	h.clock.add(59 * time.Minute)
	h.c.RemoveExpired()
	h.state("idle")
	h.clock.add(2 * time.Minute)
	h.c.RemoveExpired()
	_, err := h.c.Describe("idle")
	wantErr(t, "describe an expired id", err, kerr.TransactionalIDNotFound)
	h.state("busy")
	h.start(2)
	_, err = h.c.Describe("idle")
	wantErr(t, "describe an expired id after a reload", err, kerr.TransactionalIDNotFound)
	if m := h.state("busy"); m.State != StateOngoing {
		t.Errorf("busy after reload: %s", m.State)
	}
	fresh := h.init("idle")
	if fresh.Epoch != 0 {
		t.Errorf("an expired id comes back at epoch %d, want 0", fresh.Epoch)
	}
}

func TestStateLogErrors(t *testing.T) {
	h := newHarness(t)
	p := h.init("t")
	h.log.FailNext(kerr.NotLeaderForPartition)
	wantErr(t, "add on a deposed leader", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), kerr.NotCoordinator)
	h.log.FailNext(kerr.NotEnoughReplicas)
	wantErr(t, "add without enough replicas", h.c.AddPartitions("t", p, []TopicPartition{tpA}, false), kerr.CoordinatorNotAvailable)
	if m := h.state("t"); m.State != StateEmpty {
		t.Errorf("a failed write changed the state to %s", m.State)
	}
	h.c.Reconcile(nil, testPartitions)
	_, err := h.c.Describe("t")
	wantErr(t, "describe once no partition is led", err, kerr.NotCoordinator)
}

func TestListFilters(t *testing.T) {
	h := newHarness(t)
	p1 := h.init("a1")
	h.init("b1")
	wantErr(t, "add", h.c.AddPartitions("a1", p1, []TopicPartition{tpA}, false), nil)
	h.clock.add(10 * time.Second)
	ids := func(f ListFilter) []string {
		var out []string
		list, _ := h.c.List(f)
		for _, d := range list {
			out = append(out, d.TransactionalID)
		}
		return out
	}
	if got := ids(ListFilter{MinDurationMs: -1}); len(got) != 2 {
		t.Errorf("all: %v", got)
	}
	if got := ids(ListFilter{States: []State{StateOngoing}, MinDurationMs: -1}); len(got) != 1 || got[0] != "a1" {
		t.Errorf("ongoing: %v", got)
	}
	if got := ids(ListFilter{ProducerIDs: []int64{p1.ID}, MinDurationMs: -1}); len(got) != 1 || got[0] != "a1" {
		t.Errorf("by producer id: %v", got)
	}
	if got := ids(ListFilter{States: []State{StateOngoing}, MinDurationMs: 10_001}); len(got) != 0 {
		t.Errorf("running longer than 10.001 s: %v", got)
	}
	if got := ids(ListFilter{States: []State{StateOngoing}, MinDurationMs: 10_000}); len(got) != 1 {
		t.Errorf("running at least 10 s: %v", got)
	}
	if got := ids(ListFilter{MinDurationMs: -1, IDPattern: func(s string) bool { return s[0] == 'b' }}); len(got) != 1 || got[0] != "b1" {
		t.Errorf("by pattern: %v", got)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	m := &Metadata{TransactionalID: "t", ProducerID: 7, PrevProducerID: 3, NextProducerID: -1, ProducerEpoch: 4,
		TimeoutMs: 1000, State: StateOngoing, StartTimestamp: 5, LastUpdateTimestamp: 6, ClientTransactionVersion: 2,
		Partitions: map[TopicPartition]struct{}{tpA: {}, tpB: {}, {"a", 3}: {}}}
	// Value v0 (transaction.version 0) has none of the tagged fields.
	if _, v0, ok, err := decodeTxnRecord(txnKey("t"), txnValue(m, 0)); err != nil || !ok ||
		v0.PrevProducerID != -1 || v0.ClientTransactionVersion != 0 || v0.ProducerID != 7 || len(v0.Partitions) != 3 {
		t.Errorf("value v0: %+v %v %v", v0, ok, err)
	}
	id, got, ok, err := decodeTxnRecord(txnKey("t"), txnValue(m, 1))
	if err != nil || !ok || id != "t" {
		t.Fatalf("decode: %q %v %v", id, ok, err)
	}
	got.LastProducerEpoch = m.LastProducerEpoch
	if got.ProducerID != 7 || got.PrevProducerID != 3 || got.ProducerEpoch != 4 || got.State != StateOngoing ||
		got.ClientTransactionVersion != 2 || len(got.Partitions) != 3 || got.StartTimestamp != 5 || got.LastUpdateTimestamp != 6 {
		t.Errorf("round trip: %+v", got)
	}
	if _, tomb, ok, err := decodeTxnRecord(txnKey("t"), nil); err != nil || !ok || tomb != nil {
		t.Errorf("tombstone: %v %v %v", tomb, ok, err)
	}
	if _, _, _, err := decodeTxnRecord([]byte{0}, nil); err == nil {
		t.Error("a one-byte key decoded")
	}
}

// TestPartitionFor checks the placement against Java's String.hashCode.
func TestPartitionFor(t *testing.T) {
	for _, tt := range []struct {
		id   string
		n    int32
		want int32
	}{
		{"", 50, 0},
		{"a", 50, 97 % 50},
		{"my-txn", 50, 45},            // hashCode -1061187895
		{"polygenelubricants", 50, 0}, // hashCode is MinInt32: Utils.abs gives 0
	} {
		if got := PartitionFor(tt.id, tt.n); got != tt.want {
			t.Errorf("PartitionFor(%q, %d) = %d, want %d", tt.id, tt.n, got, tt.want)
		}
	}
}

// TestValueVersionFollowsTransactionVersion: at transaction.version 0 the
// state records are TransactionLogValue v0, from level 1 on v1, as Kafka
// writes them; the level comes from the metadata image.
func TestValueVersionFollowsTransactionVersion(t *testing.T) {
	for _, level := range []int16{0, 1, 2} {
		log := newMemLog()
		c := NewCoordinator(Options{Config: testConfig(), Log: log, Markers: &stubLeaders{},
			Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
			ProducerIDs: func(context.Context) (int64, error) { return 7, nil }})
		t.Cleanup(c.Close)
		id := metadata.NewUuid()
		recs := []metadata.Record{&metadata.TopicRecord{Name: metadata.TransactionStateTopic, TopicID: id}}
		for p := range int32(testPartitions) {
			recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1})
		}
		if level > 0 {
			recs = append(recs, &metadata.FeatureLevelRecord{Name: metadata.FeatureTransactionVersion, FeatureLevel: level})
		}
		img, err := metadata.EmptyImage().Apply(0, recs)
		if err != nil {
			t.Fatal(err)
		}
		c.ApplyImage(img)
		poll.True(t, 5*time.Second, "the load", func() bool { return c.CheckOwner("t") == nil })
		if _, err := c.InitProducerID(context.Background(), "t", 1000, noProducer); err != nil {
			t.Fatal(err)
		}
		p := c.PartitionFor("t")
		batch := log.Batches(p)[0]
		_, rs, err := record.DecodeRecords(batch)
		if err != nil {
			t.Fatal(err)
		}
		want := int16(1)
		if level == 0 {
			want = 0
		}
		if got := int16(binary.BigEndian.Uint16(rs[0].Value)); got != want {
			t.Errorf("transaction.version %d: value v%d, want v%d", level, got, want)
		}
	}
}
