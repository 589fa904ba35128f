package broker

// AddPartitionsToTxn (key 24), v0-v5.
//
// v0-v3 come from transactional clients: the partitions join the
// transaction of the request's transactional id, starting it if none is
// ongoing, once the coordinator has written that to __transaction_state.
// Partitions of topics missing from the metadata get
// UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as
// Kafka answers, and nothing is added. Errors are per partition: an
// unknown transactional id or producer id is INVALID_PRODUCER_ID_MAPPING,
// a stale epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2,
// KIP-588), a transaction still completing CONCURRENT_TRANSACTIONS.
//
// v4+ (KIP-890) come from partition leaders and batch transactions. With
// VerifyOnly (part 1, a TV1 client's produce) the coordinator only
// answers whether each partition is in the ongoing transaction: NONE, or
// INVALID_TXN_STATE (v4) / TRANSACTION_ABORTABLE (v5, Kafka 4.0's code
// for it); without it (part 2, a TV2 client, which sends no
// AddPartitionsToTxn itself) the partitions are added. A
// transaction-level error goes on each of its partitions; the top-level
// error is for the request as a whole.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

func init() { register(kmsg.AddPartitionsToTxn, 0, 5, (*Broker).handleAddPartitionsToTxn) }

func (b *Broker) handleAddPartitionsToTxn(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddPartitionsToTxnRequest)
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version >= 4 {
		for _, t := range req.Transactions {
			resp.Transactions = append(resp.Transactions, b.addPartitionsBatched(r.Version, &t))
		}
		return resp, nil
	}
	var topics []txnTopic
	for _, t := range req.Topics {
		topics = append(topics, txnTopic{t.Topic, t.Partitions})
	}
	codes := b.addPartitions(r.Version, req.TransactionalID, txn.ProducerIDAndEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}, topics, false, false)
	for _, t := range req.Topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: t.Topic, Partition: p}]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

type txnTopic struct {
	topic      string
	partitions []int32
}

func (b *Broker) addPartitionsBatched(version int16, t *kmsg.AddPartitionsToTxnRequestTransaction) kmsg.AddPartitionsToTxnResponseTransaction {
	var topics []txnTopic
	for _, tt := range t.Topics {
		topics = append(topics, txnTopic{tt.Topic, tt.Partitions})
	}
	codes := b.addPartitions(version, t.TransactionalID, txn.ProducerIDAndEpoch{ID: t.ProducerID, Epoch: t.ProducerEpoch}, topics, t.VerifyOnly, !t.VerifyOnly)
	rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
	rt.TransactionalID = t.TransactionalID
	for _, tt := range t.Topics {
		rtt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rtt.Topic = tt.Topic
		for _, p := range tt.Partitions {
			rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			rp.Partition, rp.ErrorCode = p, codes[txn.TopicPartition{Topic: tt.Topic, Partition: p}]
			rtt.Partitions = append(rtt.Partitions, rp)
		}
		rt.Topics = append(rt.Topics, rtt)
	}
	return rt
}

// addPartitions adds (or with verifyOnly, checks) the partitions of one
// transaction and returns each partition's error code.
func (b *Broker) addPartitions(version int16, id string, p txn.ProducerIDAndEpoch, topics []txnTopic, verifyOnly, tv2 bool) map[txn.TopicPartition]int16 {
	codes := map[txn.TopicPartition]int16{}
	var tps []txn.TopicPartition
	for _, t := range topics {
		for _, part := range t.partitions {
			tps = append(tps, txn.TopicPartition{Topic: t.topic, Partition: part})
		}
	}
	all := func(code int16) map[txn.TopicPartition]int16 {
		for _, tp := range tps {
			codes[tp] = code
		}
		return codes
	}
	if b.txns == nil {
		return all(b.errCode(errNoTxnCoordinator))
	}
	if id == "" {
		return all(kerr.InvalidRequest.Code)
	}
	if !verifyOnly {
		// Kafka adds nothing if any partition is unknown.
		img := b.meta.Image()
		unknown := false
		for _, tp := range tps {
			if _, ok := img.Partition(tp.Topic, tp.Partition); !ok {
				codes[tp] = kerr.UnknownTopicOrPartition.Code
				unknown = true
			}
		}
		if unknown {
			for _, tp := range tps {
				if codes[tp] == 0 {
					codes[tp] = kerr.OperationNotAttempted.Code
				}
			}
			return codes
		}
		return all(b.txnErrCode(b.txns.AddPartitions(id, p, tps, tv2), version, 2))
	}
	res, err := b.txns.VerifyPartitions(id, p, tps)
	if err != nil {
		return all(b.txnErrCode(err, version, 2))
	}
	for tp, e := range res {
		codes[tp] = b.errCode(e)
		if version >= 5 && errors.Is(e, kerr.InvalidTxnState) {
			// v5 (Kafka 4.0) answers a partition outside the
			// transaction with TRANSACTION_ABORTABLE, which the
			// partition leader turns back into INVALID_TXN_STATE
			// for produce requests too old to know it.
			codes[tp] = kerr.TransactionAbortable.Code
		}
	}
	return codes
}
