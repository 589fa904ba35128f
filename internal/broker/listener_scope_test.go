package broker_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/node"
)

// interBrokerOnly are the broker-to-controller RPCs a client listener
// neither lists nor answers.
var interBrokerOnly = []kmsg.Key{kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AlterPartition, kmsg.AllocateProducerIDs}

// startTwoListenerNode starts a node with a CLIENT listener and a
// REPLICATION listener that is the inter-broker one, and returns a test
// node on each.
func startTwoListenerNode(t *testing.T) (client, replication *testNode) {
	t.Helper()
	cfg, _, err := config.ParseBroker(map[string]string{
		"listeners":                      "CLIENT://127.0.0.1:0,REPLICATION://127.0.0.1:0",
		"listener.security.protocol.map": "CLIENT:PLAINTEXT,REPLICATION:PLAINTEXT",
		"inter.broker.listener.name":     "REPLICATION",
		"log.dirs":                       t.TempDir(),
		"node.id":                        "1",
		"auto.create.topics.enable":      "false",
		"admin.listeners":                "",
		"rest.listeners":                 "",
		"schema.registry.listeners":      "",
		"console.listeners":              "",
	})
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	n, err := node.Start(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("starting node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	addrs := n.Addrs()
	if addrs["CLIENT"] == nil || addrs["REPLICATION"] == nil {
		t.Fatalf("listeners %v, want CLIENT and REPLICATION", addrs)
	}
	return &testNode{t: t, n: n, addr: addrs["CLIENT"].String()}, &testNode{t: t, n: n, addr: addrs["REPLICATION"].String()}
}

// listedKeys is the set of API keys an ApiVersions answer lists.
func listedKeys(c *conn) map[kmsg.Key]bool {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "broker-test", "1"
	resp := do[*kmsg.ApiVersionsResponse](c, 3, req)
	if resp.ErrorCode != 0 {
		c.t.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
	out := map[kmsg.Key]bool{}
	for _, k := range resp.ApiKeys {
		out[kmsg.Key(k.ApiKey)] = true
	}
	return out
}

// replicaFetch is fetchReq as broker replicaID sends it, at version v.
func replicaFetch(topic string, id [16]byte, replicaID int32, v int16) *kmsg.FetchRequest {
	req := fetchReq(topic, id, 0, 0)
	req.SetVersion(v)
	if v >= 15 {
		req.ReplicaState.ID, req.ReplicaState.Epoch = replicaID, 1
	} else {
		req.ReplicaID = replicaID
	}
	return req
}

// TestInterBrokerAPIsOnlyOnInterBrokerListener (issue item 8): on a client
// listener ApiVersions does not list the broker-to-controller RPCs, a
// request for one closes the connection (as Kafka does for an API its
// listener does not enable), and a replica fetch is refused per partition
// with TOPIC_AUTHORIZATION_FAILED (Kafka's answer to a follower fetch its
// sender may not make) while a consumer fetch works. On the inter-broker
// listener all of them are served.
func TestInterBrokerAPIsOnlyOnInterBrokerListener(t *testing.T) {
	clientNode, replNode := startTwoListenerNode(t)
	cl, repl := clientNode.dial(), replNode.dial()
	id := createTopic(cl, "scoped", 1, nil)
	produce(cl, "scoped", 0, "a", "b")

	onClient, onRepl := listedKeys(cl), listedKeys(repl)
	for _, k := range interBrokerOnly {
		if onClient[k] {
			t.Errorf("ApiVersions on the client listener lists %s", k.Name())
		}
		if !onRepl[k] {
			t.Errorf("ApiVersions on the inter-broker listener does not list %s", k.Name())
		}
	}
	if !onClient[kmsg.Fetch] || !onClient[kmsg.Metadata] {
		t.Error("ApiVersions on the client listener lacks Fetch or Metadata")
	}

	for _, v := range []int16{4, 12, 13, 15, 16} {
		resp := do[*kmsg.FetchResponse](cl, v, replicaFetch("scoped", id, 2, v))
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("replica fetch v%d on the client listener: %+v", v, resp.Topics)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.TopicAuthorizationFailed.Code || len(p.RecordBatches) != 0 {
			t.Errorf("replica fetch v%d on the client listener: error %d with %d bytes, want TOPIC_AUTHORIZATION_FAILED and no data", v, p.ErrorCode, len(p.RecordBatches))
		}
		// On the inter-broker listener it is a replica fetch: broker 2
		// is no replica of the partition, so the leader says so.
		resp = do[*kmsg.FetchResponse](repl, v, replicaFetch("scoped", id, 2, v))
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("replica fetch v%d from a non-replica on the inter-broker listener: error %d, want NOT_LEADER_OR_FOLLOWER", v, p.ErrorCode)
		}
	}
	consumer := do[*kmsg.FetchResponse](cl, 12, fetchReq("scoped", id, 0, 0))
	if p := consumer.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
		t.Errorf("consumer fetch on the client listener: error %d, %d bytes; want the records", p.ErrorCode, len(p.RecordBatches))
	}

	// The inter-broker listener answers a heartbeat (this one is for a
	// registration the controller does not know).
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch = 1, 12345
	if resp := do[*kmsg.BrokerHeartbeatResponse](repl, 1, hb); resp.ErrorCode == 0 {
		t.Errorf("heartbeat with a made-up broker epoch answered without error")
	}
	for _, k := range interBrokerOnly {
		c := clientNode.dial()
		req := kmsg.RequestForKey(int16(k))
		req.SetVersion(0)
		corr := c.send(req)
		if resp, err := c.recv(req, corr, 10*time.Second); err == nil {
			t.Errorf("%s on the client listener answered (%T), want the connection closed", k.Name(), resp)
		}
	}
}

// TestSingleListenerServesInterBrokerAPIs: with one listener (zero
// config), it is also the inter-broker listener and serves everything.
func TestSingleListenerServesInterBrokerAPIs(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	listed := listedKeys(c)
	for _, k := range interBrokerOnly {
		if !listed[k] {
			t.Errorf("ApiVersions on the only listener does not list %s", k.Name())
		}
	}
	id := createTopic(c, "single", 1, nil)
	resp := do[*kmsg.FetchResponse](c, 12, replicaFetch("single", id, 2, 12))
	if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Errorf("replica fetch on the only listener: error %d, want NOT_LEADER_OR_FOLLOWER (served as a replica fetch)", p.ErrorCode)
	}
}
