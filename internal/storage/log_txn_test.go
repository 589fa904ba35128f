package storage

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
)

// txnData is a transactional batch of n records from producer pid.
func txnData(pid int64, epoch int16, seq int32, n int) []byte {
	return testBatch{records: n, valueSize: 8, firstTs: 1000, tsStep: 1, producerID: pid, producerEpoch: epoch, baseSeq: seq, attributes: 0x10}.build()
}

// marker is a commit or abort marker for producer pid.
func marker(t testing.TB, pid int64, epoch int16, commit bool, coordinatorEpoch int32) []byte {
	t.Helper()
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	b, err := record.BuildMarkerBatch(pid, epoch, record.Marker{Type: typ, CoordinatorEpoch: coordinatorEpoch}, 2000)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLastStableOffsetFollowsTransactions: an open transaction holds the
// last stable offset at its first offset; its marker frees it once the
// high watermark passes the marker (not before: a marker a leader change
// could lose must not release the data), and an abort is listed with
// Kafka's fields for read_committed fetches.
func TestLastStableOffsetFollowsTransactions(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	defer l.Close()
	mustAppend(t, l, simple(2, 8, 1000), 0)        // 0-1 plain
	mustAppend(t, l, txnData(7, 0, 0, 3), 0)       // 2-4 txn of 7
	mustAppend(t, l, txnData(8, 0, 0, 1), 0)       // 5 txn of 8
	mustAppend(t, l, marker(t, 7, 0, false, 3), 0) // 6 abort of 7
	l.AdvanceHighWatermark(6)
	if got := l.LastStableOffset(); got != 2 {
		t.Fatalf("LSO %d with the marker above the high watermark, want 2 (first offset of the aborted transaction)", got)
	}
	l.AdvanceHighWatermark(7)
	if got := l.LastStableOffset(); got != 5 {
		t.Fatalf("LSO %d, want 5 (producer 8's open transaction)", got)
	}
	want := []AbortedTxn{{ProducerID: 7, FirstOffset: 2, LastOffset: 6, LastStableOffset: 5}}
	if got := l.AbortedTransactions(0, 7); !slices.Equal(got, want) {
		t.Fatalf("aborted %+v, want %+v", got, want)
	}
	if got := l.AbortedTransactions(7, 8); len(got) != 0 {
		t.Fatalf("aborted after the marker: %+v", got)
	}
	mustAppend(t, l, marker(t, 8, 0, true, 3), 0) // 7 commit of 8
	l.AdvanceHighWatermark(8)
	if got := l.LastStableOffset(); got != 8 {
		t.Fatalf("LSO %d with no transaction open, want the high watermark 8", got)
	}
	if first, open := l.FirstUnstableOffset(); open {
		t.Fatalf("first unstable offset %d with no transaction open", first)
	}
	// A commit is not an aborted transaction.
	if got := l.AbortedTransactions(0, 8); len(got) != 1 {
		t.Fatalf("aborted %+v, want only producer 7's", got)
	}

	// Kafka's .txnindex entry: version 0 | pid | first | last | LSO.
	data, err := os.ReadFile(segmentFileName(dir, 0, txnIndexFileSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if len(data) != 34 {
		t.Fatalf(".txnindex is %d bytes, want one 34-byte entry", len(data))
	}
	be := binary.BigEndian
	if be.Uint16(data) != 0 || be.Uint64(data[2:]) != 7 || be.Uint64(data[10:]) != 2 || be.Uint64(data[18:]) != 6 || be.Uint64(data[26:]) != 5 {
		t.Fatalf(".txnindex entry % x", data)
	}
}

// TestTransactionalRulesOnAppend: a plain batch inside an open transaction
// is INVALID_TXN_STATE; a verified append needs the guard of its
// verification, which a marker written meanwhile invalidates (KIP-890); a
// marker from an older producer or coordinator epoch is refused. Nothing
// is appended on error.
func TestTransactionalRulesOnAppend(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	appendTxn := func(batch []byte, g VerificationGuard) error {
		_, _, err := l.AppendTxnUnflushed(batch, 0, TxnAppend{Guard: g})
		return err
	}
	expect := func(err error, want *kerr.Error) {
		t.Helper()
		if !errors.Is(err, want) {
			t.Fatalf("error %v, want %v", err, want)
		}
	}

	g, needed := l.StartTransactionVerification(7, 0, false)
	if !needed {
		t.Fatal("no open transaction, yet no verification needed")
	}
	leo := l.LogEndOffset()
	expect(appendTxn(txnData(7, 0, 0, 1), g+1), kerr.InvalidTxnState)
	if l.LogEndOffset() != leo {
		t.Fatal("refused batch was appended")
	}
	if err := appendTxn(txnData(7, 0, 0, 1), g); err != nil {
		t.Fatal(err)
	}
	// The transaction is open: later batches need no check.
	g2, needed := l.StartTransactionVerification(7, 0, false)
	if needed {
		t.Fatal("open transaction needs verification")
	}
	plain := testBatch{records: 1, valueSize: 8, firstTs: 1000, producerID: 7, producerEpoch: 0, baseSeq: 1}.build()
	expect(appendTxn(plain, NoVerification), kerr.InvalidTxnState)
	// The coordinator ends the transaction before the next batch lands:
	// the guard of the open transaction opens no new one.
	mustAppend(t, l, marker(t, 7, 0, true, 1), 0)
	expect(appendTxn(txnData(7, 0, 1, 1), g2), kerr.InvalidTxnState)

	expect(appendTxn(marker(t, 7, 0, true, 0), NoVerification), kerr.TransactionCoordinatorFenced)
	mustAppend(t, l, txnData(7, 1, 0, 1), 0) // epoch 1 (unverified append)
	expect(appendTxn(marker(t, 7, 0, false, 1), NoVerification), kerr.InvalidProducerEpoch)
	expect(appendTxn(txnData(7, 0, 5, 1), NoVerification), kerr.InvalidProducerEpoch)
}

// TestTxnIndexAndOpenTransactionsSurviveRestart: after a clean restart the
// open transaction still holds the last stable offset (producer-state
// snapshot) and the aborted transactions are read from the .txnindex;
// after a crash that tore the index mid-entry, or lost it, recovery
// rebuilds it from the markers in the log.
func TestTxnIndexAndOpenTransactionsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	l := openTestLog(t, dir, cfg, OpenOptions{})
	var want []AbortedTxn
	for i := range 40 {
		pid := int64(100 + i)
		first := mustAppend(t, l, txnData(pid, 0, 0, 2), 0).BaseOffset
		last := mustAppend(t, l, marker(t, pid, 0, i%2 == 1, 0), 0).BaseOffset
		if i%2 == 0 {
			want = append(want, AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: last, LastStableOffset: last + 1})
		}
	}
	open := mustAppend(t, l, txnData(9, 0, 0, 1), 0).BaseOffset
	leo := l.LogEndOffset()
	l.AdvanceHighWatermark(leo)
	if l.NumSegments() < 2 {
		t.Fatalf("want several segments, have %d", l.NumSegments())
	}
	check := func(l *Log, what string) {
		t.Helper()
		l.AdvanceHighWatermark(leo)
		if got := l.AbortedTransactions(0, leo); !slices.Equal(got, want) {
			t.Fatalf("%s: aborted transactions\n%+v\nwant\n%+v", what, got, want)
		}
		if got := l.LastStableOffset(); got != open {
			t.Fatalf("%s: LSO %d, want %d (the open transaction)", what, got, open)
		}
	}
	check(l, "before restart")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: true, RecoveryPoint: leo, HighWatermark: leo})
	check(l, "clean restart")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// A crash: the last segments' indexes are torn or gone, and nothing
	// past the log start was flushed.
	segs, err := cleanDirAndListSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tore, removed bool
	for i := len(segs) - 1; i >= 0 && !(tore && removed); i-- {
		path := segmentFileName(dir, segs[i], txnIndexFileSuffix)
		fi, err := os.Stat(path)
		if err != nil {
			continue
		}
		if !tore {
			if err := os.Truncate(path, fi.Size()-20); err != nil {
				t.Fatal(err)
			}
			tore = true
		} else {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			removed = true
		}
	}
	if !tore || !removed {
		t.Fatal("want two segments with aborted transactions")
	}
	// Recovery point 0: every segment is rebuilt from its batches, the
	// transaction indexes by the producer-state replay.
	l = openTestLog(t, dir, cfg, OpenOptions{RecoveryPoint: 0, HighWatermark: leo})
	defer l.Close()
	check(l, "recovery")
}

// TestTxnIndexTornTail: a torn last entry is cut at open and reported, so
// the segment is rebuilt.
func TestTxnIndexTornTail(t *testing.T) {
	entries := []AbortedTxn{{1, 0, 4, 5}, {2, 6, 9, 10}}
	data := append(encodeTxnIndex(entries), 0, 0, 0)
	got, err := decodeTxnIndex(data, 100)
	if !errors.Is(err, errBadTxnIndex) || !slices.Equal(got, entries) {
		t.Fatalf("decode torn tail: %+v, %v", got, err)
	}
	if _, err := decodeTxnIndex(encodeTxnIndex(entries), 9); !errors.Is(err, errBadTxnIndex) {
		t.Fatal("an entry past the segment end was accepted")
	}
	bad := encodeTxnIndex(entries)
	bad[34] = 1 // second entry's version
	if got, err := decodeTxnIndex(bad, 100); !errors.Is(err, errBadTxnIndex) || len(got) != 1 {
		t.Fatalf("unknown version: %+v, %v", got, err)
	}
}

// TestFollowerBuildsTheSameTransactionState: a follower appending the
// leader's batches gets the same open transactions, aborted transactions
// and last stable offset, so it serves read_committed the same once it
// leads.
func TestFollowerBuildsTheSameTransactionState(t *testing.T) {
	leader := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer leader.Close()
	mustAppend(t, leader, txnData(7, 0, 0, 2), 3)
	mustAppend(t, leader, txnData(8, 0, 0, 1), 3)
	mustAppend(t, leader, marker(t, 7, 0, false, 1), 3)
	mustAppend(t, leader, txnData(9, 0, 0, 1), 3)
	leo := leader.LogEndOffset()
	res, err := leader.Read(0, 1<<20, leo, true)
	if err != nil {
		t.Fatal(err)
	}
	follower := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer follower.Close()
	if _, err := follower.AppendAsFollower(res.Data); err != nil {
		t.Fatal(err)
	}
	leader.AdvanceHighWatermark(leo)
	follower.SetHighWatermark(leo)
	if got, want := follower.AbortedTransactions(0, leo), leader.AbortedTransactions(0, leo); !slices.Equal(got, want) || len(got) != 1 {
		t.Fatalf("follower aborted %+v, leader %+v", got, want)
	}
	if got, want := follower.LastStableOffset(), leader.LastStableOffset(); got != want || got != 2 {
		t.Fatalf("follower LSO %d, leader %d, want 2 (producer 8's open transaction)", got, want)
	}
	if !slices.Equal(follower.Producers(), leader.Producers()) {
		t.Fatalf("producer state differs:\n%+v\n%+v", follower.Producers(), leader.Producers())
	}
}

// TestProducerExpirationKeepsOpenTransactions: producer.id.expiration.ms
// removes idle producers but never one whose transaction is open (it holds
// the last stable offset until its marker), and drops verification guards
// whose append never came.
func TestProducerExpirationKeepsOpenTransactions(t *testing.T) {
	clock := &fakeClock{ms: 1_000_000}
	cfg := testConfig()
	cfg.ProducerIDExpirationMs = 1000
	l := openTestLog(t, t.TempDir(), cfg, OpenOptions{Now: clock.now})
	defer l.Close()
	mustAppend(t, l, txnData(7, 0, 0, 1), 0)                                                                       // open, old timestamps
	mustAppend(t, l, testBatch{records: 1, firstTs: 1000, producerID: 8, producerEpoch: 0, baseSeq: 0}.build(), 0) // idle
	g, _ := l.StartTransactionVerification(9, 0, false)
	clock.ms += 2000
	if n := l.RemoveExpiredProducers(); n != 1 {
		t.Fatalf("%d producers expired, want 1 (producer 8)", n)
	}
	var ids []int64
	for _, p := range l.Producers() {
		ids = append(ids, p.ProducerID)
	}
	if !slices.Equal(ids, []int64{7}) {
		t.Fatalf("producers after expiration %v, want [7]", ids)
	}
	l.AdvanceHighWatermark(l.LogEndOffset())
	if got := l.LastStableOffset(); got != 0 {
		t.Fatalf("LSO %d, want 0: the open transaction still holds it", got)
	}
	if _, _, err := l.AppendTxnUnflushed(txnData(9, 0, 0, 1), 0, TxnAppend{Guard: g}); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("append with an expired verification: %v, want INVALID_TXN_STATE", err)
	}
}

// TestNewEpochNeedsItsOwnVerification (KIP-890 part 2): a batch of a later
// epoch while the earlier epoch's transaction is still open here (its
// marker not written yet) starts a new transaction, so it is verified, and
// without its guard it is INVALID_TXN_STATE rather than folded into the old
// transaction.
func TestNewEpochNeedsItsOwnVerification(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	g, _ := l.StartTransactionVerification(7, 0, false)
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 0, 0, 1), 0, TxnAppend{Guard: g}); err != nil {
		t.Fatal(err)
	}
	if _, needed := l.StartTransactionVerification(7, 0, false); needed {
		t.Fatal("the open transaction's epoch needs verification")
	}
	g1, needed := l.StartTransactionVerification(7, 1, false)
	if !needed {
		t.Fatal("a later epoch's batch was taken as part of the open transaction")
	}
	// (A transaction.version 1 guard: the marker below ends it.)
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 1, 0, 1), 0, TxnAppend{Guard: verifiedOngoing}); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("unverified batch of a new epoch: %v, want INVALID_TXN_STATE", err)
	}
	mustAppend(t, l, marker(t, 7, 1, true, 0), 0) // the old transaction's marker, at the bumped epoch
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 1, 0, 1), 0, TxnAppend{Guard: g1}); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("a guard from before the marker: %v, want INVALID_TXN_STATE", err)
	}
	g2, _ := l.StartTransactionVerification(7, 1, false)
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 1, 0, 1), 0, TxnAppend{Guard: g2}); err != nil {
		t.Fatalf("verified batch of the new transaction: %v", err)
	}
}

// TestTruncationReopensTransactions: a follower truncating below an abort
// marker (its leader never had it) loses the marker's .txnindex entry and
// sees the transaction open again, holding the last stable offset, until
// the marker is replicated anew.
func TestTruncationReopensTransactions(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	first := mustAppend(t, l, txnData(7, 0, 0, 2), 0).BaseOffset
	at := mustAppend(t, l, marker(t, 7, 0, false, 0), 0).BaseOffset
	l.AdvanceHighWatermark(l.LogEndOffset())
	if err := l.Truncate(at); err != nil {
		t.Fatal(err)
	}
	l.SetHighWatermark(at)
	if got := l.AbortedTransactions(0, at+1); len(got) != 0 {
		t.Fatalf("aborted transactions after truncating the marker: %+v", got)
	}
	if got := l.LastStableOffset(); got != first {
		t.Fatalf("LSO %d after truncating the marker, want %d (the transaction is open again)", got, first)
	}
	mustAppend(t, l, marker(t, 7, 0, false, 0), 0)
	l.AdvanceHighWatermark(l.LogEndOffset())
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].FirstOffset != first {
		t.Fatalf("aborted transactions after the marker came back: %+v", got)
	}
}

// TestTV2VerificationSurvivesTheMarkerOfItsEpoch (KIP-890 part 2): at
// transaction.version 2 the previous transaction's marker carries the
// bumped epoch the next transaction uses. A verification of that epoch,
// begun before the marker was written and granted by the coordinator once
// the previous transaction was complete, is the next transaction's: the
// marker leaves it, and the append it guards opens the transaction. A
// marker of another epoch still ends it.
func TestTV2VerificationSurvivesTheMarkerOfItsEpoch(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	g, _ := l.StartTransactionVerification(7, 0, true)
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 0, 0, 1), 0, TxnAppend{Guard: g}); err != nil {
		t.Fatal(err)
	}
	g1, needed := l.StartTransactionVerification(7, 1, true)
	if !needed {
		t.Fatal("a later epoch's batch was taken as part of the open transaction")
	}
	mustAppend(t, l, marker(t, 7, 1, true, 0), 0) // the previous transaction's marker, at the bumped epoch
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 1, 0, 1), 0, TxnAppend{Guard: g1}); err != nil {
		t.Fatalf("a tv2 guard of the marker's epoch: %v", err)
	}
	mustAppend(t, l, marker(t, 7, 2, false, 0), 0)
	g2, _ := l.StartTransactionVerification(7, 3, true)
	mustAppend(t, l, marker(t, 7, 2, false, 0), 0) // a retried marker of an older epoch
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 3, 0, 1), 0, TxnAppend{Guard: g2}); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("a guard across a marker of another epoch: %v, want INVALID_TXN_STATE", err)
	}
}

// TestTV2MarkerRetriedAfterCoordinatorFailover (KIP-890 part 2): a
// transaction.version 2 marker, at the bumped epoch, that a new
// coordinator writes again after the previous one had written it (the
// failover reloads the transaction prepared and sends all its markers) is
// accepted, completing nothing, so the new coordinator can complete the
// transaction. A marker at the epoch of an open transaction's data is
// still a zombie's.
func TestTV2MarkerRetriedAfterCoordinatorFailover(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	g, _ := l.StartTransactionVerification(7, 0, true)
	first, _, err := l.AppendTxnUnflushed(txnData(7, 0, 0, 2), 0, TxnAppend{Guard: g})
	if err != nil {
		t.Fatal(err)
	}
	bumped := TxnAppend{MarkerBumpsEpoch: true}
	if _, _, err := l.AppendTxnUnflushed(marker(t, 7, 1, false, 0), 0, bumped); err != nil {
		t.Fatalf("the marker: %v", err)
	}
	// The coordinator is killed before its Complete record; the next
	// one, at coordinator epoch 1, writes the marker again.
	if _, _, err := l.AppendTxnUnflushed(marker(t, 7, 1, false, 1), 0, bumped); err != nil {
		t.Fatalf("the marker again from the new coordinator: %v, want it accepted", err)
	}
	l.AdvanceHighWatermark(l.LogEndOffset())
	if got := l.AbortedTransactions(0, l.LogEndOffset()); len(got) != 1 || got[0].FirstOffset != first.BaseOffset {
		t.Fatalf("aborted transactions: %+v, want the one transaction once", got)
	}
	if got := l.LastStableOffset(); got != l.LogEndOffset() {
		t.Fatalf("LSO %d, want the log end %d", got, l.LogEndOffset())
	}
	// The next transaction, at the bumped epoch, is open: a marker at its
	// own epoch is refused.
	g1, _ := l.StartTransactionVerification(7, 1, true)
	if _, _, err := l.AppendTxnUnflushed(txnData(7, 1, 0, 1), 0, TxnAppend{Guard: g1}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.AppendTxnUnflushed(marker(t, 7, 1, true, 1), 0, bumped); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("a tv2 marker at the open transaction's epoch: %v, want INVALID_PRODUCER_EPOCH", err)
	}
}
