package broker

// SyncGroup (key 14), v0-v5.
//
// The leader sends the assignment; every member parks until it is stored
// in __consumer_offsets and then gets its own (group.Coordinator.SyncGroup).
// v3+ carries group.instance.id (FENCED_INSTANCE_ID for a replaced static
// member); v5+ carries the protocol type and name, which must match the
// group's (INCONSISTENT_GROUP_PROTOCOL), and returns them.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.SyncGroup, 0, 5, (*Broker).handleSyncGroup) }

func (b *Broker) handleSyncGroup(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SyncGroupRequest)
	resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
	if !b.allowedGroup(r, req.Group, acl.OpRead) { // Kafka: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	sr := group.SyncRequest{
		GroupID:     req.Group,
		MemberID:    req.MemberID,
		Generation:  req.Generation,
		Assignments: make(map[string][]byte, len(req.GroupAssignment)),
	}
	if r.Version >= 3 {
		sr.InstanceID = req.InstanceID
	}
	if r.Version >= 5 {
		sr.ProtocolType, sr.ProtocolName = req.ProtocolType, req.Protocol
	}
	for _, a := range req.GroupAssignment {
		sr.Assignments[a.MemberID] = append([]byte{}, a.MemberAssignment...)
	}
	var res group.SyncResult
	if b.groups == nil {
		res.Err = errNoCoordinator
	} else {
		res = b.groups.SyncGroup(ctx, sr)
	}
	if errors.Is(res.Err, context.Canceled) && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	resp.ErrorCode = b.errCode(res.Err)
	resp.MemberAssignment = res.Assignment
	if resp.MemberAssignment == nil {
		resp.MemberAssignment = []byte{}
	}
	if res.Err == nil && r.Version >= 5 {
		typ, name := res.ProtocolType, res.ProtocolName
		resp.ProtocolType, resp.Protocol = &typ, &name
	}
	return resp, nil
}
