package broker

// AllocateProducerIds (key 67), v0, served by the active controller: a
// broker takes a block of producer ids (1000, like KRaft) for its
// InitProducerId answers, so ids are unique across the cluster.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AllocateProducerIDs, 0, 0, (*Broker).handleAllocateProducerIDs) }

func (b *Broker) handleAllocateProducerIDs(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AllocateProducerIDsRequest)
	resp := req.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	if b.active == nil || !b.active.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	if br, ok := b.meta.Image().Broker(req.BrokerID); !ok {
		resp.ErrorCode = kerr.BrokerIDNotRegistered.Code
		return resp, nil
	} else if req.BrokerEpoch >= 0 && br.Epoch != req.BrokerEpoch {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	first, err := b.controller.AllocateProducerIDs(ctx, req.BrokerID, rules.ProducerIDBlockSize)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	resp.ProducerIDStart, resp.ProducerIDLen = first, rules.ProducerIDBlockSize
	return resp, nil
}
