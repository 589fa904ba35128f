package controller_test

// In-process clusters with dedicated controllers: controller-only nodes
// (process.roles=controller) form the quorum and run the controller duties;
// broker-only nodes (process.roles=broker) reach them on their quorum ports.

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/node"
)

// dedicatedCluster is controllers 1..nc (controller-only) and brokers
// nc+1..nc+nb (broker-only).
type dedicatedCluster struct {
	t  *testing.T
	mu sync.Mutex
	// nodes holds the running nodes; props their configs, to restart them.
	nodes map[int32]*node.Node
	props map[int32]map[string]string
	// quorum is each controller's voter address; brokers each broker's
	// PLAINTEXT address.
	quorum  map[int32]string
	brokers map[int32]string
}

func startDedicated(t *testing.T, nc, nb int) *dedicatedCluster {
	t.Helper()
	ports := freePorts(t, nc+nb)
	c := &dedicatedCluster{t: t, nodes: map[int32]*node.Node{}, props: map[int32]map[string]string{},
		quorum: map[int32]string{}, brokers: map[int32]string{}}
	voters := ""
	for i := range nc {
		id := int32(i + 1)
		c.quorum[id] = fmt.Sprintf("127.0.0.1:%d", ports[i])
		if i > 0 {
			voters += ","
		}
		voters += fmt.Sprintf("%d@%s", id, c.quorum[id])
	}
	common := map[string]string{
		"listener.security.protocol.map":        "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.listener.names":             "CONTROLLER",
		"controller.quorum.voters":              voters,
		"controller.quorum.election.timeout.ms": "300",
		"broker.heartbeat.interval.ms":          "100",
		"broker.session.timeout.ms":             "1000",
		"auto.leader.rebalance.enable":          "false",
		"admin.listeners":                       "", // no admin port per node
		"rest.listeners":                        "",
		"schema.registry.listeners":             "",
		"console.listeners":                     "",
	}
	for i := range nc + nb {
		id := int32(i + 1)
		p := map[string]string{"node.id": fmt.Sprint(id), "log.dirs": t.TempDir()}
		for k, v := range common {
			p[k] = v
		}
		if i < nc {
			p["process.roles"] = "controller"
			p["listeners"] = "CONTROLLER://" + c.quorum[id]
		} else {
			c.brokers[id] = fmt.Sprintf("127.0.0.1:%d", ports[i])
			p["process.roles"] = "broker"
			p["listeners"] = "PLAINTEXT://" + c.brokers[id]
			p["inter.broker.listener.name"] = "PLAINTEXT"
		}
		c.props[id] = p
	}
	var wg sync.WaitGroup
	errs := make(chan error, nc+nb)
	for id := range c.props {
		wg.Go(func() {
			if err := c.start(id); err != nil {
				errs <- err
			}
		})
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

// start starts node id with its config (again, after stop).
func (c *dedicatedCluster) start(id int32) error {
	cfg, _, err := config.ParseBroker(c.props[id])
	if err != nil {
		return fmt.Errorf("node %d config: %w", id, err)
	}
	n, err := node.Start(cfg, testLogger(id))
	if err != nil {
		return fmt.Errorf("node %d: %w", id, err)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return nil
}

func (c *dedicatedCluster) stop(id int32) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if err := n.Close(); err != nil {
		c.t.Errorf("closing node %d: %v", id, err)
	}
}

func (c *dedicatedCluster) closeAll() {
	c.mu.Lock()
	nodes := c.nodes
	c.nodes = map[int32]*node.Node{}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Go(func() { n.Close() })
	}
	wg.Wait()
}

func (c *dedicatedCluster) node(id int32) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// active returns the controller running the controller duties, or -1.
func (c *dedicatedCluster) active() int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, n := range c.nodes {
		if n.IsActiveController() {
			return id
		}
	}
	return -1
}

// image is the active controller's metadata image (nil without one).
func (c *dedicatedCluster) image() *metadata.Image {
	if n := c.node(c.active()); n != nil {
		return n.Metadata().Image()
	}
	return nil
}

func (c *dedicatedCluster) client(id int32, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.brokers[id])}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// awaitBrokers waits until there is an active controller and every running
// node's image shows exactly the broker ids want active.
func (c *dedicatedCluster) awaitBrokers(want ...int32) {
	c.t.Helper()
	eventually(c.t, 10*time.Second, fmt.Sprintf("brokers %v active in every image", want), func() bool {
		if c.active() < 0 {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, n := range c.nodes {
			if !slices.Equal(n.Metadata().Image().ActiveBrokerIDs(), want) {
				return false
			}
		}
		return true
	})
}

// produceConsume produces n records to topic through broker id and reads
// them back from the start.
func (c *dedicatedCluster) produceConsume(id int32, topic string, n int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := c.client(id, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(topic))
	var want []string
	for i := range n {
		v := fmt.Sprintf("%s-%d", topic, i)
		want = append(want, v)
		if err := p.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			c.t.Fatalf("produce %s: %v", v, err)
		}
	}
	cons := c.client(id, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []string
	for len(got) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			c.t.Fatalf("consumed %d of %d records: %v", len(got), n, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		c.t.Fatalf("consumed %v, want %v", got, want)
	}
}

// createTopic creates topic through broker id and checks its replicas are
// rf distinct brokers among onBrokers.
func (c *dedicatedCluster) createTopic(id int32, topic string, partitions int32, rf int16, onBrokers ...int32) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := kadm.NewClient(c.client(id)).CreateTopic(ctx, partitions, rf, nil, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		c.t.Fatalf("create %s through broker %d: %v", topic, id, err)
	}
	img := c.node(id).Metadata().Image()
	tp, ok := img.Topic(topic)
	if !ok {
		c.t.Fatalf("topic %s not in broker %d's image when CreateTopics answered", topic, id)
	}
	for _, p := range tp.Partitions {
		r := slices.Clone(p.Replicas)
		slices.Sort(r)
		if len(r) != int(rf) || len(slices.Compact(r)) != int(rf) {
			c.t.Errorf("%s-%d: replicas %v, want %d distinct", topic, p.Partition, p.Replicas, rf)
		}
		for _, b := range p.Replicas {
			if !slices.Contains(onBrokers, b) {
				c.t.Errorf("%s-%d: replica on node %d, which is not a broker (brokers %v)", topic, p.Partition, b, onBrokers)
			}
		}
	}
}

func TestDedicatedControllersServeBrokerOnlyNodes(t *testing.T) {
	t.Parallel()
	c := startDedicated(t, 3, 2)
	c.awaitBrokers(4, 5)
	img := c.image()
	for id := int32(1); id <= 3; id++ {
		if _, ok := img.Broker(id); ok {
			t.Errorf("controller-only node %d registered as a broker", id)
		}
		addrs := c.node(id).Addrs()
		if _, ok := addrs["PLAINTEXT"]; ok || len(addrs) != 1 || addrs["CONTROLLER"] == nil {
			t.Errorf("controller-only node %d listens on %v, want only its CONTROLLER quorum address", id, addrs)
		}
	}

	meta, err := kadm.NewClient(c.client(4)).BrokerMetadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ids := meta.Brokers.NodeIDs(); !slices.Equal(ids, []int32{4, 5}) {
		t.Errorf("Metadata lists brokers %v, want [4 5]", ids)
	}

	c.createTopic(4, "dedicated", 4, 2, 4, 5)
	c.produceConsume(5, "dedicated", 20)

	old := c.active()
	t.Logf("stopping the active controller %d", old)
	c.stop(old)
	eventually(t, 10*time.Second, "another controller to take over", func() bool {
		a := c.active()
		return a > 0 && a != old
	})
	c.awaitBrokers(4, 5)
	c.createTopic(5, "after-failover", 2, 2, 4, 5)
	c.produceConsume(4, "after-failover", 10)
}

// TestControllerEndpointServesOnlyControllerAPIs: the quorum port answers
// Kafka requests behind the marker byte with the controller's API set;
// a client API (Metadata) closes the connection, as an unknown API does.
func TestControllerEndpointServesOnlyControllerAPIs(t *testing.T) {
	t.Parallel()
	c := startDedicated(t, 1, 0)
	eventually(t, 5*time.Second, "the controller to become active", func() bool { return c.active() == 1 })

	conn, err := net.DialTimeout("tcp", c.quorum[1], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("probe"))
	send := func(req kmsg.Request, corr int32, marker bool) {
		t.Helper()
		if marker {
			if _, err := conn.Write([]byte{quorum.ControllerRPCByte}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := conn.Write(f.AppendRequest(nil, req, corr)); err != nil {
			t.Fatal(err)
		}
	}

	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(3)
	av.ClientSoftwareName, av.ClientSoftwareVersion = "probe", "1"
	send(av, 1, true)
	var hdr [8]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr[:4])-4)
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	resp := av.ResponseKind().(*kmsg.ApiVersionsResponse)
	if err := resp.ReadFrom(body); err != nil {
		t.Fatal(err)
	}
	keys := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		keys[k.ApiKey] = true
	}
	for _, k := range []kmsg.Key{kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AlterPartition,
		kmsg.AllocateProducerIDs, kmsg.DescribeQuorum, kmsg.CreateTopics, kmsg.DeleteTopics,
		kmsg.CreatePartitions, kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.ElectLeaders,
		kmsg.AlterPartitionAssignments, kmsg.ListPartitionReassignments} {
		if !keys[int16(k)] {
			t.Errorf("ApiVersions lacks controller API %s", k.Name())
		}
	}
	for _, k := range []kmsg.Key{kmsg.Metadata, kmsg.Produce, kmsg.Fetch, kmsg.FindCoordinator, kmsg.JoinGroup} {
		if keys[int16(k)] {
			t.Errorf("ApiVersions lists client API %s on a controller", k.Name())
		}
	}

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(9)
	send(md, 2, false)
	var b [1]byte
	if _, err := r.Read(b[:]); err == nil {
		t.Errorf("Metadata on the controller endpoint was answered; want the connection closed")
	}
}

// TestRestartedBrokerRegistersPromptly: a broker down long enough that the
// active controller's raft replication to it backs off for seconds
// re-registers as soon as it restarts, because it finds the controller from
// controller.quorum.voters rather than from its (stale) image. It stays
// fenced until its image has caught up, then is unfenced.
func TestRestartedBrokerRegistersPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 16 s with a broker down")
	}
	t.Parallel()
	c := startDedicated(t, 3, 1)
	c.awaitBrokers(4)
	before, _ := c.image().Broker(4)
	c.stop(4)
	eventually(t, 5*time.Second, "broker 4 fenced", func() bool {
		img := c.image()
		return img != nil && !img.BrokerActive(4)
	})
	time.Sleep(16 * time.Second) // the outage under test, not a wait for a condition

	restarted := time.Now()
	started := make(chan error, 1)
	go func() { started <- c.start(4) }()
	eventually(t, 5*time.Second, "broker 4 registered again", func() bool {
		img := c.image()
		if img == nil {
			return false
		}
		b, ok := img.Broker(4)
		return ok && b.Epoch > before.Epoch && b.IncarnationID != before.IncarnationID
	})
	t.Logf("re-registered %v after the restart", time.Since(restarted).Round(time.Millisecond))
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("unfenced %v after the restart", time.Since(restarted).Round(time.Millisecond))
	case <-time.After(40 * time.Second):
		t.Fatal("restarted broker was not unfenced within 40 s")
	}
	c.awaitBrokers(4)
}
