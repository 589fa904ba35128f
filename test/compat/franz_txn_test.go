package compat

// Exactly-once with franz-go: a GroupTransactSession consumes from an input
// topic, produces a transformed record per input to an output topic and
// commits its consumed offsets in the same transaction; some transactions
// are aborted on purpose, after which the session rewinds to the last
// committed offsets and processes those inputs again.
//
// This needs both halves of transactions: the coordinator (FindCoordinator
// type 1, InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn) and
// the partition side (transactional Produce, WriteTxnMarkers, TxnOffsetCommit,
// read_committed Fetch). The test skips, saying so, only when the broker does
// not serve WriteTxnMarkers, detected from ApiVersions at run time; with both
// halves present it runs for real.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnBrokerOptions host __transaction_state on one broker (Kafka's
// quickstart settings).
var txnBrokerOptions = []Option{
	WithOverride("transaction.state.log.replication.factor", "1"),
	WithOverride("transaction.state.log.min.isr", "1"),
}

// requireMarkers fails t when the broker does not serve WriteTxnMarkers,
// which exactly-once needs.
func requireMarkers(t *testing.T, adm *kadm.Client) {
	t.Helper()
	skipOnKfake(t, "transactions are exercised against Vltava")
	vs, err := adm.ApiVersions(testContext(t, 10*time.Second))
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatalf("ApiVersions: %v", v.Err)
		}
		if _, ok := v.KeyMaxVersion(int16(kmsg.WriteTxnMarkers)); !ok {
			t.Fatal("the broker does not serve WriteTxnMarkers: exactly-once needs it")
		}
	}
}

func TestFranzGroupTransactSession(t *testing.T) {
	for _, tv := range []int16{2, 1} {
		t.Run(fmt.Sprintf("transaction.version=%d", tv), func(t *testing.T) {
			t.Parallel()
			groupTransactSession(t, tv)
		})
	}
}

func groupTransactSession(t *testing.T, tv int16) {
	b := StartBroker(t, txnBrokerOptions...)
	adm := newAdmin(t, b)
	requireMarkers(t, adm)
	ctx := testContext(t, 120*time.Second)
	if tv < 2 {
		// Hide KIP-890 part 2: franz-go uses it only at level 2.
		res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: tv, UpgradeType: 2})
		if err != nil || res["transaction.version"].Err != nil {
			t.Fatalf("transaction.version to %d: %v %v", tv, err, res)
		}
	}
	in, out, group := uniqueTopic(t)+"-in", uniqueTopic(t)+"-out", uniqueTopic(t)
	const partitions, inputs = 3, 300
	createTopic(t, adm, in, partitions, nil)
	createTopic(t, adm, out, partitions, nil)
	producer := newClient(t, b)
	for i := range inputs {
		r := &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i%17), Value: fmt.Appendf(nil, "%d", i)}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("producing the input: %v", err)
		}
	}

	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(b.Addr()),
		kgo.TransactionalID(uniqueTopic(t)+"-txn"),
		kgo.TransactionTimeout(20*time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	committedInputs, aborted, round := 0, 0, 0
	for committedInputs < inputs {
		if ctx.Err() != nil {
			t.Fatalf("committed %d of %d inputs before the deadline", committedInputs, inputs)
		}
		fs := sess.PollRecords(ctx, 25) // several transactions, some aborted
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch: %v", fetchErrors(errs))
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("Begin: %v", err)
		}
		for _, r := range recs {
			o := &kgo.Record{Topic: out, Partition: r.Partition, Key: r.Key, Value: append([]byte("out-"), r.Value...)}
			if err := sess.ProduceSync(ctx, o).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
		round++
		abort := round%3 == 2
		how := kgo.TryCommit
		if abort {
			how = kgo.TryAbort
		}
		committed, err := sess.End(ctx, how)
		if err != nil {
			t.Fatalf("End (round %d, abort %v): %v", round, abort, err)
		}
		switch {
		case abort && committed:
			t.Fatalf("round %d: an abort reported a commit", round)
		case abort:
			aborted += len(recs)
		case committed:
			committedInputs += len(recs)
		}
	}
	if aborted == 0 {
		t.Fatal("no transaction was aborted: the test proves nothing about aborts")
	}

	readAll := func(level kgo.IsolationLevel) map[string]int {
		c := newClient(t, b, kgo.ConsumeTopics(out), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(level))
		seen := map[string]int{}
		n := 0
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := c.PollFetches(pctx)
			cancel()
			for _, r := range fs.Records() {
				if !strings.HasPrefix(string(r.Value), "out-") {
					t.Fatalf("unexpected output %q", r.Value)
				}
				seen[string(r.Value)]++
				n++
			}
			if level == kgo.ReadCommitted() && n >= inputs && len(fs.Records()) == 0 {
				break
			}
			if level == kgo.ReadUncommitted() && n >= inputs+aborted {
				break
			}
		}
		return seen
	}
	committedView := readAll(kgo.ReadCommitted())
	for i := range inputs {
		if got := committedView[fmt.Sprintf("out-%d", i)]; got != 1 {
			t.Errorf("read_committed sees out-%d %d times, want exactly once", i, got)
		}
	}
	if len(committedView) != inputs {
		t.Errorf("read_committed sees %d distinct outputs, want %d", len(committedView), inputs)
	}
	total := 0
	for _, n := range readAll(kgo.ReadUncommitted()) {
		total += n
	}
	if total != inputs+aborted {
		t.Errorf("read_uncommitted sees %d records, want %d committed + %d aborted", total, inputs, aborted)
	}

	// The consumed offsets committed with the transactions: the group is at
	// the end of every input partition.
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("FetchOffsets: %v", err)
	}
	ends, err := adm.ListEndOffsets(ctx, in)
	if err != nil {
		t.Fatalf("ListEndOffsets: %v", err)
	}
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := offsets.Lookup(in, e.Partition)
		if !ok || o.At != e.Offset {
			t.Errorf("%s-%d: committed %+v, want the end offset %d", in, e.Partition, o, e.Offset)
		}
	})
}
