package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// TestControllerListenerRefusesNonBrokers: on a SASL_SSL cluster with the
// StandardAuthorizer, a client that authenticates on the controller
// listener as a user who is no super user (and has no CLUSTER_ACTION)
// sends every controller a BrokerRegistration that would take over broker
// 3's registration and a BrokerHeartbeat asking broker 2's shutdown; each
// controller answers CLUSTER_AUTHORIZATION_FAILED, as Kafka's controller
// does, and keeps the connection. The brokers stay registered and
// unfenced: acks=all with min.insync.replicas=3 still succeeds.
func TestControllerListenerRefusesNonBrokers(t *testing.T) {
	secure, _ := WithSecureListeners(t)
	jaas := `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_mallory="mallory-secret";`
	c := StartCluster(t, secure,
		WithOverride("listener.name.controller.plain.sasl.jaas.config", jaas),
		WithOverride("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
		WithOverride("super.users", "User:admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	md, err := c.Admin().Metadata(ctx)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}

	props := map[string]string{
		"ssl.truststore.type":     "JKS",
		"ssl.truststore.location": secureTrustStore(c),
		"ssl.truststore.password": "trust-secret",
		"sasl.jaas.config":        `org.apache.kafka.common.security.plain.PlainLoginModule required username="mallory" password="mallory-secret";`,
	}
	sec, err := clientauth.New(func(k string) (string, bool) { v, ok := props[k]; return v, ok }, "SASL_SSL", "PLAIN")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		conn, err := sec.Dial(ctx, c.topo.controllerAddr(n.ID), "mallory", []byte{quorum.ControllerRPCByte}, 20*time.Second)
		if err != nil {
			t.Fatalf("mallory authenticating on node %d's controller listener: %v", n.ID, err)
		}
		qc := &controllerConn{t: t, c: conn}

		reg := kmsg.NewPtrBrokerRegistrationRequest()
		reg.SetVersion(2)
		reg.BrokerID, reg.ClusterID = 3, md.Cluster
		rand.Read(reg.IncarnationID[:])
		l := kmsg.NewBrokerRegistrationRequestListener()
		l.Name, l.Host, l.Port, l.SecurityProtocol = "PLAINTEXT", "127.0.0.1", 1, 3 // SASL_SSL
		reg.Listeners = append(reg.Listeners, l)
		if code := qc.call(reg).(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("node %d: mallory's BrokerRegistration for broker 3: %v, want CLUSTER_AUTHORIZATION_FAILED", n.ID, kerr.ErrorForCode(code))
		}
		hb := kmsg.NewPtrBrokerHeartbeatRequest()
		hb.SetVersion(1)
		hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = 2, -1, true
		if code := qc.call(hb).(*kmsg.BrokerHeartbeatResponse).ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
			t.Errorf("node %d: mallory's BrokerHeartbeat for broker 2: %v, want CLUSTER_AUTHORIZATION_FAILED", n.ID, kerr.ErrorForCode(code))
		}
		conn.Close()
	}

	// Several heartbeat intervals later every broker is still registered
	// and unfenced, and in every ISR.
	c.createTopic("after-mallory", 1, 3, map[string]string{"min.insync.replicas": "3"})
	cl := c.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(20))
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "after-mallory", Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d after the refused requests: %v", i, err)
		}
	}
	md, err = c.Admin().Metadata(ctx)
	if err != nil || len(md.Brokers) != 3 {
		t.Fatalf("brokers after the refused requests: %v %v", md.Brokers, err)
	}
}

// controllerConn sends Kafka requests on an authenticated connection to a
// controller's quorum port (flexible versions only).
type controllerConn struct {
	t    *testing.T
	c    net.Conn
	corr int32
}

func (q *controllerConn) call(req kmsg.Request) kmsg.Response {
	q.t.Helper()
	q.corr++
	q.c.SetDeadline(time.Now().Add(20 * time.Second))
	defer q.c.SetDeadline(time.Time{})
	if _, err := q.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("mallory")).AppendRequest(nil, req, q.corr)); err != nil {
		q.t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	var size [4]byte
	if _, err := io.ReadFull(q.c, size[:]); err != nil {
		q.t.Fatalf("%s: reading the response: %v (the connection was closed?)", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(q.c, body); err != nil {
		q.t.Fatal(err)
	}
	if got := int32(binary.BigEndian.Uint32(body[:4])); got != q.corr {
		q.t.Fatalf("correlation id %d, want %d", got, q.corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body[5:]); err != nil { // flexible header: no tags
		q.t.Fatal(err)
	}
	return resp
}
