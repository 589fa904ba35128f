package cluster

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestSASLSSLDelegationTokensForwarded: on a three-node SASL_SSL cluster
// with ACLs and delegation tokens, the token APIs sent to a broker that is
// not the active controller are forwarded in an Envelope carrying the
// client's principal (KIP-590): the token alice creates there is owned by
// alice, a super user may not renew it (only owners and renewers may), a
// CreateTopics alice may not make is refused, and the token authenticates
// as alice on every node (each derives the HMAC from the shared secret).
func TestSASLSSLDelegationTokensForwarded(t *testing.T) {
	secure, harnessOpts := WithSecureListeners(t)
	c := StartCluster(t, secure,
		WithOverride("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithOverride("super.users", "User:admin"),
		WithOverride("delegation.token.secret.key", "cluster-token-secret"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adm := c.Admin()
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "alice-secret"}})
	if err != nil || res.Error() != nil {
		t.Fatalf("AlterUserScramCredentials: %v %v", err, res.Error())
	}
	const topic = "token-topic"
	c.createTopic(topic, 1, 3, nil)
	acls, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics(topic).Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil || acls[0].Err != nil {
		t.Fatalf("CreateAcls: %v %v", err, acls)
	}
	q, err := c.quorum()
	if err != nil {
		t.Fatal(err)
	}
	var other int32
	for _, n := range c.Nodes() {
		if n.ID != q.Leader {
			other = n.ID
			break
		}
	}
	logf(t, "active controller %d; sending token requests to node %d", q.Leader, other)
	tlsOpt := harnessOpts[0] // WithSecureListeners' DialTLSConfig
	as := func(m kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs([]int32{other})...), tlsOpt, m)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	alice := as(kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism()))
	admin := as(kgo.SASL(plainAuth("admin", "admin-secret")))

	create := kmsg.NewPtrCreateDelegationTokenRequest()
	create.MaxLifetimeMillis = -1
	cr, err := create.RequestWith(ctx, alice.Broker(int(other)))
	if err != nil || cr.ErrorCode != 0 {
		t.Fatalf("CreateDelegationToken via node %d: %v %v", other, err, kerr.ErrorForCode(cr.ErrorCode))
	}
	if cr.PrincipalType != "User" || cr.PrincipalName != "alice" || cr.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("token owner %s:%s requested by %s: the controller did not see alice's principal", cr.PrincipalType, cr.PrincipalName, cr.TokenRequesterPrincipalName)
	}
	renew := kmsg.NewPtrRenewDelegationTokenRequest()
	renew.HMAC, renew.RenewTimeMillis = cr.HMAC, 60000
	if rr, err := renew.RequestWith(ctx, admin.Broker(int(other))); err != nil || rr.ErrorCode != kerr.DelegationTokenOwnerMismatch.Code {
		t.Errorf("admin renewing alice's token via node %d: %v %v, want DELEGATION_TOKEN_OWNER_MISMATCH", other, err, rr)
	}
	if rr, err := renew.RequestWith(ctx, alice.Broker(int(other))); err != nil || rr.ErrorCode != 0 {
		t.Errorf("alice renewing via node %d: %v %v", other, err, rr)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ct.TimeoutMillis = 5000
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "alice-may-not", 1, 1
	ct.Topics = append(ct.Topics, tp)
	if r, err := ct.RequestWith(ctx, alice.Broker(int(other))); err != nil || len(r.Topics) != 1 || r.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("CreateTopics as alice via node %d: %v %+v, want TOPIC_AUTHORIZATION_FAILED", other, err, r)
	}

	// The token, on every node.
	token := kgo.SASL(scram.Auth{User: cr.TokenID, Pass: base64.StdEncoding.EncodeToString(cr.HMAC), IsToken: true}.AsSha512Mechanism())
	for _, n := range c.Nodes() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs([]int32{n.ID})...), tlsOpt, token, kgo.DefaultProduceTopic(topic))
		if err != nil {
			t.Fatal(err)
		}
		md := kmsg.NewPtrMetadataRequest()
		if _, err := md.RequestWith(ctx, cl.Broker(int(n.ID))); err != nil {
			t.Errorf("authenticating with the token on node %d: %v", n.ID, err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("by token")}).FirstErr(); err != nil {
			t.Errorf("producing with the token seeded at node %d: %v", n.ID, err)
		}
		cl.Close()
	}
}
