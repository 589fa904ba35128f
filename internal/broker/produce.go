package broker

// Produce (key 0), v0-v12.
//
// v3 is the first version carrying v2 record batches, which are the only
// batches we store. v0-v2 carry v0/v1 message sets (clients before Kafka
// 0.11, such as kafka-python with api_version below 0.11): Kafka 4 answers
// them UNSUPPORTED_VERSION (KIP-896) while still advertising them
// (librdkafka enables compression only when Produce v0 is listed,
// KAFKA-18659); Kafka 3.9 converted them to v2 batches on append, and so do
// we (record.UpConvertLegacy), so they are advertised and served. From v3
// each partition's payload
// must be exactly one v2 batch; it is validated (record.ValidateProduce),
// recompressed if the topic's compression.type says so, and appended. An
// idempotent retry of one of a producer's last five batches is answered
// with the original offsets and not appended again.
//
// acks=1 answers after the local append. acks=-1 (all) first requires the
// ISR to hold at least min.insync.replicas (NOT_ENOUGH_REPLICAS, nothing
// written), then waits — parked on the partition, woken by high-watermark
// changes, Kafka's delayed produce — until the high watermark passes the
// batch: NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
// min.insync.replicas meanwhile, REQUEST_TIMED_OUT after timeout_ms,
// NOT_LEADER_OR_FOLLOWER if leadership moved. Only the leader accepts
// produce; others answer NOT_LEADER_OR_FOLLOWER, from v10 with the current
// leader and its endpoint (KIP-951) so the client can go there directly.
//
// A batch refused for some of its records (KIP-467: timestamps out of
// range, null keys on a compacted topic) is answered INVALID_TIMESTAMP or
// INVALID_RECORD with, from v8, the index and reason of each refused record
// in record_errors and Kafka's summary in error_message; nothing of the
// batch is written.
//
// acks=0 sends no response; as in Kafka, an error under acks=0 closes the
// connection so the client learns something went wrong. acks other than
// -1, 0 and 1 are INVALID_REQUIRED_ACKS. Internal topics cannot be written
// by clients (INVALID_TOPIC_EXCEPTION).
//
// Transactional batches (the attributes' transactional bit): a request
// carrying one without a transactional id is answered
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition, as Kafka's
// KafkaApis.handleProduceRequest does before anything is appended. With
// transaction.partition.verification.enable (the default), the batch that
// opens a producer's transaction on a partition is first verified with the
// producer's transaction coordinator (KIP-890 part 1, txn_verify.go); a
// partition the producer never added gets the coordinator's
// INVALID_TXN_STATE, a stale epoch INVALID_PRODUCER_EPOCH or
// PRODUCER_FENCED, and nothing is appended. The check is made once per
// transaction and partition: later batches of the open transaction need
// none, and a marker written while the check was in flight fails the
// append with INVALID_TXN_STATE (storage.VerificationGuard). A plain batch
// from a producer whose transaction is open is INVALID_TXN_STATE too. v11+
// clients get the coordinator's TRANSACTION_ABORTABLE as it is (older
// ones INVALID_TXN_STATE); v12 (KIP-890 part 2, transaction.version 2,
// the request otherwise v11's) has the leader add the partition to the
// transaction instead of only verifying it, since those clients send no
// AddPartitionsToTxn.
// Control batches are never accepted from clients (INVALID_RECORD,
// record.ValidateProduce); markers come through WriteTxnMarkers.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
)

func init() { register(kmsg.Produce, 0, 12, (*Broker).handleProduce) }

// firstBatchProduceVersion is the first Produce version with v2 batches;
// older ones carry legacy message sets, converted before validation.
const firstBatchProduceVersion = 3

// firstRecordErrorsVersion is the first Produce version whose responses
// list the records that failed validation (KIP-467).
const firstRecordErrorsVersion = 8

func (b *Broker) handleProduce(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ProduceRequest)
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	img := b.meta.Image()

	// errs[t][p] is the outcome for Topics[t].Partitions[p]; acks=all
	// partitions that appended wait below before it is final.
	errs := make([][]error, len(req.Topics))
	var waits []replicationWait
	transactional := hasTransactionalBatch(req)
	unauthorizedTxn := req.TransactionID == nil && transactional
	// Kafka: transactional records need WRITE on the transactional id,
	// else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; each
	// topic needs WRITE, else its partitions are TOPIC_AUTHORIZATION_FAILED.
	// (An idempotent produce needs nothing more since KIP-679.)
	txnDenied := transactional && req.TransactionID != nil && !b.allowed(r, acl.ResourceTransactionalID, *req.TransactionID, acl.OpWrite)
	var verified map[[2]int]txnVerification
	if !unauthorizedTxn && !txnDenied {
		// Only the partitions the principal may write are verified
		// (and, from v12, added to the transaction), as Kafka
		// authorizes before its AddPartitionsToTxnManager is asked.
		verified = b.verifyProduceTransactions(ctx, img, req, func(topic string) bool { return b.allowedTopic(r, topic, acl.OpWrite) })
	}
	for ti, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		topicDenied := !b.allowedTopic(r, rt.Topic, acl.OpWrite)
		errs[ti] = make([]error, len(rt.Partitions))
		for pi, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			sp.LogAppendTime = -1
			sp.LogStartOffset = -1
			var err error
			switch {
			case unauthorizedTxn:
				err = fmt.Errorf("%w: the request carries transactional records but no transactional id", kerr.TransactionalIDAuthorizationFailed)
			case txnDenied:
				err = kerr.TransactionalIDAuthorizationFailed
			case topicDenied:
				err = kerr.TopicAuthorizationFailed
			default:
				var p *partition.Partition
				var required int64
				p, required, err = b.producePartition(img, req, rt.Topic, &rp, &sp, verified[[2]int{ti, pi}])
				if err == nil && p != nil && req.Acks == -1 {
					waits = append(waits, replicationWait{p: p, required: required, topic: ti, partition: pi})
				}
			}
			errs[ti][pi] = err
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) > 0 {
		// One deadline for the whole request, as Kafka's delayed produce;
		// waiting partition by partition costs no more than the slowest.
		wctx, cancel := context.WithTimeout(ctx, time.Duration(max(req.TimeoutMillis, 0))*time.Millisecond)
		parkedFrom := time.Now()
		metrics.ProduceParked()
		defer metrics.ProduceUnparked()
		for _, w := range waits {
			errs[w.topic][w.partition] = w.p.AwaitReplication(wctx, w.required)
		}
		cancel()
		parked(ctx, parkedFrom)
	}

	var failed error
	var leaders map[int32]bool // leaders hinted at (KIP-951)
	for ti := range resp.Topics {
		for pi := range resp.Topics[ti].Partitions {
			err := errs[ti][pi]
			countProduce(img, resp.Topics[ti].Topic, err)
			if err == nil {
				continue
			}
			sp := &resp.Topics[ti].Partitions[pi]
			failed = err
			// An append that was not acknowledged (acks=all timed out or
			// the ISR shrank) has no offset to report, as in Kafka.
			sp.BaseOffset, sp.LogAppendTime = -1, -1
			sp.ErrorCode = b.errCode(err)
			var ke *kerr.Error
			if !errors.As(err, &ke) || err.Error() != ke.Error() {
				sp.ErrorMessage = errMessage(err)
			}
			var rve *record.RecordValidationError
			if r.Version >= firstRecordErrorsVersion && errors.As(err, &rve) {
				for _, re := range rve.Records {
					er := kmsg.NewProduceResponseTopicPartitionErrorRecord()
					er.RelativeOffset, er.ErrorMessage = re.BatchIndex, kmsg.StringPtr(re.Message)
					sp.ErrorRecords = append(sp.ErrorRecords, er)
				}
			}
			if r.Version >= 10 && (sp.ErrorCode == kerr.NotLeaderForPartition.Code || sp.ErrorCode == kerr.FencedLeaderEpoch.Code) {
				if id, epoch, ok := currentLeader(img, resp.Topics[ti].Topic, sp.Partition); ok {
					sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = id, epoch
					if leaders == nil {
						leaders = make(map[int32]bool)
					}
					leaders[id] = true
				}
			}
		}
	}
	for _, ep := range leaderEndpoints(img, leaders, listenerOf(r)) {
		resp.Brokers = append(resp.Brokers, kmsg.ProduceResponseBroker{NodeID: ep.NodeID, Host: ep.Host, Port: ep.Port, Rack: ep.Rack})
	}
	resp.ThrottleMillis = b.throttleProduce(r)
	if req.Acks == 0 {
		if failed != nil {
			return nil, fmt.Errorf("produce with acks=0 failed: %w", failed)
		}
		return nil, nil
	}
	return resp, nil
}

// replicationWait is an acks=all append waiting for the high watermark.
type replicationWait struct {
	p                *partition.Partition
	required         int64 // the batch's last offset + 1
	topic, partition int   // indexes into the request and response
}

// producePartition appends one partition's batch. It returns the partition
// and the offset the high watermark must reach for the batch to be
// committed.
func (b *Broker) producePartition(img *metadata.Image, req *kmsg.ProduceRequest, topic string,
	rp *kmsg.ProduceRequestTopicPartition, sp *kmsg.ProduceResponseTopicPartition, txn txnVerification) (*partition.Partition, int64, error) {
	switch {
	case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
		return nil, 0, kerr.InvalidRequiredAcks
	}
	t, ok := img.Topic(topic)
	if !ok {
		return nil, 0, kerr.UnknownTopicOrPartition
	}
	if t.IsInternal {
		return nil, 0, fmt.Errorf("%w: cannot append to internal topic %s", kerr.InvalidTopicException, topic)
	}
	p, err := b.hostedPartition(img, t, rp.Partition, true)
	if err != nil {
		return nil, 0, err
	}
	if txn.err != nil {
		return nil, 0, txn.err
	}
	data := rp.Records
	if req.Version < firstBatchProduceVersion {
		if data, err = record.UpConvertLegacy(data); err != nil || data == nil {
			return nil, 0, err // nil data: no complete message, nothing to append
		}
	}
	info, dropped := dropAckedWrite(p) // test-only fault switch, fault_drop.go
	if !dropped {
		info, err = p.AppendChecked(data, req.Acks, req.Version, storage.TxnAppend{Guard: txn.guard}, b.schemaCheck(topic, p.Config()))
	}
	if err != nil {
		return nil, 0, err
	}
	countAppended(topic, info, len(rp.Records), req.Version < firstBatchProduceVersion)
	sp.BaseOffset = info.BaseOffset
	sp.LogAppendTime = info.LogAppendTime
	sp.LogStartOffset = info.LogStartOffset
	return p, info.LastOffset + 1, nil
}

// txnVerification is the outcome of a partition's KIP-890 check: the
// guard to append with, or the produce error.
type txnVerification struct {
	guard storage.VerificationGuard
	err   error
}

// verifyProduceTransactions checks with the coordinator, for every
// transactional batch of the request on a partition led here whose
// producer has no transaction open there yet, that the partition is in the
// transaction (or, from v12, adds it). The checks of one request run in
// parallel, as Kafka's AddPartitionsToTxnManager sends them together, so a
// request opening a transaction on several partitions waits for one round
// trip. Keys are {topic index, partition index}; partitions that need no
// check, or whose lookup fails (producePartition reports that), are absent.
func (b *Broker) verifyProduceTransactions(ctx context.Context, img *metadata.Image, req *kmsg.ProduceRequest, mayWrite func(topic string) bool) map[[2]int]txnVerification {
	// KIP-890 part 2 (v12) cannot work without the leader's add: its
	// clients add no partitions themselves, so it is done whatever
	// transaction.partition.verification.enable says.
	if req.TransactionID == nil || (req.Version < firstAddPartitionProduceVersion && !b.verificationEnabled(img)) {
		return nil
	}
	out := map[[2]int]txnVerification{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for ti, rt := range req.Topics {
		t, ok := img.Topic(rt.Topic)
		if !ok || t.IsInternal || !mayWrite(rt.Topic) {
			continue
		}
		for pi, rp := range rt.Partitions {
			if !isTransactionalBatch(rp.Records) {
				continue
			}
			p, err := b.hostedPartition(img, t, rp.Partition, true)
			if err != nil {
				continue
			}
			h, err := record.ParseHeader(rp.Records)
			if err != nil {
				continue
			}
			key := [2]int{ti, pi}
			guard, needed := p.StartTransactionVerification(h.ProducerID, h.ProducerEpoch, req.Version >= firstAddPartitionProduceVersion)
			if !needed {
				out[key] = txnVerification{guard: guard}
				continue
			}
			tp := TxnPartition{TransactionalID: *req.TransactionID, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
				Topic: rt.Topic, Partition: rp.Partition, Add: req.Version >= firstAddPartitionProduceVersion}
			wg.Add(1)
			go func() {
				defer wg.Done()
				v := txnVerification{guard: guard}
				if err := b.verifyTransaction(ctx, img, tp); err != nil {
					v = txnVerification{err: verificationError(err, req.Version >= firstAbortableProduceVersion)}
					if tp.Add && errors.Is(err, kerr.ConcurrentTransactions) {
						v.err = err // Produce v12 answers it as is (KAFKA-18662)
					}
				}
				mu.Lock()
				out[key] = v
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return out
}

// hasTransactionalBatch reports whether any partition of a Produce request
// carries a transactional batch (Kafka's ProduceRequest.hasTransactionalRecords).
func hasTransactionalBatch(req *kmsg.ProduceRequest) bool {
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			if isTransactionalBatch(rp.Records) {
				return true
			}
		}
	}
	return false
}

// isTransactionalBatch reports whether records start with a v2 batch whose
// transactional bit is set. v3+ requests carry exactly one batch per
// partition (anything else is refused by validation), so the first decides.
func isTransactionalBatch(records []byte) bool {
	if len(records) < record.BatchHeaderSize {
		return false
	}
	h, err := record.ParseHeader(records)
	return err == nil && h.Magic == 2 && h.IsTransactional()
}

// currentLeader is a partition's leader and leader epoch from the image,
// for KIP-951 hints; ok is false when it has no leader.
func currentLeader(img *metadata.Image, topic string, index int32) (id, epoch int32, ok bool) {
	pi, exists := img.Partition(topic, index)
	if !exists || pi.Leader < 0 {
		return -1, -1, false
	}
	return pi.Leader, pi.LeaderEpoch, true
}

// listenerOf is the listener a request arrived on; leader hints name the
// endpoint of the same listener, as Kafka does.
func listenerOf(r *server.Request) string {
	if r.Conn != nil {
		return r.Conn.Listener
	}
	return ""
}

// hintEndpoint is one broker endpoint sent with KIP-951 leader hints.
type hintEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
	Rack   *string
}

// leaderEndpoints returns, sorted by id, the endpoint on listener of each
// broker in ids that the image knows (the first endpoint if the broker has
// none by that name).
func leaderEndpoints(img *metadata.Image, ids map[int32]bool, listener string) []hintEndpoint {
	var out []hintEndpoint
	for _, br := range img.Brokers() {
		if !ids[br.ID] || len(br.Endpoints) == 0 {
			continue
		}
		ep := br.Endpoints[0]
		for _, e := range br.Endpoints {
			if e.Name == listener {
				ep = e
				break
			}
		}
		h := hintEndpoint{NodeID: br.ID, Host: ep.Host, Port: ep.Port}
		if br.Rack != "" {
			rack := br.Rack
			h.Rack = &rack
		}
		out = append(out, h)
	}
	return out
}
