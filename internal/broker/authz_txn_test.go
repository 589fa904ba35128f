package broker_test

// The per-resource answers of the transaction APIs' authorization, beyond
// the table's one-resource cases.

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
)

// TestAddPartitionsToTxnTopicRefusal: one topic refused makes the whole
// request fail, as Kafka: TOPIC_AUTHORIZATION_FAILED for the refused
// topic's partitions, UNKNOWN_TOPIC_OR_PARTITION for a missing one, and
// OPERATION_NOT_ATTEMPTED for the rest.
func TestAddPartitionsToTxnTopicRefusal(t *testing.T) {
	an := startAuthzNode(t, txnProps)
	an.createTopics("allowed", "refused")
	an.awaitTxnProducer("tx-p")
	an.addACLs(txnACL("tx-p", acl.OpWrite), topicACL("allowed", acl.OpWrite), topicACL("missing", acl.OpWrite))
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = "tx-p", 1, 0
	for _, name := range []string{"allowed", "refused", "missing"} {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	resp := an.call(alice, versioned(3, req)).(*kmsg.AddPartitionsToTxnResponse)
	want := map[string]*kerr.Error{"allowed": kerr.OperationNotAttempted, "refused": kerr.TopicAuthorizationFailed, "missing": kerr.UnknownTopicOrPartition}
	if len(resp.Topics) != len(want) {
		t.Fatalf("answered %d topics, want %d: %+v", len(resp.Topics), len(want), resp.Topics)
	}
	for _, rt := range resp.Topics {
		if got := rt.Partitions[0].ErrorCode; got != want[rt.Topic].Code {
			t.Errorf("%s: %v, want %v", rt.Topic, kerr.ErrorForCode(got), want[rt.Topic])
		}
	}
}

// TestTxnOffsetCommitTopicRefusal: a topic without READ is refused while
// the other topic's offset is handled.
func TestTxnOffsetCommitTopicRefusal(t *testing.T) {
	an := startAuthzNode(t, txnProps)
	an.createTopics("allowed", "refused")
	an.awaitGroupCoordinator("g")
	an.addACLs(txnACL("tx-o", acl.OpWrite), groupACL("g", acl.OpRead), topicACL("allowed", acl.OpRead))
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch, req.Generation = "tx-o", "g", 1, 0, -1
	for _, name := range []string{"allowed", "refused"} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = name
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.LeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := an.call(alice, versioned(3, req)).(*kmsg.TxnOffsetCommitResponse)
	got := map[string]int16{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if len(got) != 2 || got["refused"] != kerr.TopicAuthorizationFailed.Code || got["allowed"] == kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("answers %v, want refused TOPIC_AUTHORIZATION_FAILED and allowed handled", got)
	}
}

// TestDescribeTransactionsHidesTopics: the partitions of a topic the
// principal may not DESCRIBE are left out of the transaction's answer.
func TestDescribeTransactionsHidesTopics(t *testing.T) {
	an := startAuthzNode(t, txnProps)
	an.createTopics("seen", "hidden")
	an.awaitTxnProducer("tx-d")
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis, init.ProducerID, init.ProducerEpoch = kmsg.StringPtr("tx-d"), 60000, -1, -1
	ip := an.call(admin, versioned(4, init)).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ip.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-d", ip.ProducerID, ip.ProducerEpoch
	for _, name := range []string{"seen", "hidden"} {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0}
		add.Topics = append(add.Topics, rt)
	}
	for _, rt := range an.call(admin, versioned(3, add)).(*kmsg.AddPartitionsToTxnResponse).Topics {
		if rt.Partitions[0].ErrorCode != 0 {
			t.Fatalf("adding %s: %v", rt.Topic, kerr.ErrorForCode(rt.Partitions[0].ErrorCode))
		}
	}
	an.addACLs(txnACL("tx-d", acl.OpDescribe), topicACL("seen", acl.OpDescribe))
	describe := func() []string {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{"tx-d"}
		st := an.call(alice, versioned(0, req)).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		if st.ErrorCode != 0 {
			t.Fatalf("DescribeTransactions: %v", kerr.ErrorForCode(st.ErrorCode))
		}
		var topics []string
		for _, tt := range st.Topics {
			topics = append(topics, tt.Topic)
		}
		return topics
	}
	if got := describe(); len(got) != 1 || got[0] != "seen" {
		t.Fatalf("topics described %v, want [seen]", got)
	}
	an.addACLs(topicACL("hidden", acl.OpDescribe))
	if got := describe(); len(got) != 2 {
		t.Fatalf("with DESCRIBE on both, topics described %v, want both", got)
	}
}

// TestProduceVerificationRefusedAtCoordinator: the partition leader's
// verification (AddPartitionsToTxn v4, sent to the inter-broker PLAINTEXT
// listener as User:ANONYMOUS) needs CLUSTER_ACTION; refused, the producer
// gets INVALID_TXN_STATE as from Kafka, never CLUSTER_AUTHORIZATION_FAILED,
// and nothing is appended; granted, the same produce succeeds.
func TestProduceVerificationRefusedAtCoordinator(t *testing.T) {
	an := startAuthzNode(t, txnProps)
	an.createTopics("orders")
	an.awaitTxnProducer("tx-v")
	an.addACLs(txnACL("tx-v", acl.OpWrite), topicACL("orders", acl.OpWrite))
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis, init.ProducerID, init.ProducerEpoch = kmsg.StringPtr("tx-v"), 60000, -1, -1
	ip := an.call(alice, versioned(4, init)).(*kmsg.InitProducerIDResponse)
	if ip.ErrorCode != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(ip.ErrorCode))
	}
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch = "tx-v", ip.ProducerID, ip.ProducerEpoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = "orders", []int32{0}
	add.Topics = append(add.Topics, rt)
	if code := an.call(alice, versioned(3, add)).(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("AddPartitionsToTxn: %v", kerr.ErrorForCode(code))
	}
	produce := func() int16 {
		req := txnProduce(t, "orders", 0, ip.ProducerID, ip.ProducerEpoch, 0, "v")
		req.TransactionID = kmsg.StringPtr("tx-v")
		return first(an.call(alice, versioned(9, req)))
	}
	if got := produce(); got != kerr.InvalidTxnState.Code {
		t.Fatalf("produce with the verification refused: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(got))
	}
	anonymous := clusterACL(acl.OpClusterAction)
	anonymous.Principal = "User:ANONYMOUS"
	an.addACLs(anonymous)
	if got := produce(); got != 0 {
		t.Fatalf("produce with the verification allowed: %v", kerr.ErrorForCode(got))
	}
}
