package broker_test

import (
	"encoding/binary"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
)

// call sends req directly on the quorum connection and returns the
// decoded response (flexible versions only).
func (q *quorumConn) call(req kmsg.Request) kmsg.Response {
	q.t.Helper()
	q.corr++
	if _, err := q.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID(controller.ForwardClientID)).AppendRequest(nil, req, q.corr)); err != nil {
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
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body[1:]); err != nil { // flexible: header tags
		q.t.Fatal(err)
	}
	return resp
}

// TestControllerAPIsNeedClusterAction: on the quorum port a
// BrokerHeartbeat from a principal without CLUSTER_ACTION on the cluster
// is CLUSTER_AUTHORIZATION_FAILED, as Kafka's controller answers it; the
// same request from a super user is not refused.
func TestControllerAPIsNeedClusterAction(t *testing.T) {
	heartbeat := func() kmsg.Request {
		req := kmsg.NewPtrBrokerHeartbeatRequest()
		req.SetVersion(1)
		req.BrokerID, req.BrokerEpoch = 4242, 1
		return req
	}
	refused := startAuthzNode(t, nil) // ANONYMOUS, the sender here, is no super user
	resp := dialQuorum(t, refused).call(heartbeat()).(*kmsg.BrokerHeartbeatResponse)
	if resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("BrokerHeartbeat from User:ANONYMOUS: %v, want CLUSTER_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
	allowed := startAuthzNode(t, map[string]string{"super.users": "User:admin;User:ANONYMOUS"})
	resp = dialQuorum(t, allowed).call(heartbeat()).(*kmsg.BrokerHeartbeatResponse)
	if resp.ErrorCode == kerr.ClusterAuthorizationFailed.Code {
		t.Fatal("BrokerHeartbeat from a super user was refused")
	}
}
