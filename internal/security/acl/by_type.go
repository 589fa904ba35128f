package acl

import "github.com/twmb/franz-go/pkg/kmsg"

// AuthorizeByResourceType reports whether s may perform op on at least one
// resource of the type (KIP-679: an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on any topic). As Kafka's
// Authorizer.authorizeByResourceType: a DENY of op (or ALL) on every
// resource of the type (the literal wildcard) refuses; else an ALLOW of op
// (or ALL) on any literal or prefixed pattern that no DENY of the same
// pattern, or a DENY prefix of it, cancels, allows. With no binding of the
// type at all, allow.everyone.if.no.acl.found decides. Not cached: it is
// asked once per producer.
func (a *Authorizer) AuthorizeByResourceType(s Subject, typ kmsg.ACLResourceType, op kmsg.ACLOperation) bool {
	if a.super[s.Principal] {
		return true
	}
	if a.cfg.Ready != nil {
		select {
		case <-a.cfg.Ready:
		default:
			return false
		}
	}
	ix := a.current().index
	applies := func(e *entry, perm kmsg.ACLPermissionType) bool {
		return e.permission == perm && (e.anyone || e.principal == s.Principal) &&
			(e.host == Wildcard || e.host == s.Host) && (e.operation == OpAll || e.operation == op)
	}
	matching := func(es []entry, perm kmsg.ACLPermissionType) bool {
		for i := range es {
			if applies(&es[i], perm) {
				return true
			}
		}
		return false
	}
	if matching(ix.literal[resourceKey{typ, Wildcard}], PermissionDeny) {
		return false
	}
	pi := ix.prefixed[typ]
	deniedByPrefix := func(name string) bool {
		if pi == nil {
			return false
		}
		for _, n := range pi.lengths {
			if n > len(name) {
				break
			}
			if matching(pi.byPrefix[name[:n]], PermissionDeny) {
				return true
			}
		}
		return false
	}
	found := false
	for k, es := range ix.literal {
		if k.typ != typ {
			continue
		}
		found = true
		if matching(es, PermissionAllow) && !matching(es, PermissionDeny) && !deniedByPrefix(k.name) {
			return true
		}
	}
	if pi != nil {
		for prefix, es := range pi.byPrefix {
			found = true
			if matching(es, PermissionAllow) && !deniedByPrefix(prefix) {
				return true
			}
		}
	}
	return !found && a.cfg.AllowEveryoneIfNoACLFound
}
