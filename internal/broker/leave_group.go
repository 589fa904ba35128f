package broker

// LeaveGroup (key 13), v0-v5.
//
// v0-v2 remove one member by id; v3+ a batch of members, static ones by
// group.instance.id (KIP-345), each with its own error; the top-level error
// is for the group as a whole (NOT_COORDINATOR, ...). Before v3 the member's
// error is the top-level one.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.LeaveGroup, 0, 5, (*Broker).handleLeaveGroup) }

func (b *Broker) handleLeaveGroup(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.LeaveGroupRequest)
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	if !b.allowedGroup(r, req.Group, acl.OpRead) { // Kafka: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var members []group.LeaveMember
	if r.Version < 3 {
		members = []group.LeaveMember{{MemberID: req.MemberID}}
	} else {
		for _, m := range req.Members {
			members = append(members, group.LeaveMember{MemberID: m.MemberID, InstanceID: m.InstanceID})
		}
	}
	if b.groups == nil {
		resp.ErrorCode = b.errCode(errNoCoordinator)
		return resp, nil
	}
	groupErr, errs := b.groups.LeaveGroup(req.Group, members)
	if groupErr != nil {
		resp.ErrorCode = b.errCode(groupErr)
		return resp, nil
	}
	if r.Version < 3 {
		resp.ErrorCode = b.errCode(errs[0])
		return resp, nil
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = m.InstanceID
		rm.ErrorCode = b.errCode(errs[i])
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
