package broker

// DeleteAcls (key 31), v0-v3.
//
// Removes the bindings each filter selects (ANY and MATCH patterns,
// KIP-290) and lists them per filter. Needs ALTER on the cluster; else
// every filter is CLUSTER_AUTHORIZATION_FAILED. Without an authorizer:
// SECURITY_DISABLED. The active controller commits the removals; another
// broker forwards the request (after authorizing it here) and answers once
// its image no longer holds the removed bindings.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DeleteACLs, 0, 3, (*Broker).handleDeleteAcls) }

func (b *Broker) handleDeleteAcls(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DeleteACLsRequest)
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	refuse := func(err *kerr.Error) (kmsg.Response, error) {
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = err.Code
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	if b.authz == nil {
		return refuse(kerr.SecurityDisabled)
	}
	if !b.allowedCluster(r, acl.OpAlter) {
		return refuse(kerr.ClusterAuthorizationFailed)
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		fresp := fwd.(*kmsg.DeleteACLsResponse)
		b.awaitImage(ctx, func(img *metadata.Image) bool {
			for _, res := range fresp.Results {
				for _, m := range res.MatchingACLs {
					if hasBinding(img, acl.Binding{
						ResourceType: m.ResourceType, ResourceName: m.ResourceName, PatternType: m.ResourcePatternType,
						Principal: m.Principal, Host: m.Host, Operation: m.Operation, Permission: m.PermissionType,
					}) {
						return false
					}
				}
			}
			return true
		})
		return fresp, nil
	}
	filters := make([]acl.Filter, len(req.Filters))
	for i, f := range req.Filters {
		filters[i] = acl.Filter{
			ResourceType: f.ResourceType, ResourceName: f.ResourceName, PatternType: f.ResourcePatternType,
			Principal: f.Principal, Host: f.Host, Operation: f.Operation, Permission: f.PermissionType,
		}
	}
	for _, out := range b.controller.DeleteAcls(ctx, filters) {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode = b.errCode(out.Err)
		if out.Err != nil {
			res.ErrorMessage = errMessage(out.Err)
		}
		for _, bd := range out.Matched {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			res.MatchingACLs = append(res.MatchingACLs, m)
		}
		resp.Results = append(resp.Results, res)
	}
	b.awaitMetadata(ctx)
	return resp, nil
}
