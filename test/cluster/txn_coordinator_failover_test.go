package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionCoordinatorFailover: a transactional producer commits and
// aborts transactions over three partitions (RF 3, min.insync.replicas 2;
// __transaction_state with Kafka's defaults, RF 3 and min.isr 2) while the
// node coordinating its transactional id is killed and restarted, twice,
// and then the leader of a partition it writes.
// Afterwards every transaction is all or nothing on read_committed: a
// commit that was acknowledged is wholly visible, an abort wholly
// invisible, one whose outcome the producer never learnt is either, and no
// record appears twice. The new coordinator loads the id's state from
// __transaction_state and finishes what the old one had prepared.
//
// It runs at transaction.version 1 (KIP-890 part 1: the client adds each
// partition) and 2 (part 2: the partition leader adds it, the epoch bumps
// at every EndTxn), one after the other on the same cluster. It needs both
// halves of transactions (WriteTxnMarkers on the partition leaders) and
// skips, saying so, when the cluster does not serve them.
func TestTransactionCoordinatorFailover(t *testing.T) {
	c := StartCluster(t)
	resp, err := c.requestFrom(1, kmsg.NewPtrApiVersionsRequest(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	served := false
	for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
		served = served || k.ApiKey == int16(kmsg.WriteTxnMarkers)
	}
	if !served {
		t.Fatal("the cluster does not serve WriteTxnMarkers")
	}
	for _, tv := range []int16{1, 2} {
		t.Run(fmt.Sprintf("transaction.version=%d", tv), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// From the bootstrap level 2 down to 1 (a safe downgrade),
			// then back up.
			typ := int8(1)
			if tv < 2 {
				typ = 2
			}
			res, err := c.Admin().UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: "transaction.version", MaxVersionLevel: tv, UpgradeType: typ})
			if err != nil || res["transaction.version"].Err != nil {
				t.Fatalf("transaction.version to %d: %v %v", tv, err, res)
			}
			txnFailover(t, c, fmt.Sprintf("txn-failover-tv%d", tv), fmt.Sprintf("failover-txn-tv%d", tv))
		})
	}
}

func txnFailover(t *testing.T, c *Cluster, topic, id string) {
	const partitions, perTxn = 3, 6
	c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})

	coordinator := func() int32 {
		var node int32 = -1
		waitFor(t, 60*time.Second, "the transaction coordinator", func() (bool, string) {
			for _, from := range c.responsive() {
				req := kmsg.NewPtrFindCoordinatorRequest()
				req.CoordinatorType, req.CoordinatorKeys = 1, []string{id}
				resp, err := c.requestFrom(from, req, 5*time.Second)
				if err != nil {
					continue
				}
				co := resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
				if co.ErrorCode == 0 {
					node = co.NodeID
					return true, ""
				}
			}
			return false, "no node names a coordinator"
		})
		return node
	}
	newProducer := func() *kgo.Client {
		return c.Client(kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequestTimeoutOverhead(5*time.Second),
			kgo.RetryTimeout(30*time.Second))
	}

	type outcome int
	const (
		committed outcome = iota
		aborted
		unknown
	)
	results := map[int]outcome{}
	cl := newProducer()
	txn := 0
	run := func(n int) {
		for range n {
			txn++
			ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
			err := cl.BeginTransaction()
			for j := 0; err == nil && j < perTxn; j++ {
				r := &kgo.Record{Topic: topic, Partition: int32(j % partitions), Value: fmt.Appendf(nil, "%d-%d", txn, j)}
				err = cl.ProduceSync(ctx, r).FirstErr()
			}
			abort := txn%4 == 3
			try := kgo.TryCommit
			if abort || err != nil {
				try = kgo.TryAbort
			}
			if endErr := cl.EndTransaction(ctx, try); endErr != nil || err != nil {
				results[txn] = unknown
				t.Logf("transaction %d: produce %v, end %v; its outcome is unknown", txn, err, endErr)
				// A producer that failed mid-transaction starts over.
				cl.Close()
				cl = newProducer()
			} else if try == kgo.TryAbort {
				results[txn] = aborted
			} else {
				results[txn] = committed
			}
			cancel()
		}
	}
	// The leader of a data partition the transactions write, for the
	// round that kills a partition leader rather than the coordinator.
	partitionLeader := func() int32 {
		var leader int32 = -1
		waitFor(t, 30*time.Second, "the leader of "+topic+"-0", func() (bool, string) {
			for _, from := range c.responsive() {
				v, err := c.topicFrom(from, topic)
				if err == nil && v.Partitions[0].Leader >= 0 {
					leader = v.Partitions[0].Leader
					return true, ""
				}
			}
			return false, "no leader"
		})
		return leader
	}
	run(8)
	for round, what := range []string{"the transaction coordinator", "the transaction coordinator", "the leader of " + topic + "-0"} {
		victim := coordinator()
		if round == 2 {
			victim = partitionLeader()
		}
		t.Logf("round %d: killing %s, node %d", round, what, victim)
		c.Node(victim).Kill()
		run(8)
		c.Node(victim).Restart()
		run(4)
	}
	cl.Close()

	// read_committed: all or nothing per transaction, never twice.
	offsets := map[int32]kgo.Offset{}
	for p := range int32(partitions) {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	reader := c.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	seen := map[string]int{}
	perTxnSeen := map[int]int{}
	want := 0
	for _, o := range results {
		if o == committed {
			want += perTxn
		}
	}
	deadline := time.Now().Add(60 * time.Second)
	quiet := 0
	for time.Now().Before(deadline) && quiet < 5 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := reader.PollFetches(ctx)
		cancel()
		if err := fs.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Logf("fetch: %v", err)
		}
		recs := fs.Records()
		if len(recs) == 0 && len(seen) >= want {
			quiet++
		}
		for _, r := range recs {
			v := string(r.Value)
			seen[v]++
			var n, j int
			if _, err := fmt.Sscanf(strings.Replace(v, "-", " ", 1), "%d %d", &n, &j); err != nil {
				t.Fatalf("record %q", v)
			}
			perTxnSeen[n]++
		}
	}
	for v, n := range seen {
		if n > 1 {
			t.Errorf("record %s read %d times", v, n)
		}
	}
	for n, o := range results {
		got := perTxnSeen[n]
		switch {
		case o == committed && got != perTxn:
			t.Errorf("committed transaction %d: %d of %d records visible", n, got, perTxn)
		case o == aborted && got != 0:
			t.Errorf("aborted transaction %d: %d records visible to read_committed", n, got)
		case o == unknown && got != 0 && got != perTxn:
			t.Errorf("transaction %d (outcome unknown to the producer): %d of %d records visible, want all or none", n, got, perTxn)
		}
	}
}
