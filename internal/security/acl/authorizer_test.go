package acl

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security"
)

// imageWith returns an image holding the bindings.
func imageWith(t testing.TB, bs ...Binding) *metadata.Image {
	t.Helper()
	recs := make([]metadata.Record, len(bs))
	for i, b := range bs {
		if err := b.Validate(); err != nil {
			t.Fatalf("binding %v: %v", b, err)
		}
		recs[i] = b.Record(metadata.NewUuid())
	}
	img, err := metadata.EmptyImage().Apply(0, recs)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func allow(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: PermissionAllow}
}

func deny(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal, host string, op kmsg.ACLOperation) Binding {
	b := allow(rt, name, pt, principal, host, op)
	b.Permission = PermissionDeny
	return b
}

var (
	alice = Subject{Principal: security.User("alice"), Host: "10.0.0.1"}
	bob   = Subject{Principal: security.User("bob"), Host: "10.0.0.2"}
)

func TestAuthorizeSemantics(t *testing.T) {
	tests := []struct {
		name     string
		acls     []Binding
		cfg      Config
		who      Subject
		typ      kmsg.ACLResourceType
		resource string
		op       kmsg.ACLOperation
		want     bool
	}{
		{"no ACLs, default deny", nil, Config{}, alice, ResourceTopic, "t", OpRead, false},
		{"no ACLs, allow.everyone.if.no.acl.found", nil, Config{AllowEveryoneIfNoACLFound: true}, alice, ResourceTopic, "t", OpRead, true},
		{"ACLs on the resource for someone else: allow.everyone does not apply",
			[]Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpRead)}, Config{AllowEveryoneIfNoACLFound: true}, alice, ResourceTopic, "t", OpRead, false},
		{"ACLs on another resource only: allow.everyone applies",
			[]Binding{allow(ResourceTopic, "u", PatternLiteral, "User:bob", "*", OpRead)}, Config{AllowEveryoneIfNoACLFound: true}, alice, ResourceTopic, "t", OpRead, true},
		{"literal allow", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "t", OpRead, true},
		{"literal allow, other operation", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "t", OpWrite, false},
		{"literal allow, other name", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "t2", OpRead, false},
		{"literal allow, other resource type", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceGroup, "t", OpRead, false},
		{"literal allow, other principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, bob, ResourceTopic, "t", OpRead, false},
		{"host exact match", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.1", OpRead)}, Config{}, alice, ResourceTopic, "t", OpRead, true},
		{"host mismatch", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "10.0.0.9", OpRead)}, Config{}, alice, ResourceTopic, "t", OpRead, false},
		{"wildcard principal", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpRead)}, Config{}, bob, ResourceTopic, "t", OpRead, true},
		{"wildcard resource", []Binding{allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "anything", OpRead, true},
		{"prefixed match", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite)}, Config{}, alice, ResourceTopic, "app-orders", OpWrite, true},
		{"prefixed equal name", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite)}, Config{}, alice, ResourceTopic, "app-", OpWrite, true},
		{"prefixed no match", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite)}, Config{}, alice, ResourceTopic, "ap", OpWrite, false},
		{"prefixed is not wildcard", []Binding{allow(ResourceTopic, "*", PatternPrefixed, "User:alice", "*", OpWrite)}, Config{}, alice, ResourceTopic, "app", OpWrite, false},
		{"deny wins over allow", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "t", OpRead, false},
		{"deny by prefix wins over literal allow", []Binding{
			allow(ResourceTopic, "app-orders", PatternLiteral, "User:alice", "*", OpRead),
			deny(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "app-orders", OpRead, false},
		{"deny by wildcard principal wins", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll),
			deny(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpWrite)}, Config{}, alice, ResourceTopic, "t", OpWrite, false},
		{"deny from another host does not apply", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "10.9.9.9", OpRead)}, Config{}, alice, ResourceTopic, "t", OpRead, true},
		{"deny ALL", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll)}, Config{}, alice, ResourceTopic, "t", OpDescribe, false},
		{"deny READ does not deny DESCRIBE", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpDescribe),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, alice, ResourceTopic, "t", OpDescribe, true},
		{"super user despite deny", []Binding{deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAll)},
			Config{SuperUsers: []security.Principal{security.User("alice")}}, alice, ResourceTopic, "t", OpRead, true},
		{"ALL allows everything", []Binding{allow(ResourceCluster, ClusterName, PatternLiteral, "User:alice", "*", OpAll)}, Config{}, alice, ResourceCluster, ClusterName, OpClusterAction, true},
	}
	for _, implied := range []struct {
		granted, asked kmsg.ACLOperation
		want           bool
	}{
		{OpRead, OpDescribe, true}, {OpWrite, OpDescribe, true}, {OpDelete, OpDescribe, true}, {OpAlter, OpDescribe, true},
		{OpAlterConfigs, OpDescribeConfigs, true}, {OpCreate, OpDescribe, false}, {OpDescribe, OpRead, false},
		{OpDescribeConfigs, OpAlterConfigs, false}, {OpAlterConfigs, OpDescribe, false}, {OpRead, OpWrite, false},
	} {
		tests = append(tests, struct {
			name     string
			acls     []Binding
			cfg      Config
			who      Subject
			typ      kmsg.ACLResourceType
			resource string
			op       kmsg.ACLOperation
			want     bool
		}{fmt.Sprintf("%s implies %s: %v", implied.granted, implied.asked, implied.want),
			[]Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", implied.granted)}, Config{}, alice, ResourceTopic, "t", implied.asked, implied.want})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := imageWith(t, tt.acls...)
			a := New(tt.cfg, func() *metadata.Image { return img })
			for range 2 { // uncached, then cached
				if got := a.Authorize(tt.who, tt.typ, tt.resource, tt.op); got != tt.want {
					t.Fatalf("Authorize = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// A new image with other ACLs replaces the cached decisions.
func TestAuthorizeFollowsImage(t *testing.T) {
	img := imageWith(t)
	a := New(Config{}, func() *metadata.Image { return img })
	if a.Authorize(alice, ResourceTopic, "t", OpRead) {
		t.Fatal("allowed without ACLs")
	}
	b := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	id := metadata.NewUuid()
	next, err := img.Apply(1, []metadata.Record{b.Record(id)})
	if err != nil {
		t.Fatal(err)
	}
	img = next
	if !a.Authorize(alice, ResourceTopic, "t", OpRead) {
		t.Fatal("denied after the ACL was added")
	}
	next, err = img.Apply(2, []metadata.Record{&metadata.RemoveAccessControlEntryRecord{ID: id}})
	if err != nil {
		t.Fatal(err)
	}
	img = next
	if a.Authorize(alice, ResourceTopic, "t", OpRead) {
		t.Fatal("allowed after the ACL was removed")
	}
}

func TestAuthorizedOperations(t *testing.T) {
	img := imageWith(t,
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
		allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpAlterConfigs))
	a := New(Config{}, func() *metadata.Image { return img })
	got := a.AuthorizedOperations(alice, ResourceTopic, "t")
	want := int32(1<<OpWrite | 1<<OpDescribe | 1<<OpAlterConfigs | 1<<OpDescribeConfigs)
	if got != want {
		t.Fatalf("authorized operations %b, want %b", got, want)
	}
}

func TestFilterMatches(t *testing.T) {
	s := func(v string) *string { return &v }
	lit := allow(ResourceTopic, "app-orders", PatternLiteral, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)
	pre := allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpRead)
	grp := allow(ResourceGroup, "app-orders", PatternLiteral, "User:bob", "*", OpRead)
	all := []Binding{lit, wild, pre, grp}
	tests := []struct {
		name string
		f    Filter
		want []Binding
	}{
		{"any", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, all},
		{"any pattern, named: exact names only", Filter{ResourceType: ResourceTopic, ResourceName: s("app-orders"), PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, []Binding{lit}},
		{"match: literal, wildcard, prefixes", Filter{ResourceType: ResourceTopic, ResourceName: s("app-orders"), PatternType: PatternMatch, Operation: OpAny, Permission: PermissionAny}, []Binding{lit, wild, pre}},
		{"prefixed exact", Filter{ResourceType: ResourceTopic, ResourceName: s("app-"), PatternType: PatternPrefixed, Operation: OpAny, Permission: PermissionAny}, []Binding{pre}},
		{"literal, any name", Filter{ResourceType: ResourceAny, PatternType: PatternLiteral, Operation: OpAny, Permission: PermissionAny}, []Binding{lit, wild, grp}},
		{"principal", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Principal: s("User:bob"), Operation: OpAny, Permission: PermissionAny}, []Binding{grp}},
		{"operation and permission", Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpWrite, Permission: PermissionAllow}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Binding
			for _, b := range all {
				if tt.f.Matches(b) {
					got = append(got, b)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("matched %v, want %v", got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	good := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Binding){
		"any resource":       func(b *Binding) { b.ResourceType = ResourceAny },
		"match pattern":      func(b *Binding) { b.PatternType = PatternMatch },
		"empty name":         func(b *Binding) { b.ResourceName = "" },
		"cluster name":       func(b *Binding) { b.ResourceType = ResourceCluster; b.ResourceName = "c" },
		"any operation":      func(b *Binding) { b.Operation = OpAny },
		"any permission":     func(b *Binding) { b.Permission = PermissionAny },
		"principal no colon": func(b *Binding) { b.Principal = "alice" },
		"empty host":         func(b *Binding) { b.Host = "" },
	} {
		b := good
		mutate(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: accepted %v", name, b)
		}
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers("User:admin; User:CN=broker,O=acme ;")
	if err != nil || len(got) != 2 || got[1].Name != "CN=broker,O=acme" {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil {
		t.Fatal("accepted a principal without a type")
	}
}

// BenchmarkAuthorize measures a check with 10,000 ACLs (literal and
// prefixed, across many principals): cached, the cost of every request
// after the first for a principal and resource; uncached, a check right
// after an ACL change. docs/PERFORMANCE.md records the numbers.
func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for i := range 10000 {
		p := fmt.Sprintf("User:user-%d", i%500)
		if i%4 == 0 {
			bs = append(bs, allow(ResourceTopic, fmt.Sprintf("team-%d-", i), PatternPrefixed, p, "*", OpWrite))
		} else {
			bs = append(bs, allow(ResourceTopic, fmt.Sprintf("topic-%d", i), PatternLiteral, p, "*", OpRead))
		}
	}
	bs = append(bs, allow(ResourceTopic, "topic-7", PatternLiteral, "User:alice", "*", OpRead))
	img := imageWith(b, bs...)
	b.Run("cached", func(b *testing.B) {
		a := New(Config{}, func() *metadata.Image { return img })
		if !a.Authorize(alice, ResourceTopic, "topic-7", OpRead) {
			b.Fatal("denied")
		}
		b.ReportAllocs()
		for b.Loop() {
			a.Authorize(alice, ResourceTopic, "topic-7", OpRead)
		}
	})
	b.Run("uncached", func(b *testing.B) {
		a := New(Config{}, func() *metadata.Image { return img })
		a.Authorize(alice, ResourceTopic, "warm-up", OpRead)
		b.ReportAllocs()
		for b.Loop() {
			v := a.current()
			v.index.decide(alice.Principal, alice.Host, ResourceTopic, "team-4-orders", OpRead)
		}
	})
}

func TestAuthorizeByResourceType(t *testing.T) {
	tests := []struct {
		name string
		acls []Binding
		cfg  Config
		want bool
	}{
		{"no ACLs", nil, Config{}, false},
		{"no ACLs, allow everyone", nil, Config{AllowEveryoneIfNoACLFound: true}, true},
		{"write on one topic", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite)}, Config{}, true},
		{"write on a prefix", []Binding{allow(ResourceTopic, "app-", PatternPrefixed, "User:alice", "*", OpWrite)}, Config{}, true},
		{"read only", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, Config{}, false},
		{"someone else's write", []Binding{allow(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpWrite)}, Config{}, false},
		{"write cancelled by a deny on it", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite)}, Config{}, false},
		{"write cancelled by a prefixed deny", []Binding{
			allow(ResourceTopic, "app-x", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "app-", PatternPrefixed, "User:*", "*", OpAll)}, Config{}, false},
		{"deny on every topic", []Binding{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpWrite)}, Config{}, false},
		{"super user", nil, Config{SuperUsers: []security.Principal{security.User("alice")}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img := imageWith(t, tt.acls...)
			a := New(tt.cfg, func() *metadata.Image { return img })
			if got := a.AuthorizeByResourceType(alice, ResourceTopic, OpWrite); got != tt.want {
				t.Fatalf("AuthorizeByResourceType = %v, want %v", got, tt.want)
			}
		})
	}
}

// Until the node has caught up with the metadata log only super users are
// authorized (Kafka's StandardAuthorizer before its initial load), which
// early.start.listeners relies on.
func TestAuthorizeBeforeReady(t *testing.T) {
	img := imageWith(t, allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead))
	ready := make(chan struct{})
	a := New(Config{SuperUsers: []security.Principal{security.User("admin")}, AllowEveryoneIfNoACLFound: true, Ready: ready},
		func() *metadata.Image { return img })
	admin := Subject{Principal: security.User("admin"), Host: "10.0.0.1"}
	if a.Authorize(alice, ResourceTopic, "t", OpRead) || a.Authorize(bob, ResourceTopic, "other", OpRead) ||
		a.AuthorizeByResourceType(alice, ResourceTopic, OpRead) {
		t.Fatal("authorized before the ACLs were loaded")
	}
	if !a.Authorize(admin, ResourceTopic, "t", OpRead) {
		t.Fatal("super user refused before the ACLs were loaded")
	}
	close(ready)
	if !a.Authorize(alice, ResourceTopic, "t", OpRead) || !a.Authorize(bob, ResourceTopic, "other", OpRead) {
		t.Fatal("refused once ready")
	}
}

// Checks running while images with other ACL sets are published see one
// set or the other, never a mix, and race with nothing (run with -race).
func TestAuthorizeWhileACLsChange(t *testing.T) {
	b := allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)
	with := imageWith(t, b)
	without := imageWith(t)
	var cur atomic.Pointer[metadata.Image]
	cur.Store(without)
	a := New(Config{}, cur.Load)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
					a.Authorize(alice, ResourceTopic, "t", OpRead)
					a.AuthorizedOperations(bob, ResourceTopic, "t")
				}
			}
		}()
	}
	for i := range 200 {
		if i%2 == 0 {
			cur.Store(with)
		} else {
			cur.Store(without)
		}
		if got, want := a.Authorize(alice, ResourceTopic, "t", OpRead), i%2 == 0; got != want {
			t.Fatalf("round %d: Authorize = %v, want %v", i, got, want)
		}
	}
	close(done)
	wg.Wait()
}
