package broker_test

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata/quorum"
)

// A config Vltava cannot honour is refused with INVALID_CONFIG naming it,
// never accepted and ignored: a topic key at CreateTopics and
// IncrementalAlterConfigs, and a dynamic broker key. A supported key, and a
// refused key at its default, go through; the replication throttle rate is
// applied at run time, so it may be altered.
func TestUnsupportedConfigsAreRefused(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()

	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "prealloc", 1, 1
	rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "preallocate", Value: kmsg.StringPtr("true")}}
	create.Topics = append(create.Topics, rt)
	res := do[*kmsg.CreateTopicsResponse](c, 5, create).Topics[0]
	if res.ErrorCode != kerr.InvalidConfig.Code || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, "preallocate") {
		t.Errorf("CreateTopics preallocate=true: error %d %v, want INVALID_CONFIG naming the key", res.ErrorCode, res.ErrorMessage)
	}

	createTopic(c, "plain", 1, nil)
	alter := func(typ kmsg.ConfigResourceType, name, key, value string) (int16, string) {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = typ, name
		cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cc.Name, cc.Value = key, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, cc)
		req.Resources = append(req.Resources, rr)
		r := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	for _, tt := range []struct {
		typ             kmsg.ConfigResourceType
		name, key, val  string
		want            int16
		wantMsgContains string
	}{
		{resTopic, "plain", "preallocate", "true", kerr.InvalidConfig.Code, "preallocate: segment files are not preallocated"},
		{resTopic, "plain", "preallocate", "false", 0, ""},
		{resTopic, "plain", "remote.log.delete.on.disable", "true", 0, ""},
		{resTopic, "plain", "leader.replication.throttled.replicas", "*", 0, ""},
		{resBroker, "1", "num.io.threads", "16", kerr.InvalidConfig.Code, "num.io.threads"},
		{resBroker, "1", "log.cleaner.threads", "2", kerr.InvalidConfig.Code, "Vltava reads these configs only at start-up"},
		{resBroker, "1", "listener.name.plaintext.max.connection.creation.rate", "2", kerr.InvalidConfig.Code, "per-listener overrides"},
		{resBroker, "1", "listener.name.plaintext.max.connections", "0", kerr.InvalidConfig.Code, "Invalid max.connections 0"},
		{resBroker, "1", "leader.replication.throttled.rate", "1048576", 0, ""},
		{resBroker, "", "follower.replication.throttled.rate", "1048576", 0, ""},
	} {
		code, msg := alter(tt.typ, tt.name, tt.key, tt.val)
		if code != tt.want || !strings.Contains(msg, tt.wantMsgContains) {
			t.Errorf("IncrementalAlterConfigs %s=%s on %q: error %d %q, want %d containing %q", tt.key, tt.val, tt.name, code, msg, tt.want, tt.wantMsgContains)
		}
	}
}

// The connection quotas apply at run time, as in Kafka: after
// max.connections.per.ip is lowered with IncrementalAlterConfigs, a new
// connection over it is closed at once; connections already open stay.
func TestDynamicConnectionQuotas(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = resBroker, "1"
	cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cc.Name, cc.Value = "max.connections.per.ip", kmsg.StringPtr("1")
	rr.Configs = append(rr.Configs, cc)
	req.Resources = append(req.Resources, rr)
	if ec := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0].ErrorCode; ec != 0 {
		t.Fatalf("IncrementalAlterConfigs max.connections.per.ip=1: error %d", ec)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", tn.addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		var b [1]byte
		_, err = nc.Read(b[:])
		nc.Close()
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			break // closed by the broker: the new limit applies
		}
		if time.Now().After(deadline) {
			t.Fatal("a second connection from 127.0.0.1 stays open with max.connections.per.ip=1")
		}
	}
	// The connection that was open before still works.
	md := kmsg.NewPtrMetadataRequest()
	do[*kmsg.MetadataResponse](c, 7, md)
}

// listener.name.<listener>.max.connections applies at run time, as in
// Kafka (KIP-402): once IncrementalAlterConfigs sets it to 1 for the
// listener this connection is on, a new connection waits unserved; when
// the key is deleted, it is served. The connection open all along works.
func TestDynamicListenerMaxConnections(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	alter := func(op kmsg.IncrementalAlterConfigOp, value *string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = resBroker, "1"
		cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cc.Name, cc.Op, cc.Value = "listener.name.plaintext.max.connections", op, value
		rr.Configs = append(rr.Configs, cc)
		req.Resources = append(req.Resources, rr)
		if r := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0]; r.ErrorCode != 0 {
			t.Fatalf("IncrementalAlterConfigs listener.name.plaintext.max.connections op %v: error %d %v", op, r.ErrorCode, r.ErrorMessage)
		}
	}
	alter(kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("1"))
	// The limit reaches the server with the metadata image: until then a
	// new connection may still be served.
	var held *conn
	deadline := time.Now().Add(10 * time.Second)
	for held == nil {
		nc := tn.dial()
		req := kmsg.NewPtrApiVersionsRequest()
		corr := nc.send(req)
		_, err := nc.recv(req, corr, 500*time.Millisecond)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			held = nc
		case err != nil:
			t.Fatalf("new connection: %v", err)
		case time.Now().After(deadline):
			t.Fatal("new connections are still served with listener.name.plaintext.max.connections=1")
		default:
			nc.c.Close()
		}
	}
	do[*kmsg.MetadataResponse](c, 7, kmsg.NewPtrMetadataRequest())
	alter(kmsg.IncrementalAlterConfigOpDelete, nil)
	req := kmsg.NewPtrApiVersionsRequest()
	corr := held.send(req)
	// The first answer is the one to the request sent while held.
	if _, err := held.recv(req, corr-1, 10*time.Second); err != nil {
		t.Fatalf("held connection not served after the per-listener limit was deleted: %v", err)
	}
}

// TestControllerListenerMaxConnections: the controller listener's own
// listener.name.<l>.max.connections holds the quorum port's Kafka-protocol
// connections (the controller APIs) to it. With a limit of 2, the node's
// own broker-to-controller channel takes one slot and a first client the
// other; a second client waits unserved while the first is open, and is
// served once the first closes.
func TestControllerListenerMaxConnections(t *testing.T) {
	tn := startNode(t, map[string]string{"listener.name.controller.max.connections": "2"})
	quorumAddr := tn.n.Metadata().ControllerListener().Addr().String()
	dialQuorum := func() *conn {
		c, err := net.DialTimeout("tcp", quorumAddr, 5*time.Second)
		if err != nil {
			t.Fatalf("dial quorum port: %v", err)
		}
		t.Cleanup(func() { c.Close() })
		// The byte that makes the quorum port hand the connection to
		// the controller APIs rather than to raft.
		if _, err := c.Write([]byte{quorum.ControllerRPCByte}); err != nil {
			t.Fatal(err)
		}
		return &conn{t: t, c: c, r: bufio.NewReader(c), fmter: kmsg.NewRequestFormatter(kmsg.FormatterClientID("broker-test"))}
	}
	first := dialQuorum()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := first.recv(req, first.send(req), 10*time.Second); err != nil {
		t.Fatalf("first connection to the quorum port not served: %v", err)
	}
	second := dialQuorum()
	corr := second.send(req)
	var ne net.Error
	if _, err := second.recv(req, corr, 700*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second client with listener.name.controller.max.connections=2: %v, want it held unserved", err)
	}
	first.c.Close()
	if _, err := second.recv(req, corr, 10*time.Second); err != nil {
		t.Fatalf("second connection not served after the first closed: %v", err)
	}
}
