package replication

// An in-process three-broker cluster: each node has its own storage,
// partition manager, broker handlers on a loopback listener and replication
// manager; a test controller plays the metadata quorum, building images from
// real metadata records, accepting or fencing AlterPartition, and
// publishing every image to the nodes that are up.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/broker"
	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/server"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/testing/poll"
)

const testTopic = "replicated"

// staticMeta is the metadata.Log a test node's broker reads its image from.
type staticMeta struct {
	mu  sync.Mutex
	img *metadata.Image
}

func (s *staticMeta) Commit(context.Context, []metadata.Record) (*metadata.Image, error) {
	return nil, errors.New("the test controller commits metadata")
}
func (s *staticMeta) Image() *metadata.Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.img
}
func (s *staticMeta) Subscribe(func(old, new *metadata.Image)) {}
func (s *staticMeta) Close() error                             { return nil }
func (s *staticMeta) set(img *metadata.Image) {
	s.mu.Lock()
	s.img = img
	s.mu.Unlock()
}

type testNode struct {
	id     int32
	cfg    *config.Broker
	meta   *staticMeta
	store  *storage.Manager
	parts  *partition.Manager
	server *server.Server
	repl   *Manager // nil while fetching is stopped
	quotas Quotas   // shared by the node's broker (leader side) and fetchers
	addr   string
	up     bool
}

// testController is the metadata quorum of the test cluster.
type testController struct {
	t     *testing.T
	mu    sync.Mutex // serializes commits and publishing
	img   *metadata.Image
	nodes []*testNode
}

func (c *testController) commitLocked(recs ...metadata.Record) {
	img, err := c.img.Apply(c.img.Offset()+1, recs)
	if err != nil {
		c.t.Errorf("applying %v: %v", recs, err)
		return
	}
	c.img = img
	for _, n := range c.nodes {
		if n.up {
			c.publishToLocked(n)
		}
	}
}

func (c *testController) publishToLocked(n *testNode) {
	n.meta.set(c.img)
	if err := n.parts.Apply(c.img); err != nil {
		c.t.Errorf("node %d applying image: %v", n.id, err)
	}
	if n.repl != nil {
		n.repl.Apply(c.img)
	}
}

func (c *testController) commit(recs ...metadata.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.commitLocked(recs...)
}

func (c *testController) image() *metadata.Image {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.img
}

// AlterPartition validates as Kafka's controller does: the leader epoch
// must be current (FENCED_LEADER_EPOCH) and the partition epoch the latest
// (INVALID_UPDATE_VERSION).
func (c *testController) AlterPartition(_ context.Context, ch partition.ISRChange) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.img.TopicByID(metadata.Uuid(ch.TopicID))
	if !ok {
		return kerr.UnknownTopicID
	}
	pi := t.Partitions[ch.Partition]
	switch {
	case ch.LeaderEpoch != pi.LeaderEpoch:
		return kerr.FencedLeaderEpoch
	case ch.PartitionEpoch != pi.PartitionEpoch:
		return kerr.InvalidUpdateVersion
	}
	c.commitLocked(&metadata.PartitionChangeRecord{TopicID: t.ID, Partition: ch.Partition, ISR: ch.NewISR})
	return nil
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// startCluster starts three nodes and creates one partition replicated on
// all of them, led by node 1.
func startCluster(t *testing.T) (*testController, [16]byte) {
	t.Helper()
	return startClusterWith(t, nil)
}

// startClusterWith is startCluster with extra broker properties.
func startClusterWith(t *testing.T, extra map[string]string) (*testController, [16]byte) {
	t.Helper()
	c := &testController{t: t, img: metadata.EmptyImage()}
	var regs []metadata.Record
	for id := int32(1); id <= 3; id++ {
		dir := t.TempDir()
		props := map[string]string{
			"node.id":                   strconv.Itoa(int(id)),
			"log.dirs":                  dir,
			"listeners":                 "PLAINTEXT://127.0.0.1:0",
			"replica.lag.time.max.ms":   "400",
			"replica.fetch.wait.max.ms": "100",
			"replica.fetch.backoff.ms":  "20",
		}
		for k, v := range extra {
			props[k] = v
		}
		cfg, _, err := config.ParseBroker(props)
		if err != nil {
			t.Fatal(err)
		}
		store, err := storage.OpenManager(storage.ManagerConfig{Dirs: []string{dir}, Logger: quietLogger(), CleanerDisabled: true})
		if err != nil {
			t.Fatal(err)
		}
		n := &testNode{id: id, cfg: cfg, meta: &staticMeta{img: c.img}, store: store, up: true, quotas: NewQuotas()}
		n.parts = partition.NewManager(id, cfg, store, quietLogger())
		n.parts.SetControllerClient(c)
		b := broker.New(broker.Options{Config: cfg, ClusterID: "test", Meta: n.meta, Partitions: n.parts, LeaderQuota: n.quotas.Leader, Logger: quietLogger()})
		n.server = server.New(server.Config{Listeners: []server.ListenerConfig{{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"}}}, b, quietLogger())
		if err := n.server.Start(); err != nil {
			t.Fatal(err)
		}
		n.addr = n.server.Addrs()["PLAINTEXT"].String()
		host, port, _ := net.SplitHostPort(n.addr)
		p, _ := strconv.Atoi(port)
		regs = append(regs, &metadata.RegisterBrokerRecord{BrokerID: id, IncarnationID: metadata.NewUuid(), BrokerEpoch: int64(id),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: host, Port: int32(p)}}})
		n.repl = NewManager(Options{NodeID: id, Config: cfg, Partitions: n.parts, Quotas: n.quotas, Logger: quietLogger()})
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n.repl != nil {
				n.repl.Close()
			}
			n.server.Close()
			n.store.Close()
		}
	})
	topicID := metadata.NewUuid()
	c.commit(regs...)
	c.commit(&metadata.TopicRecord{Name: testTopic, TopicID: topicID},
		&metadata.PartitionRecord{TopicID: topicID, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1, LeaderEpoch: 0})
	return c, [16]byte(topicID)
}

func (c *testController) node(id int32) *testNode { return c.nodes[id-1] }

func (c *testController) stopFetching(id int32) {
	c.mu.Lock()
	n := c.node(id)
	r := n.repl
	n.repl = nil
	c.mu.Unlock()
	r.Close()
}

func (c *testController) startFetching(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(id)
	n.repl = NewManager(Options{NodeID: id, Config: n.cfg, Partitions: n.parts, Quotas: n.quotas, Logger: quietLogger()})
	n.repl.Apply(c.img)
}

func (c *testController) setUp(id int32, up bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(id)
	n.up = up
	if up {
		c.publishToLocked(n)
	}
}

func (c *testController) partitionImage() metadata.PartitionImage {
	pi, _ := c.image().Partition(testTopic, 0)
	return *pi
}

// produce sends one batch of n records to node id and returns the
// partition's error and base offset.
func produce(t *testing.T, n *testNode, acks int16, records int, timeout time.Duration) (perr error, base int64) {
	t.Helper()
	conn, err := dialBroker(nil, n.addr, "test-producer", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.close()
	recs := make([]record.Record, records)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte(fmt.Sprintf("value-%d", i))}
	}
	now := time.Now().UnixMilli()
	batch, err := record.BuildBatch(record.Header{LastOffsetDelta: int32(records - 1), FirstTimestamp: now, MaxTimestamp: now,
		ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(10)
	req.Acks = acks
	req.TimeoutMillis = int32(timeout.Milliseconds())
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = testTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 0
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	if err := conn.roundTrip(req, resp, time.Now().Add(timeout+5*time.Second)); err != nil {
		t.Fatal(err)
	}
	sp := resp.Topics[0].Partitions[0]
	return kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, 10*time.Second, what, cond)
}

func (n *testNode) partition() *partition.Partition { return n.parts.Get(testTopic, 0) }

// batchesOf reads a node's whole log as (base offset, epoch, CRC) triples.
func batchesOf(t *testing.T, n *testNode) [][3]int64 {
	t.Helper()
	l := n.partition().Log()
	var out [][3]int64
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		res, err := l.Read(off, 1<<20, l.LogEndOffset(), true)
		if err != nil {
			t.Fatal(err)
		}
		it := record.NewBatches(res.Data)
		for it.Next() {
			h := it.Header()
			out = append(out, [3]int64{h.BaseOffset, int64(h.PartitionLeaderEpoch), int64(h.CRC)})
			off = h.LastOffset() + 1
		}
	}
	return out
}

func TestAcksAllReplicatesToTheISRAndAdvancesTheHighWatermark(t *testing.T) {
	c, _ := startCluster(t)
	leader := c.node(1)
	for i := 0; i < 5; i++ {
		err, base := produce(t, leader, -1, 3, 5*time.Second)
		if err != nil {
			t.Fatalf("acks=all produce %d: %v", i, err)
		}
		if base != int64(i*3) {
			t.Fatalf("produce %d landed at %d, want %d", i, base, i*3)
		}
		// Acknowledged with acks=all means every ISR member has it.
		for _, id := range []int32{2, 3} {
			if leo := c.node(id).partition().LogEndOffset(); leo < int64(i*3+3) {
				t.Fatalf("acknowledged offset %d but follower %d has LEO %d", i*3+2, id, leo)
			}
		}
	}
	if hw := leader.partition().HighWatermark(); hw != 15 {
		t.Fatalf("leader high watermark %d, want 15", hw)
	}
	eventually(t, "followers to learn the high watermark", func() bool {
		return c.node(2).partition().HighWatermark() == 15 && c.node(3).partition().HighWatermark() == 15
	})
	want := batchesOf(t, leader)
	for _, id := range []int32{2, 3} {
		if got := batchesOf(t, c.node(id)); !slices.Equal(got, want) {
			t.Fatalf("follower %d log %v differs from the leader's %v", id, got, want)
		}
	}
	// Followers refuse produce and say who leads (KIP-951).
	if err, _ := produce(t, c.node(2), 1, 1, time.Second); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("produce to a follower: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
}

func TestLaggingFollowerLeavesAndRejoinsTheISR(t *testing.T) {
	c, _ := startCluster(t)
	leader := c.node(1)
	if err, _ := produce(t, leader, -1, 2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.stopFetching(3)
	// Appends the stopped follower never fetches: after
	// replica.lag.time.max.ms it is out of the ISR.
	if err, _ := produce(t, leader, 1, 2, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ISR to shrink to [1 2]", func() bool {
		return slices.Equal(c.partitionImage().ISR, []int32{1, 2})
	})
	// acks=all now needs only the remaining ISR.
	if err, _ := produce(t, leader, -1, 2, 5*time.Second); err != nil {
		t.Fatalf("acks=all with ISR [1 2]: %v", err)
	}
	if c.node(3).partition().LogEndOffset() != 2 {
		t.Fatalf("stopped follower's LEO moved to %d", c.node(3).partition().LogEndOffset())
	}
	c.startFetching(3)
	eventually(t, "the follower to rejoin the ISR", func() bool {
		return slices.Equal(c.partitionImage().ISR, []int32{1, 2, 3})
	})
	if got, want := batchesOf(t, c.node(3)), batchesOf(t, leader); !slices.Equal(got, want) {
		t.Fatalf("rejoined follower's log %v differs from the leader's %v", got, want)
	}
}

func TestAcksAllBelowMinInsyncReplicas(t *testing.T) {
	c, _ := startCluster(t)
	leader := c.node(1)
	min3 := "3"
	c.commit(&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: testTopic, Name: "min.insync.replicas", Value: &min3})
	if err, _ := produce(t, leader, -1, 1, 5*time.Second); err != nil {
		t.Fatalf("acks=all with a full ISR: %v", err)
	}
	// A follower stuck while the ISR is still full: the append is not
	// committed before the request times out.
	c.stopFetching(3)
	c.stopFetching(2)
	if err, _ := produce(t, leader, -1, 1, 200*time.Millisecond); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("acks=all with stopped followers: %v, want REQUEST_TIMED_OUT", err)
	}
	c.startFetching(2)
	eventually(t, "the ISR to drop the stopped follower", func() bool {
		return slices.Equal(c.partitionImage().ISR, []int32{1, 2})
	})
	if err, _ := produce(t, leader, -1, 1, 5*time.Second); !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Fatalf("acks=all with ISR [1 2] and min.insync.replicas=3: %v, want NOT_ENOUGH_REPLICAS", err)
	}
	if err, _ := produce(t, leader, 1, 1, 5*time.Second); err != nil {
		t.Fatalf("acks=1 ignores min.insync.replicas: %v", err)
	}
}

// TestDivergentFollowerTruncates is KIP-101's scenario: the old leader
// appended batches no follower fetched, lost its leadership, and on
// rejoining as a follower cuts them off and takes the new leader's log.
func TestDivergentFollowerTruncates(t *testing.T) {
	c, topicID := startCluster(t)
	old := c.node(1)
	if err, _ := produce(t, old, -1, 3, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	c.stopFetching(2)
	c.stopFetching(3)
	// Unreplicated appends on the old leader, in epoch 0.
	for i := 0; i < 3; i++ {
		if err, _ := produce(t, old, 1, 2, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if old.partition().LogEndOffset() != 9 {
		t.Fatalf("old leader LEO %d, want 9", old.partition().LogEndOffset())
	}
	// The old leader dies; the controller elects node 2 from the ISR.
	c.setUp(1, false)
	c.stopFetching(1)
	two := int32(2)
	c.commit(&metadata.PartitionChangeRecord{TopicID: metadata.Uuid(topicID), Partition: 0, Leader: &two, ISR: []int32{2, 3}})
	if pi := c.partitionImage(); pi.Leader != 2 || pi.LeaderEpoch != 1 {
		t.Fatalf("after election leader %d epoch %d", pi.Leader, pi.LeaderEpoch)
	}
	c.startFetching(2)
	c.startFetching(3)
	newLeader := c.node(2)
	if err, base := produce(t, newLeader, -1, 4, 5*time.Second); err != nil || base != 3 {
		t.Fatalf("produce to the new leader: base %d err %v, want base 3", base, err)
	}
	// The old leader comes back as a follower of node 2.
	c.setUp(1, true)
	c.startFetching(1)
	eventually(t, "the old leader to converge on the new leader's log", func() bool {
		return old.partition().LogEndOffset() == newLeader.partition().LogEndOffset() &&
			slices.Equal(batchesOf(t, old), batchesOf(t, newLeader))
	})
	if e, end := old.partition().Log().EndOffsetForEpoch(0); e != 0 || end != 3 {
		t.Fatalf("old leader's epoch 0 now ends at (%d,%d), want (0,3)", e, end)
	}
	eventually(t, "the old leader to rejoin the ISR", func() bool {
		return slices.Equal(c.partitionImage().ISR, []int32{1, 2, 3})
	})
}
