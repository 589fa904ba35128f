package broker_test

// The authorization table: every served API, checked as Kafka's
// "Operations and Resources on Protocols" table says. Each case is run
// three times as User:alice: with no ACL (refused, with the API's
// authorization error), with the grant and a DENY of the same operation
// (refused: a DENY wins), and with the grant alone (not refused). Requests
// go straight to the node's handler with the principal set, as an
// authenticated connection would carry it.

import (
	"context"
	"net"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/testing/poll"
)

var (
	admin = security.User("admin")
	alice = security.User("alice")
)

// authzNode is a node with the StandardAuthorizer and User:admin as super
// user, and the handler to call as any principal.
type authzNode struct {
	*testNode
	h server.Handler
}

func startAuthzNode(t *testing.T, props map[string]string) *authzNode {
	all := map[string]string{
		"authorizer.class.name":     acl.StandardAuthorizerClass,
		"super.users":               "User:admin",
		"auto.create.topics.enable": "true",
	}
	for k, v := range props {
		all[k] = v
	}
	tn := startNode(t, all)
	return &authzNode{testNode: tn, h: tn.n.Handler()}
}

// call sends req (its version set) as principal p from 127.0.0.1.
func (an *authzNode) call(p security.Principal, req kmsg.Request) kmsg.Response {
	an.t.Helper()
	r := &server.Request{
		Key: req.Key(), Version: req.GetVersion(), ClientID: "authz-test", Body: req, Received: time.Now(),
		Conn: &server.ConnInfo{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT",
			Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}, Principal: p},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := an.h.Handle(ctx, r)
	if err != nil {
		an.t.Fatalf("%s v%d as %s: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), p, err)
	}
	return resp
}

func binding(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) acl.Binding {
	return acl.Binding{ResourceType: rt, ResourceName: name, PatternType: acl.PatternLiteral,
		Principal: alice.String(), Host: "*", Operation: op, Permission: acl.PermissionAllow}
}

func topicACL(name string, op kmsg.ACLOperation) acl.Binding {
	return binding(acl.ResourceTopic, name, op)
}
func groupACL(name string, op kmsg.ACLOperation) acl.Binding {
	return binding(acl.ResourceGroup, name, op)
}
func clusterACL(op kmsg.ACLOperation) acl.Binding {
	return binding(acl.ResourceCluster, acl.ClusterName, op)
}
func txnACL(name string, op kmsg.ACLOperation) acl.Binding {
	return binding(acl.ResourceTransactionalID, name, op)
}

// addACLs creates bindings as the super user.
func (an *authzNode) addACLs(bs ...acl.Binding) {
	an.t.Helper()
	if len(bs) == 0 {
		return
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.SetVersion(3)
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = b.ResourceType, b.ResourceName, b.PatternType
		c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, b.Operation, b.Permission
		req.Creations = append(req.Creations, c)
	}
	resp := an.call(admin, req).(*kmsg.CreateACLsResponse)
	for i, r := range resp.Results {
		if r.ErrorCode != 0 {
			an.t.Fatalf("creating ACL %v: %v %v", bs[i], kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
	}
}

// clearACLs deletes every binding.
func (an *authzNode) clearACLs() {
	an.t.Helper()
	req := kmsg.NewPtrDeleteACLsRequest()
	req.SetVersion(3)
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = acl.ResourceAny, acl.PatternAny, acl.OpAny, acl.PermissionAny
	req.Filters = append(req.Filters, f)
	if resp := an.call(admin, req).(*kmsg.DeleteACLsResponse); resp.Results[0].ErrorCode != 0 {
		an.t.Fatalf("clearing ACLs: %v", kerr.ErrorForCode(resp.Results[0].ErrorCode))
	}
}

func versioned[R kmsg.Request](v int16, r R) R { r.SetVersion(v); return r }

// Error code extractors.
func topLevel(resp kmsg.Response) int16 {
	switch r := resp.(type) {
	case *kmsg.JoinGroupResponse:
		return r.ErrorCode
	case *kmsg.HeartbeatResponse:
		return r.ErrorCode
	case *kmsg.LeaveGroupResponse:
		return r.ErrorCode
	case *kmsg.SyncGroupResponse:
		return r.ErrorCode
	case *kmsg.OffsetFetchResponse:
		return r.ErrorCode
	case *kmsg.OffsetDeleteResponse:
		return r.ErrorCode
	case *kmsg.FindCoordinatorResponse:
		return r.ErrorCode
	case *kmsg.InitProducerIDResponse:
		return r.ErrorCode
	case *kmsg.ConsumerGroupHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.ElectLeadersResponse:
		return r.ErrorCode
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode
	case *kmsg.UpdateFeaturesResponse:
		return r.ErrorCode
	case *kmsg.DescribeQuorumResponse:
		return r.ErrorCode
	case *kmsg.AddRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.RemoveRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.UpdateRaftVoterResponse:
		return r.ErrorCode
	case *kmsg.DescribeLogDirsResponse:
		return r.ErrorCode
	case *kmsg.DescribeClusterResponse:
		return r.ErrorCode
	case *kmsg.DescribeClientQuotasResponse:
		return r.ErrorCode
	case *kmsg.DescribeACLsResponse:
		return r.ErrorCode
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode
	case *kmsg.AssignReplicasToDirsResponse:
		return r.ErrorCode
	case *kmsg.AddPartitionsToTxnResponse:
		return r.ErrorCode
	case *kmsg.AddOffsetsToTxnResponse:
		return r.ErrorCode
	case *kmsg.EndTxnResponse:
		return r.ErrorCode
	case *kmsg.DescribeUserSCRAMCredentialsResponse:
		return r.ErrorCode
	}
	panic("no top-level error code in " + kmsg.NameForKey(resp.Key()))
}

// first returns the first per-resource or per-partition code.
func first(resp kmsg.Response) int16 {
	if f := reflect.ValueOf(resp).Elem().FieldByName("FetchResponse"); f.IsValid() {
		resp = f.Interface().(*kmsg.FetchResponse) // the broker's fetch answer wraps it
	}
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.FetchResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.ListOffsetsResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.MetadataResponse:
		return r.Topics[0].ErrorCode
	case *kmsg.OffsetCommitResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.OffsetFetchResponse:
		if len(r.Topics) == 0 {
			return r.ErrorCode
		}
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.OffsetDeleteResponse:
		if r.ErrorCode != 0 {
			return r.ErrorCode
		}
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.OffsetForLeaderEpochResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.DescribeGroupsResponse:
		return r.Groups[0].ErrorCode
	case *kmsg.ConsumerGroupDescribeResponse:
		return r.Groups[0].ErrorCode
	case *kmsg.DeleteGroupsResponse:
		return r.Groups[0].ErrorCode
	case *kmsg.CreateTopicsResponse:
		return r.Topics[0].ErrorCode
	case *kmsg.DeleteTopicsResponse:
		return r.Topics[0].ErrorCode
	case *kmsg.CreatePartitionsResponse:
		return r.Topics[0].ErrorCode
	case *kmsg.DeleteRecordsResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.DescribeConfigsResponse:
		return r.Resources[0].ErrorCode
	case *kmsg.AlterConfigsResponse:
		return r.Resources[0].ErrorCode
	case *kmsg.IncrementalAlterConfigsResponse:
		return r.Resources[0].ErrorCode
	case *kmsg.AlterReplicaLogDirsResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.CreateACLsResponse:
		return r.Results[0].ErrorCode
	case *kmsg.DeleteACLsResponse:
		return r.Results[0].ErrorCode
	case *kmsg.FindCoordinatorResponse:
		return r.Coordinators[0].ErrorCode
	case *kmsg.AlterClientQuotasResponse:
		return r.Entries[0].ErrorCode
	case *kmsg.AddPartitionsToTxnResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.TxnOffsetCommitResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.WriteTxnMarkersResponse:
		return r.Markers[0].Topics[0].Partitions[0].ErrorCode
	case *kmsg.DescribeTransactionsResponse:
		return r.TransactionStates[0].ErrorCode
	case *kmsg.DescribeProducersResponse:
		return r.Topics[0].Partitions[0].ErrorCode
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		return r.Results[0].ErrorCode
	}
	return topLevel(resp)
}

type authzCase struct {
	name string
	// base ACLs are present in every run; grant is what the API needs.
	base, grant []acl.Binding
	// checked is the operation the API checks when the grant is one that
	// implies it (a DENY covers only the operation it names).
	checked kmsg.ACLOperation
	req     func(t *testing.T) kmsg.Request
	code    func(kmsg.Response) int16
	refused *kerr.Error
}

func produceTo(t *testing.T, topic string) kmsg.Request {
	return versioned(9, produceReq(topic, 0, 1, batch(t, record.CodecNone, "v")))
}

// listedTxnID is a transactional id the table's node coordinates (an
// InitProducerId made it), for the cases that need one to exist.
const listedTxnID = "tx-listed"

func authzCases() []authzCase {
	const (
		topic = "orders"
		grp   = "billing"
		txn   = "tx-1"
	)
	str := kmsg.StringPtr
	topicConfig := func(typ kmsg.ConfigResourceType, name string) kmsg.DescribeConfigsRequestResource {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		return r
	}
	fetchAs := func(replica int32) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := fetchReq(topic, [16]byte{}, 0, 0)
			req.ReplicaID = replica
			req.MaxWaitMillis = 0
			return versioned(12, req)
		}
	}
	offsetCommit := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = grp, -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 0
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return versioned(8, req)
	}
	offsetFetch := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = grp
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		return versioned(7, req)
	}
	offsetDelete := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = grp
		rt := kmsg.NewOffsetDeleteRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetDeleteRequestTopicPartition()
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return versioned(0, req)
	}
	findCoordinator := func(keyType int8, key string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKeys = keyType, []string{key}
			return versioned(4, req)
		}
	}
	initProducerID := func(txnID *string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = txnID, 60000
			return versioned(4, req)
		}
	}
	metadataFor := func(name string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = str(name)
			req.Topics = append(req.Topics, rt)
			req.AllowAutoTopicCreation = true
			return versioned(12, req)
		}
	}
	createTopic := func(name string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 10000
			return versioned(7, req)
		}
	}
	describeConfigs := func(typ kmsg.ConfigResourceType, name string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrDescribeConfigsRequest()
			req.Resources = append(req.Resources, topicConfig(typ, name))
			return versioned(4, req)
		}
	}
	alterConfigs := func(typ kmsg.ConfigResourceType, name, key, value string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = key, str(value)
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			req.ValidateOnly = true
			return versioned(2, req)
		}
	}
	incrementalAlter := func(typ kmsg.ConfigResourceType, name, key, value string) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = typ, name
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = key, str(value)
			rr.Configs = append(rr.Configs, c)
			req.Resources = append(req.Resources, rr)
			req.ValidateOnly = true
			return versioned(1, req)
		}
	}
	simple := func(v int16, mk func() kmsg.Request) func(*testing.T) kmsg.Request {
		return func(*testing.T) kmsg.Request { r := mk(); r.SetVersion(v); return r }
	}
	topicAuth, groupAuth, clusterAuth, txnAuth := kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed, kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed
	addPartitionsToTxn := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = txn, 1, 0
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		return versioned(3, req)
	}
	addOffsetsToTxn := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = txn, 1, 0, grp
		return versioned(3, req)
	}
	txnOffsetCommit := func(*testing.T) kmsg.Request {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txn, grp, 1, 0
		req.Generation = -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch = 0, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return versioned(3, req)
	}
	// listed is ListTransactions' "refusal": the id left out of the list.
	listed := func(id string) func(kmsg.Response) int16 {
		return func(resp kmsg.Response) int16 {
			for _, st := range resp.(*kmsg.ListTransactionsResponse).TransactionStates {
				if st.TransactionalID == id {
					return 0
				}
			}
			return txnAuth.Code
		}
	}

	return []authzCase{
		{name: "Produce: WRITE on the topic", grant: []acl.Binding{topicACL(topic, acl.OpWrite)},
			req: func(t *testing.T) kmsg.Request { return produceTo(t, topic) }, code: first, refused: topicAuth},
		{name: "Produce (transactional records): WRITE on the transactional id", base: []acl.Binding{topicACL(topic, acl.OpWrite)}, grant: []acl.Binding{txnACL(txn, acl.OpWrite)},
			req: func(t *testing.T) kmsg.Request {
				req := produceReq(topic, 0, 1, txnBatch(t, 0x10, "v"))
				req.TransactionID = kmsg.StringPtr(txn)
				return versioned(9, req)
			}, code: first, refused: txnAuth},
		{name: "Fetch (consumer): READ on the topic", grant: []acl.Binding{topicACL(topic, acl.OpRead)}, req: fetchAs(-1), code: first, refused: topicAuth},
		{name: "Fetch (follower): CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)}, req: fetchAs(7), code: first, refused: topicAuth},
		{name: "ListOffsets: DESCRIBE on the topic, implied by READ", grant: []acl.Binding{topicACL(topic, acl.OpRead)}, checked: acl.OpDescribe,
			req: func(*testing.T) kmsg.Request {
				req := kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Timestamp, rp.CurrentLeaderEpoch = -1, -1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return versioned(7, req)
			}, code: first, refused: topicAuth},
		{name: "Metadata: DESCRIBE on the topic", grant: []acl.Binding{topicACL(topic, acl.OpDescribe)}, req: metadataFor(topic), code: first, refused: topicAuth},
		{name: "Metadata: DESCRIBE on a missing topic, implied by WRITE", grant: []acl.Binding{topicACL("never-made", acl.OpWrite)}, checked: acl.OpDescribe,
			req: func(*testing.T) kmsg.Request {
				r := metadataFor("never-made")(nil).(*kmsg.MetadataRequest)
				r.AllowAutoTopicCreation = false
				return r
			}, code: first, refused: topicAuth},
		{name: "Metadata auto-creation: CREATE on the cluster", base: []acl.Binding{topicACL("auto-a", acl.OpDescribe)}, grant: []acl.Binding{clusterACL(acl.OpCreate)},
			req: metadataFor("auto-a"), code: first, refused: topicAuth},
		{name: "Metadata auto-creation: CREATE on the topic", base: []acl.Binding{topicACL("auto-b", acl.OpDescribe)}, grant: []acl.Binding{topicACL("auto-b", acl.OpCreate)},
			req: metadataFor("auto-b"), code: first, refused: topicAuth},
		{name: "OffsetCommit: READ on the group", base: []acl.Binding{topicACL(topic, acl.OpRead)}, grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: offsetCommit, code: first, refused: groupAuth},
		{name: "OffsetCommit: READ on the topic", base: []acl.Binding{groupACL(grp, acl.OpRead)}, grant: []acl.Binding{topicACL(topic, acl.OpRead)},
			req: offsetCommit, code: first, refused: topicAuth},
		{name: "OffsetFetch: DESCRIBE on the group", base: []acl.Binding{topicACL(topic, acl.OpDescribe)}, grant: []acl.Binding{groupACL(grp, acl.OpDescribe)},
			req: offsetFetch, code: topLevel, refused: groupAuth},
		{name: "OffsetFetch: DESCRIBE on the topic", base: []acl.Binding{groupACL(grp, acl.OpDescribe)}, grant: []acl.Binding{topicACL(topic, acl.OpDescribe)},
			req: offsetFetch, code: first, refused: topicAuth},
		{name: "OffsetForLeaderEpoch (consumer): DESCRIBE on the topic", grant: []acl.Binding{topicACL(topic, acl.OpDescribe)},
			req: func(*testing.T) kmsg.Request {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.ReplicaID = -1
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return versioned(4, req)
			}, code: first, refused: topicAuth},
		{name: "OffsetForLeaderEpoch: CLUSTER_ACTION instead of DESCRIBE on the topic", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: func(*testing.T) kmsg.Request {
				req := kmsg.NewPtrOffsetForLeaderEpochRequest()
				req.ReplicaID = 7
				rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
				rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				return versioned(4, req)
			}, code: first, refused: topicAuth},
		{name: "FindCoordinator (group): DESCRIBE on the group", grant: []acl.Binding{groupACL(grp, acl.OpDescribe)}, req: findCoordinator(0, grp), code: first, refused: groupAuth},
		{name: "FindCoordinator (transaction): DESCRIBE on the transactional id", grant: []acl.Binding{txnACL(txn, acl.OpDescribe)}, req: findCoordinator(1, txn), code: first, refused: txnAuth},
		{name: "JoinGroup: READ on the group", grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: func(*testing.T) kmsg.Request {
				req := kmsg.NewPtrJoinGroupRequest()
				req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = grp, "consumer", 10000, 10000
				p := kmsg.NewJoinGroupRequestProtocol()
				p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
				req.Protocols = append(req.Protocols, p)
				return versioned(5, req)
			}, code: topLevel, refused: groupAuth},
		{name: "Heartbeat: READ on the group", grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: simple(3, func() kmsg.Request { r := kmsg.NewPtrHeartbeatRequest(); r.Group, r.MemberID = grp, "m"; return r }), code: topLevel, refused: groupAuth},
		{name: "LeaveGroup: READ on the group", grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrLeaveGroupRequest()
				r.Group = grp
				m := kmsg.NewLeaveGroupRequestMember()
				m.MemberID = "m"
				r.Members = append(r.Members, m)
				return r
			}), code: topLevel, refused: groupAuth},
		{name: "SyncGroup: READ on the group", grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: simple(3, func() kmsg.Request { r := kmsg.NewPtrSyncGroupRequest(); r.Group, r.MemberID = grp, "m"; return r }), code: topLevel, refused: groupAuth},
		{name: "DescribeGroups: DESCRIBE on the group", grant: []acl.Binding{groupACL(grp, acl.OpDescribe)},
			req: simple(5, func() kmsg.Request { r := kmsg.NewPtrDescribeGroupsRequest(); r.Groups = []string{grp}; return r }), code: first, refused: groupAuth},
		{name: "DeleteGroups: DELETE on the group", grant: []acl.Binding{groupACL("empty-group", acl.OpDelete)},
			req: simple(2, func() kmsg.Request {
				r := kmsg.NewPtrDeleteGroupsRequest()
				r.Groups = []string{"empty-group"}
				return r
			}), code: first, refused: groupAuth},
		{name: "OffsetDelete: DELETE on the group", base: []acl.Binding{topicACL(topic, acl.OpRead)}, grant: []acl.Binding{groupACL(grp, acl.OpDelete)},
			req: offsetDelete, code: topLevel, refused: groupAuth},
		{name: "OffsetDelete: READ on the topic", base: []acl.Binding{groupACL(grp, acl.OpDelete)}, grant: []acl.Binding{topicACL(topic, acl.OpRead)},
			req: offsetDelete, code: first, refused: topicAuth},
		{name: "ConsumerGroupHeartbeat: READ on the group", base: []acl.Binding{topicACL(topic, acl.OpDescribe)}, grant: []acl.Binding{groupACL("cg", acl.OpRead)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "cg", "member-1-aaaaaaaaaaaaaaaaaaaa", 0, 10000
				r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return r
			}), code: topLevel, refused: groupAuth},
		{name: "ConsumerGroupHeartbeat: DESCRIBE on the subscribed topics", base: []acl.Binding{groupACL("cg2", acl.OpRead)}, grant: []acl.Binding{topicACL(topic, acl.OpDescribe)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
				r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "cg2", "member-2-aaaaaaaaaaaaaaaaaaaa", 0, 10000
				r.SubscribedTopicNames, r.Topics = []string{topic}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
				return r
			}), code: topLevel, refused: topicAuth},
		{name: "ConsumerGroupDescribe: DESCRIBE on the group", grant: []acl.Binding{groupACL(grp, acl.OpDescribe)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrConsumerGroupDescribeRequest()
				r.Groups = []string{grp}
				return r
			}), code: first, refused: groupAuth},
		{name: "CreateTopics: CREATE on the cluster", grant: []acl.Binding{clusterACL(acl.OpCreate)}, req: createTopic("made-a"), code: first, refused: topicAuth},
		{name: "CreateTopics: CREATE on the topic", grant: []acl.Binding{topicACL("made-b", acl.OpCreate)}, req: createTopic("made-b"), code: first, refused: topicAuth},
		{name: "DeleteTopics: DELETE on the topic", grant: []acl.Binding{topicACL("doomed", acl.OpDelete)},
			req: simple(6, func() kmsg.Request {
				r := kmsg.NewPtrDeleteTopicsRequest()
				rt := kmsg.NewDeleteTopicsRequestTopic()
				rt.Topic = str("doomed")
				r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
				return r
			}), code: first, refused: topicAuth},
		{name: "CreatePartitions: ALTER on the topic", grant: []acl.Binding{topicACL(topic, acl.OpAlter)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrCreatePartitionsRequest()
				rt := kmsg.NewCreatePartitionsRequestTopic()
				rt.Topic, rt.Count = topic, 2
				r.Topics, r.ValidateOnly, r.TimeoutMillis = append(r.Topics, rt), true, 10000
				return r
			}), code: first, refused: topicAuth},
		{name: "DeleteRecords: DELETE on the topic", grant: []acl.Binding{topicACL(topic, acl.OpDelete)},
			req: simple(2, func() kmsg.Request {
				r := kmsg.NewPtrDeleteRecordsRequest()
				rt := kmsg.NewDeleteRecordsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewDeleteRecordsRequestTopicPartition()
				rp.Offset = 0
				rt.Partitions = append(rt.Partitions, rp)
				r.Topics, r.TimeoutMillis = append(r.Topics, rt), 10000
				return r
			}), code: first, refused: topicAuth},
		{name: "InitProducerId (idempotent): IDEMPOTENT_WRITE on the cluster", grant: []acl.Binding{clusterACL(acl.OpIdempotentWrite)}, req: initProducerID(nil), code: topLevel, refused: clusterAuth},
		{name: "InitProducerId (idempotent): WRITE on any topic (KIP-679)", grant: []acl.Binding{topicACL("somewhere", acl.OpWrite)}, req: initProducerID(nil), code: topLevel, refused: clusterAuth},
		{name: "InitProducerId (transactional): WRITE on the transactional id", grant: []acl.Binding{txnACL(txn, acl.OpWrite)}, req: initProducerID(kmsg.StringPtr(txn)), code: topLevel, refused: txnAuth},
		{name: "DescribeConfigs (topic): DESCRIBE_CONFIGS, implied by ALTER_CONFIGS", grant: []acl.Binding{topicACL(topic, acl.OpAlterConfigs)}, checked: acl.OpDescribeConfigs, req: describeConfigs(2, topic), code: first, refused: topicAuth},
		{name: "DescribeConfigs (broker): DESCRIBE_CONFIGS on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribeConfigs)}, req: describeConfigs(4, "1"), code: first, refused: clusterAuth},
		{name: "DescribeConfigs (group): DESCRIBE_CONFIGS on the group", grant: []acl.Binding{groupACL(grp, acl.OpDescribeConfigs)}, req: describeConfigs(32, grp), code: first, refused: groupAuth},
		{name: "AlterConfigs (topic): ALTER_CONFIGS on the topic", grant: []acl.Binding{topicACL(topic, acl.OpAlterConfigs)}, req: alterConfigs(2, topic, "retention.ms", "1000"), code: first, refused: topicAuth},
		{name: "AlterConfigs (broker): ALTER_CONFIGS on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlterConfigs)}, req: alterConfigs(4, "1", "log.cleaner.threads", "1"), code: first, refused: clusterAuth},
		{name: "IncrementalAlterConfigs (topic): ALTER_CONFIGS on the topic", grant: []acl.Binding{topicACL(topic, acl.OpAlterConfigs)}, req: incrementalAlter(2, topic, "retention.ms", "1000"), code: first, refused: topicAuth},
		{name: "IncrementalAlterConfigs (group): ALTER_CONFIGS on the group", grant: []acl.Binding{groupACL(grp, acl.OpAlterConfigs)}, req: incrementalAlter(32, grp, "consumer.session.timeout.ms", "45000"), code: first, refused: groupAuth},
		{name: "ElectLeaders: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(2, func() kmsg.Request { r := kmsg.NewPtrElectLeadersRequest(); r.TimeoutMillis = 5000; return r }), code: topLevel, refused: clusterAuth},
		{name: "AlterPartitionReassignments: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
				r.TimeoutMillis = 5000
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "ListPartitionReassignments: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrListPartitionReassignmentsRequest()
				r.TimeoutMillis = 5000
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "UpdateFeatures: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(1, func() kmsg.Request { r := kmsg.NewPtrUpdateFeaturesRequest(); r.ValidateOnly = true; return r }), code: topLevel, refused: clusterAuth},
		{name: "DescribeQuorum: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(1, func() kmsg.Request { return kmsg.NewPtrDescribeQuorumRequest() }), code: topLevel, refused: clusterAuth},
		{name: "AddRaftVoter: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(0, func() kmsg.Request { r := kmsg.NewPtrAddRaftVoterRequest(); r.VoterID = 99; return r }), code: topLevel, refused: clusterAuth},
		{name: "RemoveRaftVoter: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(0, func() kmsg.Request { r := kmsg.NewPtrRemoveRaftVoterRequest(); r.VoterID = 99; return r }), code: topLevel, refused: clusterAuth},
		{name: "UpdateRaftVoter: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(0, func() kmsg.Request { r := kmsg.NewPtrUpdateRaftVoterRequest(); r.VoterID = 99; return r }), code: topLevel, refused: clusterAuth},
		{name: "AlterReplicaLogDirs: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(2, func() kmsg.Request {
				r := kmsg.NewPtrAlterReplicaLogDirsRequest()
				d := kmsg.NewAlterReplicaLogDirsRequestDir()
				d.Dir = "/nonexistent"
				dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
				dt.Topic, dt.Partitions = topic, []int32{0}
				d.Topics = append(d.Topics, dt)
				r.Dirs = append(r.Dirs, d)
				return r
			}), code: first, refused: clusterAuth},
		{name: "DescribeClientQuotas: DESCRIBE_CONFIGS on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribeConfigs)},
			req: simple(1, func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() }), code: topLevel, refused: clusterAuth},
		{name: "AlterClientQuotas: ALTER_CONFIGS on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlterConfigs)},
			req: simple(1, func() kmsg.Request {
				r := kmsg.NewPtrAlterClientQuotasRequest()
				e := kmsg.NewAlterClientQuotasRequestEntry()
				c := kmsg.NewAlterClientQuotasRequestEntryEntity()
				c.Type, c.Name = "client-id", kmsg.StringPtr("authz-quota")
				e.Entity = append(e.Entity, c)
				o := kmsg.NewAlterClientQuotasRequestEntryOp()
				o.Key, o.Value = "producer_byte_rate", 1048576
				e.Ops = append(e.Ops, o)
				r.Entries = append(r.Entries, e)
				r.ValidateOnly = true
				return r
			}), code: first, refused: clusterAuth},
		{name: "DescribeLogDirs: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(4, func() kmsg.Request { return kmsg.NewPtrDescribeLogDirsRequest() }), code: topLevel, refused: clusterAuth},
		{name: "DescribeCluster: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(1, func() kmsg.Request { r := kmsg.NewPtrDescribeClusterRequest(); r.EndpointType = 1; return r }), code: topLevel, refused: clusterAuth},
		{name: "CreateAcls: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrCreateACLsRequest()
				c := kmsg.NewCreateACLsRequestCreation()
				c.ResourceType, c.ResourceName, c.ResourcePatternType = acl.ResourceTopic, "zzz", acl.PatternLiteral
				c.Principal, c.Host, c.Operation, c.PermissionType = "User:nobody", "*", acl.OpRead, acl.PermissionAllow
				r.Creations = append(r.Creations, c)
				return r
			}), code: first, refused: clusterAuth},
		{name: "DescribeAcls: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrDescribeACLsRequest()
				r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = acl.ResourceAny, acl.PatternAny, acl.OpAny, acl.PermissionAny
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "DeleteAcls: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrDeleteACLsRequest()
				f := kmsg.NewDeleteACLsRequestFilter()
				f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = acl.ResourceAny, acl.PatternAny, acl.OpAny, acl.PermissionAny
				f.Principal = str("User:nobody")
				r.Filters = append(r.Filters, f)
				return r
			}), code: first, refused: clusterAuth},
		{name: "BrokerRegistration: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(2, func() kmsg.Request {
				r := kmsg.NewPtrBrokerRegistrationRequest()
				r.BrokerID, r.ClusterID = 99, "not-this-cluster"
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "BrokerHeartbeat: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(1, func() kmsg.Request {
				r := kmsg.NewPtrBrokerHeartbeatRequest()
				r.BrokerID, r.BrokerEpoch = 99, 1
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "AlterPartition: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrAlterPartitionRequest()
				r.BrokerID, r.BrokerEpoch = 99, 1
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "AllocateProducerIds: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrAllocateProducerIDsRequest()
				r.BrokerID, r.BrokerEpoch = 99, 1
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "AddPartitionsToTxn: WRITE on the transactional id", base: []acl.Binding{topicACL(topic, acl.OpWrite)}, grant: []acl.Binding{txnACL(txn, acl.OpWrite)},
			req: addPartitionsToTxn, code: first, refused: txnAuth},
		{name: "AddPartitionsToTxn: WRITE on the topic", base: []acl.Binding{txnACL(txn, acl.OpWrite)}, grant: []acl.Binding{topicACL(topic, acl.OpWrite)},
			req: addPartitionsToTxn, code: first, refused: topicAuth},
		{name: "AddPartitionsToTxn v4+ (broker to broker): CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(4, func() kmsg.Request {
				r := kmsg.NewPtrAddPartitionsToTxnRequest()
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = txn, 1, 0, true
				tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
				tt.Topic, tt.Partitions = topic, []int32{0}
				tx.Topics = append(tx.Topics, tt)
				r.Transactions = append(r.Transactions, tx)
				return r
			}), code: topLevel, refused: clusterAuth},
		{name: "AddOffsetsToTxn: WRITE on the transactional id", base: []acl.Binding{groupACL(grp, acl.OpRead)}, grant: []acl.Binding{txnACL(txn, acl.OpWrite)},
			req: addOffsetsToTxn, code: topLevel, refused: txnAuth},
		{name: "AddOffsetsToTxn: READ on the group", base: []acl.Binding{txnACL(txn, acl.OpWrite)}, grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: addOffsetsToTxn, code: topLevel, refused: groupAuth},
		{name: "EndTxn: WRITE on the transactional id", grant: []acl.Binding{txnACL(txn, acl.OpWrite)},
			req: simple(3, func() kmsg.Request {
				r := kmsg.NewPtrEndTxnRequest()
				r.TransactionalID, r.ProducerID, r.ProducerEpoch = txn, 1, 0
				return r
			}), code: topLevel, refused: txnAuth},
		{name: "TxnOffsetCommit: WRITE on the transactional id", base: []acl.Binding{groupACL(grp, acl.OpRead), topicACL(topic, acl.OpRead)}, grant: []acl.Binding{txnACL(txn, acl.OpWrite)},
			req: txnOffsetCommit, code: first, refused: txnAuth},
		{name: "TxnOffsetCommit: READ on the group", base: []acl.Binding{txnACL(txn, acl.OpWrite), topicACL(topic, acl.OpRead)}, grant: []acl.Binding{groupACL(grp, acl.OpRead)},
			req: txnOffsetCommit, code: first, refused: groupAuth},
		{name: "TxnOffsetCommit: READ on the topic", base: []acl.Binding{txnACL(txn, acl.OpWrite), groupACL(grp, acl.OpRead)}, grant: []acl.Binding{topicACL(topic, acl.OpRead)},
			req: txnOffsetCommit, code: first, refused: topicAuth},
		{name: "WriteTxnMarkers: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(1, func() kmsg.Request {
				r := kmsg.NewPtrWriteTxnMarkersRequest()
				m := kmsg.NewWriteTxnMarkersRequestMarker()
				m.ProducerID, m.ProducerEpoch, m.Committed = 99, 0, true
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = "never-made", []int32{0} // allowed: UNKNOWN_TOPIC_OR_PARTITION, nothing written
				m.Topics = append(m.Topics, mt)
				r.Markers = append(r.Markers, m)
				return r
			}), code: first, refused: clusterAuth},
		{name: "DescribeTransactions: DESCRIBE on the transactional id", grant: []acl.Binding{txnACL(listedTxnID, acl.OpDescribe)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrDescribeTransactionsRequest()
				r.TransactionalIDs = []string{listedTxnID}
				return r
			}), code: first, refused: txnAuth},
		{name: "ListTransactions: lists the ids with DESCRIBE, implied by WRITE", grant: []acl.Binding{txnACL(listedTxnID, acl.OpWrite)}, checked: acl.OpDescribe,
			req: simple(1, func() kmsg.Request { return kmsg.NewPtrListTransactionsRequest() }), code: listed(listedTxnID), refused: txnAuth},
		{name: "DescribeProducers: READ on the topic", grant: []acl.Binding{topicACL(topic, acl.OpRead)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrDescribeProducersRequest()
				rt := kmsg.NewDescribeProducersRequestTopic()
				rt.Topic, rt.Partitions = topic, []int32{0}
				r.Topics = append(r.Topics, rt)
				return r
			}), code: first, refused: topicAuth},
		{name: "DescribeUserScramCredentials: DESCRIBE on the cluster", grant: []acl.Binding{clusterACL(acl.OpDescribe)},
			req: simple(0, func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() }), code: topLevel, refused: clusterAuth},
		{name: "AlterUserScramCredentials: ALTER on the cluster", grant: []acl.Binding{clusterACL(acl.OpAlter)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
				d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
				d.Name, d.Mechanism = "nobody", 1 // allowed: RESOURCE_NOT_FOUND
				r.Deletions = append(r.Deletions, d)
				return r
			}), code: first, refused: clusterAuth},
		{name: "AssignReplicasToDirs: CLUSTER_ACTION", grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
			req: simple(0, func() kmsg.Request {
				r := kmsg.NewPtrAssignReplicasToDirsRequest()
				r.BrokerID, r.BrokerEpoch = 99, 1
				return r
			}), code: topLevel, refused: clusterAuth},
	}
}

func TestAuthorizationTable(t *testing.T) {
	an := startAuthzNode(t, txnProps)
	an.createTopics("orders", "doomed")
	an.awaitGroupCoordinator("billing")
	an.awaitTxnProducer(listedTxnID)
	covered := map[int16]bool{}
	for _, tc := range authzCases() {
		t.Run(tc.name, func(t *testing.T) {
			covered[tc.req(t).Key()] = true
			runAuthzCase(t, an, an.call, tc)
		})
	}
	an.t = t
	// Every API but those without a resource (ApiVersions), ListGroups
	// (filtered, TestListGroupsFiltered) and the SASL exchange is in the
	// table. SaslHandshake and SaslAuthenticate are answered while the
	// connection authenticates, before it has a principal to authorize
	// (Kafka's SaslServerAuthenticator; KafkaApis itself only answers them
	// with ILLEGAL_SASL_STATE), so Kafka's table lists no check for them.
	// The delegation token APIs are refused over this table's PLAINTEXT
	// connections before any ACL; their checks (CREATE_TOKENS and
	// DESCRIBE_TOKENS on User resources, DESCRIBE on DelegationToken
	// resources; Renew and Expire check ownership, no ACL) are
	// TestDelegationTokenACLs'.
	exempt := []int16{int16(kmsg.ApiVersions), int16(kmsg.ListGroups), int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate),
		int16(kmsg.CreateDelegationToken), int16(kmsg.RenewDelegationToken), int16(kmsg.ExpireDelegationToken), int16(kmsg.DescribeDelegationToken)}
	for key := range servedAPIs(t, an) {
		if !covered[key] && !slices.Contains(exempt, key) {
			t.Errorf("%s is not in the authorization table", kmsg.NameForKey(key))
		}
	}
}

// runAuthzCase runs tc's three checks (no ACL, the grant with a DENY, the
// grant) as alice, and the super user's, sending each request with call.
func runAuthzCase(t *testing.T, an *authzNode, call func(security.Principal, kmsg.Request) kmsg.Response, tc authzCase) {
	t.Helper()
	an.t = t
	defer an.clearACLs()
	check := func(run string, wantRefused bool) {
		t.Helper()
		got := tc.code(call(alice, tc.req(t)))
		if wantRefused && got != tc.refused.Code {
			t.Fatalf("%s: error %v, want %v", run, kerr.ErrorForCode(got), tc.refused)
		}
		if !wantRefused && got == tc.refused.Code {
			t.Fatalf("%s: refused with %v", run, tc.refused)
		}
	}
	an.addACLs(tc.base...)
	check("without the ACL", true)
	deny := tc.grant[0]
	deny.Permission = acl.PermissionDeny
	if tc.checked != 0 {
		deny.Operation = tc.checked
	}
	an.addACLs(append(slices.Clone(tc.grant), deny)...)
	check("with the ACL and a DENY of it", true)
	an.clearACLs()
	an.addACLs(append(slices.Clone(tc.base), tc.grant...)...)
	check("with the ACL", false)
	// A super user is never refused.
	if got := tc.code(call(admin, tc.req(t))); got == tc.refused.Code && !slices.Contains([]string{"DeleteTopics: DELETE on the topic"}, tc.name) {
		t.Fatalf("super user refused with %v", tc.refused)
	}
}

// createTopics creates one-partition topics as the super user.
func (an *authzNode) createTopics(names ...string) {
	an.t.Helper()
	for _, name := range names {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
		req.Topics, req.TimeoutMillis = append(req.Topics, rt), 10000
		resp := an.call(admin, versioned(7, req)).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 {
			an.t.Fatalf("creating %s: %v", name, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
	}
}

// awaitGroupCoordinator waits until the group's coordinator is loaded,
// so group requests reach the group rather than a not-ready coordinator.
func (an *authzNode) awaitGroupCoordinator(group string) {
	an.t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	an.call(admin, versioned(4, fc)) // creates __consumer_offsets
	poll.True(an.t, 20*time.Second, "the group coordinator to load", func() bool {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = group
		return an.call(admin, versioned(7, req)).(*kmsg.OffsetFetchResponse).ErrorCode == 0
	})
}

// awaitTxnProducer waits until the transaction coordinator has loaded and
// given id a producer id, as the super user.
func (an *authzNode) awaitTxnProducer(id string) {
	an.t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 1, []string{id}
	an.call(admin, versioned(4, fc)) // creates __transaction_state
	poll.True(an.t, 20*time.Second, "the transaction coordinator to load", func() bool {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID, req.TransactionTimeoutMillis = kmsg.StringPtr(id), 60000
		req.ProducerID, req.ProducerEpoch = -1, -1
		return an.call(admin, versioned(4, req)).(*kmsg.InitProducerIDResponse).ErrorCode == 0
	})
}

// servedAPIs lists the API keys ApiVersions advertises.
func servedAPIs(t *testing.T, an *authzNode) map[int16]bool {
	resp := an.call(alice, versioned(3, kmsg.NewPtrApiVersionsRequest())).(*kmsg.ApiVersionsResponse)
	out := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		out[k.ApiKey] = true
	}
	return out
}
