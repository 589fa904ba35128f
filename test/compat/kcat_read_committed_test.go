package compat

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestKcatReadCommittedTransactions: a transactional franz-go producer commits,
// aborts and commits again; kcat with -X isolation.level=read_committed
// (librdkafka's default) prints only the committed records, in order, and
// with read_uncommitted the aborted ones too. The producer speaks Kafka
// 3.9's versions (KIP-890 part 1), so the test is about kcat's reading,
// not about the producer's protocol level. It needs both halves of
// transactions and skips only when the broker does not serve
// WriteTxnMarkers.
func TestKcatReadCommittedTransactions(t *testing.T) {
	t.Parallel()
	requireTool(t, "kcat")
	b := StartBroker(t, txnBrokerOptions...)
	adm := newAdmin(t, b)
	requireMarkers(t, adm)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	cl := newClient(t, b, kgo.TransactionalID(uniqueTopic(t)+"-txn"), kgo.MaxVersions(kversion.V3_9_0()),
		kgo.DefaultProduceTopic(topic))
	ctx := testContext(t, 60*time.Second)
	txn := func(prefix string, commit kgo.TransactionEndTry) {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatalf("BeginTransaction: %v", err)
		}
		for i := range 5 {
			if err := cl.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s%d", prefix, i))).FirstErr(); err != nil {
				t.Fatalf("transactional produce: %v", err)
			}
		}
		if err := cl.EndTransaction(ctx, commit); err != nil {
			t.Fatalf("EndTransaction: %v", err)
		}
	}
	txn("c", kgo.TryCommit)
	txn("a", kgo.TryAbort)
	txn("d", kgo.TryCommit)
	committed := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", `%s\n`)
	if want := "c0\nc1\nc2\nc3\nc4\nd0\nd1\nd2\nd3\nd4\n"; committed != want {
		t.Errorf("read_committed:\n%s\nwant:\n%s", committed, want)
	}
	uncommitted := runKcat(t, "", "-C", "-b", b.Addr(), "-t", topic, "-o", "beginning", "-e", "-q",
		"-X", "isolation.level=read_uncommitted", "-f", `%s\n`)
	if !strings.Contains(uncommitted, "a0\na1\na2\na3\na4\n") || strings.Count(uncommitted, "\n") != 15 {
		t.Errorf("read_uncommitted:\n%s\nwant all 15 records, the aborted ones too", uncommitted)
	}
}
