package broker_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/server"
)

// quorumConn is a Kafka-protocol connection to a node's quorum port, as
// a broker's controller channel opens.
type quorumConn struct {
	t    *testing.T
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

func dialQuorum(t *testing.T, tn *authzNode) *quorumConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := clientauth.Plaintext.Dial(ctx, tn.n.Metadata().ControllerListener().Addr().String(), controller.ForwardClientID,
		[]byte{quorum.ControllerRPCByte}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &quorumConn{t: t, c: c, r: bufio.NewReader(c)}
}

// envelope sends req as principal in an Envelope and returns the
// Envelope's error and the decoded inner response.
func (q *quorumConn) envelope(principal []byte, req kmsg.Request) (int16, kmsg.Response) {
	q.t.Helper()
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID(controller.ForwardClientID)).AppendRequest(nil, req, 1)
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData, env.RequestPrincipal, env.ClientHostAddress = frame[4:], principal, net.IPv4(127, 0, 0, 1).To4()
	q.corr++
	if _, err := q.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(controller.ForwardClientID)).AppendRequest(nil, env, q.corr)); err != nil {
		q.t.Fatal(err)
	}
	var hdr [8]byte
	if _, err := io.ReadFull(q.r, hdr[:]); err != nil {
		q.t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-4)
	if _, err := io.ReadFull(q.r, body); err != nil {
		q.t.Fatal(err)
	}
	resp := env.ResponseKind().(*kmsg.EnvelopeResponse)
	if err := resp.ReadFrom(body[1:]); err != nil { // flexible: header tags
		q.t.Fatal(err)
	}
	if resp.ErrorCode != 0 {
		return resp.ErrorCode, nil
	}
	inner, err := controller.DecodeEnvelopedResponse(req, resp.ResponseData)
	if err != nil {
		q.t.Fatal(err)
	}
	return 0, inner
}

func principalData(p security.Principal) []byte {
	d := kmsg.DefaultPrincipalData{Type: p.Type, Name: p.Name}
	return d.AppendTo(nil)
}

// TestEnvelopeAuthorizedOnController (KIP-590): a request forwarded in an
// Envelope to the controller's quorum port is authorized with the
// enveloped principal, not the forwarding broker's: alice's CreateTopics
// is refused there, the super user's passes; a malformed principal, an
// Envelope around a broker RPC, and an Envelope on a client listener are
// refused.
func TestEnvelopeAuthorizedOnController(t *testing.T) {
	// The test's quorum connection is PLAINTEXT: the sender is
	// User:ANONYMOUS, which, as a broker, needs CLUSTER_ACTION.
	an := startAuthzNode(t, map[string]string{"super.users": "User:admin;User:ANONYMOUS"})
	q := dialQuorum(t, an)
	createTopic := func(name string) kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		req.TimeoutMillis = 5000
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = name, 1, 1
		req.Topics = append(req.Topics, tp)
		return req
	}
	code, resp := q.envelope(principalData(alice), createTopic("enveloped"))
	if code != 0 {
		t.Fatalf("Envelope error %v", kerr.ErrorForCode(code))
	}
	if got := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("alice's enveloped CreateTopics: %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(got))
	}
	code, resp = q.envelope(principalData(admin), createTopic("enveloped"))
	if code != 0 || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
		t.Errorf("the super user's enveloped CreateTopics: %v %+v", kerr.ErrorForCode(code), resp)
	}
	if code, _ := q.envelope([]byte{0, 0, 9}, createTopic("x")); code != kerr.InvalidRequest.Code {
		t.Errorf("malformed principal: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	if code, _ := q.envelope(principalData(admin), hb); code != kerr.InvalidRequest.Code {
		t.Errorf("enveloped BrokerHeartbeat: %v, want INVALID_REQUEST", kerr.ErrorForCode(code))
	}
	// A client listener does not serve Envelope at all.
	env := kmsg.NewPtrEnvelopeRequest()
	r := &server.Request{Key: env.Key(), Body: env, Received: time.Now(),
		Conn: &server.ConnInfo{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Principal: admin}}
	if _, err := an.h.Handle(context.Background(), r); err == nil {
		t.Error("a client listener answered an Envelope")
	}
}

// TestEnvelopeNeedsClusterAction: an Envelope whose sender (the quorum
// connection's principal) lacks CLUSTER_ACTION on the cluster is refused
// with CLUSTER_AUTHORIZATION_FAILED and its inner request is not run, as
// Kafka's controller refuses it.
func TestEnvelopeNeedsClusterAction(t *testing.T) {
	an := startAuthzNode(t, nil) // ANONYMOUS, the sender here, is no super user
	q := dialQuorum(t, an)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = 5000
	tp := kmsg.NewCreateTopicsRequestTopic()
	tp.Topic, tp.NumPartitions, tp.ReplicationFactor = "not-created", 1, 1
	req.Topics = append(req.Topics, tp)
	if code, _ := q.envelope(principalData(admin), req); code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("Envelope from User:ANONYMOUS: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(code))
	}
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	resp := an.call(admin, md).(*kmsg.MetadataResponse)
	for _, tpc := range resp.Topics {
		if tpc.Topic != nil && *tpc.Topic == "not-created" {
			t.Fatal("the refused Envelope's CreateTopics ran")
		}
	}
}
