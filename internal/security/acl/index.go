package acl

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security"
)

// entry is a binding as the authorizer matches it, its principal parsed.
type entry struct {
	principal  security.Principal
	anyone     bool // User:*
	host       string
	operation  kmsg.ACLOperation
	permission kmsg.ACLPermissionType
}

type resourceKey struct {
	typ  kmsg.ACLResourceType
	name string
}

// prefixIndex holds the PREFIXED bindings of one resource type by prefix,
// and the distinct prefix lengths, so a name is looked up once per length
// rather than compared with every prefix.
type prefixIndex struct {
	byPrefix map[string][]entry
	lengths  []int // ascending
}

// index is derived from one ACLSet; immutable once built.
type index struct {
	literal  map[resourceKey][]entry // LITERAL bindings, "*" among them
	prefixed map[kmsg.ACLResourceType]*prefixIndex
}

func buildIndex(set *metadata.ACLSet) *index {
	ix := &index{literal: map[resourceKey][]entry{}, prefixed: map[kmsg.ACLResourceType]*prefixIndex{}}
	set.Each(func(r *metadata.AccessControlEntryRecord) {
		b := FromRecord(r)
		p, err := security.ParsePrincipal(b.Principal)
		if err != nil {
			return // the controller validates bindings; an unparsable one matches nobody
		}
		e := entry{principal: p, anyone: b.Principal == WildcardPrincipal, host: b.Host, operation: b.Operation, permission: b.Permission}
		switch b.PatternType {
		case PatternLiteral:
			k := resourceKey{b.ResourceType, b.ResourceName}
			ix.literal[k] = append(ix.literal[k], e)
		case PatternPrefixed:
			pi := ix.prefixed[b.ResourceType]
			if pi == nil {
				pi = &prefixIndex{byPrefix: map[string][]entry{}}
				ix.prefixed[b.ResourceType] = pi
			}
			if _, ok := pi.byPrefix[b.ResourceName]; !ok {
				n := len(b.ResourceName)
				if i, found := slices.BinarySearch(pi.lengths, n); !found {
					pi.lengths = slices.Insert(pi.lengths, i, n)
				}
			}
			pi.byPrefix[b.ResourceName] = append(pi.byPrefix[b.ResourceName], e)
		}
	})
	return ix
}

// each calls fn with every group of entries whose pattern matches the
// resource: the literal name, the literal wildcard, every prefix.
func (ix *index) each(typ kmsg.ACLResourceType, name string, fn func([]entry)) {
	if es := ix.literal[resourceKey{typ, name}]; len(es) > 0 {
		fn(es)
	}
	if name != Wildcard {
		if es := ix.literal[resourceKey{typ, Wildcard}]; len(es) > 0 {
			fn(es)
		}
	}
	if pi := ix.prefixed[typ]; pi != nil {
		for _, n := range pi.lengths {
			if n > len(name) {
				break
			}
			if es := pi.byPrefix[name[:n]]; len(es) > 0 {
				fn(es)
			}
		}
	}
}

// decision is what the ACLs say about one request.
type decision int8

const (
	noACLs decision = iota // no binding matches the resource at all
	denied                 // a DENY matched, or bindings exist and no ALLOW matched
	allowed
)

// decide applies StandardAuthorizer's rules: any matching DENY wins; else
// any matching ALLOW (directly, ALL, or an operation implying the one
// asked for) allows; else the resource having no binding at all is
// reported apart, for allow.everyone.if.no.acl.found.
func (ix *index) decide(p security.Principal, host string, typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) decision {
	found, allow, deny := false, false, false
	ix.each(typ, name, func(es []entry) {
		found = true
		for i := range es {
			e := &es[i]
			if !e.anyone && e.principal != p {
				continue
			}
			if e.host != Wildcard && e.host != host {
				continue
			}
			switch e.permission {
			case PermissionDeny:
				// A DENY covers only its own operation (or ALL): DENY READ
				// does not deny DESCRIBE.
				if e.operation == OpAll || e.operation == op {
					deny = true
				}
			case PermissionAllow:
				if e.operation == OpAll || e.operation == op || implies(e.operation, op) {
					allow = true
				}
			}
		}
	})
	switch {
	case deny:
		return denied
	case allow:
		return allowed
	case !found:
		return noACLs
	}
	return denied
}

// implies reports whether an ALLOW of granted also allows op: READ, WRITE,
// DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS
// (Kafka's AclEntry implied operations).
func implies(granted, op kmsg.ACLOperation) bool {
	switch op {
	case OpDescribe:
		return granted == OpRead || granted == OpWrite || granted == OpDelete || granted == OpAlter
	case OpDescribeConfigs:
		return granted == OpAlterConfigs
	}
	return false
}
