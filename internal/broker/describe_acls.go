package broker

// DescribeAcls (key 29), v0-v3.
//
// Lists the bindings a filter selects (ANY and MATCH patterns, KIP-290;
// v0 filters are LITERAL), grouped by resource pattern. Needs DESCRIBE on
// the cluster (CLUSTER_AUTHORIZATION_FAILED); without an authorizer the
// answer is SECURITY_DISABLED. Answered from this broker's image.

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.DescribeACLs, 0, 3, (*Broker).handleDescribeAcls) }

func (b *Broker) handleDescribeAcls(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeACLsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	fail := func(err error) (kmsg.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = b.errCode(err), errMessage(err)
		return resp, nil
	}
	if b.authz == nil {
		return fail(kerr.SecurityDisabled)
	}
	if !b.allowedCluster(r, acl.OpDescribe) {
		return fail(kerr.ClusterAuthorizationFailed)
	}
	f := acl.Filter{
		ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType,
	}
	if err := f.Validate(); err != nil {
		return fail(err)
	}
	type pattern struct {
		typ  kmsg.ACLResourceType
		name string
		pt   kmsg.ACLResourcePatternType
	}
	byPattern := map[pattern][]kmsg.DescribeACLsResponseResourceACL{}
	for _, rec := range acl.Match(b.meta.Image().ACLs(), f) {
		bd := acl.FromRecord(rec)
		p := pattern{bd.ResourceType, bd.ResourceName, bd.PatternType}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		byPattern[p] = append(byPattern[p], e)
	}
	for p, entries := range byPattern {
		res := kmsg.NewDescribeACLsResponseResource()
		res.ResourceType, res.ResourceName, res.ResourcePatternType, res.ACLs = p.typ, p.name, p.pt, entries
		resp.Resources = append(resp.Resources, res)
	}
	slices.SortFunc(resp.Resources, func(a, b kmsg.DescribeACLsResponseResource) int {
		return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.ResourceName, b.ResourceName), cmp.Compare(a.ResourcePatternType, b.ResourcePatternType))
	})
	return resp, nil
}
