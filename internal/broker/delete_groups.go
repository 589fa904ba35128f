package broker

// DeleteGroups (key 42), v0-v2.
//
// Deletes empty groups with their offsets (tombstones in
// __consumer_offsets): NON_EMPTY_GROUP while a group has members,
// GROUP_ID_NOT_FOUND for an unknown one, the coordinator errors otherwise.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DeleteGroups, 0, 2, (*Broker).handleDeleteGroups) }

func (b *Broker) handleDeleteGroups(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteGroupsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		err := errNoCoordinator
		switch {
		case !b.allowedGroup(r, id, acl.OpDelete): // Kafka: DELETE on the group
			err = kerr.GroupAuthorizationFailed
		case b.groups != nil:
			err = b.groups.DeleteGroup(id)
		}
		rg.ErrorCode = b.errCode(err)
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
