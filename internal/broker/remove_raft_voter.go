package broker

// RemoveRaftVoter (key 81), v0 (KIP-853): removes a voter, named by node
// id and directory id, from the dynamic metadata quorum; it stays an
// observer while it runs. Answered by the quorum leader (which steps down
// if it removed itself); other nodes forward it. Errors: VOTER_NOT_FOUND
// (no voter with that id and directory id), INVALID_REQUEST (the last
// voter), INCONSISTENT_CLUSTER_ID, NOT_CONTROLLER, UNSUPPORTED_VERSION (a
// static quorum).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.RemoveRaftVoter, 0, 0, (*Broker).handleRemoveRaftVoter) }

func (b *Broker) handleRemoveRaftVoter(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RemoveRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
	fwd, err := b.voterRequest(ctx, r, req.ClusterID, 0, func(ctx context.Context, vc voterChanger) error {
		return vc.RemoveVoter(ctx, voterKey(req.VoterID, req.VoterDirectoryID))
	})
	if fwd != nil {
		return fwd, nil
	}
	resp.ErrorCode, resp.ErrorMessage = b.errCode(err), errMessage(err)
	return resp, nil
}
