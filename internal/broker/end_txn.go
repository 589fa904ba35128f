package broker

// EndTxn (key 26), v0-v5.
//
// Commits or aborts the ongoing transaction: the coordinator writes
// PrepareCommit or PrepareAbort, then sends WriteTxnMarkers to the leader
// of every partition in the transaction and writes the Complete record;
// meanwhile a request for the transactional id gets
// CONCURRENT_TRANSACTIONS. The answer waits for the Complete record, for
// at most 500 ms (txn.Coordinator.EndTxn): Kafka answers after the Prepare
// record, and its producer's next transaction then meets
// CONCURRENT_TRANSACTIONS and a retry pause while the markers are written. A retry of a completed commit (abort) succeeds;
// the other outcome, or EndTxn with nothing ongoing, is INVALID_TXN_STATE.
// An unknown transactional or producer id is INVALID_PRODUCER_ID_MAPPING,
// a stale epoch PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before v2,
// KIP-588).
//
// v5 is KIP-890 part 2 (transaction.version 2; clients that see a lower
// level send v4 at most): the epoch is bumped by every EndTxn, the markers
// carry the bumped epoch, the answer the producer id and epoch to use next
// (a new producer id at epoch 0 when the epoch overflows), a retry comes
// with the previous epoch, and an abort with nothing ongoing still bumps
// the epoch.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

func init() { register(kmsg.EndTxn, 0, 5, (*Broker).handleEndTxn) }

func (b *Broker) handleEndTxn(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.EndTxnRequest)
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case b.txns == nil:
		resp.ErrorCode = b.errCode(errNoTxnCoordinator)
		return resp, nil
	case req.TransactionalID == "":
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	next, err := b.txns.EndTxn(ctx, req.TransactionalID, txn.ProducerIDAndEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}, req.Commit, r.Version >= 5)
	if err != nil {
		resp.ErrorCode = b.txnErrCode(err, r.Version, 2)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = next.ID, next.Epoch
	return resp, nil
}
