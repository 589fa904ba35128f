package compat

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestLibrdkafkaTransactions: librdkafka's transactional producer
// (init_transactions, begin_transaction, send_offsets_to_transaction,
// commit_transaction, abort_transaction) against the broker, read back
// with isolation.level=read_committed (only the committed transactions, in
// order) and read_uncommitted (everything), and the group offset committed
// with the last transaction.
func TestLibrdkafkaTransactions(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	b := StartBroker(t)
	requireTransactionCoordinator(t, b)
	topic := uniqueTopic(t)
	createTopic(t, newAdmin(t, b), topic, 1, nil)

	var res struct {
		ReadCommitted   []string `json:"read_committed"`
		ReadUncommitted []string `json:"read_uncommitted"`
		Committed       int64    `json:"committed"`
	}
	runPythonScript(t, 150*time.Second, &res, "confluent_txn.py", b.Addr(), topic, topic+"-group")

	var committed, all []string
	for _, batch := range []struct {
		name   string
		n      int
		commit bool
	}{{"c", 10, true}, {"a", 10, false}, {"d", 5, true}} {
		for i := range batch.n {
			v := fmt.Sprintf("%s%d", batch.name, i)
			all = append(all, v)
			if batch.commit {
				committed = append(committed, v)
			}
		}
	}
	if !slices.Equal(res.ReadCommitted, committed) {
		t.Errorf("read_committed read %q, want %q", res.ReadCommitted, committed)
	}
	if !slices.Equal(res.ReadUncommitted, all) {
		t.Errorf("read_uncommitted read %q, want %q", res.ReadUncommitted, all)
	}
	if res.Committed != 5 {
		t.Errorf("offset committed with the transaction: %d, want 5", res.Committed)
	}
}
