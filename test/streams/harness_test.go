// Package streamstest runs the streams package's examples as processes
// against a Vltava broker started from the built binary on loopback.
package streamstest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vltava-streams-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var builds sync.Map

// build compiles pkg (relative to the module root) once per test binary;
// $VLTAVA_BIN overrides the broker.
func build(t *testing.T, pkg string) string {
	t.Helper()
	if pkg == "./cmd/vltava" {
		if bin := os.Getenv("VLTAVA_BIN"); bin != "" {
			abs, _ := filepath.Abs(bin)
			return abs
		}
	}
	if p, ok := builds.Load(pkg); ok {
		return p.(string)
	}
	out := filepath.Join(binDir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join("..", "..")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	builds.Store(pkg, out)
	return out
}

// proc is a child process whose output is kept for failure reports.
type proc struct {
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(bin, args...), out: &syncBuffer{}}
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = p.cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = p.cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, p.out.String())
		}
	})
	return p
}

// startBroker starts one Vltava broker and returns its address.
func startBroker(t *testing.T) string {
	t.Helper()
	bin := build(t, "./cmd/vltava")
	addr := freeport.Addr(t)
	start(t, "broker", bin, "server",
		"--override", "listeners=PLAINTEXT://"+addr,
		"--override", "log.dirs="+t.TempDir(),
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=")
	poll.Until(t, 60*time.Second, "broker answering", func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err != nil {
			return err
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	return addr
}

// cluster is a 3-node Vltava cluster (every node broker and controller)
// on loopback; a node can be SIGKILLed and restarted on its data.
type cluster struct {
	t     *testing.T
	bin   string
	nodes []*clusterNode
}

type clusterNode struct {
	id                 int
	broker, controller string
	dir                string
	p                  *proc
	args               []string
	restarts           int
}

// startCluster starts n combined broker/controller nodes and waits until
// every node sees all n brokers.
func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	c := &cluster{t: t, bin: build(t, "./cmd/vltava")}
	var voters []string
	for i := 1; i <= n; i++ {
		nd := &clusterNode{id: i, broker: freeport.Addr(t), controller: freeport.Addr(t), dir: t.TempDir()}
		c.nodes = append(c.nodes, nd)
		voters = append(voters, fmt.Sprintf("%d@%s", i, nd.controller))
	}
	for _, nd := range c.nodes {
		nd.args = []string{"server",
			"--override", fmt.Sprintf("node.id=%d", nd.id),
			"--override", "process.roles=broker,controller",
			"--override", "listeners=PLAINTEXT://" + nd.broker + ",CONTROLLER://" + nd.controller,
			"--override", "advertised.listeners=PLAINTEXT://" + nd.broker,
			"--override", "controller.listener.names=CONTROLLER",
			"--override", "inter.broker.listener.name=PLAINTEXT",
			"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"--override", "controller.quorum.voters=" + strings.Join(voters, ","),
			"--override", "log.dirs=" + nd.dir,
			"--override", "admin.listeners=",
			"--override", "rest.listeners=", "--override", "console.listeners=",
			// Failures detected in seconds, as the cluster suite does.
			"--override", "broker.session.timeout.ms=3000",
			"--override", "broker.heartbeat.interval.ms=500",
			"--override", "replica.lag.time.max.ms=3000",
			"--override", "group.initial.rebalance.delay.ms=0",
			"--override", "offsets.topic.num.partitions=6",
			"--override", "transaction.state.log.num.partitions=6",
			"--override", fmt.Sprintf("offsets.topic.replication.factor=%d", n),
			"--override", fmt.Sprintf("transaction.state.log.replication.factor=%d", n),
			"--override", fmt.Sprintf("transaction.state.log.min.isr=%d", min(2, n)),
			"--override", "auto.create.topics.enable=false",
		}
		nd.p = start(t, fmt.Sprintf("node-%d", nd.id), c.bin, nd.args...)
	}
	c.waitFormed()
	return c
}

// args of a node, kept for restarts.
func (nd *clusterNode) argv() []string { return nd.args }

func (c *cluster) bootstrap() string {
	var out []string
	for _, nd := range c.nodes {
		out = append(out, nd.broker)
	}
	return strings.Join(out, ",")
}

func (c *cluster) seeds() []string { return strings.Split(c.bootstrap(), ",") }

// waitFormed waits until every running node's metadata lists every node.
func (c *cluster) waitFormed() {
	c.t.Helper()
	for _, nd := range c.nodes {
		poll.Until(c.t, 2*time.Minute, fmt.Sprintf("node %d sees the cluster", nd.id), func() error {
			cl, err := kgo.NewClient(kgo.SeedBrokers(nd.broker), kgo.RequestRetries(0))
			if err != nil {
				return err
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			if err != nil {
				return err
			}
			if len(resp.Brokers) != len(c.nodes) {
				return fmt.Errorf("%d of %d brokers", len(resp.Brokers), len(c.nodes))
			}
			return nil
		})
	}
}

// kill SIGKILLs node id and waits for it to exit.
func (c *cluster) kill(id int) {
	nd := c.nodes[id-1]
	_ = nd.p.cmd.Process.Signal(syscall.SIGKILL)
	_ = nd.p.cmd.Wait()
}

// restart starts node id again on its data and waits for the cluster.
func (c *cluster) restart(id int) {
	nd := c.nodes[id-1]
	nd.restarts++
	nd.p = start(c.t, fmt.Sprintf("node-%d-restart-%d", nd.id, nd.restarts), c.bin, nd.argv()...)
	c.waitFormed()
}
