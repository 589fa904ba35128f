package quorum

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// dynamicNode is one node of an in-process dynamic (KIP-853) quorum.
type dynamicNode struct {
	key  ReplicaKey
	addr string
	dir  string
	log  *RaftLog
}

// openDynamic starts node key with the given initial voters (nil: formatted
// with --no-initial-controllers) and bootstrap servers.
func openDynamic(t *testing.T, n *dynamicNode, initial []Member, bootstrap []string) {
	t.Helper()
	cfg := testRaftConfig()
	cfg.NodeID, cfg.DirectoryID, cfg.Dir, cfg.Voter = n.key.ID, n.key.DirectoryID, n.dir, true
	cfg.BootstrapServers, cfg.InitialVoters = bootstrap, initial
	if n.addr == "" {
		ln := listenLoopback(t)
		n.addr = ln.Addr().String()
		cfg.Listener = ln
	} else {
		cfg.BindAddr = n.addr
	}
	cfg.AdvertiseAddr = n.addr
	l, err := OpenRaftLog(cfg)
	if err != nil {
		t.Fatalf("opening %s: %v", n.key, err)
	}
	n.log = l
	t.Cleanup(func() { l.Close() })
}

func newDynamicNode(t *testing.T, id int32) *dynamicNode {
	return &dynamicNode{key: ReplicaKey{ID: id, DirectoryID: metadata.NewUuid()}, dir: t.TempDir()}
}

func voterKeys(t *testing.T, l *RaftLog) map[ReplicaKey]bool {
	t.Helper()
	ms, err := l.Members(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[ReplicaKey]bool{}
	for _, m := range ms {
		out[m.Key] = m.Voter
	}
	return out
}

// TestDynamicQuorumAddRemoveVoters forms a quorum the KIP-853 way: one
// standalone voter, two nodes formatted without initial controllers that
// join as observers through the bootstrap server, are added as voters, and
// one removed again (it stays an observer and keeps applying the log).
func TestDynamicQuorumAddRemoveVoters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n1, n2, n3 := newDynamicNode(t, 1), newDynamicNode(t, 2), newDynamicNode(t, 3)
	ln := listenLoopback(t)
	n1.addr = ln.Addr().String()
	ln.Close()
	openDynamic(t, n1, []Member{{Key: n1.key, Addr: n1.addr, Voter: true}}, []string{n1.addr})
	waitFor(t, 10*time.Second, "standalone voter to lead", n1.log.IsLeader)

	openDynamic(t, n2, nil, []string{n1.addr})
	openDynamic(t, n3, nil, []string{n1.addr})
	waitFor(t, 10*time.Second, "observers to join", func() bool {
		v := voterKeys(t, n1.log)
		_, ok2 := v[n2.key]
		_, ok3 := v[n3.key]
		return ok2 && ok3 && !v[n2.key] && !v[n3.key]
	})
	if n2.log.IsLeader() || n3.log.IsLeader() {
		t.Fatal("an observer leads")
	}

	// A replica that never joined cannot be added; nor a voter twice.
	stranger := ReplicaKey{ID: 9, DirectoryID: metadata.NewUuid()}
	if err := n1.log.AddVoter(ctx, stranger, "127.0.0.1:1"); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("adding a replica that never joined: %v, want REQUEST_TIMED_OUT", err)
	}
	if err := n1.log.AddVoter(ctx, n1.key, ""); !errors.Is(err, kerr.DuplicateVoter) {
		t.Fatalf("adding the leader again: %v, want DUPLICATE_VOTER", err)
	}
	if err := n2.log.AddVoter(ctx, n3.key, ""); !errors.Is(err, kerr.NotController) {
		t.Fatalf("adding on an observer: %v, want NOT_CONTROLLER", err)
	}

	for _, n := range []*dynamicNode{n2, n3} {
		if err := n1.log.AddVoter(ctx, n.key, n.addr); err != nil {
			t.Fatalf("adding %s: %v", n.key, err)
		}
	}
	if v := voterKeys(t, n1.log); !v[n1.key] || !v[n2.key] || !v[n3.key] {
		t.Fatalf("voters after adding: %v", v)
	}
	qs, err := n1.log.QuorumState()
	if err != nil || len(qs.Voters) != 3 || qs.Voters[1].DirectoryID != n2.key.DirectoryID {
		t.Fatalf("quorum state %+v, %v", qs, err)
	}

	// UpdateRaftVoter: a voter's new endpoint is recorded; a replica that
	// is not a voter is VOTER_NOT_FOUND.
	if err := n1.log.UpdateVoter(ctx, stranger, "127.0.0.1:1"); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("updating a non-voter: %v, want VOTER_NOT_FOUND", err)
	}
	moved := "localhost:" + n1.addr[strings.LastIndexByte(n1.addr, ':')+1:]
	if err := n1.log.UpdateVoter(ctx, n1.key, moved); err != nil {
		t.Fatal(err)
	}
	if ms, _ := n1.log.Members(ctx); !slices.ContainsFunc(ms, func(m Member) bool { return m.Key == n1.key && m.Addr == moved }) {
		t.Fatalf("members after the update: %+v", ms)
	}

	// Removing with the wrong directory id is VOTER_NOT_FOUND.
	if err := n1.log.RemoveVoter(ctx, ReplicaKey{ID: 3, DirectoryID: metadata.NewUuid()}); !errors.Is(err, kerr.VoterNotFound) {
		t.Fatalf("removing an unknown replica: %v, want VOTER_NOT_FOUND", err)
	}
	if err := n1.log.RemoveVoter(ctx, n3.key); err != nil {
		t.Fatal(err)
	}
	if v := voterKeys(t, n1.log); v[n3.key] || !v[n2.key] {
		t.Fatalf("voters after removing 3: %v", v)
	} else if _, ok := v[n3.key]; !ok {
		t.Fatal("a removed voter must stay an observer")
	}
	// The removed voter still applies what the quorum commits.
	if _, err := n1.log.Commit(ctx, topicRecords("after-removal", metadata.NewUuid(), 1, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "removed voter to apply", func() bool {
		_, ok := n3.log.Image().Topic("after-removal")
		return ok
	})

	// A leader that removes itself steps down; the two others elect one.
	if err := n1.log.RemoveVoter(ctx, n1.key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new leader after the leader removed itself", n2.log.IsLeader)
	// The old leader, now an observer, still applies the log.
	if _, err := n2.log.Commit(ctx, topicRecords("after-self-removal", metadata.NewUuid(), 1, 2)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the demoted leader to apply", func() bool {
		_, ok := n1.log.Image().Topic("after-self-removal")
		return ok
	})
	if err := n2.log.RemoveVoter(ctx, n2.key); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("removing the only voter: %v, want INVALID_REQUEST", err)
	}
}

// TestDynamicObserverNeverLeadsItself: a node formatted without initial
// controllers starts with an empty raft configuration, so it cannot elect
// itself (the split KIP-853's format rules prevent); it joins as an
// observer once the voter its bootstrap servers name is up.
func TestDynamicObserverNeverLeadsItself(t *testing.T) {
	n1 := newDynamicNode(t, 1)
	ln := listenLoopback(t)
	n1.addr = ln.Addr().String()
	ln.Close()
	n2 := newDynamicNode(t, 2)
	openDynamic(t, n2, nil, []string{n1.addr})
	if v := voterKeys(t, n2.log); len(v) != 0 {
		t.Fatalf("a node without initial controllers has members %v", v)
	}
	openDynamic(t, n1, []Member{{Key: n1.key, Addr: n1.addr, Voter: true}}, []string{n1.addr})
	waitFor(t, 10*time.Second, "observer to join once the voter is up", func() bool {
		if !n1.log.IsLeader() {
			return false
		}
		voter, ok := voterKeys(t, n1.log)[n2.key]
		return ok && !voter
	})
	if n2.log.IsLeader() {
		t.Fatal("the observer leads")
	}
}

// TestLeaderTransfersLeadershipOnClose: with election timeouts far longer
// than the test waits, a new leader can only appear in time if the
// stopping leader hands leadership over.
func TestLeaderTransfersLeadershipOnClose(t *testing.T) {
	c := newRaftTestCluster(t, 3, testRaftConfig())
	leaderID, _ := c.leader()
	// Elect quickly, then make a failure detection take seconds.
	for _, l := range c.openNodes() {
		if err := l.raft.ReloadConfig(raft.ReloadableConfig{
			TrailingLogs: 10240, SnapshotInterval: 120 * time.Second, SnapshotThreshold: 8192,
			HeartbeatTimeout: 5 * time.Second, ElectionTimeout: 5 * time.Second,
		}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	c.stop(leaderID)
	waitFor(t, 3*time.Second, "a new leader right after the leader stopped", func() bool {
		for id, l := range c.openNodes() {
			if id != leaderID && l.IsLeader() {
				return true
			}
		}
		return false
	})
	t.Logf("new leader %v after the old one stopped", time.Since(start))
}

// TestDynamicJoinRefusesAnotherCluster: a node formatted with another
// cluster id is not merged into this quorum.
func TestDynamicJoinRefusesAnotherCluster(t *testing.T) {
	n1 := newDynamicNode(t, 1)
	ln := listenLoopback(t)
	n1.addr = ln.Addr().String()
	ln.Close()
	cfg := testRaftConfig()
	cfg.NodeID, cfg.DirectoryID, cfg.Dir, cfg.Voter = 1, n1.key.DirectoryID, n1.dir, true
	cfg.BindAddr, cfg.AdvertiseAddr, cfg.BootstrapServers = n1.addr, n1.addr, []string{n1.addr}
	cfg.InitialVoters = []Member{{Key: n1.key, Addr: n1.addr, Voter: true}}
	cfg.ClusterID = metadata.NewUuid().String()
	l, err := OpenRaftLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitFor(t, 10*time.Second, "standalone voter to lead", l.IsLeader)
	join := func(clusterID string) joinResponse {
		line, _ := json.Marshal(joinRequest{NodeID: 2, Addr: "127.0.0.1:1", DirectoryID: metadata.NewUuid().String(), ClusterID: clusterID})
		return l.answerJoin(line)
	}
	if resp := join(metadata.NewUuid().String()); !strings.Contains(resp.Error, "INCONSISTENT_CLUSTER_ID") {
		t.Fatalf("join from another cluster: %+v", resp)
	}
	if resp := join(cfg.ClusterID); resp.Error != "" {
		t.Fatalf("join from this cluster: %+v", resp)
	}
}

// TestDynamicVoterEndpointMovesOnRestart: a voter restarted on another
// controller endpoint tells the leader (the join RPC, as KIP-853 voters
// send UpdateRaftVoter at start-up), which records the new address, so raft
// reaches it there and it stays a voter.
func TestDynamicVoterEndpointMovesOnRestart(t *testing.T) {
	nodes := []*dynamicNode{newDynamicNode(t, 1), newDynamicNode(t, 2), newDynamicNode(t, 3)}
	var initial []Member
	var bootstrap []string
	for _, n := range nodes {
		ln := listenLoopback(t)
		n.addr = ln.Addr().String()
		ln.Close()
		initial = append(initial, Member{Key: n.key, Addr: n.addr, Voter: true})
		bootstrap = append(bootstrap, n.addr)
	}
	for _, n := range nodes {
		openDynamic(t, n, initial, bootstrap)
	}
	leader := func() *RaftLog {
		for _, n := range nodes {
			if n.log.IsLeader() {
				return n.log
			}
		}
		return nil
	}
	waitFor(t, 10*time.Second, "a leader", func() bool { return leader() != nil })
	// Restart a follower on a new port.
	var moved *dynamicNode
	for _, n := range nodes {
		if !n.log.IsLeader() {
			moved = n
			break
		}
	}
	if err := moved.log.Close(); err != nil {
		t.Fatal(err)
	}
	moved.addr = ""
	openDynamic(t, moved, initial, bootstrap)
	waitFor(t, 10*time.Second, "the leader to record the moved endpoint", func() bool {
		l := leader()
		if l == nil {
			return false
		}
		ms, err := l.Members(context.Background())
		return err == nil && slices.ContainsFunc(ms, func(m Member) bool {
			return m.Key == moved.key && m.Voter && m.Addr == moved.addr
		})
	})
	// And raft replicates to it there.
	l := leader()
	if _, err := l.Commit(context.Background(), topicRecords("after-move", metadata.NewUuid(), 1, 1)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the moved voter to apply", func() bool {
		_, ok := moved.log.Image().Topic("after-move")
		return ok
	})
}

// TestDynamicAddVoterWaitsForCatchUp: an observer that stopped replicating
// is not made a voter (REQUEST_TIMED_OUT), so the quorum keeps its majority
// and goes on committing.
func TestDynamicAddVoterWaitsForCatchUp(t *testing.T) {
	n1, n2 := newDynamicNode(t, 1), newDynamicNode(t, 2)
	ln := listenLoopback(t)
	n1.addr = ln.Addr().String()
	ln.Close()
	openDynamic(t, n1, []Member{{Key: n1.key, Addr: n1.addr, Voter: true}}, []string{n1.addr})
	waitFor(t, 10*time.Second, "standalone voter to lead", n1.log.IsLeader)
	openDynamic(t, n2, nil, []string{n1.addr})
	waitFor(t, 10*time.Second, "observer to join", func() bool {
		_, ok := voterKeys(t, n1.log)[n2.key]
		return ok
	})
	if err := n2.log.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := n1.log.Commit(ctx, topicRecords("while-away", metadata.NewUuid(), 1, 1)); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	if err := n1.log.AddVoter(short, n2.key, n2.addr); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("adding a stopped observer: %v, want REQUEST_TIMED_OUT", err)
	}
	if voterKeys(t, n1.log)[n2.key] {
		t.Fatal("a stopped observer became a voter")
	}
	commitCtx, cancelCommit := context.WithTimeout(ctx, 5*time.Second)
	defer cancelCommit()
	if _, err := n1.log.Commit(commitCtx, topicRecords("still-committing", metadata.NewUuid(), 1, 1)); err != nil {
		t.Fatalf("the quorum lost its majority: %v", err)
	}
}
