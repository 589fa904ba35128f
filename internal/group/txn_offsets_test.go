package group

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
)

// txnCommit commits offsets in producer pid's transaction.
func txnCommit(t *testing.T, c *Coordinator, group string, pid int64, offsets map[TopicPartition]int64) {
	t.Helper()
	req := TxnCommitRequest{GroupID: group, TransactionalID: "tx", ProducerID: pid, Generation: -1}
	for tp, o := range offsets {
		req.Offsets = append(req.Offsets, CommitOffset{TopicPartition: tp, Offset: o, LeaderEpoch: -1, CommitTimestamp: -1})
	}
	err, errs := c.TxnCommitOffsets(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		if e != nil {
			t.Fatal(e)
		}
	}
}

// endTxn writes producer pid's marker to the group's partition and hands
// it to the coordinator, as WriteTxnMarkers does.
func endTxn(t *testing.T, c *Coordinator, log *memLog, group string, pid int64, commit bool) {
	t.Helper()
	typ := record.ControlAbort
	if commit {
		typ = record.ControlCommit
	}
	b, err := record.BuildMarkerBatch(pid, 0, record.Marker{Type: typ}, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := PartitionFor(group, c.cfg.NumPartitions)
	if err := log.Append(p, b); err != nil {
		t.Fatal(err)
	}
	if err := c.CompleteTransaction(p, pid, commit); err != nil {
		t.Fatal(err)
	}
}

// stable is one partition's offset under require_stable, or its error.
func stable(t *testing.T, c *Coordinator, group string, tp TopicPartition) (int64, error) {
	t.Helper()
	got, err := c.FetchOffsetsStable(group, nil, []TopicPartition{tp}, true)
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Offset, got[0].Err
}

// TestTransactionalOffsetsFollowTheirMarkers: offsets committed in a
// transaction become the group's on its commit marker and are dropped on
// an abort; while pending, require_stable answers UNSTABLE_OFFSET_COMMIT.
// A coordinator that reloads the partition applies the same rule to the
// log: the aborted transaction's offsets are never applied and the open
// one's are pending again until its marker.
func TestTransactionalOffsetsFollowTheirMarkers(t *testing.T) {
	log := newMemLog()
	c := newTestCoordinator(t, testConfig(), log, nil)
	a, b := TopicPartition{"t", 0}, TopicPartition{"t", 1}

	txnCommit(t, c, "g", 1, map[TopicPartition]int64{a: 10})
	if o := fetchOne(t, c, "g", a); o != -1 {
		t.Fatalf("pending offset visible: %d", o)
	}
	if _, err := stable(t, c, "g", a); !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("require_stable while pending: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}
	endTxn(t, c, log, "g", 1, true)
	if o, err := stable(t, c, "g", a); err != nil || o != 10 {
		t.Fatalf("after commit: %d, %v; want 10", o, err)
	}
	txnCommit(t, c, "g", 2, map[TopicPartition]int64{a: 20})
	endTxn(t, c, log, "g", 2, false)
	txnCommit(t, c, "g", 3, map[TopicPartition]int64{b: 30})
	if o := fetchOne(t, c, "g", a); o != 10 {
		t.Fatalf("after the abort: %d, want 10", o)
	}
	c.Close()

	c2 := newTestCoordinator(t, testConfig(), log, nil)
	if o, err := stable(t, c2, "g", a); err != nil || o != 10 {
		t.Fatalf("reloaded: %d, %v; want 10 (the aborted 20 never applied)", o, err)
	}
	if _, err := stable(t, c2, "g", b); !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("reloaded open transaction: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}
	endTxn(t, c2, log, "g", 3, true)
	if o, err := stable(t, c2, "g", b); err != nil || o != 30 {
		t.Fatalf("after the reloaded transaction's commit: %d, %v; want 30", o, err)
	}
}

// TestTxnOffsetCommitChecksTheMember (KIP-447): a commit naming a member
// must come from a member of the group with its generation.
func TestTxnOffsetCommitChecksTheMember(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	member, gen := joinAlone(t, c, "g")
	tp := TopicPartition{"t", 0}
	for _, tc := range []struct {
		name   string
		member string
		gen    int32
		want   *kerr.Error
	}{
		{"the member at its generation", member, gen, nil},
		{"a stale generation", member, gen - 1, kerr.IllegalGeneration},
		{"an unknown member", "nobody", gen, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, _ := c.TxnCommitOffsets(context.Background(), TxnCommitRequest{GroupID: "g", ProducerID: 5, Generation: tc.gen, MemberID: tc.member,
				Offsets: []CommitOffset{{TopicPartition: tp, Offset: 1, LeaderEpoch: -1, CommitTimestamp: -1}}})
			if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPlainCommitAfterTransactionalOneWins: a plain OffsetCommit written
// after a transaction's offset for the same partition is kept when the
// transaction commits (Kafka compares their places in the log), live and
// after a reload; a transactional commit after the plain one wins.
func TestPlainCommitAfterTransactionalOneWins(t *testing.T) {
	log := newMemLog()
	c := newTestCoordinator(t, testConfig(), log, nil)
	a, b := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	txnCommit(t, c, "g", 1, map[TopicPartition]int64{a: 10})
	commit(t, c, "g", map[TopicPartition]int64{a: 20, b: 5})
	txnCommit(t, c, "g", 1, map[TopicPartition]int64{b: 30})
	if _, err := stable(t, c, "g", a); !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("require_stable with a superseded pending offset: %v, want UNSTABLE_OFFSET_COMMIT until the marker", err)
	}
	// Reloaded before the marker, the state is the same.
	c.Close()
	c2 := newTestCoordinator(t, testConfig(), log, nil)
	endTxn(t, c2, log, "g", 1, true)
	for tp, want := range map[TopicPartition]int64{a: 20, b: 30} {
		if o, err := stable(t, c2, "g", tp); err != nil || o != want {
			t.Fatalf("%v: %d, %v; want %d", tp, o, err, want)
		}
	}
	// The same, live: no reload between the commits and the marker.
	txnCommit(t, c2, "h", 2, map[TopicPartition]int64{a: 10})
	commit(t, c2, "h", map[TopicPartition]int64{a: 20})
	endTxn(t, c2, log, "h", 2, true)
	if o, err := stable(t, c2, "h", a); err != nil || o != 20 {
		t.Fatalf("live: %d, %v; want the later plain commit 20", o, err)
	}
	c2.Close()
	c3 := newTestCoordinator(t, testConfig(), log, nil)
	for tp, want := range map[TopicPartition]int64{a: 20, b: 30} {
		if o, err := stable(t, c3, "g", tp); err != nil || o != want {
			t.Fatalf("reloaded %v: %d, %v; want %d", tp, o, err, want)
		}
	}
}
