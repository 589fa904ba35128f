package compat

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLibrdkafkaTransactionalPipeline drives librdkafka's transactional producer
// (init_transactions, begin_transaction, send_offsets_to_transaction,
// commit_transaction, abort_transaction; KIP-890 part 1 only, as
// librdkafka 2.0 speaks it) in a consume-transform-produce loop and reads
// the output back with isolation.level=read_committed: each input exactly
// once, aborted copies visible only to read_uncommitted, the group's
// offsets committed with the transactions. Like the franz-go test it needs
// both halves of transactions and skips only when the broker does not
// serve WriteTxnMarkers.
func TestLibrdkafkaTransactionalPipeline(t *testing.T) {
	t.Parallel()
	requirePythonModule(t, "confluent_kafka", "python3-confluent-kafka")
	b := StartBroker(t, txnBrokerOptions...)
	adm := newAdmin(t, b)
	requireMarkers(t, adm)
	in, out := uniqueTopic(t)+"-in", uniqueTopic(t)+"-out"
	const inputs = 150
	createTopic(t, adm, in, 3, nil)
	createTopic(t, adm, out, 3, nil)
	ctx := testContext(t, 30*time.Second)
	producer := newClient(t, b)
	for i := range inputs {
		if err := producer.ProduceSync(ctx, &kgo.Record{Topic: in, Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
			t.Fatalf("producing the input: %v", err)
		}
	}
	var res struct {
		Committed   []string         `json:"committed"`
		Uncommitted []string         `json:"uncommitted"`
		Aborted     int              `json:"aborted"`
		Offsets     map[string]int64 `json:"offsets"`
	}
	runPythonScript(t, 150*time.Second, &res, "librdkafka_txn_pipeline.py", b.Addr(), in, out, uniqueTopic(t), uniqueTopic(t)+"-txn", strconv.Itoa(inputs))
	if res.Aborted == 0 {
		t.Fatal("no transaction was aborted")
	}
	seen := map[string]int{}
	for _, v := range res.Committed {
		seen[v]++
	}
	for i := range inputs {
		if n := seen[fmt.Sprintf("out-%d", i)]; n != 1 {
			t.Errorf("read_committed sees out-%d %d times, want once", i, n)
		}
	}
	if len(res.Committed) != inputs {
		t.Errorf("read_committed sees %d records, want %d", len(res.Committed), inputs)
	}
	if len(res.Uncommitted) != inputs+res.Aborted {
		t.Errorf("read_uncommitted sees %d records, want %d committed + %d aborted", len(res.Uncommitted), inputs, res.Aborted)
	}
	ends, err := adm.ListEndOffsets(testContext(t, 30*time.Second), in)
	if err != nil {
		t.Fatal(err)
	}
	for p, e := range ends[in] {
		if got := res.Offsets[strconv.Itoa(int(p))]; got != e.Offset {
			t.Errorf("%s-%d: committed %d, want the end offset %d", in, p, got, e.Offset)
		}
	}
}
