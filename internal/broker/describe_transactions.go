package broker

// DescribeTransactions (key 65), v0 (KIP-664).
//
// Each transactional id is described by its coordinator: state, timeout,
// start time, producer id and epoch, and the partitions of the ongoing
// transaction. An id coordinated elsewhere is NOT_COORDINATOR, one unknown
// here TRANSACTIONAL_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeTransactions, 0, 0, (*Broker).handleDescribeTransactions) }

func (b *Broker) handleDescribeTransactions(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeTransactionsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		if b.txns == nil {
			st.ErrorCode = b.errCode(errNoTxnCoordinator)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d, err := b.txns.Describe(id)
		if err != nil {
			st.ErrorCode = b.errCode(err)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State = d.State.String()
		st.TimeoutMillis = d.TimeoutMs
		st.StartTimestamp = d.StartTimestamp
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.ProducerEpoch
		for _, tp := range d.SortedPartitions() {
			if n := len(st.Topics); n > 0 && st.Topics[n-1].Topic == tp.Topic {
				st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			st.Topics = append(st.Topics, t)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
