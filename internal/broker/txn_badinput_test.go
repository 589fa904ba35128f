package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// logEnds is the log end offset of each of topic's partitions.
func logEnds(t *testing.T, c *conn, topic string, partitions int32) []int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	out := make([]int64, partitions)
	for _, p := range do[*kmsg.ListOffsetsResponse](c, 8, req).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("ListOffsets %s-%d: error %d", topic, p.Partition, p.ErrorCode)
		}
		out[p.Partition] = p.Offset
	}
	return out
}

// TestTransactionBadInput: requests a transaction coordinator and a
// partition leader must refuse, each with Kafka's error code, against
// the real coordinator of a one-node cluster at transaction.version 1's
// request versions (the client adds its partitions): AddPartitionsToTxn
// and EndTxn for an unknown transactional id, EndTxn in the wrong state,
// a transactional produce to a partition never added, a produce with a
// stale epoch. None of them writes anything: neither __transaction_state
// nor the data partitions' logs move. With transaction.partition.
// verification.enable turned off at run time (a dynamic broker config,
// as in Kafka) the stale epoch is caught by the partition's producer state
// instead (INVALID_PRODUCER_EPOCH), and a partition never added is no
// longer checked.
func TestTransactionBadInput(t *testing.T) {
	tn := startNode(t, txnProps)
	c := tn.dial()
	const topic = "bad-txn"
	createTopic(c, topic, 2, nil)
	findTxnCoordinator(c, "t")
	p := initTxnProducer(c, 4, "t", 10_000, -1, -1)
	stateEnds := func() []int64 { return logEnds(t, c, "__transaction_state", 3) }
	unchanged := func(what string, state, data []int64) {
		t.Helper()
		if got := stateEnds(); !equalInt64s(got, state) {
			t.Errorf("%s: __transaction_state ends %v, were %v", what, got, state)
		}
		if got := logEnds(t, c, topic, 2); !equalInt64s(got, data) {
			t.Errorf("%s: %s ends %v, were %v", what, topic, got, data)
		}
	}
	endTxn := func(id string, epoch int16, commit bool) int16 {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = id, p.ProducerID, epoch, commit
		return do[*kmsg.EndTxnResponse](c, 3, req).ErrorCode
	}
	produceAt := func(v int16, req *kmsg.ProduceRequest) int16 {
		req.TransactionID = kmsg.StringPtr("t")
		return do[*kmsg.ProduceResponse](c, v, req).Topics[0].Partitions[0].ErrorCode
	}
	produceCode := func(req *kmsg.ProduceRequest) int16 { return produceAt(11, req) }
	state := func() string {
		dt := kmsg.NewPtrDescribeTransactionsRequest()
		dt.TransactionalIDs = []string{"t"}
		return do[*kmsg.DescribeTransactionsResponse](c, 0, dt).TransactionStates[0].State
	}

	state0, data0 := stateEnds(), logEnds(t, c, topic, 2)
	if code := addPartitions(c, 3, "ghost", p.ProducerID, p.ProducerEpoch, topic, 0)[topic][0]; code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("AddPartitionsToTxn for an unknown transactional id: error %d, want INVALID_PRODUCER_ID_MAPPING", code)
	}
	if code := endTxn("ghost", p.ProducerEpoch, true); code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("EndTxn for an unknown transactional id: error %d, want INVALID_PRODUCER_ID_MAPPING", code)
	}
	if code := endTxn("t", p.ProducerEpoch, true); code != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn(commit) with no transaction: error %d, want INVALID_TXN_STATE", code)
	}
	if code := endTxn("t", p.ProducerEpoch, false); code != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn(abort) with no transaction: error %d, want INVALID_TXN_STATE", code)
	}
	unchanged("unknown transactional id, EndTxn with no transaction", state0, data0)

	// A transaction on partition 0; partition 1 was never added.
	if code := addPartitions(c, 3, "t", p.ProducerID, p.ProducerEpoch, topic, 0)[topic][0]; code != 0 {
		t.Fatalf("AddPartitionsToTxn: error %d", code)
	}
	state1 := stateEnds()
	// Kafka 4's answer: TRANSACTION_ABORTABLE to the clients that know it
	// (Produce v11+), INVALID_TXN_STATE to older ones.
	if code := produceAt(10, txnProduce(t, topic, 1, p.ProducerID, p.ProducerEpoch, 0, "never-added")); code != kerr.InvalidTxnState.Code {
		t.Errorf("Produce v10 to a partition never added: error %d, want INVALID_TXN_STATE", code)
	}
	if code := produceAt(11, txnProduce(t, topic, 1, p.ProducerID, p.ProducerEpoch, 0, "never-added")); code != kerr.TransactionAbortable.Code {
		t.Errorf("Produce v11 to a partition never added: error %d, want TRANSACTION_ABORTABLE", code)
	}
	unchanged("produce to a partition never added", state1, data0)
	if code := produceCode(txnProduce(t, topic, 0, p.ProducerID, p.ProducerEpoch, 0, "added")); code != 0 {
		t.Fatalf("produce to the added partition: error %d", code)
	}
	if code := endTxn("t", p.ProducerEpoch, true); code != 0 {
		t.Fatalf("EndTxn(commit): error %d", code)
	}
	within(t, 10*time.Second, "the commit completed", func() bool { return state() == "CompleteCommit" })
	state2, data2 := stateEnds(), logEnds(t, c, topic, 2)
	if code := endTxn("t", p.ProducerEpoch, false); code != kerr.InvalidTxnState.Code {
		t.Errorf("EndTxn(abort) after the commit: error %d, want INVALID_TXN_STATE", code)
	}
	if s := state(); s != "CompleteCommit" {
		t.Errorf("after a refused abort: state %s, want CompleteCommit", s)
	}
	unchanged("EndTxn(abort) after a commit", state2, data2)

	// A second instance fences the first: its epoch is stale.
	next := initTxnProducer(c, 4, "t", 10_000, -1, -1)
	if next.ProducerID != p.ProducerID || next.ProducerEpoch != p.ProducerEpoch+1 {
		t.Fatalf("second InitProducerId %+v, want epoch %d", next, p.ProducerEpoch+1)
	}
	state3 := stateEnds()
	if code := produceCode(txnProduce(t, topic, 0, p.ProducerID, p.ProducerEpoch, 1, "stale")); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("produce with a stale epoch: error %d, want INVALID_PRODUCER_EPOCH (the coordinator's PRODUCER_FENCED, as Kafka's leaders answer it)", code)
	}
	unchanged("produce with a stale epoch", state3, data2)

	// transaction.partition.verification.enable=false, at run time.
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, ""
	cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cc.Name, cc.Value = "transaction.partition.verification.enable", kmsg.StringPtr("false")
	rr.Configs = append(rr.Configs, cc)
	alter.Resources = append(alter.Resources, rr)
	if r := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, alter).Resources[0]; r.ErrorCode != 0 {
		t.Fatalf("transaction.partition.verification.enable=false: error %d %v", r.ErrorCode, r.ErrorMessage)
	}
	if code := addPartitions(c, 3, "t", next.ProducerID, next.ProducerEpoch, topic, 0)[topic][0]; code != 0 {
		t.Fatalf("AddPartitionsToTxn: error %d", code)
	}
	if code := produceCode(txnProduce(t, topic, 0, next.ProducerID, next.ProducerEpoch, 0, "current")); code != 0 {
		t.Fatalf("produce at the current epoch: error %d", code)
	}
	state4, data4 := stateEnds(), logEnds(t, c, topic, 2)
	if code := produceCode(txnProduce(t, topic, 0, p.ProducerID, p.ProducerEpoch, 1, "stale")); code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("unverified produce with a stale epoch: error %d, want INVALID_PRODUCER_EPOCH", code)
	}
	unchanged("unverified produce with a stale epoch", state4, data4)
	// Unverified, a partition never added takes the batch (Kafka before
	// KIP-890): the setting is in effect.
	if code := produceCode(txnProduce(t, topic, 1, next.ProducerID, next.ProducerEpoch, 0, "unverified")); code != 0 {
		t.Errorf("unverified produce to a partition never added: error %d, want it appended", code)
	}
	if got := logEnds(t, c, topic, 2); got[1] != data4[1]+1 {
		t.Errorf("%s-1 ends at %d, want %d", topic, got[1], data4[1]+1)
	}
}

func equalInt64s(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
