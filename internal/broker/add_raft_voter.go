package broker

// AddRaftVoter (key 80), v0-v1 (KIP-853): makes an observer of the dynamic
// metadata quorum (a controller formatted with --no-initial-controllers
// that has joined and replicates the log) a voter, at the controller
// endpoint among its listeners. Answered by the quorum leader; other nodes
// forward it. Errors: DUPLICATE_VOTER (already a voter), REQUEST_TIMED_OUT
// (the replica is not an observer yet, or the change did not commit within
// TimeoutMillis), INCONSISTENT_CLUSTER_ID, NOT_CONTROLLER, and
// UNSUPPORTED_VERSION on a static quorum (controller.quorum.voters), as
// Kafka answers with kraft.version 0. v1's
// AckWhenCommitted=false lets Kafka answer before the change commits; we
// always answer once it has committed, which that version also allows.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AddRaftVoter, 0, 1, (*Broker).handleAddRaftVoter) }

func (b *Broker) handleAddRaftVoter(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AddRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.AddRaftVoterResponse)
	fwd, err := b.voterRequest(ctx, r, req.ClusterID, time.Duration(req.TimeoutMillis)*time.Millisecond,
		func(ctx context.Context, vc voterChanger) error {
			addr, err := b.voterEndpoint(req.Listeners)
			if err != nil {
				return err
			}
			return vc.AddVoter(ctx, voterKey(req.VoterID, req.VoterDirectoryID), addr)
		})
	if fwd != nil {
		return fwd, nil
	}
	resp.ErrorCode, resp.ErrorMessage = b.errCode(err), errMessage(err)
	return resp, nil
}
