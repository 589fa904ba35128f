package broker

// Heartbeat (key 12), v0-v4.
//
// Keeps a member's session alive (group.Coordinator.Heartbeat);
// REBALANCE_IN_PROGRESS tells it to rejoin. v3+ carries group.instance.id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.Heartbeat, 0, 4, (*Broker).handleHeartbeat) }

func (b *Broker) handleHeartbeat(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.HeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if !b.allowedGroup(r, req.Group, acl.OpRead) { // Kafka: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if b.groups == nil {
		resp.ErrorCode = b.errCode(errNoCoordinator)
		return resp, nil
	}
	instanceID := req.InstanceID
	if r.Version < 3 {
		instanceID = nil
	}
	resp.ErrorCode = b.errCode(b.groups.Heartbeat(req.Group, req.MemberID, instanceID, req.Generation))
	return resp, nil
}
