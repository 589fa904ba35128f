package broker

// BrokerRegistration (key 62), v0-v3, served by the active controller
// (KIP-631). A broker registers at start with a fresh incarnation id and its
// listeners; the controller commits a fenced RegisterBrokerRecord and answers
// with the broker epoch. A node that is not the active controller answers
// NOT_CONTROLLER, and the broker retries against the leader.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.BrokerRegistration, 0, 3, (*Broker).handleBrokerRegistration) }

func (b *Broker) handleBrokerRegistration(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerRegistrationRequest)
	resp := req.ResponseKind().(*kmsg.BrokerRegistrationResponse)
	resp.BrokerEpoch = -1
	if b.active == nil || !b.active.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	if id := b.meta.Image().ClusterID(); r.Version >= 1 && req.ClusterID != "" && id != "" && req.ClusterID != id {
		resp.ErrorCode = kerr.InconsistentClusterID.Code
		return resp, nil
	}
	reg := rules.Registration{BrokerID: req.BrokerID, IncarnationID: req.IncarnationID}
	if req.Rack != nil {
		reg.Rack = *req.Rack
	}
	for _, l := range req.Listeners {
		reg.Endpoints = append(reg.Endpoints, metadata.Endpoint{Name: l.Name, Host: l.Host, Port: int32(l.Port), SecurityProtocol: l.SecurityProtocol})
	}
	res, err := b.active.Register(ctx, reg)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	resp.BrokerEpoch = res.BrokerEpoch
	return resp, nil
}
