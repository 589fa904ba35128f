package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsOverSASLSSL: with every listener SASL_SSL, the
// inter-broker one included, transactions work across brokers: the
// partition leaders' KIP-890 AddPartitionsToTxn to the coordinator and the
// coordinator's WriteTxnMarkers to the leaders go over TLS with SASL/PLAIN,
// as the replica fetchers do. Committed transactions are read back with
// read_committed, an aborted one is not.
func TestTransactionsOverSASLSSL(t *testing.T) {
	secure, _ := WithSecureListeners(t)
	c := StartCluster(t, secure)
	const topic, partitions = "secure-txn", 3
	c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	prod := c.Client(kgo.TransactionalID("secure-txn"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	want := map[string]bool{}
	for txn := range 4 {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(partitions) {
			v := fmt.Sprintf("t%d-p%d", txn, p)
			if err := prod.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("transaction %d: produce to partition %d: %v", txn, p, err)
			}
			want[v] = txn != 2
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(txn != 2)); err != nil {
			t.Fatalf("transaction %d: end: %v", txn, err)
		}
	}
	cons := c.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(300*time.Millisecond))
	got := map[string]int{}
	waitFor(t, 60*time.Second, "the committed transactions read back", func() (bool, string) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cons.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
		return len(got) >= 9, fmt.Sprintf("read %v", got)
	})
	for v, committed := range want {
		if committed && got[v] != 1 || !committed && got[v] != 0 {
			t.Errorf("%s (committed %v) read %d times", v, committed, got[v])
		}
	}
}
