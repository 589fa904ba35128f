package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// startTxnVltava starts a node that can host __transaction_state alone
// (Kafka's quickstart settings).
func startTxnVltava(t *testing.T) *broker {
	t.Helper()
	b := &broker{kind: "vltava", addr: freeAddr(t), dataDir: t.TempDir()}
	b.start(t, mustBinary(t, vltavaBinary), "server",
		"--override", "listeners=PLAINTEXT://"+b.addr,
		"--override", "log.dirs="+b.dataDir,
		"--override", "admin.listeners=",
		"--override", "transaction.state.log.replication.factor=1",
		"--override", "transaction.state.log.min.isr=1",
		"--log-level", "warn")
	return b
}

// openTransaction opens a transaction of id over topic-0 with raw
// InitProducerId and AddPartitionsToTxn requests (kgo routes both to the
// id's coordinator).
func openTransaction(t *testing.T, b *broker, id, topic string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var pid int64
	var epoch int16
	for {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60_000
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("InitProducerId: %v", err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			if kerr.IsRetriable(err) && ctx.Err() == nil {
				continue
			}
			t.Fatalf("InitProducerId: %v", err)
		}
		pid, epoch = resp.ProducerID, resp.ProducerEpoch
		break
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = id, pid, epoch
	at := kmsg.NewAddPartitionsToTxnRequestTopic()
	at.Topic, at.Partitions = topic, []int32{0}
	add.Topics = append(add.Topics, at)
	resp, err := add.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("AddPartitionsToTxn: %v", err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	return pid
}

// TestTransactionsCommands: vltava transactions (kafka-transactions.sh)
// lists and describes what the coordinator holds.
func TestTransactionsCommands(t *testing.T) {
	b := startTxnVltava(t)
	ok(t, b, "", "topics", "create", "orders", "--partitions", "1")
	pid := openTransaction(t, b, "payments-1", "orders")

	type listed struct {
		TransactionalID string `json:"transactional_id"`
		ProducerID      int64  `json:"producer_id"`
		State           string `json:"state"`
	}
	rows := decode[[]listed](t, ok(t, b, "", "transactions", "list", "--output", "json"))
	if len(rows) != 1 || rows[0].TransactionalID != "payments-1" || rows[0].ProducerID != pid || rows[0].State != "Ongoing" {
		t.Errorf("list: %+v", rows)
	}
	if rows := decode[[]listed](t, ok(t, b, "", "transactions", "list", "--state", "CompleteCommit", "--output", "json")); len(rows) != 0 {
		t.Errorf("list --state CompleteCommit: %+v", rows)
	}
	if out := ok(t, b, "", "transactions", "list"); !strings.Contains(out, "TransactionalId") || !strings.Contains(out, "payments-1") {
		t.Errorf("list table:\n%s", out)
	}
	type described struct {
		State      string   `json:"state"`
		ProducerID int64    `json:"producer_id"`
		TimeoutMs  int32    `json:"transaction_timeout_ms"`
		Partitions []string `json:"topic_partitions"`
	}
	d := decode[described](t, ok(t, b, "", "transactions", "describe", "--transactional-id", "payments-1", "--output", "json"))
	if d.State != "Ongoing" || d.ProducerID != pid || d.TimeoutMs != 60_000 || len(d.Partitions) != 1 || d.Partitions[0] != "orders-0" {
		t.Errorf("describe: %+v", d)
	}
	if msg := fails(t, b, "", "transactions", "describe", "--transactional-id", "nope"); !strings.Contains(msg, "TRANSACTIONAL_ID_NOT_FOUND") {
		t.Errorf("describe of an unknown id: %s", msg)
	}
	if msg := fails(t, b, "", "transactions", "abort", "--topic", "orders", "--partition", "0"); !strings.Contains(msg, "--start-offset") {
		t.Errorf("abort without a transaction: %s", msg)
	}
	if msg := fails(t, b, "", "transactions", "find-hanging"); !strings.Contains(msg, "--topic") {
		t.Errorf("find-hanging without a scope: %s", msg)
	}
}

// TestTransactionsHangingAndAbort: an open transaction shows in
// describe-producers with its first offset; find-hanging does not list it
// while its coordinator has it ongoing; abort --start-offset writes the
// abort marker that closes it on the partition. It needs DescribeProducers
// and WriteTxnMarkers (the partition side of transactions) and skips,
// saying so, without them.
func TestTransactionsHangingAndAbort(t *testing.T) {
	b := startTxnVltava(t)
	resp, err := b.apiVersions()
	if err != nil {
		t.Fatal(err)
	}
	served := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = true
	}
	if !served[int16(kmsg.DescribeProducers)] || !served[int16(kmsg.WriteTxnMarkers)] {
		t.Fatal("the broker does not serve DescribeProducers and WriteTxnMarkers")
	}
	ok(t, b, "", "topics", "create", "orders", "--partitions", "1")
	ok(t, b, "plain\n", "produce", "orders")
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.TransactionalID("abandoned"), kgo.DefaultProduceTopic("orders"),
		kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}
	type producer struct {
		ProducerID            int64 `json:"producer_id"`
		ProducerEpoch         int16 `json:"producer_epoch"`
		CurrentTxnStartOffset int64 `json:"current_transaction_start_offset"`
	}
	ps := decode[[]producer](t, ok(t, b, "", "transactions", "describe-producers", "--topic", "orders", "--partition", "0", "--output", "json"))
	var open []producer
	for _, p := range ps {
		if p.CurrentTxnStartOffset >= 0 {
			open = append(open, p)
		}
	}
	if len(open) != 1 || open[0].CurrentTxnStartOffset != 1 {
		t.Fatalf("describe-producers: %+v, want one producer whose transaction starts at offset 1 (after the plain record)", ps)
	}
	// Its coordinator still has it ongoing: not hanging.
	if hs := decode[[]producer](t, ok(t, b, "", "transactions", "find-hanging", "--topic", "orders", "--max-transaction-timeout", "0", "--output", "json")); len(hs) != 0 {
		t.Errorf("find-hanging lists a live transaction: %+v", hs)
	}
	out := ok(t, b, "", "transactions", "abort", "--topic", "orders", "--partition", "0", "--start-offset", "1")
	if !strings.Contains(out, "Aborted") {
		t.Errorf("abort: %s", out)
	}
	ps = decode[[]producer](t, ok(t, b, "", "transactions", "describe-producers", "--topic", "orders", "--partition", "0", "--output", "json"))
	for _, p := range ps {
		if p.CurrentTxnStartOffset >= 0 {
			t.Errorf("after abort: %+v still has an open transaction", p)
		}
	}
}
