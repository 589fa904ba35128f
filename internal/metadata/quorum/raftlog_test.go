package quorum

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/testing/poll"
)

// raftTestCluster runs voters (and observers) in-process on loopback TCP.
type raftTestCluster struct {
	t      *testing.T
	base   RaftConfig
	voters map[int32]string
	dirs   map[int32]string
	addrs  map[int32]string // every node's raft address (voters and observers)
	mu     sync.Mutex
	logs   map[int32]*RaftLog // open nodes
}

// testRaftConfig uses short timeouts so elections take a fraction of a
// second even under -race on two cores.
func testRaftConfig() RaftConfig {
	return RaftConfig{
		HeartbeatTimeout:   300 * time.Millisecond,
		ElectionTimeout:    300 * time.Millisecond,
		LeaderLeaseTimeout: 150 * time.Millisecond,
		CommitTimeout:      5 * time.Millisecond,
	}
}

func newRaftTestCluster(t *testing.T, voters int, base RaftConfig) *raftTestCluster {
	t.Helper()
	c := &raftTestCluster{t: t, base: base, voters: map[int32]string{}, dirs: map[int32]string{},
		addrs: map[int32]string{}, logs: map[int32]*RaftLog{}}
	listeners := map[int32]net.Listener{}
	for id := int32(1); id <= int32(voters); id++ {
		ln := listenLoopback(t)
		listeners[id] = ln
		c.voters[id] = ln.Addr().String()
		c.addrs[id] = ln.Addr().String()
		c.dirs[id] = t.TempDir()
	}
	for id, ln := range listeners {
		c.open(id, ln, true)
	}
	t.Cleanup(c.closeAll)
	return c
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// open starts node id; ln nil means listen again on its known address.
func (c *raftTestCluster) open(id int32, ln net.Listener, voter bool) *RaftLog {
	c.t.Helper()
	cfg := c.base
	cfg.NodeID, cfg.Dir, cfg.Voters, cfg.Voter = id, c.dirs[id], c.voters, voter
	cfg.Listener = ln
	if ln == nil {
		cfg.BindAddr = c.addrs[id]
	}
	l, err := OpenRaftLog(cfg)
	if err != nil {
		c.t.Fatalf("opening node %d: %v", id, err)
	}
	c.mu.Lock()
	c.logs[id] = l
	c.mu.Unlock()
	return l
}

// addObserver starts a broker-only node with an empty dir.
func (c *raftTestCluster) addObserver(id int32) *RaftLog {
	c.t.Helper()
	ln := listenLoopback(c.t)
	c.addrs[id] = ln.Addr().String()
	c.dirs[id] = c.t.TempDir()
	return c.open(id, ln, false)
}

func (c *raftTestCluster) node(id int32) *RaftLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.logs[id]
}

func (c *raftTestCluster) openNodes() map[int32]*RaftLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[int32]*RaftLog, len(c.logs))
	for id, l := range c.logs {
		out[id] = l
	}
	return out
}

func (c *raftTestCluster) stop(id int32) {
	c.t.Helper()
	c.mu.Lock()
	l := c.logs[id]
	delete(c.logs, id)
	c.mu.Unlock()
	if err := l.Close(); err != nil {
		c.t.Fatalf("closing node %d: %v", id, err)
	}
}

func (c *raftTestCluster) closeAll() {
	for id := range c.openNodes() {
		c.stop(id)
	}
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.True(t, timeout, what, cond)
}

// leader waits until exactly one open node leads and every open node agrees.
func (c *raftTestCluster) leader() (int32, *RaftLog) {
	c.t.Helper()
	var id int32
	waitFor(c.t, 15*time.Second, "a leader all nodes agree on", func() bool {
		nodes := c.openNodes()
		var leaders []int32
		for nid, l := range nodes {
			if l.IsLeader() {
				leaders = append(leaders, nid)
			}
		}
		if len(leaders) != 1 {
			return false
		}
		for _, l := range nodes {
			if lid, ok := l.LeaderID(); !ok || lid != leaders[0] {
				return false
			}
		}
		id = leaders[0]
		return true
	})
	return id, c.node(id)
}

// commit commits recs on whichever node leads, retrying across elections.
func (c *raftTestCluster) commit(recs ...metadata.Record) *metadata.Image {
	c.t.Helper()
	var img *metadata.Image
	waitFor(c.t, 20*time.Second, "a commit on the leader", func() bool {
		_, l := c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var err error
		img, err = l.Commit(ctx, recs)
		switch {
		case err == nil:
			return true
		case errors.Is(err, kerr.NotController), errors.Is(err, kerr.RequestTimedOut), errors.Is(err, metadata.ErrLogClosed):
			return false
		}
		c.t.Fatalf("commit: %v", err)
		return false
	})
	return img
}

// waitConverged waits until every open node's image is at want's offset,
// then checks they equal want.
func (c *raftTestCluster) waitConverged(want *metadata.Image) {
	c.t.Helper()
	waitFor(c.t, 20*time.Second, fmt.Sprintf("all nodes at offset %d", want.Offset()), func() bool {
		for _, l := range c.openNodes() {
			if l.Image().Offset() != want.Offset() {
				return false
			}
		}
		return true
	})
	for id, l := range c.openNodes() {
		c.t.Logf("node %d at offset %d", id, l.Image().Offset())
		assertImagesEqual(c.t, l.Image(), want)
	}
}

func TestRaftLogQuorumFailoverAndRestart(t *testing.T) {
	c := newRaftTestCluster(t, 3, testRaftConfig())
	leaderID, leader := c.leader()

	// A follower's subscriber sees every batch, in order.
	followerID := int32(1 + leaderID%3)
	var seenMu sync.Mutex
	var seen []int64
	c.node(followerID).Subscribe(func(_, img *metadata.Image) {
		seenMu.Lock()
		seen = append(seen, img.Offset())
		seenMu.Unlock()
	})

	for i := range 5 {
		c.commit(topicRecords(fmt.Sprintf("t%d", i), metadata.NewUuid(), 2, 1, 2, 3)...)
	}
	want := c.commit(&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t1", Name: "retention.ms", Value: metadata.StringPtr("1000")})
	if want.Offset() != 5*3+1-1 {
		t.Fatalf("offset %d: record offsets are not dense", want.Offset())
	}
	c.waitConverged(want)
	waitFor(t, 5*time.Second, "follower subscriber notified", func() bool {
		seenMu.Lock()
		defer seenMu.Unlock()
		return len(seen) > 0 && seen[len(seen)-1] == want.Offset()
	})
	seenMu.Lock()
	if len(seen) != 6 || !slices.IsSorted(seen) {
		t.Fatalf("follower subscriber saw offsets %v, want 6 increasing", seen)
	}
	seenMu.Unlock()

	// Followers refuse writes with NOT_CONTROLLER and name the leader.
	for id, l := range c.openNodes() {
		if id == leaderID {
			continue
		}
		_, err := l.Commit(context.Background(), topicRecords("nope", metadata.NewUuid(), 1, 1))
		if !errors.Is(err, kerr.NotController) {
			t.Fatalf("follower %d commit: %v, want NOT_CONTROLLER", id, err)
		}
	}
	// A batch that cannot apply is rejected on the leader and writes nothing.
	if _, err := leader.Commit(context.Background(), []metadata.Record{&metadata.RemoveTopicRecord{TopicID: metadata.NewUuid()}}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("invalid batch: %v, want INVALID_REQUEST", err)
	}

	// DescribeQuorum on the leader: three voters, followers caught up.
	waitFor(t, 5*time.Second, "followers caught up in quorum state", func() bool {
		qs, err := leader.QuorumState()
		if err != nil || qs.LeaderID != leaderID || len(qs.Voters) != 3 || len(qs.Observers) != 0 {
			return false
		}
		for _, v := range qs.Voters {
			if v.LogEndOffset != qs.HighWatermark || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
				return false
			}
		}
		return qs.LeaderEpoch >= 1 && qs.HighWatermark > 0
	})

	// Kill the leader: the other two elect a new one and commits continue.
	c.stop(leaderID)
	newID, _ := c.leader()
	if newID == leaderID {
		t.Fatalf("stopped node %d still leads", leaderID)
	}
	want = c.commit(topicRecords("after-failover", metadata.NewUuid(), 1, 1, 2, 3)...)
	c.waitConverged(want)

	// The old leader rejoins from its data and catches up.
	c.open(leaderID, nil, true)
	c.waitConverged(want)
	if _, ok := c.node(leaderID).Image().Topic("after-failover"); !ok {
		t.Fatal("restarted old leader missed the commit made while it was down")
	}

	// Restart all three from their dirs: the image comes back.
	c.closeAll()
	for id := range c.voters {
		c.open(id, nil, true)
	}
	c.leader()
	c.waitConverged(want)
	next := c.commit(topicRecords("after-restart", metadata.NewUuid(), 1, 1)...)
	if next.Offset() != want.Offset()+2 {
		t.Fatalf("offset after restart %d, want %d", next.Offset(), want.Offset()+2)
	}
	c.waitConverged(next)
}

func TestRaftLogSnapshotTruncationAndObserver(t *testing.T) {
	cfg := testRaftConfig()
	cfg.SnapshotThreshold = 8
	cfg.TrailingLogs = 4
	cfg.SnapshotInterval = 50 * time.Millisecond
	c := newRaftTestCluster(t, 3, cfg)
	c.leader()
	var want *metadata.Image
	for i := range 30 {
		want = c.commit(topicRecords(fmt.Sprintf("s%d", i), metadata.NewUuid(), 1, 1, 2)...)
	}
	c.waitConverged(want)

	// Every voter snapshots and truncates its raft log to the trailing
	// entries, so index 1 is gone and a newcomer needs the snapshot.
	waitFor(t, 10*time.Second, "snapshots and truncated logs on all voters", func() bool {
		for id := range c.voters {
			l := c.node(id)
			first, err := l.store.FirstIndex()
			if err != nil || first <= 1 || !hasSnapshot(t, c.dirs[id]) {
				return false
			}
		}
		return true
	})

	// A broker-only node joins through the leader and installs the snapshot.
	obs := c.addObserver(10)
	c.waitConverged(want)
	if !hasSnapshot(t, c.dirs[10]) {
		t.Fatal("observer caught up without installing a snapshot")
	}
	if _, err := obs.Commit(context.Background(), topicRecords("x", metadata.NewUuid(), 1, 1)); !errors.Is(err, kerr.NotController) {
		t.Fatalf("observer commit: %v, want NOT_CONTROLLER", err)
	}
	want = c.commit(topicRecords("after-join", metadata.NewUuid(), 1, 1)...)
	c.waitConverged(want)
	leaderID, leader := c.leader()
	waitFor(t, 5*time.Second, "observer listed in quorum state", func() bool {
		qs, err := leader.QuorumState()
		return err == nil && qs.LeaderID == leaderID && len(qs.Voters) == 3 &&
			len(qs.Observers) == 1 && qs.Observers[0].ID == 10 && qs.Observers[0].LogEndOffset == qs.HighWatermark
	})
	if id, ok := obs.LeaderID(); !ok || id != leaderID {
		t.Fatalf("observer's leader %d/%v, want %d", id, ok, leaderID)
	}

	// Restart everything: each node restores its snapshot at open, before
	// any leader exists, then replays the trailing log.
	c.closeAll()
	for id := range c.voters {
		l := c.open(id, nil, true)
		if off := l.Image().Offset(); off < 0 {
			t.Fatalf("node %d reopened with an empty image; snapshot not restored", id)
		}
	}
	c.open(10, nil, false)
	c.leader()
	c.waitConverged(want)
}

// hasSnapshot reports whether raft's FileSnapshotStore under dir holds a
// completed snapshot (in-progress ones end in ".tmp").
func hasSnapshot(t *testing.T, dir string) bool {
	t.Helper()
	entries, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
	for _, e := range entries {
		if e.IsDir() && filepath.Ext(e.Name()) != ".tmp" {
			return true
		}
	}
	return false
}

// TestControllerOnRaftLog runs the unchanged Controller on the leader's
// RaftLog; every node sees what it created.
func TestControllerOnRaftLog(t *testing.T) {
	c := newRaftTestCluster(t, 3, testRaftConfig())
	leaderID, leader := c.leader()
	ctrl := rules.NewController(leader, rules.ControllerConfig{NodeID: leaderID, Rand: rand.New(rand.NewPCG(1, 2))})
	ctx := context.Background()
	for id := range int32(3) {
		reg := metadata.RegisterBrokerRecord{BrokerID: id, IncarnationID: metadata.NewUuid(),
			Endpoints: []metadata.Endpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092 + id}}}
		if err := ctrl.RegisterBroker(ctx, reg); err != nil {
			t.Fatal(err)
		}
	}
	res := ctrl.CreateTopics(ctx, []rules.CreateTopic{{Name: "orders", NumPartitions: 3, ReplicationFactor: 3}}, false)
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	dup := ctrl.CreateTopics(ctx, []rules.CreateTopic{{Name: "orders", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if !errors.Is(dup[0].Err, kerr.TopicAlreadyExists) {
		t.Fatalf("duplicate create: %v", dup[0].Err)
	}
	want := leader.Image()
	c.waitConverged(want)
	for id, l := range c.openNodes() {
		top, ok := l.Image().Topic("orders")
		if !ok || top.ID != res[0].TopicID || len(top.Partitions) != 3 || len(top.Partitions[0].Replicas) != 3 {
			t.Fatalf("node %d: topic %+v", id, top)
		}
	}
	// A controller on a follower gets NOT_CONTROLLER back from the log.
	followerID := int32(1 + leaderID%3)
	fctrl := rules.NewController(c.node(followerID), rules.ControllerConfig{NodeID: followerID})
	fres := fctrl.CreateTopics(ctx, []rules.CreateTopic{{Name: "elsewhere", NumPartitions: 1, ReplicationFactor: 1}}, false)
	if !errors.Is(fres[0].Err, kerr.NotController) {
		t.Fatalf("create on follower: %v, want NOT_CONTROLLER", fres[0].Err)
	}
}
