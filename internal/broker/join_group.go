package broker

// JoinGroup (key 11), v0-v9.
//
// The classic group protocol's join phase (group.Coordinator.JoinGroup):
// the request parks until every member has joined or the rebalance timeout
// (v1+; the session timeout at v0) passes. v4+ new dynamic members get
// MEMBER_ID_REQUIRED with their id first (KIP-394); v5+ static members
// (group.instance.id, KIP-345); v7+ the protocol type in the response;
// v9 skip_assignment for a static leader rejoining a stable group (KIP-814).
// An empty group id is INVALID_GROUP_ID.

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.JoinGroup, 0, 9, (*Broker).handleJoinGroup) }

func (b *Broker) handleJoinGroup(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.JoinGroupRequest)
	resp := req.ResponseKind().(*kmsg.JoinGroupResponse)
	if !b.allowedGroup(r, req.Group, acl.OpRead) { // Kafka: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	jr := group.JoinRequest{
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		InstanceID:           req.InstanceID,
		ClientID:             r.ClientID,
		ClientHost:           clientHost(r),
		SessionTimeout:       time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		RebalanceTimeout:     time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond,
		ProtocolType:         req.ProtocolType,
		RequireKnownMemberID: r.Version >= 4,
	}
	if r.Version < 1 {
		jr.RebalanceTimeout = jr.SessionTimeout
	}
	if r.Version < 5 {
		jr.InstanceID = nil
	}
	if req.Reason != nil {
		jr.Reason = *req.Reason
	}
	for _, p := range req.Protocols {
		jr.Protocols = append(jr.Protocols, group.Protocol{Name: p.Name, Metadata: append([]byte(nil), p.Metadata...)})
	}
	var res group.JoinResult
	if b.groups == nil {
		res = group.JoinResult{Err: errNoCoordinator, MemberID: req.MemberID, Generation: -1}
	} else {
		res = b.groups.JoinGroup(ctx, jr)
	}
	if errors.Is(res.Err, context.Canceled) && ctx.Err() != nil {
		return nil, ctx.Err() // the connection is gone
	}
	resp.ErrorCode = b.errCode(res.Err)
	resp.MemberID = res.MemberID
	resp.Generation = res.Generation
	resp.LeaderID = res.LeaderID
	resp.SkipAssignment = res.SkipAssignment && r.Version >= 9
	if res.Err == nil || r.Version < 7 {
		name, typ := res.ProtocolName, res.ProtocolType
		resp.Protocol = &name
		if r.Version >= 7 {
			resp.ProtocolType = &typ
		}
	}
	for _, m := range res.Members {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID = m.MemberID
		rm.InstanceID = m.InstanceID
		rm.ProtocolMetadata = m.Metadata
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}

// clientHost is the client's address as Kafka reports it in group
// descriptions ("/127.0.0.1").
func clientHost(r *server.Request) string {
	if r.Conn == nil || r.Conn.Remote == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(r.Conn.Remote.String())
	if err != nil {
		host = r.Conn.Remote.String()
	}
	return "/" + host
}
