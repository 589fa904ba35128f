package broker

// The checks of the transaction APIs, done before the handler runs as the
// admin APIs' are (authorize_admin.go): what the principal may not touch is
// taken out of the request and answered with its authorization error, as
// Kafka's KafkaApis handlers answer them. AddPartitionsToTxn v4+ (broker to
// broker) and WriteTxnMarkers need CLUSTER_ACTION and are refused whole
// (authorize_cluster.go); InitProducerId and Produce check in their
// handlers (authorizeInitProducerID, produce.go).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// allowedTxnID is allowed for a transactional id.
func (b *Broker) allowedTxnID(r *server.Request, id string, op kmsg.ACLOperation) bool {
	return b.allowed(r, acl.ResourceTransactionalID, id, op)
}

// filterAddPartitionsToTxn is Kafka's check of a client's
// AddPartitionsToTxn (v0-v3): WRITE on the transactional id, else every
// partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; WRITE on each topic
// (internal topics are never authorized: a client does not add them), else
// that topic's partitions are TOPIC_AUTHORIZATION_FAILED, a missing one's
// UNKNOWN_TOPIC_OR_PARTITION and the rest OPERATION_NOT_ATTEMPTED: nothing
// is added when any partition fails.
func filterAddPartitionsToTxn(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	if r.Version >= 4 {
		return 1, func(kmsg.Response) {} // CLUSTER_ACTION, authorize_cluster.go
	}
	txnDenied := !b.allowedTxnID(r, req.TransactionalID, acl.OpWrite)
	img := b.meta.Image()
	denied := map[string]bool{}
	for _, t := range req.Topics {
		if ti, ok := img.Topic(t.Topic); (ok && ti.IsInternal) || !b.allowedTopic(r, t.Topic, acl.OpWrite) {
			denied[t.Topic] = true
		}
	}
	if !txnDenied && len(denied) == 0 {
		return 1, func(kmsg.Response) {}
	}
	topics := req.Topics
	req.Topics = nil
	return 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition = p
				_, exists := img.Partition(t.Topic, p)
				switch {
				case txnDenied:
					rp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				case denied[t.Topic]:
					rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !exists:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					rp.ErrorCode = kerr.OperationNotAttempted.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}
}

// filterAddOffsetsToTxn: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the group
// (GROUP_AUTHORIZATION_FAILED).
func filterAddOffsetsToTxn(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.AddOffsetsToTxnRequest)
	var refusal *kerr.Error
	switch {
	case !b.allowedTxnID(r, req.TransactionalID, acl.OpWrite):
		refusal = kerr.TransactionalIDAuthorizationFailed
	case !b.allowedGroup(r, req.Group, acl.OpRead):
		refusal = kerr.GroupAuthorizationFailed
	default:
		return 1, func(kmsg.Response) {}
	}
	return 0, func(resp kmsg.Response) { resp.(*kmsg.AddOffsetsToTxnResponse).ErrorCode = refusal.Code }
}

// filterEndTxn: WRITE on the transactional id.
func filterEndTxn(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.EndTxnRequest)
	if b.allowedTxnID(r, req.TransactionalID, acl.OpWrite) {
		return 1, func(kmsg.Response) {}
	}
	return 0, func(resp kmsg.Response) {
		out := resp.(*kmsg.EndTxnResponse)
		out.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		out.ProducerID, out.ProducerEpoch = -1, -1
	}
}

// filterTxnOffsetCommit: WRITE on the transactional id, then READ on the
// group, each refusing every partition (Kafka checks no producer id: the
// transactional id's WRITE implies it); then READ on each topic, refusing
// that topic's partitions while the others are committed.
func filterTxnOffsetCommit(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.TxnOffsetCommitRequest)
	var all *kerr.Error
	switch {
	case !b.allowedTxnID(r, req.TransactionalID, acl.OpWrite):
		all = kerr.TransactionalIDAuthorizationFailed
	case !b.allowedGroup(r, req.Group, acl.OpRead):
		all = kerr.GroupAuthorizationFailed
	}
	var refused []kmsg.TxnOffsetCommitRequestTopic
	req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.TxnOffsetCommitRequestTopic) bool {
		if all == nil && b.allowedTopic(r, t.Topic, acl.OpRead) {
			return false
		}
		refused = append(refused, t)
		return true
	})
	return len(req.Topics), func(resp kmsg.Response) {
		out := resp.(*kmsg.TxnOffsetCommitResponse)
		code := kerr.TopicAuthorizationFailed.Code
		if all != nil {
			code = all.Code
		}
		for _, t := range refused {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	}
}

// filterDescribeTransactions: DESCRIBE on each transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED for it); the partitions of topics
// the principal may not DESCRIBE are left out of every answer, as Kafka's
// handleDescribeTransactionsRequest leaves them out.
func filterDescribeTransactions(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	var refused []string
	req.TransactionalIDs = slices.DeleteFunc(slices.Clone(req.TransactionalIDs), func(id string) bool {
		if b.allowedTxnID(r, id, acl.OpDescribe) {
			return false
		}
		refused = append(refused, id)
		return true
	})
	return len(req.TransactionalIDs), func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeTransactionsResponse)
		for i := range out.TransactionStates {
			st := &out.TransactionStates[i]
			st.Topics = slices.DeleteFunc(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
				return !b.allowedTopic(r, t.Topic, acl.OpDescribe)
			})
		}
		for _, id := range refused {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
			st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
			out.TransactionStates = append(out.TransactionStates, st)
		}
	}
}

// filterListTransactions: only the transactional ids the principal may
// DESCRIBE are listed (Kafka's handleListTransactionsRequest).
func filterListTransactions(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	return 1, func(resp kmsg.Response) {
		out := resp.(*kmsg.ListTransactionsResponse)
		out.TransactionStates = slices.DeleteFunc(out.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) bool {
			return !b.allowedTxnID(r, st.TransactionalID, acl.OpDescribe)
		})
	}
}

// filterDescribeProducers: READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions (Kafka checks it before
// the topic's existence).
func filterDescribeProducers(b *Broker, r *server.Request) (int, func(kmsg.Response)) {
	req := r.Body.(*kmsg.DescribeProducersRequest)
	var refused []kmsg.DescribeProducersRequestTopic
	req.Topics = slices.DeleteFunc(slices.Clone(req.Topics), func(t kmsg.DescribeProducersRequestTopic) bool {
		if b.allowedTopic(r, t.Topic, acl.OpRead) {
			return false
		}
		refused = append(refused, t)
		return true
	})
	return len(req.Topics), func(resp kmsg.Response) {
		out := resp.(*kmsg.DescribeProducersResponse)
		for _, t := range refused {
			st := kmsg.NewDescribeProducersResponseTopic()
			st.Topic = t.Topic
			for _, p := range t.Partitions {
				sp := kmsg.NewDescribeProducersResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			out.Topics = append(out.Topics, st)
		}
	}
}
