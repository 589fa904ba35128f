package broker_test

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
)

func metadataAll(withOps bool) kmsg.Request {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = nil
	req.IncludeClusterAuthorizedOperations, req.IncludeTopicAuthorizedOperations = withOps, withOps
	return versioned(12, req)
}

func visibleTopics(resp *kmsg.MetadataResponse) []string {
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	return out
}

// Metadata lists only the topics a principal may DESCRIBE, and fills the
// authorized operations from the ACLs (KIP-430).
func TestMetadataHidesUnauthorizedTopics(t *testing.T) {
	an := startAuthzNode(t, nil)
	an.createTopics("visible", "hidden", "app-one", "app-two")
	an.addACLs(topicACL("visible", acl.OpWrite),
		acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "app-", PatternType: acl.PatternPrefixed,
			Principal: "User:*", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow},
		clusterACL(acl.OpDescribe))

	resp := an.call(alice, metadataAll(true)).(*kmsg.MetadataResponse)
	if got, want := visibleTopics(resp), []string{"app-one", "app-two", "visible"}; !slices.Equal(got, want) {
		t.Fatalf("alice sees %v, want %v", got, want)
	}
	ops := map[string]int32{}
	for _, tp := range resp.Topics {
		ops[*tp.Topic] = tp.AuthorizedOperations
	}
	if want := int32(1<<acl.OpWrite | 1<<acl.OpDescribe); ops["visible"] != want {
		t.Errorf("visible: authorized operations %b, want %b (WRITE and the DESCRIBE it implies)", ops["visible"], want)
	}
	if want := int32(1<<acl.OpRead | 1<<acl.OpDescribe); ops["app-one"] != want {
		t.Errorf("app-one: authorized operations %b, want %b", ops["app-one"], want)
	}
	if want := int32(1 << acl.OpDescribe); resp.AuthorizedOperations != want {
		t.Errorf("cluster authorized operations %b, want %b", resp.AuthorizedOperations, want)
	}

	// Another principal matches only the wildcard-principal prefix ACL.
	bob := an.call(security.User("bob"), metadataAll(false)).(*kmsg.MetadataResponse)
	if got, want := visibleTopics(bob), []string{"app-one", "app-two"}; !slices.Equal(got, want) {
		t.Fatalf("bob sees %v, want %v", got, want)
	}
	if bob.AuthorizedOperations != -2147483648 {
		t.Errorf("cluster authorized operations not asked for: %d", bob.AuthorizedOperations)
	}

	// Named, the hidden topic is TOPIC_AUTHORIZATION_FAILED, as a missing
	// one would be: its existence is not revealed.
	req := kmsg.NewPtrMetadataRequest()
	for _, name := range []string{"hidden", "no-such-topic"} {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(name)
		req.Topics = append(req.Topics, rt)
	}
	named := an.call(alice, versioned(12, req)).(*kmsg.MetadataResponse)
	for _, tp := range named.Topics {
		if tp.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(tp.Partitions) != 0 || tp.TopicID != [16]byte{} {
			t.Errorf("%s: error %v, %d partitions, id %x", *tp.Topic, kerr.ErrorForCode(tp.ErrorCode), len(tp.Partitions), tp.TopicID)
		}
	}

	// The super user sees everything.
	if got := visibleTopics(an.call(admin, metadataAll(false)).(*kmsg.MetadataResponse)); len(got) != 4 {
		t.Fatalf("admin sees %v", got)
	}
}

// allow.everyone.if.no.acl.found opens resources no ACL names, and only
// those.
func TestAllowEveryoneIfNoACLFound(t *testing.T) {
	an := startAuthzNode(t, map[string]string{"allow.everyone.if.no.acl.found": "true"})
	an.createTopics("open", "guarded")
	an.addACLs(acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "guarded", PatternType: acl.PatternLiteral,
		Principal: "User:bob", Host: "*", Operation: acl.OpRead, Permission: acl.PermissionAllow})
	if got, want := visibleTopics(an.call(alice, metadataAll(false)).(*kmsg.MetadataResponse)), []string{"open"}; !slices.Equal(got, want) {
		t.Fatalf("alice sees %v, want %v", got, want)
	}
	if got := visibleTopics(an.call(security.User("bob"), metadataAll(false)).(*kmsg.MetadataResponse)); len(got) != 2 {
		t.Fatalf("bob sees %v", got)
	}
}

// ListGroups lists every group with DESCRIBE on the cluster, else only the
// groups the principal may DESCRIBE.
func TestListGroupsFiltered(t *testing.T) {
	an := startAuthzNode(t, nil)
	an.createTopics("t")
	for _, g := range []string{"g1", "g2"} {
		an.awaitGroupCoordinator(g) // each group's offsets partition loads on its own
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = g, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rt.Partitions = append(rt.Partitions, kmsg.NewOffsetCommitRequestTopicPartition())
		req.Topics = append(req.Topics, rt)
		if code := an.call(admin, versioned(8, req)).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit for %s: %v", g, kerr.ErrorForCode(code))
		}
	}
	list := func() []string {
		resp := an.call(alice, versioned(4, kmsg.NewPtrListGroupsRequest())).(*kmsg.ListGroupsResponse)
		var out []string
		for _, g := range resp.Groups {
			out = append(out, g.Group)
		}
		slices.Sort(out)
		return out
	}
	if got := list(); len(got) != 0 {
		t.Fatalf("without ACLs alice lists %v", got)
	}
	an.addACLs(groupACL("g2", acl.OpDescribe))
	if got := list(); !slices.Equal(got, []string{"g2"}) {
		t.Fatalf("with DESCRIBE on g2 alice lists %v", got)
	}
	an.addACLs(clusterACL(acl.OpDescribe))
	if got := list(); !slices.Equal(got, []string{"g1", "g2"}) {
		t.Fatalf("with DESCRIBE on the cluster alice lists %v", got)
	}
}

// CreateAcls validates bindings; DescribeAcls and DeleteAcls select with
// MATCH and ANY filters as Kafka's ResourcePatternFilter.
func TestACLAPIs(t *testing.T) {
	an := startAuthzNode(t, nil)
	create := func(bs ...acl.Binding) []int16 {
		req := kmsg.NewPtrCreateACLsRequest()
		for _, b := range bs {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
			c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
			req.Creations = append(req.Creations, c)
		}
		var codes []int16
		for _, r := range an.call(admin, versioned(3, req)).(*kmsg.CreateACLsResponse).Results {
			codes = append(codes, r.ErrorCode)
		}
		return codes
	}
	lit := topicACL("app-orders", acl.OpRead)
	wild := topicACL("*", acl.OpDescribe)
	pre := acl.Binding{ResourceType: acl.ResourceTopic, ResourceName: "app-", PatternType: acl.PatternPrefixed,
		Principal: "User:bob", Host: "10.0.0.1", Operation: acl.OpWrite, Permission: acl.PermissionDeny}
	other := groupACL("app-orders", acl.OpRead)
	bad := topicACL("x", acl.OpRead)
	bad.PatternType = acl.PatternMatch
	noType := topicACL("x", acl.OpRead)
	noType.Principal = "alice"
	codes := create(lit, wild, pre, other, bad, noType, lit)
	want := []int16{0, 0, 0, 0, kerr.InvalidRequest.Code, kerr.InvalidRequest.Code, 0}
	if !slices.Equal(codes, want) {
		t.Fatalf("CreateAcls codes %v, want %v", codes, want)
	}

	describe := func(rt kmsg.ACLResourceType, name *string, pt kmsg.ACLResourcePatternType) (int16, int) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = rt, name, pt
		req.Operation, req.PermissionType = acl.OpAny, acl.PermissionAny
		resp := an.call(admin, versioned(3, req)).(*kmsg.DescribeACLsResponse)
		n := 0
		for _, r := range resp.Resources {
			n += len(r.ACLs)
		}
		return resp.ErrorCode, n
	}
	name := kmsg.StringPtr("app-orders")
	for _, tc := range []struct {
		what string
		rt   kmsg.ACLResourceType
		name *string
		pt   kmsg.ACLResourcePatternType
		want int
	}{
		{"everything", acl.ResourceAny, nil, acl.PatternAny, 4}, // the duplicate was not stored twice
		{"MATCH app-orders: literal, wildcard, prefix", acl.ResourceTopic, name, acl.PatternMatch, 3},
		{"ANY app-orders: exact names of any pattern type", acl.ResourceAny, name, acl.PatternAny, 2},
		{"LITERAL topics", acl.ResourceTopic, nil, acl.PatternLiteral, 2},
		{"PREFIXED app-", acl.ResourceTopic, kmsg.StringPtr("app-"), acl.PatternPrefixed, 1},
	} {
		if code, n := describe(tc.rt, tc.name, tc.pt); code != 0 || n != tc.want {
			t.Errorf("DescribeAcls %s: error %v, %d bindings, want %d", tc.what, kerr.ErrorForCode(code), n, tc.want)
		}
	}
	if code, _ := describe(acl.ResourceAny, nil, 0); code != kerr.InvalidRequest.Code {
		t.Errorf("DescribeAcls with an unknown pattern type: %v", kerr.ErrorForCode(code))
	}

	// DeleteAcls with MATCH removes what matches the name, and lists it.
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourceName, f.ResourcePatternType = acl.ResourceTopic, name, acl.PatternMatch
	f.Operation, f.PermissionType = acl.OpAny, acl.PermissionAny
	del.Filters = append(del.Filters, f)
	res := an.call(admin, versioned(3, del)).(*kmsg.DeleteACLsResponse).Results[0]
	if res.ErrorCode != 0 || len(res.MatchingACLs) != 3 {
		t.Fatalf("DeleteAcls MATCH: error %v, %d matched", kerr.ErrorForCode(res.ErrorCode), len(res.MatchingACLs))
	}
	if _, n := describe(acl.ResourceAny, nil, acl.PatternAny); n != 1 {
		t.Fatalf("%d bindings left, want the group's", n)
	}
}

// Without an authorizer the ACL APIs answer SECURITY_DISABLED, as Kafka's.
func TestACLAPIsWithoutAuthorizer(t *testing.T) {
	tn := startNode(t, nil)
	h := &authzNode{testNode: tn, h: tn.n.Handler()}
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = acl.ResourceAny, acl.PatternAny, acl.OpAny, acl.PermissionAny
	if code := h.call(alice, versioned(3, req)).(*kmsg.DescribeACLsResponse).ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls: %v", kerr.ErrorForCode(code))
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = append(cr.Creations, kmsg.NewCreateACLsRequestCreation())
	if code := h.call(alice, versioned(3, cr)).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; code != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls: %v", kerr.ErrorForCode(code))
	}
	// And every other API answers as before, for any principal.
	if got := visibleTopics(h.call(alice, metadataAll(true)).(*kmsg.MetadataResponse)); got != nil {
		t.Fatalf("topics %v", got)
	}
}

// A topic created with CREATE but without DESCRIBE_CONFIGS on it comes back
// without its configs, and says why (CreateTopics v5+, as Kafka).
func TestCreateTopicsHidesConfigsWithoutDescribeConfigs(t *testing.T) {
	an := startAuthzNode(t, nil)
	create := func(name string) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
		return an.call(alice, versioned(7, req)).(*kmsg.CreateTopicsResponse).Topics[0]
	}
	an.addACLs(topicACL("plain", acl.OpCreate), topicACL("described", acl.OpCreate), topicACL("described", acl.OpDescribeConfigs))
	if got := create("plain"); got.ErrorCode != 0 || len(got.Configs) != 0 || got.ConfigErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("plain: error %v, %d configs, config error %v", kerr.ErrorForCode(got.ErrorCode), len(got.Configs), kerr.ErrorForCode(got.ConfigErrorCode))
	}
	if got := create("described"); got.ErrorCode != 0 || len(got.Configs) == 0 || got.ConfigErrorCode != 0 {
		t.Fatalf("described: error %v, %d configs, config error %v", kerr.ErrorForCode(got.ErrorCode), len(got.Configs), kerr.ErrorForCode(got.ConfigErrorCode))
	}
}

// ConsumerGroupDescribe describes a group only to a principal that may
// DESCRIBE the topics its members use (Kafka 4).
func TestConsumerGroupDescribeNeedsTopicDescribe(t *testing.T) {
	an := startAuthzNode(t, nil)
	an.createTopics("orders")
	an.awaitGroupCoordinator("cgd")
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "cgd", "member-cgd-aaaaaaaaaaaaaaaa", 0, 10000
	hb.SubscribedTopicNames, hb.Topics = []string{"orders"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if code := an.call(admin, versioned(0, hb)).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(code))
	}
	describe := func() kmsg.ConsumerGroupDescribeResponseGroup {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cgd"}
		return an.call(alice, versioned(0, req)).(*kmsg.ConsumerGroupDescribeResponse).Groups[0]
	}
	an.addACLs(groupACL("cgd", acl.OpDescribe))
	if g := describe(); g.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(g.Members) != 0 {
		t.Fatalf("without DESCRIBE on orders: %v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
	an.addACLs(topicACL("orders", acl.OpDescribe))
	if g := describe(); g.ErrorCode != 0 || len(g.Members) != 1 {
		t.Fatalf("with DESCRIBE on orders: %v, %d members", kerr.ErrorForCode(g.ErrorCode), len(g.Members))
	}
}

// A regex subscription takes only the matching topics the member may
// DESCRIBE (Kafka 4).
func TestConsumerGroupRegexFilteredByDescribe(t *testing.T) {
	an := startAuthzNode(t, nil)
	an.createTopics("rx-allowed", "rx-hidden")
	an.awaitGroupCoordinator("rxg")
	an.addACLs(groupACL("rxg", acl.OpRead), topicACL("rx-allowed", acl.OpDescribe))
	ids := map[[16]byte]string{}
	for _, tp := range an.call(admin, metadataAll(false)).(*kmsg.MetadataResponse).Topics {
		ids[tp.TopicID] = *tp.Topic
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "rxg", "member-rx-aaaaaaaaaaaaaaaaa", 0, 10000
	hb.SubscribedTopicRegex, hb.Topics = kmsg.StringPtr("rx-.*"), []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := an.call(alice, versioned(1, hb)).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != 0 || resp.Assignment == nil {
		t.Fatalf("heartbeat: %v, assignment %v", kerr.ErrorForCode(resp.ErrorCode), resp.Assignment)
	}
	var got []string
	for _, tp := range resp.Assignment.Topics {
		got = append(got, ids[tp.TopicID])
	}
	if !slices.Equal(got, []string{"rx-allowed"}) {
		t.Fatalf("assigned %v, want only rx-allowed", got)
	}
}
