package broker

// InitProducerId (key 22), v0-v5.
//
// An idempotent producer (null transactional id) gets a fresh producer id
// with epoch 0 on every call, as Kafka does (KIP-360's epoch bump applies to
// transactional ids). Ids come from blocks the controller hands out (1000 at
// a time, like KRaft's ProducerIdsRecord), so ids stay unique across
// restarts and across brokers (a broker that is not the active controller
// asks it with AllocateProducerIds). Transactional ids need the
// transaction coordinator, which is not built yet: INVALID_REQUEST with a
// clear message rather than a retriable error a client would spin on.

import (
	"context"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.InitProducerID, 0, 5, (*Broker).handleInitProducerID) }

// producerIDBlockSize is how many ids a broker takes from the controller at
// a time.
const producerIDBlockSize = 1000

// producerIDBlock hands out ids from the block this broker holds.
type producerIDBlock struct {
	mu   sync.Mutex
	next int64
	end  int64 // exclusive
}

func (b *Broker) nextProducerID(ctx context.Context) (int64, error) {
	pb := &b.producerIDs
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.next >= pb.end {
		first, count := int64(0), int32(producerIDBlockSize)
		var err error
		if b.controllerIsLocal() {
			first, err = b.controller.AllocateProducerIDs(ctx, b.nodeID, producerIDBlockSize)
		} else {
			// The block comes from the active controller (AllocateProducerIds),
			// so ids stay unique across brokers.
			first, count, err = b.channel.AllocateProducerIDs(ctx)
		}
		if err != nil {
			return 0, err
		}
		pb.next, pb.end = first, first+int64(count)
	}
	id := pb.next
	pb.next++
	return id, nil
}

func (b *Broker) handleInitProducerID(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		b.log.Warn("transactional producer refused: transactions are not supported yet",
			"transactional_id", *req.TransactionalID, "client_id", r.ClientID)
		resp.ErrorCode = kerr.InvalidRequest.Code
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
