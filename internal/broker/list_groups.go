package broker

// ListGroups (key 16), v0-v5.
//
// Lists the groups this broker coordinates. v4+ filters by state
// (KIP-518) and returns it; v5+ filters by type (KIP-848) and returns it:
// every group here is "classic". Filters are case-insensitive; an empty
// filter matches all. While a partition of __consumer_offsets is still
// loading, the answer is COORDINATOR_LOAD_IN_PROGRESS.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ListGroups, 0, 5, (*Broker).handleListGroups) }

func (b *Broker) handleListGroups(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListGroupsRequest)
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	if b.groups == nil {
		return resp, nil
	}
	var states, types []string
	if r.Version >= 4 {
		states = req.StatesFilter
	}
	if r.Version >= 5 {
		types = req.TypesFilter
	}
	groups, err := b.groups.ListGroups(states, types)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	// Kafka: DESCRIBE on the cluster lists every group; else only the
	// groups the principal may DESCRIBE.
	all := b.allowedCluster(r, acl.OpDescribe)
	for _, g := range groups {
		if !all && !b.allowedGroup(r, g.GroupID, acl.OpDescribe) {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group = g.GroupID
		rg.ProtocolType = g.ProtocolType
		rg.GroupState = g.State
		rg.GroupType = g.Type
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
