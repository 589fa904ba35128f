package compat

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFranzTransactionFencing: a second producer with the same
// transactional id fences the first, whose open transaction is aborted;
// the first's commit fails with PRODUCER_FENCED (or
// INVALID_PRODUCER_EPOCH, as Kafka returns it to older protocol versions)
// and its records are never visible to read_committed.
func TestFranzTransactionFencing(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, txnBrokerOptions...)
	adm := newAdmin(t, b)
	requireMarkers(t, adm)
	topic, id := uniqueTopic(t), uniqueTopic(t)+"-txn"
	createTopic(t, adm, topic, 1, nil)
	ctx := testContext(t, 60*time.Second)
	first := newClient(t, b, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err := first.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := first.ProduceSync(ctx, kgo.StringRecord("zombie")).FirstErr(); err != nil {
		t.Fatalf("first producer: %v", err)
	}
	second := newClient(t, b, kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic))
	if err := second.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := second.ProduceSync(ctx, kgo.StringRecord("live")).FirstErr(); err != nil {
		t.Fatalf("second producer: %v", err)
	}
	if err := second.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("second producer's commit: %v", err)
	}
	err := first.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("fenced producer's commit: %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	c := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := consume(t, c, 1, 20*time.Second)
	if len(got) != 1 || string(got[0].Value) != "live" {
		t.Errorf("read_committed sees %d records (first %q), want only the second producer's", len(got), got[0].Value)
	}
}

// TestFranzTransactionTimeout: a transaction left open past its
// transaction.timeout.ms is aborted by the coordinator (the check runs
// every transaction.abort.timed.out.transaction.cleanup.interval.ms), so
// the last stable offset moves on and read_committed readers see what was
// committed after it; the producer's late commit is fenced.
func TestFranzTransactionTimeout(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, append(txnBrokerOptions,
		WithOverride("transaction.abort.timed.out.transaction.cleanup.interval.ms", "200"))...)
	adm := newAdmin(t, b)
	requireMarkers(t, adm)
	topic := uniqueTopic(t)
	createTopic(t, adm, topic, 1, nil)
	ctx := testContext(t, 60*time.Second)
	stuck := newClient(t, b, kgo.TransactionalID(uniqueTopic(t)+"-stuck"), kgo.TransactionTimeout(time.Second),
		kgo.DefaultProduceTopic(topic))
	if err := stuck.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := stuck.ProduceSync(ctx, kgo.StringRecord("left open")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Committed after the open one: readable only once the coordinator
	// has aborted the open transaction and the LSO passed it.
	other := newClient(t, b, kgo.TransactionalID(uniqueTopic(t)+"-other"), kgo.DefaultProduceTopic(topic))
	if err := other.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := other.ProduceSync(ctx, kgo.StringRecord("committed")).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	if err := other.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	c := newClient(t, b, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	got := consume(t, c, 1, 20*time.Second)
	if string(got[0].Value) != "committed" {
		t.Errorf("read_committed sees %q first, want the committed record", got[0].Value)
	}
	err := stuck.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("the timed-out producer's commit succeeded")
	}
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) && !errors.Is(err, kerr.InvalidTxnState) {
		t.Errorf("the timed-out producer's commit: %v, want PRODUCER_FENCED, INVALID_PRODUCER_EPOCH or INVALID_TXN_STATE", err)
	}
}
