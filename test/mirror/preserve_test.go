package mirror

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/poll"
)

// produceTxns writes rounds of transactional batches to topic, committing
// and aborting in turn, so that the source log has gaps: the aborted
// records and every transaction's marker take offsets no committed read
// returns.
func produceTxns(t testing.TB, addr, topic string, rounds int) {
	t.Helper()
	cl := clientOf(t, addr, kgo.TransactionalID("preserve-gaps"), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	ctx := context.Background()
	for i := 0; i < rounds; i++ {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < 20; j++ {
			cl.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprintf("txn%d-%d", i, j)), Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "round", Value: []byte(fmt.Sprint(i))}}}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(i%3 != 2)); err != nil {
			t.Fatal(err)
		}
	}
}

// offsetsOf is a topic's committed records by partition and offset.
func offsetsOf(t testing.TB, addr, topic string, want int) map[int32]map[int64]*kgo.Record {
	out := map[int32]map[int64]*kgo.Record{}
	for _, r := range readAll(t, addr, topic, want) {
		if out[r.Partition] == nil {
			out[r.Partition] = map[int64]*kgo.Record{}
		}
		if prev, ok := out[r.Partition][r.Offset]; ok && string(prev.Key) != string(r.Key) {
			t.Fatalf("%s[%d] offset %d read twice with different keys", topic, r.Partition, r.Offset)
		}
		out[r.Partition][r.Offset] = r
	}
	return out
}

// TestMirrorPreserveOffsets: with vltava.preserve.offsets every record of
// B's identity-named topic sits at its offset on A, the gaps that aborted
// transactions and markers leave on A included, across a SIGKILL of the
// mirror mid-stream (no duplicate, nothing lost). A remote topic that
// exists on B without the topic config is left alone.
func TestMirrorPreserveOffsets(t *testing.T) {
	a := startCluster(t, "A")
	b := startCluster(t, "B")
	createTopic(t, a.addr, "events", 3, nil)
	createTopic(t, a.addr, "taken", 1, nil)
	createTopic(t, b.addr, "taken", 1, nil) // exists on B with its own offsets
	produce(t, a.addr, "taken", 1, 0, 10)
	produceTxns(t, a.addr, "events", 12)

	props := mm2Props(a.addr, b.addr, "A->B.enabled = true", "A->B.vltava.preserve.offsets = true",
		"replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
		"emit.checkpoints.enabled = false", "B->A.emit.heartbeats.enabled = false")
	l := startLedger(t, a.addr, "events")
	m, _ := startMirror(t, props)
	poll.Until(t, mirrorTimeout, "records on B", func() error {
		if n := endSum(t, b.addr, "events"); n < 1000 {
			return fmt.Errorf("end offsets sum to %d", n)
		}
		return nil
	})
	m.kill()
	time.Sleep(500 * time.Millisecond) // A moves on while the mirror is down
	m2, _ := startMirror(t, props)
	time.Sleep(2 * time.Second)
	keys := l.finish()
	produceTxns(t, a.addr, "events", 3) // gaps after the restart too

	want := len(keys) + 20*10 // the committed transactions: 8 of the first 12, 2 of the last 3
	src := offsetsOf(t, a.addr, "events", want)
	var n int
	for _, recs := range src {
		n += len(recs)
	}
	if n != want {
		t.Fatalf("%d committed records on A, want %d", n, want)
	}
	dst := offsetsOf(t, b.addr, "events", want)
	gaps := 0
	for p, recs := range src {
		for off, r := range recs {
			got, ok := dst[p][off]
			if !ok {
				t.Fatalf("events[%d] offset %d (%s) is not at that offset on B", p, off, r.Key)
			}
			if string(got.Key) != string(r.Key) || string(got.Value) != string(r.Value) || !got.Timestamp.Equal(r.Timestamp) || len(got.Headers) != len(r.Headers) {
				t.Fatalf("events[%d] offset %d: %q on A, %q on B", p, off, r.Key, got.Key)
			}
			if _, ok := recs[off+1]; !ok && off+1 < maxOffset(recs) {
				gaps++
			}
		}
		if len(dst[p]) != len(recs) {
			t.Fatalf("events[%d]: %d records on A, %d on B (duplicates or strays)", p, len(recs), len(dst[p]))
		}
	}
	if gaps == 0 {
		t.Fatal("A's log has no gaps: the test does not test offset preservation")
	}
	t.Logf("%d records at their source offsets across a kill -9, %d gaps kept", n, gaps)

	// Failover by the documented steps: the group's offsets on A,
	// exported, are committed on B as they are, and point at the same
	// records there.
	commit := kadm.Offsets{}
	for p, recs := range src {
		at := maxOffset(recs) / 2
		for ; recs[at] == nil; at++ { // a committed offset names a record
		}
		commit.Add(kadm.Offset{Topic: "events", Partition: p, At: at, LeaderEpoch: -1})
	}
	if _, err := admin(t, a.addr).CommitOffsets(context.Background(), "billing", commit); err != nil {
		t.Fatal(err)
	}
	plan, err := run(t, "groups", "reset-offsets", "billing", "--all-topics", "--shift-by", "0", "--export", "--bootstrap-server", a.addr)
	if err != nil {
		t.Fatalf("export on A: %v\n%s", err, plan)
	}
	planFile := filepath.Join(t.TempDir(), "billing.csv")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, "groups", "reset-offsets", "billing", "--from-file", planFile, "--execute", "--bootstrap-server", b.addr); err != nil {
		t.Fatalf("reset on B: %v\n%s", err, out)
	}
	onB, err := admin(t, b.addr).FetchOffsets(context.Background(), "billing")
	if err != nil {
		t.Fatal(err)
	}
	commit.Each(func(o kadm.Offset) {
		got, ok := onB.Lookup("events", o.Partition)
		if !ok || got.At != o.At {
			t.Fatalf("billing on B for events[%d]: %+v, want %d (plan:\n%s)", o.Partition, got, o.At, plan)
		}
		if string(dst[o.Partition][o.At].Key) != string(src[o.Partition][o.At].Key) {
			t.Fatalf("events[%d] offset %d differs between A and B", o.Partition, o.At)
		}
	})

	if got := endSum(t, b.addr, "taken"); got != 0 {
		t.Fatalf("the pre-existing topic on B without vltava.preserve.offsets got %d records", got)
	}
	if out := m2.out.String(); !strings.Contains(out, "vltava.preserve.offsets=true") {
		t.Fatalf("no warning about the pre-existing topic on B; mirror output:\n%s", out)
	}
	if v := topicConfig(t, b.addr, "events", "vltava.preserve.offsets"); v != "true" {
		t.Fatalf("remote topic created with vltava.preserve.offsets=%q", v)
	}
}

func maxOffset(recs map[int64]*kgo.Record) int64 {
	m := int64(-1)
	for off := range recs {
		m = max(m, off)
	}
	return m
}
