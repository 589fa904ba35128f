package broker

// CreateAcls (key 30), v0-v3.
//
// Adds ACL bindings (v0 names literal patterns only; v1+ carries the
// pattern type, KIP-290). Needs ALTER on the cluster; else every creation
// is CLUSTER_AUTHORIZATION_FAILED. Without an authorizer the answer is
// SECURITY_DISABLED, as Kafka's. The active controller validates each
// binding (INVALID_REQUEST for ANY/MATCH types, an empty name, a principal
// without a type, ...) and commits them; another broker forwards the
// request (after authorizing it here) and answers once its own image holds
// the new bindings.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.CreateACLs, 0, 3, (*Broker).handleCreateAcls) }

func (b *Broker) handleCreateAcls(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateACLsRequest)
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	refuse := func(err *kerr.Error, msg string) (kmsg.Response, error) {
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = err.Code, &msg
			resp.Results = append(resp.Results, res)
		}
		return resp, nil
	}
	if b.authz == nil {
		return refuse(kerr.SecurityDisabled, "No Authorizer is configured.")
	}
	if !b.allowedCluster(r, acl.OpAlter) {
		return refuse(kerr.ClusterAuthorizationFailed, "")
	}
	bindings := make([]acl.Binding, len(req.Creations))
	for i, c := range req.Creations {
		bindings[i] = acl.Binding{
			ResourceType: c.ResourceType, ResourceName: c.ResourceName, PatternType: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType,
		}
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		fresp := fwd.(*kmsg.CreateACLsResponse)
		b.awaitImage(ctx, func(img *metadata.Image) bool {
			for i, res := range fresp.Results {
				if res.ErrorCode == 0 && i < len(bindings) && !hasBinding(img, bindings[i]) {
					return false
				}
			}
			return true
		})
		return fresp, nil
	}
	for _, err := range b.controller.CreateAcls(ctx, bindings) {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode = b.errCode(err)
		if err != nil {
			res.ErrorMessage = errMessage(err)
		}
		resp.Results = append(resp.Results, res)
	}
	b.awaitMetadata(ctx)
	return resp, nil
}

// hasBinding reports whether the image holds the binding.
func hasBinding(img *metadata.Image, want acl.Binding) bool {
	found := false
	img.ACLs().Each(func(r *metadata.AccessControlEntryRecord) { found = found || acl.FromRecord(r) == want })
	return found
}
