package compat

// Transactions under ACLs with franz-go. The client authenticates as
// User:alice over SASL_PLAINTEXT (PLAIN); User:admin is the super user that
// creates the topic and the ACLs. The inter-broker listener is PLAINTEXT,
// where every connection is User:ANONYMOUS: the broker's own requests go
// there (WriteTxnMarkers from the transaction coordinator, KIP-890's
// AddPartitionsToTxn v4+ from the partition leader), and Kafka asks
// CLUSTER_ACTION on the cluster for both, so ANONYMOUS is granted that
// (and nothing else) by an ACL.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/vltava/vltava/internal/testing/freeport"
)

const aclTxnJAAS = `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`

// TestFranzTransactionsUnderACLs: alice, granted WRITE (and READ) on the
// topic, WRITE on her transactional id and READ on the group, commits a transaction with
// records and the group's offsets, which a read_committed consumer and
// OffsetFetch then see; a transactional id she has no ACL for is refused
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
func TestFranzTransactionsUnderACLs(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake serves no ACLs")
	saslAddr := freeport.Addr(t)
	b := StartBroker(t, append(txnBrokerOptions,
		WithExtraListeners("SASL_PLAINTEXT://"+saslAddr),
		WithOverride("inter.broker.listener.name", "PLAINTEXT"),
		WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("super.users", "User:admin"),
		WithOverride("sasl.enabled.mechanisms", "PLAIN"),
		WithOverride("listener.name.sasl_plaintext.plain.sasl.jaas.config", aclTxnJAAS),
	)...)
	as := func(user, pass string, opts ...kgo.Opt) *kgo.Client {
		return newClient(t, b, append([]kgo.Opt{kgo.SeedBrokers(saslAddr), kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}, opts...)...)
	}
	adm := kadm.NewClient(as("admin", "admin-secret"))
	ctx := testContext(t, 90*time.Second)
	topic, group, txnID := uniqueTopic(t), uniqueTopic(t)+"-group", uniqueTopic(t)+"-txn"
	createTopic(t, adm, topic, 1, nil)
	acls := []*kadm.ACLBuilder{
		kadm.NewACLs().Clusters().Allow("User:ANONYMOUS").Operations(kadm.OpClusterAction),
		// READ too: committing offsets of a topic needs it (Kafka's
		// TxnOffsetCommit check), WRITE does not imply it.
		kadm.NewACLs().Topics(topic).Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead),
		kadm.NewACLs().TransactionalIDs(txnID).Allow("User:alice").Operations(kadm.OpWrite),
		kadm.NewACLs().Groups(group).Allow("User:alice").Operations(kadm.OpRead),
	}
	for _, a := range acls {
		res, err := adm.CreateACLs(ctx, a.ResourcePatternType(kadm.ACLPatternLiteral))
		if err != nil {
			t.Fatalf("CreateAcls: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatalf("CreateAcls: %v", r.Err)
			}
		}
	}

	// A transaction with three records and the group's offset.
	prod := as("alice", "alice-secret", kgo.TransactionalID(txnID), kgo.DefaultProduceTopic(topic), kgo.TransactionTimeout(30*time.Second))
	if err := prod.BeginTransaction(); err != nil {
		t.Fatalf("BeginTransaction: %v", err)
	}
	for _, v := range []string{"a", "b", "c"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("transactional produce as alice: %v", err)
		}
	}
	// A group she may not READ is refused, and the transaction goes on.
	if err := addOffsetsToTxn(ctx, prod, txnID, group+"-other"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("AddOffsetsToTxn for a group without READ: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	commitTxnOffset(t, prod, txnID, group, topic, 3)
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("EndTxn as alice: %v", err)
	}
	cons := as("admin", "admin-secret", kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if got := consume(t, cons, 3, 30*time.Second); string(got[0].Value) != "a" || string(got[2].Value) != "c" {
		t.Fatalf("read_committed read %q..%q, want a..c", got[0].Value, got[2].Value)
	}
	offsets, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("OffsetFetch: %v", err)
	}
	if o, ok := offsets.Lookup(topic, 0); !ok || o.At != 3 {
		t.Fatalf("committed offset %+v (found %v), want 3", o, ok)
	}

	// No ACL on the transactional id: refused before any producer id.
	refused := as("alice", "alice-secret", kgo.TransactionalID(txnID+"-other"), kgo.DefaultProduceTopic(topic))
	// franz-go asks InitProducerId at BeginTransaction (or, had it an id
	// already, at the first produce).
	err = refused.BeginTransaction()
	if err == nil {
		err = refused.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr()
	}
	if !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("produce with an unauthorized transactional id: %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
}

// commitTxnOffset commits the group's offset in cl's transaction, as
// sendOffsetsToTransaction does: AddOffsetsToTxn to the transaction
// coordinator, TxnOffsetCommit to the group coordinator (franz-go routes
// both).
func commitTxnOffset(t *testing.T, cl *kgo.Client, txnID, group, topic string, offset int64) {
	t.Helper()
	ctx := testContext(t, 30*time.Second)
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatalf("producer id: %v", err)
	}
	if err := addOffsetsToTxn(ctx, cl, txnID, group); err != nil {
		t.Fatalf("AddOffsetsToTxn as alice: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = txnID, group, pid, epoch, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	commit.Topics = append(commit.Topics, rt)
	commitResp, err := commit.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(commitResp.Topics[0].Partitions[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("TxnOffsetCommit as alice: %v", err)
	}
}

// addOffsetsToTxn adds the group's offsets partition to cl's transaction.
func addOffsetsToTxn(ctx context.Context, cl *kgo.Client, txnID, group string) error {
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = txnID, pid, epoch, group
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}
