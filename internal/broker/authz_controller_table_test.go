package broker_test

// The authorization table of the controller's quorum port. Kafka's
// controller (ControllerApis) authorizes every request it serves with the
// quorum connection's principal: CLUSTER_ACTION on the cluster for what
// only brokers and controllers send (BrokerRegistration, BrokerHeartbeat,
// AlterPartition, AllocateProducerIds, AssignReplicasToDirs,
// UpdateRaftVoter, Envelope), DESCRIBE on the cluster for DescribeQuorum,
// ALTER on the cluster for AddRaftVoter and RemoveRaftVoter, and the
// client API's own check for the admin requests brokers forward. Each case
// runs as the broker table's do (no ACL, the grant with a DENY, the
// grant, the super user), sent to the quorum port's handler as
// User:alice, a principal that authenticated on the controller listener
// but is no broker.
//
// Raft's own traffic is not in the table: the quorum replicates over
// hashicorp/raft's protocol on the same port, not Kafka's Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot, and is
// authenticated by the controller listener's TLS (the client certificate
// with ssl.client.auth=required), not by SASL or ACLs.

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// callController sends req to the node's quorum-port handler as principal
// p, as a broker's controller channel sends it (controller.ForwardClientID).
func (an *authzNode) callController(p security.Principal, req kmsg.Request) kmsg.Response {
	an.t.Helper()
	h := an.n.ControllerHandler()
	if h == nil {
		an.t.Fatal("the node serves no controller APIs")
	}
	r := &server.Request{
		Key: req.Key(), Version: req.GetVersion(), ClientID: controller.ForwardClientID, Body: req, Received: time.Now(),
		Conn: &server.ConnInfo{Listener: "CONTROLLER", SecurityProtocol: "SASL_PLAINTEXT",
			Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50001}, Principal: p},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := h.Handle(ctx, r)
	if err != nil {
		an.t.Fatalf("%s v%d as %s on the quorum port: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), p, err)
	}
	return resp
}

// envelopeCase: an Envelope, whose sender needs CLUSTER_ACTION on the
// cluster to speak for another principal (here the super user's
// validate-only CreateTopics).
func envelopeCase() authzCase {
	return authzCase{
		name:  "Envelope: CLUSTER_ACTION",
		grant: []acl.Binding{clusterACL(acl.OpClusterAction)},
		req: func(*testing.T) kmsg.Request {
			inner := kmsg.NewPtrCreateTopicsRequest()
			inner.SetVersion(7)
			inner.TimeoutMillis, inner.ValidateOnly = 5000, true
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "enveloped", 1, 1
			inner.Topics = append(inner.Topics, rt)
			frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(controller.ForwardClientID)).AppendRequest(nil, inner, 1)
			env := kmsg.NewPtrEnvelopeRequest()
			env.RequestData, env.RequestPrincipal, env.ClientHostAddress = frame[4:], principalData(admin), net.IPv4(127, 0, 0, 1).To4()
			return env
		},
		code:    func(r kmsg.Response) int16 { return r.(*kmsg.EnvelopeResponse).ErrorCode },
		refused: kerr.ClusterAuthorizationFailed,
	}
}

// createTokenCase: a CreateDelegationToken for another owner, which needs
// CREATE_TOKENS on the owner's User resource. Renew and Expire check the
// token's ownership, no ACL (TestDelegationTokenACLs).
func createTokenCase() authzCase {
	return authzCase{
		name: "CreateDelegationToken for another owner: CREATE_TOKENS on the User",
		grant: []acl.Binding{{ResourceType: acl.ResourceUser, ResourceName: "bob", PatternType: acl.PatternLiteral,
			Principal: alice.String(), Host: "*", Operation: acl.OpCreateTokens, Permission: acl.PermissionAllow}},
		req:     func(*testing.T) kmsg.Request { return createTokenFor("bob") },
		code:    func(r kmsg.Response) int16 { return r.(*kmsg.CreateDelegationTokenResponse).ErrorCode },
		refused: kerr.DelegationTokenAuthorizationFailed,
	}
}

// TestControllerAuthorizationTable: every API the quorum port serves is
// authorized there as Kafka's controller authorizes it, and the table
// covers every one of them.
func TestControllerAuthorizationTable(t *testing.T) {
	props := map[string]string{"delegation.token.secret.key": "table-secret"}
	for k, v := range txnProps {
		props[k] = v
	}
	an := startAuthzNode(t, props)
	an.createTopics("orders", "doomed")
	served := map[int16]bool{int16(kmsg.Envelope): true} // served, not listed in ApiVersions
	for _, k := range an.callController(alice, versioned(3, kmsg.NewPtrApiVersionsRequest())).(*kmsg.ApiVersionsResponse).ApiKeys {
		served[k.ApiKey] = true
	}
	for _, key := range []kmsg.Key{kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AlterPartition, kmsg.DescribeQuorum} {
		if !served[int16(key)] {
			t.Fatalf("the quorum port does not serve %s", kmsg.NameForKey(int16(key)))
		}
	}
	covered := map[int16]bool{}
	for _, tc := range append(authzCases(), envelopeCase(), createTokenCase()) {
		key := tc.req(t).Key()
		if !served[key] {
			continue // a broker API, refused on the quorum port
		}
		t.Run(tc.name, func(t *testing.T) {
			covered[key] = true
			runAuthzCase(t, an, an.callController, tc)
		})
	}
	an.t = t
	// ApiVersions has no resource, the SASL exchange comes before the
	// connection has a principal, and Renew and Expire check ownership.
	exempt := []int16{int16(kmsg.ApiVersions), int16(kmsg.SASLHandshake), int16(kmsg.SASLAuthenticate),
		int16(kmsg.RenewDelegationToken), int16(kmsg.ExpireDelegationToken)}
	for key := range served {
		if !covered[key] && !slices.Contains(exempt, key) {
			t.Errorf("%s is served on the quorum port but not in its authorization table", kmsg.NameForKey(key))
		}
	}
}
