package broker

// DescribeGroups (key 15), v0-v5.
//
// Each group's state, protocol type, and members; the selected protocol
// and the members' metadata and assignments only for a Stable group, as
// Kafka reports them. An unknown group is described as Dead with no error
// (v6, KIP-1043, would say GROUP_ID_NOT_FOUND; not advertised). v3+ adds
// authorized operations when asked (without ACLs, every group operation);
// v4+ members' group.instance.id.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeGroups, 0, 5, (*Broker).handleDescribeGroups) }

func (b *Broker) handleDescribeGroups(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = authorizedOpsOmitted
		if !b.allowedGroup(r, id, acl.OpDescribe) { // Kafka: DESCRIBE on the group
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = b.authorizedOps(r, acl.ResourceGroup, id)
		}
		if b.groups == nil {
			rg.ErrorCode = b.errCode(errNoCoordinator)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := b.groups.DescribeGroup(id)
		if err != nil {
			rg.ErrorCode = b.errCode(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State = d.State
		rg.ProtocolType = d.ProtocolType
		rg.Protocol = d.Protocol
		for _, m := range d.Members {
			rm := kmsg.NewDescribeGroupsResponseGroupMember()
			rm.MemberID = m.MemberID
			if r.Version >= 4 {
				rm.InstanceID = m.InstanceID
			}
			rm.ClientID = m.ClientID
			rm.ClientHost = m.ClientHost
			rm.ProtocolMetadata = nonNil(m.Metadata)
			rm.MemberAssignment = nonNil(m.Assignment)
			rg.Members = append(rg.Members, rm)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
