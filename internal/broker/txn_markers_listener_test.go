package broker_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// TestWriteTxnMarkersOnClientListener: WriteTxnMarkers is a broker API of
// every broker listener in Kafka, so a client listener (here PLAINTEXT,
// the inter-broker one being REPLICATION) lists it in ApiVersions and
// answers it, authorized like anywhere: without CLUSTER_ACTION every
// partition is CLUSTER_AUTHORIZATION_FAILED, with it the markers are
// handled (a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION).
func TestWriteTxnMarkersOnClientListener(t *testing.T) {
	an := startAuthzNode(t, map[string]string{
		"listeners":                      "PLAINTEXT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"inter.broker.listener.name":     "REPLICATION",
	})
	if !listedKeys(an.dial())[kmsg.WriteTxnMarkers] {
		t.Error("ApiVersions on the client listener does not list WriteTxnMarkers")
	}
	marker := func(p security.Principal) int16 {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.SetVersion(1)
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = 7, true
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "no-such-topic", []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		r := &server.Request{Key: req.Key(), Version: 1, ClientID: "coordinator", Body: req, Received: time.Now(),
			Conn: &server.ConnInfo{Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT",
				Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}, Principal: p}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		resp, err := an.h.Handle(ctx, r)
		if err != nil {
			t.Fatalf("WriteTxnMarkers on the client listener as %s: %v", p, err)
		}
		return resp.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := marker(alice); code != kerr.ClusterAuthorizationFailed.Code {
		t.Errorf("without CLUSTER_ACTION: error %d, want CLUSTER_AUTHORIZATION_FAILED", code)
	}
	an.addACLs(clusterACL(acl.OpClusterAction))
	if code := marker(alice); code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("with CLUSTER_ACTION: error %d, want the marker handled (UNKNOWN_TOPIC_OR_PARTITION)", code)
	}
}
