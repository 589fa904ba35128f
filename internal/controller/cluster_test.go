package controller_test

// In-process clusters: three combined (broker+controller) nodes on loopback
// ports, started concurrently as three processes would be.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/node"
	"github.com/vltava/vltava/internal/testing/poll"
)

type cluster struct {
	t     *testing.T
	nodes map[int32]*node.Node
	addrs map[int32]string // PLAINTEXT
}

// freePorts reserves n loopback ports (released before use; good enough on
// a test machine).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// startCluster starts nodes 1..n, all voters, with fast heartbeats and
// sessions so failures are detected within a second.
func startCluster(t *testing.T, n int, extra map[string]string) *cluster {
	t.Helper()
	ports := freePorts(t, 2*n)
	voters := ""
	for i := range n {
		if i > 0 {
			voters += ","
		}
		voters += fmt.Sprintf("%d@127.0.0.1:%d", i+1, ports[2*i+1])
	}
	c := &cluster{t: t, nodes: map[int32]*node.Node{}, addrs: map[int32]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		id := int32(i + 1)
		props := map[string]string{
			"node.id":                               fmt.Sprint(id),
			"process.roles":                         "broker,controller",
			"listeners":                             fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[2*i], ports[2*i+1]),
			"listener.security.protocol.map":        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.listener.names":             "CONTROLLER",
			"inter.broker.listener.name":            "PLAINTEXT",
			"controller.quorum.voters":              voters,
			"controller.quorum.election.timeout.ms": "300",
			"broker.heartbeat.interval.ms":          "100",
			"broker.session.timeout.ms":             "1000",
			"log.dirs":                              t.TempDir(),
			"auto.leader.rebalance.enable":          "false",
			"admin.listeners":                       "", // no admin port per node
			"rest.listeners":                        "",
			"schema.registry.listeners":             "",
			"console.listeners":                     "",
		}
		for k, v := range extra {
			props[k] = v
		}
		cfg, _, err := config.ParseBroker(props)
		if err != nil {
			t.Fatalf("config: %v", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			nd, err := node.Start(cfg, testLogger(id))
			if err != nil {
				errs <- fmt.Errorf("node %d: %w", id, err)
				return
			}
			mu.Lock()
			c.nodes[id] = nd
			c.addrs[id] = nd.Addrs()["PLAINTEXT"].String()
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(c.closeAll)
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	return c
}

// closeAll closes the remaining nodes concurrently, so each controlled
// shutdown still finds a quorum.
func (c *cluster) closeAll() {
	var wg sync.WaitGroup
	for id, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Close()
		}()
		delete(c.nodes, id)
	}
	wg.Wait()
}

// awaitConverged waits until there is an active controller and every node's
// image shows every node registered and unfenced.
func (c *cluster) awaitConverged() {
	c.t.Helper()
	want := slices.Sorted(mapKeys(c.nodes))
	eventually(c.t, 5*time.Second, "all brokers active in every image", func() bool {
		if c.active() < 0 {
			return false
		}
		for _, n := range c.nodes {
			if !slices.Equal(n.Metadata().Image().ActiveBrokerIDs(), want) {
				return false
			}
		}
		return true
	})
}

// request sends req to broker id itself (not where kgo would route it).
func (c *cluster) request(id int32, req kmsg.Request) kmsg.Response {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[id]))
	if err != nil {
		c.t.Fatal(err)
	}
	defer cl.Close()
	resp, err := cl.Broker(int(id)).Request(context.Background(), req)
	if err != nil {
		c.t.Fatalf("request to %d: %v", id, err)
	}
	return resp
}

func (c *cluster) active() int32 {
	for id, n := range c.nodes {
		if n.IsActiveController() {
			return id
		}
	}
	return -1
}

// other returns a running node that is not the active controller.
func (c *cluster) other() int32 {
	act := c.active()
	for _, id := range slices.Sorted(mapKeys(c.nodes)) {
		if id != act {
			return id
		}
	}
	return -1
}

func mapKeys[V any](m map[int32]V) func(func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (c *cluster) admin(id int32) *kadm.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[id]))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.True(t, d, what, cond)
}

func TestClusterFormsAndRegistersEveryBroker(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	ctx := context.Background()
	meta, err := c.admin(c.other()).BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Controller != c.active() {
		t.Errorf("Metadata controller = %d, want the active controller %d", meta.Controller, c.active())
	}
	if len(meta.Brokers) != 3 {
		t.Errorf("Metadata lists %d brokers, want 3", len(meta.Brokers))
	}
	// Every node generated a cluster id on its first start; the cluster
	// keeps the one the first active controller committed, and every node
	// reports and records it.
	ids := map[string]bool{}
	for id := int32(1); id <= 3; id++ {
		m, err := c.admin(id).BrokerMetadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ids[m.Cluster] = true
	}
	if len(ids) != 1 {
		t.Errorf("nodes report different cluster ids: %v", ids)
	}
}

func TestForwardedCreateTopicsPlacesReplicasOnEveryBroker(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	ctx := context.Background()
	from := c.other()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "replicated", 6, 3
	req.Topics = append(req.Topics, rt)
	resp := c.request(from, req).(*kmsg.CreateTopicsResponse)
	if code := resp.Topics[0].ErrorCode; code != 0 {
		t.Fatalf("create via non-controller node %d: error %d", from, code)
	}
	// The answering node already has the topic in its image.
	p, ok := c.nodes[from].Metadata().Image().Partition("replicated", 0)
	if !ok {
		t.Fatal("topic not in the forwarding node's image when CreateTopics answered")
	}
	if len(p.Replicas) != 3 || len(p.ISR) != 3 {
		t.Errorf("partition 0: replicas %v isr %v, want 3 of each", p.Replicas, p.ISR)
	}
	// rf above the broker count is INVALID_REPLICATION_FACTOR.
	res, err := c.admin(from).CreateTopic(ctx, 1, 4, nil, "too-many")
	if err == nil {
		err = res.Err
	}
	if !errors.Is(err, kerr.InvalidReplicationFactor) {
		t.Errorf("rf=4 on 3 brokers: %v, want INVALID_REPLICATION_FACTOR", err)
	}
}

func TestControlledShutdownMovesLeadershipAway(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	ctx := context.Background()
	if _, err := c.admin(1).CreateTopic(ctx, 6, 3, nil, "moving"); err != nil {
		t.Fatal(err)
	}
	victim := c.other()
	led := 0
	img := c.nodes[c.active()].Metadata().Image()
	topic, _ := img.Topic("moving")
	for _, p := range topic.Partitions {
		if p.Leader == victim {
			led++
		}
	}
	if led == 0 {
		t.Fatalf("node %d leads nothing; placement should spread leaders", victim)
	}
	start := time.Now()
	if err := c.nodes[victim].Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	delete(c.nodes, victim)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("controlled shutdown took %v", d)
	}
	survivor := c.active()
	img = c.nodes[survivor].Metadata().Image()
	topic, _ = img.Topic("moving")
	for _, p := range topic.Partitions {
		if p.Leader == victim || p.Leader == metadata.NoLeader {
			t.Errorf("partition %d: leader %d after broker %d shut down", p.Partition, p.Leader, victim)
		}
		if slices.Contains(p.ISR, victim) {
			t.Errorf("partition %d: ISR %v still holds %d", p.Partition, p.ISR, victim)
		}
	}
	if b, _ := img.Broker(victim); !b.Fenced {
		t.Errorf("broker %d not fenced after its controlled shutdown", victim)
	}
}

func TestDescribeQuorumThroughAnyBroker(t *testing.T) {
	c := startCluster(t, 3, nil)
	c.awaitConverged()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addrs[c.other()]))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		t.Fatalf("error code %d", p.ErrorCode)
	}
	if p.LeaderID != c.active() {
		t.Errorf("leader %d, want %d", p.LeaderID, c.active())
	}
	if len(p.CurrentVoters) != 3 || p.HighWatermark <= 0 {
		t.Errorf("voters %d, high watermark %d", len(p.CurrentVoters), p.HighWatermark)
	}
}

// testLogger discards node logs unless VLTAVA_TEST_LOG is set.
func testLogger(id int32) *slog.Logger {
	if os.Getenv("VLTAVA_TEST_LOG") == "" {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("test_node", id)
}
