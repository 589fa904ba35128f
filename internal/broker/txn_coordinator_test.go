package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProps make a one-node cluster able to host __transaction_state.
var txnProps = map[string]string{
	"transaction.state.log.replication.factor": "1",
	"transaction.state.log.min.isr":            "1",
	"transaction.state.log.num.partitions":     "3",
}

// findTxnCoordinator asks FindCoordinator v4 for a transactional id.
func findTxnCoordinator(c *conn, id string) kmsg.FindCoordinatorResponseCoordinator {
	c.t.Helper()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{id}
	return do[*kmsg.FindCoordinatorResponse](c, 4, req).Coordinators[0]
}

// initTxnProducer sends InitProducerId v4 for id until the coordinator has
// loaded, and returns the answer.
func initTxnProducer(c *conn, v int16, id string, timeoutMs int32, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
	c.t.Helper()
	var resp *kmsg.InitProducerIDResponse
	within(c.t, 10*time.Second, "InitProducerId past the coordinator's load", func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), timeoutMs
		req.ProducerID, req.ProducerEpoch = pid, epoch
		resp = do[*kmsg.InitProducerIDResponse](c, v, req)
		return resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.NotCoordinator.Code &&
			resp.ErrorCode != kerr.ConcurrentTransactions.Code
	})
	return resp
}

func TestFindTransactionCoordinator(t *testing.T) {
	tn := startNode(t, txnProps)
	c := tn.dial()
	got := findTxnCoordinator(c, "my-txn")
	if got.ErrorCode != 0 || got.NodeID != 1 || got.Port <= 0 {
		t.Fatalf("FindCoordinator(type 1) = %+v, want node 1", got)
	}
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("__transaction_state")
	md.Topics = append(md.Topics, mt)
	mr := do[*kmsg.MetadataResponse](c, 9, md)
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 || len(mr.Topics[0].Partitions) != 3 || !mr.Topics[0].IsInternal {
		t.Fatalf("__transaction_state %+v, want an internal topic of 3 partitions", mr.Topics)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "__transaction_state"
	rr.ConfigNames = []string{"cleanup.policy", "min.insync.replicas"}
	dc.Resources = append(dc.Resources, rr)
	for _, cfg := range do[*kmsg.DescribeConfigsResponse](c, 4, dc).Resources[0].Configs {
		want := map[string]string{"cleanup.policy": "compact", "min.insync.replicas": "1"}[cfg.Name]
		if cfg.Value == nil || *cfg.Value != want {
			t.Errorf("__transaction_state %s = %v, want %s", cfg.Name, cfg.Value, want)
		}
	}
	// v0-v3 carry one key.
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKey = 1, "other"
	if r := do[*kmsg.FindCoordinatorResponse](c, 3, req); r.ErrorCode != 0 || r.NodeID != 1 {
		t.Errorf("FindCoordinator v3 = %+v", r)
	}
	if got := findTxnCoordinator(c, ""); got.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("empty transactional id: error %d, want INVALID_REQUEST", got.ErrorCode)
	}
}

// TestTransactionCoordinatorNeedsReplicas: with a replication factor of 3
// (Kafka's default, set explicitly: a single-voter node defaults to 1) a
// single node does not create __transaction_state and answers
// COORDINATOR_NOT_AVAILABLE.
func TestTransactionCoordinatorNeedsReplicas(t *testing.T) {
	tn := startNode(t, map[string]string{"transaction.state.log.replication.factor": "3"})
	c := tn.dial()
	if got := findTxnCoordinator(c, "t"); got.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator = %+v, want COORDINATOR_NOT_AVAILABLE", got)
	}
}

func TestInitProducerIDFencing(t *testing.T) {
	tn := startNode(t, txnProps)
	c := tn.dial()
	findTxnCoordinator(c, "t")
	first := initTxnProducer(c, 4, "t", 10_000, -1, -1)
	if first.ErrorCode != 0 || first.ProducerID < 0 || first.ProducerEpoch != 0 {
		t.Fatalf("first InitProducerId %+v", first)
	}
	second := initTxnProducer(c, 4, "t", 10_000, -1, -1)
	if second.ErrorCode != 0 || second.ProducerID != first.ProducerID || second.ProducerEpoch != 1 {
		t.Fatalf("second InitProducerId %+v, want epoch 1", second)
	}
	// KIP-360 with a fenced epoch: PRODUCER_FENCED from v4, as
	// INVALID_PRODUCER_EPOCH before (KIP-588).
	if r := initTxnProducer(c, 4, "t", 10_000, first.ProducerID, 5); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("v4 stale epoch: error %d, want PRODUCER_FENCED", r.ErrorCode)
	}
	if r := initTxnProducer(c, 3, "t", 10_000, first.ProducerID, 5); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Errorf("v3 stale epoch: error %d, want INVALID_PRODUCER_EPOCH", r.ErrorCode)
	}
	if r := initTxnProducer(c, 4, "t", 900_001, -1, -1); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("timeout above transaction.max.timeout.ms: error %d, want INVALID_TRANSACTION_TIMEOUT", r.ErrorCode)
	}
	// The first instance adding partitions is fenced.
	createTopic(c, "out", 2, nil)
	if code := addPartitions(c, 3, "t", first.ProducerID, first.ProducerEpoch, "out", 0)["out"][0]; code != kerr.ProducerFenced.Code {
		t.Errorf("fenced instance's AddPartitionsToTxn: error %d, want PRODUCER_FENCED", code)
	}
}

// addPartitions sends AddPartitionsToTxn v0-v3 and returns the codes.
func addPartitions(c *conn, v int16, id string, pid int64, epoch int16, topic string, partitions ...int32) map[string]map[int32]int16 {
	c.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = id, pid, epoch
	rt := kmsg.NewAddPartitionsToTxnRequestTopic()
	rt.Topic, rt.Partitions = topic, partitions
	req.Topics = append(req.Topics, rt)
	out := map[string]map[int32]int16{}
	for _, t := range do[*kmsg.AddPartitionsToTxnResponse](c, v, req).Topics {
		out[t.Topic] = map[int32]int16{}
		for _, p := range t.Partitions {
			out[t.Topic][p.Partition] = p.ErrorCode
		}
	}
	return out
}

// verifyPartitions sends AddPartitionsToTxn v4 with VerifyOnly, as a
// partition leader does before a transactional append (KIP-890).
func verifyPartitions(c *conn, id string, pid int64, epoch int16, topic string, partitions ...int32) map[int32]int16 {
	c.t.Helper()
	return verifyPartitionsAt(c, 4, id, pid, epoch, topic, partitions...)
}

func verifyPartitionsAt(c *conn, verifyVersion int16, id string, pid int64, epoch int16, topic string, partitions ...int32) map[int32]int16 {
	c.t.Helper()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
	tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = id, pid, epoch, true
	tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	tt.Topic, tt.Partitions = topic, partitions
	tx.Topics = append(tx.Topics, tt)
	req.Transactions = append(req.Transactions, tx)
	resp := do[*kmsg.AddPartitionsToTxnResponse](c, verifyVersion, req)
	out := map[int32]int16{}
	for _, p := range resp.Transactions[0].Topics[0].Partitions {
		out[p.Partition] = p.ErrorCode
	}
	return out
}

func TestAddPartitionsToTxn(t *testing.T) {
	tn := startNode(t, txnProps)
	c := tn.dial()
	createTopic(c, "out", 2, nil)
	findTxnCoordinator(c, "t")
	p := initTxnProducer(c, 4, "t", 10_000, -1, -1)

	if code := addPartitions(c, 3, "unknown", p.ProducerID, p.ProducerEpoch, "out", 0)["out"][0]; code != kerr.InvalidProducerIDMapping.Code {
		t.Errorf("unknown transactional id: %d, want INVALID_PRODUCER_ID_MAPPING", code)
	}
	if code := addPartitions(c, 1, "t", p.ProducerID, p.ProducerEpoch+1, "out", 0)["out"][0]; code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("v1 other epoch: %d, want INVALID_PRODUCER_EPOCH", code)
	}
	// An unknown partition fails the request; the others are not tried.
	codes := addPartitions(c, 3, "t", p.ProducerID, p.ProducerEpoch, "out", 0, 7)
	if codes["out"][0] != kerr.OperationNotAttempted.Code || codes["out"][7] != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("with an unknown partition: %v", codes)
	}
	if v := verifyPartitions(c, "t", p.ProducerID, p.ProducerEpoch, "out", 0); v[0] != kerr.InvalidTxnState.Code {
		t.Errorf("verify before the add: %v, want INVALID_TXN_STATE", v)
	}
	if code := addPartitions(c, 3, "t", p.ProducerID, p.ProducerEpoch, "out", 0)["out"][0]; code != 0 {
		t.Fatalf("add: %d", code)
	}
	v := verifyPartitions(c, "t", p.ProducerID, p.ProducerEpoch, "out", 0, 1)
	if v[0] != 0 || v[1] != kerr.InvalidTxnState.Code {
		t.Errorf("verify: %v, want NONE for the added partition and INVALID_TXN_STATE for the other", v)
	}
	if v := verifyPartitionsAt(c, 5, "t", p.ProducerID, p.ProducerEpoch, "out", 0, 1); v[0] != 0 || v[1] != kerr.TransactionAbortable.Code {
		t.Errorf("verify v5: %v, want NONE and TRANSACTION_ABORTABLE (Kafka 4.0)", v)
	}
	if v := verifyPartitions(c, "t", p.ProducerID, p.ProducerEpoch-1, "out", 0); v[0] != kerr.ProducerFenced.Code {
		t.Errorf("verify with a stale epoch: %v, want PRODUCER_FENCED", v)
	}

	// DescribeTransactions and ListTransactions see it.
	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"t", "nope"}
	dr := do[*kmsg.DescribeTransactionsResponse](c, 0, dt)
	if st := dr.TransactionStates[0]; st.ErrorCode != 0 || st.State != "Ongoing" || st.ProducerID != p.ProducerID || len(st.Topics) != 1 || st.TimeoutMillis != 10_000 {
		t.Errorf("DescribeTransactions(t) = %+v", st)
	}
	if st := dr.TransactionStates[1]; st.ErrorCode != kerr.TransactionalIDNotFound.Code {
		t.Errorf("DescribeTransactions(nope) error %d, want TRANSACTIONAL_ID_NOT_FOUND", st.ErrorCode)
	}
	lt := kmsg.NewPtrListTransactionsRequest()
	lt.StateFilters = []string{"Ongoing", "NoSuchState"}
	lr := do[*kmsg.ListTransactionsResponse](c, 1, lt)
	if lr.ErrorCode != 0 || len(lr.TransactionStates) != 1 || lr.TransactionStates[0].TransactionalID != "t" ||
		len(lr.UnknownStateFilters) != 1 {
		t.Errorf("ListTransactions = %+v", lr)
	}
	lt = kmsg.NewPtrListTransactionsRequest()
	lt.TransactionalIDPattern = kmsg.StringPtr("(")
	if lr := do[*kmsg.ListTransactionsResponse](c, 2, lt); lr.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Errorf("ListTransactions with a bad pattern: %d, want INVALID_REGULAR_EXPRESSION", lr.ErrorCode)
	}
}

// TestEndTxn: EndTxn's errors by state and version, and its commit: the
// Prepare record first, then the markers (to this node, the leader of the
// partitions), then the Complete record. The completion needs the
// partition side's WriteTxnMarkers; where the node does not serve it yet
// only the prepare is checked.
func TestEndTxn(t *testing.T) {
	tn := startNode(t, txnProps)
	c := tn.dial()
	createTopic(c, "out", 2, nil)
	findTxnCoordinator(c, "t")
	p := initTxnProducer(c, 4, "t", 10_000, -1, -1)
	end := func(v int16, epoch int16, commit bool) *kmsg.EndTxnResponse {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = "t", p.ProducerID, epoch, commit
		return do[*kmsg.EndTxnResponse](c, v, req)
	}
	if r := end(3, p.ProducerEpoch, true); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Errorf("commit with nothing ongoing: %d, want INVALID_TXN_STATE", r.ErrorCode)
	}
	addPartitions(c, 3, "t", p.ProducerID, p.ProducerEpoch, "out", 0, 1)
	if r := end(1, p.ProducerEpoch+1, true); r.ErrorCode != kerr.InvalidProducerEpoch.Code {
		t.Errorf("v1 commit with another epoch: %d, want INVALID_PRODUCER_EPOCH", r.ErrorCode)
	}
	if r := end(3, p.ProducerEpoch+1, true); r.ErrorCode != kerr.ProducerFenced.Code {
		t.Errorf("v3 commit with another epoch: %d, want PRODUCER_FENCED", r.ErrorCode)
	}
	if r := end(3, p.ProducerEpoch, true); r.ErrorCode != 0 {
		t.Fatalf("commit: %d", r.ErrorCode)
	}
	describe := func() string {
		dt := kmsg.NewPtrDescribeTransactionsRequest()
		dt.TransactionalIDs = []string{"t"}
		return do[*kmsg.DescribeTransactionsResponse](c, 0, dt).TransactionStates[0].State
	}
	if s := describe(); s != "PrepareCommit" && s != "CompleteCommit" {
		t.Fatalf("after EndTxn: %s", s)
	}
	if r := end(3, p.ProducerEpoch, false); r.ErrorCode != kerr.InvalidTxnState.Code {
		t.Errorf("abort after a commit: %d, want INVALID_TXN_STATE", r.ErrorCode)
	}
	markers := false
	for _, k := range apiVersions(c, 3).ApiKeys {
		markers = markers || k.ApiKey == int16(kmsg.WriteTxnMarkers)
	}
	if !markers {
		t.Log("WriteTxnMarkers is not served here yet: the commit stays prepared")
		return
	}
	within(t, 10*time.Second, "the commit completed", func() bool { return describe() == "CompleteCommit" })
	// v5 (KIP-890 part 2): the epoch bumps at EndTxn.
	addPartitions(c, 3, "t", p.ProducerID, p.ProducerEpoch, "out", 0)
	r := end(5, p.ProducerEpoch, true)
	if r.ErrorCode != 0 || r.ProducerID != p.ProducerID || r.ProducerEpoch != p.ProducerEpoch+1 {
		t.Errorf("EndTxn v5 = %+v, want epoch %d", r, p.ProducerEpoch+1)
	}
}

// TestTransactionConfigs: the transaction.* keys reach the coordinator and
// the topic: transaction.max.timeout.ms bounds the timeout,
// transaction.state.log.segment.bytes is the topic's segment.bytes, an
// open transaction past its timeout is aborted within
// transaction.abort.timed.out.transaction.cleanup.interval.ms, and an idle
// id is removed after transactional.id.expiration.ms (checked every
// transaction.remove.expired.transaction.cleanup.interval.ms).
func TestTransactionConfigs(t *testing.T) {
	props := map[string]string{
		"transaction.max.timeout.ms":                                  "5000",
		"transaction.state.log.segment.bytes":                         "1048576",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "50",
		"transaction.remove.expired.transaction.cleanup.interval.ms":  "50",
		"transactional.id.expiration.ms":                              "300",
	}
	for k, v := range txnProps {
		props[k] = v
	}
	tn := startNode(t, props)
	c := tn.dial()
	createTopic(c, "out", 1, nil)
	findTxnCoordinator(c, "open")
	if r := initTxnProducer(c, 4, "open", 5001, -1, -1); r.ErrorCode != kerr.InvalidTransactionTimeout.Code {
		t.Errorf("timeout above transaction.max.timeout.ms=5000: error %d, want INVALID_TRANSACTION_TIMEOUT", r.ErrorCode)
	}
	dc := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "__transaction_state", []string{"segment.bytes"}
	dc.Resources = append(dc.Resources, rr)
	if cfg := do[*kmsg.DescribeConfigsResponse](c, 4, dc).Resources[0].Configs; len(cfg) != 1 || cfg[0].Value == nil || *cfg[0].Value != "1048576" {
		t.Errorf("__transaction_state segment.bytes %+v, want 1048576", cfg)
	}
	state := func(id string) (string, int16) {
		dt := kmsg.NewPtrDescribeTransactionsRequest()
		dt.TransactionalIDs = []string{id}
		st := do[*kmsg.DescribeTransactionsResponse](c, 0, dt).TransactionStates[0]
		return st.State, st.ErrorCode
	}
	p := initTxnProducer(c, 4, "open", 200, -1, -1)
	addPartitions(c, 3, "open", p.ProducerID, p.ProducerEpoch, "out", 0)
	within(t, 10*time.Second, "the timed-out transaction aborted", func() bool {
		// Once aborted it may expire at once (an ongoing one never does).
		s, code := state("open")
		return s == "PrepareAbort" || s == "CompleteAbort" || code == kerr.TransactionalIDNotFound.Code
	})
	initTxnProducer(c, 4, "idle", 1000, -1, -1)
	within(t, 10*time.Second, "the idle transactional id removed", func() bool {
		_, code := state("idle")
		return code == kerr.TransactionalIDNotFound.Code
	})
}
