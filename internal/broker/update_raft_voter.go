package broker

// UpdateRaftVoter (key 82), v0 (KIP-853): a voter of the dynamic metadata
// quorum reports its controller endpoint (after its listeners changed);
// the leader records it in the voter set. Answered by the quorum leader;
// other nodes forward it. Errors: VOTER_NOT_FOUND, INVALID_REQUEST (no
// usable listener), INCONSISTENT_CLUSTER_ID, NOT_CONTROLLER,
// UNSUPPORTED_VERSION (a static quorum).
// CurrentLeaderEpoch and KRaftVersionFeature are not checked: the voter set
// is always the dynamic kind here (kraft.version 1).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.UpdateRaftVoter, 0, 0, (*Broker).handleUpdateRaftVoter) }

func (b *Broker) handleUpdateRaftVoter(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.UpdateRaftVoterRequest)
	resp := req.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	ls := make([]voterListener, len(req.Listeners))
	for i, l := range req.Listeners {
		ls[i] = voterListener(l)
	}
	fwd, err := b.voterRequest(ctx, r, req.ClusterID, 0, func(ctx context.Context, vc voterChanger) error {
		addr, err := b.voterEndpoint(ls)
		if err != nil {
			return err
		}
		return vc.UpdateVoter(ctx, voterKey(req.VoterID, req.VoterDirectoryID), addr)
	})
	if fwd != nil {
		return fwd, nil
	}
	resp.ErrorCode = b.errCode(err)
	return resp, nil
}
