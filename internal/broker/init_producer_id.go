package broker

// InitProducerId (key 22), v0-v5.
//
// An idempotent producer (null transactional id) gets a fresh producer id
// with epoch 0 on every call, as Kafka does (KIP-360's epoch bump applies to
// transactional ids). Ids come from blocks the controller hands out (1000 at
// a time, like KRaft's ProducerIdsRecord), so ids stay unique across
// restarts and across brokers (a broker that is not the active controller
// asks it with AllocateProducerIds).
//
// A transactional id goes to the transaction coordinator (internal/txn),
// which must be this broker (else NOT_COORDINATOR): the first call gets a
// producer id at epoch 0; later ones bump the epoch, fencing the previous
// instance, and an open transaction of that instance is aborted first
// (CONCURRENT_TRANSACTIONS until it is, retried by the client). v3+ carry
// the producer id and epoch the client holds (KIP-360): a retry of a bump
// gets the same epoch, a stale one PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before v4, KIP-588). A timeout above transaction.max.timeout.ms is
// INVALID_TRANSACTION_TIMEOUT; an epoch that cannot be bumped any more
// brings a new producer id.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/singleflight"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/txn"
)

func init() { register(kmsg.InitProducerID, 0, 5, (*Broker).handleInitProducerID) }

// producerIDBlockSize is how many ids a broker takes from the controller at
// a time.
const producerIDBlockSize = 1000

// producerIDBlock hands out ids from the block this broker holds. mu
// guards the block only; it is never held across the controller call that
// fetches the next block: callers that find the block used up share one
// fetch (a singleflight), the fetch installs the block, and they take ids
// from it. A caller stops waiting when its request ends.
type producerIDBlock struct {
	mu    sync.Mutex
	next  int64
	end   int64 // exclusive
	fetch singleflight.Group
}

// take returns the next id of the block, if any is left.
func (pb *producerIDBlock) take() (int64, bool) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.next >= pb.end {
		return 0, false
	}
	id := pb.next
	pb.next++
	return id, true
}

// NextProducerID returns a producer id no other producer holds: the
// transaction coordinator takes its ids here too.
func (b *Broker) NextProducerID(ctx context.Context) (int64, error) { return b.nextProducerID(ctx) }

func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	return b.producerIDs.nextID(ctx, func(ctx context.Context) (int64, int32, error) {
		cctx, cancel := context.WithTimeout(ctx, time.Duration(b.cfg.RequestTimeoutMs)*time.Millisecond)
		defer cancel()
		return b.allocateProducerIDBlock(cctx)
	})
}

// nextID returns the next id, fetching a block with allocate when the one
// held is used up. The fetch runs detached from the caller that started it
// (context.WithoutCancel), so that caller leaving does not fail the others
// waiting for the same block; allocate bounds it.
func (pb *producerIDBlock) nextID(ctx context.Context, allocate func(context.Context) (int64, int32, error)) (int64, error) {
	for {
		if id, ok := pb.take(); ok {
			return id, nil
		}
		done := pb.fetch.DoChan("next block", func() (any, error) {
			pb.mu.Lock()
			left := pb.next < pb.end
			pb.mu.Unlock()
			if left {
				// Installed by a fetch that ended after this caller
				// looked: no second block.
				return nil, nil
			}
			first, count, err := allocate(context.WithoutCancel(ctx))
			if err != nil {
				return nil, err
			}
			pb.mu.Lock()
			pb.next, pb.end = first, first+int64(count)
			pb.mu.Unlock()
			return nil, nil
		})
		select {
		case r := <-done:
			if r.Err != nil {
				return 0, r.Err
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: waiting for a producer id block: %v", kerr.RequestTimedOut, ctx.Err())
		}
	}
}

// allocateProducerIDBlock asks the controller for the next block.
func (b *Broker) allocateProducerIDBlock(ctx context.Context) (first int64, count int32, err error) {
	if b.controllerIsLocal() {
		first, err = b.controller.AllocateProducerIDs(ctx, b.nodeID, producerIDBlockSize)
		return first, producerIDBlockSize, err
	}
	// The block comes from the active controller (AllocateProducerIds),
	// so ids stay unique across brokers.
	return b.channel.AllocateProducerIDs(ctx)
}

// authorizeInitProducerID is Kafka's check: WRITE on the transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or, since KIP-679, WRITE on any topic
// (CLUSTER_AUTHORIZATION_FAILED).
func (b *Broker) authorizeInitProducerID(r *server.Request, txnID *string) int16 {
	if b.trusted(r) {
		return 0
	}
	if txnID != nil {
		if !b.allowed(r, acl.ResourceTransactionalID, *txnID, acl.OpWrite) {
			return kerr.TransactionalIDAuthorizationFailed.Code
		}
		return 0
	}
	if !b.allowedCluster(r, acl.OpIdempotentWrite) && !b.authz.AuthorizeByResourceType(subject(r), acl.ResourceTopic, acl.OpWrite) {
		return kerr.ClusterAuthorizationFailed.Code
	}
	return 0
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if code := b.authorizeInitProducerID(r, req.TransactionalID); code != 0 {
		resp.ErrorCode = code
		return resp, nil
	}
	if req.TransactionalID != nil {
		if b.txns == nil {
			resp.ErrorCode = b.errCode(errNoTxnCoordinator)
			return resp, nil
		}
		expected := txn.ProducerIDAndEpoch{ID: -1, Epoch: -1}
		if r.Version >= 3 {
			expected = txn.ProducerIDAndEpoch{ID: req.ProducerID, Epoch: req.ProducerEpoch}
		}
		got, err := b.txns.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, expected)
		if err != nil {
			resp.ErrorCode = b.txnErrCode(err, r.Version, 4)
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = got.ID, got.Epoch
		return resp, nil
	}
	id, err := b.nextProducerID(ctx)
	if err != nil {
		resp.ErrorCode = b.errCode(fmt.Errorf("allocating producer id: %w", err))
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
