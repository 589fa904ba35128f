package cluster

import (
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumView is DescribeQuorum's answer, reduced to what the tests check.
type quorumView struct {
	leader    int32
	voters    map[int32]string // node id -> directory id
	observers map[int32]string
}

func (q quorumView) String() string {
	ids := func(m map[int32]string) []int32 {
		var out []int32
		for id := range m {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	return fmt.Sprintf("leader %d, voters %v, observers %v", q.leader, ids(q.voters), ids(q.observers))
}

// finalizedKRaftVersion is the kraft.version level ApiVersions v4 reports
// as finalized (0 when absent).
func (c *Cluster) finalizedKRaftVersion() (int16, error) {
	cl, err := c.newClient(c.addrs(c.runningIDs()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 4
	req.ClientSoftwareName, req.ClientSoftwareVersion = "vltava-test", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "kraft.version" {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// describeQuorum asks the cluster (any broker; it forwards to the quorum
// leader) for the metadata quorum.
func (c *Cluster) describeQuorum() (quorumView, error) {
	cl, err := c.newClient(c.addrs(c.runningIDs()))
	if err != nil {
		return quorumView{}, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return quorumView{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return quorumView{}, fmt.Errorf("malformed DescribeQuorum answer")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return quorumView{}, err
	}
	q := quorumView{leader: p.LeaderID, voters: map[int32]string{}, observers: map[int32]string{}}
	dir := func(u [16]byte) string { return base64.RawURLEncoding.EncodeToString(u[:]) }
	for _, v := range p.CurrentVoters {
		q.voters[v.ReplicaID] = dir(v.ReplicaDirectoryID)
	}
	for _, o := range p.Observers {
		q.observers[o.ReplicaID] = dir(o.ReplicaDirectoryID)
	}
	return q, nil
}

// runningIDs are the ids of the running nodes.
func (c *Cluster) runningIDs() []int32 {
	var ids []int32
	for _, n := range c.nodes {
		if n.Running() {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// waitQuorum polls DescribeQuorum until cond holds.
func (c *Cluster) waitQuorum(timeout time.Duration, what string, cond func(quorumView) bool) quorumView {
	c.t.Helper()
	var last quorumView
	waitFor(c.t, timeout, what, func() (bool, string) {
		q, err := c.describeQuorum()
		if err != nil {
			return false, err.Error()
		}
		last = q
		return cond(q), q.String()
	})
	return last
}

func sameIDs(m map[int32]string, ids ...int32) bool {
	if len(m) != len(ids) {
		return false
	}
	for _, id := range ids {
		if _, ok := m[id]; !ok {
			return false
		}
	}
	return true
}

// TestDynamicQuorumAddRemoveVoterUnderLoad forms a three-node cluster the
// Kafka 4 way, with controller.quorum.bootstrap.servers only (KIP-853: the
// storage formatted with --initial-controllers), then, while an acks=all
// franz-go producer writes, starts a fourth controller formatted with
// --no-initial-controllers (it joins as an observer), adds it as a voter
// with `vltava cluster add-controller` and removes it again with `vltava
// cluster remove-controller`. No acknowledged record may be lost, and the
// four nodes must stay one cluster throughout.
func TestDynamicQuorumAddRemoveVoterUnderLoad(t *testing.T) {
	const (
		topic      = "voters"
		partitions = 3
	)
	c := StartCluster(t, WithNodes(4), WithDynamicQuorum(4))
	q := c.waitQuorum(30*time.Second, "three voters with directory ids", func(q quorumView) bool {
		if !sameIDs(q.voters, 1, 2, 3) {
			return false
		}
		for _, d := range q.voters {
			if d == "AAAAAAAAAAAAAAAAAAAAAA" {
				return false
			}
		}
		return true
	})
	logf(t, "formed with bootstrap servers only: %v", q)
	if lvl, err := c.finalizedKRaftVersion(); err != nil || lvl != 1 {
		t.Errorf("finalized kraft.version = %d (%v), want 1 for a dynamic quorum", lvl, err)
	}

	c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	kp := startKgoProducer(t, c, "kgo", topic, partitions, 2*time.Millisecond, 0)
	t.Cleanup(func() { _ = kp.Stop() })
	waitProgress(t, 30*time.Second, "acknowledged writes before the quorum changes", 300, kp)

	n4 := c.Node(4)
	n4.Restart() // its first start: it joins through the bootstrap servers
	q = c.waitQuorum(30*time.Second, "node 4 an observer", func(q quorumView) bool {
		_, ok := q.observers[4]
		return ok && sameIDs(q.voters, 1, 2, 3)
	})
	dir4 := q.observers[4]
	c.WaitFormed()

	out := c.runTool("cluster", "add-controller", "--controller.config", c.WriteConfig(n4),
		"--bootstrap-server", c.BootstrapServers())
	logf(t, "add-controller: %s", out)
	c.waitQuorum(30*time.Second, "node 4 a voter", func(q quorumView) bool {
		return sameIDs(q.voters, 1, 2, 3, 4) && q.voters[4] == dir4
	})
	waitProgress(t, 30*time.Second, "acknowledged writes with four voters", 300, kp)

	// Removing it names its directory id; a wrong one is refused.
	bad := toolOutput(c, "cluster", "remove-controller", "--controller-id", "4",
		"--controller-directory-id", "AAAAAAAAAAAAAAAAAAAAAQ", "--bootstrap-server", c.BootstrapServers())
	if !strings.Contains(bad, "VOTER_NOT_FOUND") {
		t.Errorf("removing with a wrong directory id: %q, want VOTER_NOT_FOUND", bad)
	}
	out = c.runTool("cluster", "remove-controller", "--controller-id", "4",
		"--controller-directory-id", dir4, "--bootstrap-server", c.BootstrapServers())
	logf(t, "remove-controller: %s", out)
	c.waitQuorum(30*time.Second, "node 4 back to an observer", func(q quorumView) bool {
		_, obs := q.observers[4]
		return sameIDs(q.voters, 1, 2, 3) && obs
	})
	waitProgress(t, 30*time.Second, "acknowledged writes after the removal", 300, kp)

	status := c.runTool("cluster", "describe", "--status", "--bootstrap-server", c.BootstrapServers())
	if !strings.Contains(status, "CurrentVoters:") || !strings.Contains(status, `"id":4`) {
		t.Errorf("describe --status:\n%s", status)
	}
	// The same straight from a controller endpoint.
	repl := c.runTool("cluster", "describe", "--replication", "--bootstrap-controller", c.topo.controllerAddr(1))
	if !strings.Contains(repl, dir4) || !strings.Contains(repl, "Observer") || !strings.Contains(repl, "Leader") {
		t.Errorf("describe --replication --bootstrap-controller:\n%s", repl)
	}
	if err := kp.Stop(); err != nil {
		t.Error(err)
	}
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, partitions), kp.Ledger()))
	c.WaitFormed()
}

// toolOutput runs the binary and returns its combined output, failing or
// not.
func toolOutput(c *Cluster, args ...string) string {
	c.t.Helper()
	out, _ := exec.Command(c.bin, args...).CombinedOutput()
	return string(out)
}

// TestDynamicQuorumRefusesUnformattedNode: a node configured with
// controller.quorum.bootstrap.servers but never formatted must not start
// (and above all must not become a one-voter cluster of its own); the
// error names the storage format command to run.
func TestDynamicQuorumRefusesUnformattedNode(t *testing.T) {
	bin, err := binaryPath()
	if err != nil {
		t.Fatal(err)
	}
	topo := newLoopbackTopology(t, 2)
	dir := t.TempDir()
	args := []string{"server",
		"--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
		"--override", "node.id=2",
		"--override", "process.roles=broker,controller",
		"--override", "listeners=PLAINTEXT://" + topo.brokerAddr(2) + ",CONTROLLER://" + topo.controllerAddr(2),
		"--override", "advertised.listeners=PLAINTEXT://" + topo.brokerAddr(2),
		"--override", "controller.listener.names=CONTROLLER",
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"--override", "controller.quorum.bootstrap.servers=" + topo.controllerAddr(1),
		"--override", "log.dirs=" + dir,
		"--override", "admin.listeners=",
	}
	cmd := exec.Command(bin, args...)
	done := make(chan struct{})
	var out []byte
	var runErr error
	go func() {
		out, runErr = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(nodeStartTimeout):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("an unformatted node kept running:\n%s", tailLines(string(out), 30))
	}
	if runErr == nil || !strings.Contains(string(out), "vltava storage format") || !strings.Contains(string(out), "--no-initial-controllers") {
		t.Fatalf("exit %v; want a refusal naming `vltava storage format`:\n%s", runErr, tailLines(string(out), 30))
	}
}

// TestCleanStopOfQuorumLeaderTransfersLeadership stops the metadata quorum
// leader with SIGTERM, with election timeouts of 5 s: the remaining voters
// have a new leader well before a follower could even notice the silence,
// because the stopping leader hands leadership over first.
func TestCleanStopOfQuorumLeaderTransfersLeadership(t *testing.T) {
	c := StartCluster(t, WithOverride("controller.quorum.election.timeout.ms", "5000"))
	q := c.waitQuorum(60*time.Second, "a quorum leader", func(q quorumView) bool { return q.leader > 0 })
	old := q.leader
	if err := c.Node(old).Stop(30 * time.Second); err != nil {
		t.Fatalf("node %d after SIGTERM: %v", old, err)
	}
	stopped := time.Now()
	q = c.waitQuorum(4*time.Second, "a new quorum leader right after the old one stopped", func(q quorumView) bool {
		return q.leader > 0 && q.leader != old
	})
	logf(t, "quorum leader %d stopped; %d leads %v later", old, q.leader, time.Since(stopped).Round(time.Millisecond))
}

// TestDynamicQuorumBrokerOnlyObserver: a broker-only node of a dynamic
// quorum, formatted with --cluster-id alone, finds the leader through
// controller.quorum.bootstrap.servers, replicates the metadata log as an
// observer and serves as a broker.
func TestDynamicQuorumBrokerOnlyObserver(t *testing.T) {
	c := StartCluster(t, WithNodes(4), WithBrokerOnly(4), WithDynamicQuorum())
	q := c.waitQuorum(30*time.Second, "node 4 an observer of three voters", func(q quorumView) bool {
		_, ok := q.observers[4]
		return ok && sameIDs(q.voters, 1, 2, 3)
	})
	logf(t, "%v", q)
	// storage info shows what format wrote.
	args := []string{"storage", "info"}
	for _, p := range c.config(c.Node(1)) {
		args = append(args, "--override", p[0]+"="+p[1])
	}
	if info := c.runTool(args...); !strings.Contains(info, "directory.id=") || !strings.Contains(info, "initial controllers: 1@") {
		t.Errorf("storage info of node 1:\n%s", info)
	}
	// UpdateRaftVoter through a broker: a voter's endpoint (here its
	// current one) is accepted; an unknown replica is VOTER_NOT_FOUND.
	dir1, err := base64.RawURLEncoding.DecodeString(q.voters[1])
	if err != nil {
		t.Fatal(err)
	}
	update := func(dir []byte) int16 {
		req := kmsg.NewPtrUpdateRaftVoterRequest()
		req.VoterID = 1
		copy(req.VoterDirectoryID[:], dir)
		host, port, _ := strings.Cut(c.topo.controllerAddr(1), ":")
		p, _ := strconv.Atoi(port)
		l := kmsg.NewUpdateRaftVoterRequestListener()
		l.Name, l.Host, l.Port = "CONTROLLER", host, uint16(p)
		req.Listeners = append(req.Listeners, l)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := req.RequestWith(ctx, c.ClientOf([]int32{4}))
		if err != nil {
			t.Fatal(err)
		}
		return resp.ErrorCode
	}
	if code := update(dir1); code != 0 {
		t.Errorf("UpdateRaftVoter for voter 1: %v", kerr.ErrorForCode(code))
	}
	if code := update(make([]byte, 16)); code != kerr.VoterNotFound.Code {
		t.Errorf("UpdateRaftVoter for an unknown replica: %v, want VOTER_NOT_FOUND", kerr.ErrorForCode(code))
	}
	view := c.createTopic("on-four", 4, 4, nil)
	for _, p := range view.Partitions {
		if !slices.Contains(p.Replicas, 4) {
			t.Fatalf("partition %+v does not use broker 4", p)
		}
	}
}
