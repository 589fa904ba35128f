package broker

// BrokerHeartbeat (key 63), v0-v1, served by the active controller
// (KIP-631). Each broker sends one every broker.heartbeat.interval.ms with
// the metadata offset it has applied; the controller renews its session,
// unfences it once it has caught up, and drives controlled shutdown
// (want_shut_down → leaderships moved → should_shut_down). Errors:
// NOT_CONTROLLER on other nodes, STALE_BROKER_EPOCH for an old registration,
// BROKER_ID_NOT_REGISTERED for an unknown broker. v1's offline_log_dirs
// (KIP-858) names the broker's failed log dirs; the replicas in them are
// then moved away through AssignReplicasToDirs.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.BrokerHeartbeat, 0, 1, (*Broker).handleBrokerHeartbeat) }

func (b *Broker) handleBrokerHeartbeat(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.BrokerHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	resp.IsFenced = true
	if b.active == nil || !b.active.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	res, err := b.active.Heartbeat(ctx, controller.Heartbeat{
		BrokerID: req.BrokerID, BrokerEpoch: req.BrokerEpoch, CurrentMetadataOffset: req.CurrentMetadataOffset,
		WantFence: req.WantFence, WantShutDown: req.WantShutdown, OfflineLogDirs: req.OfflineLogDirs,
	})
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	resp.IsCaughtUp, resp.IsFenced, resp.ShouldShutdown = res.IsCaughtUp, res.IsFenced, res.ShouldShutDown
	return resp, nil
}
