package acl

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security"
)

// The authorizer.class.name values that select this authorizer: KRaft's
// StandardAuthorizer, and the ZooKeeper-era AclAuthorizer, whose ACL
// semantics are the same.
const (
	StandardAuthorizerClass = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
	AclAuthorizerClass      = "kafka.security.authorizer.AclAuthorizer"
)

// Config is the authorizer's part of the broker config.
type Config struct {
	// SuperUsers are allowed everything (super.users).
	SuperUsers []security.Principal
	// AllowEveryoneIfNoACLFound allows an operation on a resource no
	// binding matches (allow.everyone.if.no.acl.found).
	AllowEveryoneIfNoACLFound bool
	// Ready, if set, is closed once the node has caught up with the
	// metadata log; until then only super users are authorized (Kafka's
	// StandardAuthorizer before its initial load), which matters only on
	// early.start.listeners.
	Ready <-chan struct{}
}

// ParseSuperUsers parses super.users: principals separated by semicolons,
// as Kafka (a principal name may contain commas, e.g. a certificate DN).
func ParseSuperUsers(s string) ([]security.Principal, error) {
	var out []security.Principal
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p, err := security.ParsePrincipal(part)
		if err != nil {
			return nil, fmt.Errorf("super.users: %v", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Authorizer answers whether a principal may perform an operation on a
// resource, from the ACLs of the current metadata image. Safe for
// concurrent use; a check takes no lock across I/O (it takes none but a
// cache shard's, briefly).
//
// The index and the decision cache are derived from the image's ACLSet and
// replaced, whole, when a newer image carries another set (ACLs change
// rarely; topic or partition changes leave the set, and so the cache, as
// it is).
type Authorizer struct {
	cfg   Config
	super map[security.Principal]bool
	// image is the current metadata image (metadata.Log.Image).
	image func() *metadata.Image

	view atomic.Pointer[view]
	// rebuild serialises building the view of a new ACL set, so a change
	// is indexed once, not by every request that notices it.
	rebuild sync.Mutex
}

// New returns an authorizer over the images image returns.
func New(cfg Config, image func() *metadata.Image) *Authorizer {
	a := &Authorizer{cfg: cfg, super: map[security.Principal]bool{}, image: image}
	for _, p := range cfg.SuperUsers {
		a.super[p] = true
	}
	return a
}

// Subject is who asks: the connection's principal and client address.
type Subject struct {
	Principal security.Principal
	// Host is the client's IP address in its usual text form, which ACL
	// hosts name (or "*").
	Host string
}

// Authorize reports whether s may perform op on the resource (typ, name).
func (a *Authorizer) Authorize(s Subject, typ kmsg.ACLResourceType, name string, op kmsg.ACLOperation) bool {
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
	v := a.current()
	k := cacheKey{s.Principal, s.Host, typ, op, name}
	sh := &v.cache[maphash.Comparable(cacheSeed, k)%cacheShards]
	sh.mu.RLock()
	d, ok := sh.m[k]
	sh.mu.RUnlock()
	if !ok {
		d = v.index.decide(s.Principal, s.Host, typ, name, op)
		sh.mu.Lock()
		if len(sh.m) >= cacheShardEntries {
			clear(sh.m) // bounded: a flood of distinct names cannot grow it without limit
		}
		sh.m[k] = d
		sh.mu.Unlock()
	}
	switch d {
	case allowed:
		return true
	case noACLs:
		return a.cfg.AllowEveryoneIfNoACLFound
	}
	return false
}

// operationsOf are the operations of each resource type that
// authorized_operations fields report (Kafka's AclEntry.supportedOperations).
var operationsOf = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	ResourceTopic:           {OpRead, OpWrite, OpCreate, OpDescribe, OpDelete, OpAlter, OpDescribeConfigs, OpAlterConfigs},
	ResourceGroup:           {OpRead, OpDescribe, OpDelete, OpDescribeConfigs, OpAlterConfigs},
	ResourceCluster:         {OpCreate, OpClusterAction, OpDescribeConfigs, OpAlterConfigs, OpIdempotentWrite, OpAlter, OpDescribe},
	ResourceTransactionalID: {OpDescribe, OpWrite},
	ResourceDelegationToken: {OpDescribe},
	ResourceUser:            {OpCreateTokens, OpDescribeTokens},
}

// SupportedOperations are the operations of the resource type (besides
// ALL), in Kafka's order.
func SupportedOperations(typ kmsg.ACLResourceType) []kmsg.ACLOperation {
	return slices.Clone(operationsOf[typ])
}

// AllOperations is the bit field of every operation of the resource type,
// what authorized_operations reports when nothing is checked.
func AllOperations(typ kmsg.ACLResourceType) int32 {
	var bits int32
	for _, op := range operationsOf[typ] {
		bits |= 1 << op
	}
	return bits
}

// AuthorizedOperations is the bit field of the operations s may perform
// on the resource (bit n set for operation code n), as Metadata,
// DescribeGroups and DescribeCluster report it (KIP-430).
func (a *Authorizer) AuthorizedOperations(s Subject, typ kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range operationsOf[typ] {
		if a.Authorize(s, typ, name, op) {
			bits |= 1 << op
		}
	}
	return bits
}

// current returns the view of the current image's ACL set, building it if
// the set changed since the last one.
func (a *Authorizer) current() *view {
	set := a.image().ACLs()
	if v := a.view.Load(); v != nil && v.set == set {
		return v
	}
	a.rebuild.Lock()
	defer a.rebuild.Unlock()
	if v := a.view.Load(); v != nil && v.set == set {
		return v
	}
	v := newView(set)
	// A request that read an older image may get here after a newer set
	// was indexed: it is answered from its own view, which is not kept.
	if a.image().ACLs() == set {
		a.view.Store(v)
	}
	return v
}

const (
	cacheShards       = 32
	cacheShardEntries = 4096
)

var cacheSeed = maphash.MakeSeed()

type cacheKey struct {
	principal security.Principal
	host      string
	typ       kmsg.ACLResourceType
	op        kmsg.ACLOperation
	name      string
}

// view is one ACL set, its index and the decisions cached over it.
type view struct {
	set   *metadata.ACLSet
	index *index
	cache [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex // guards m
	m  map[cacheKey]decision
}

func newView(set *metadata.ACLSet) *view {
	v := &view{set: set, index: buildIndex(set)}
	for i := range v.cache {
		v.cache[i].m = map[cacheKey]decision{}
	}
	return v
}
