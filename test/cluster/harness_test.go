package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	testpoll "github.com/vltava/vltava/internal/testing/poll"
)

const (
	// nodeStartTimeout bounds exec → answering ApiVersions. A combined
	// node cannot open its Kafka listeners before the Raft quorum has a
	// leader, so this covers an election as well; generous for 2 cores.
	nodeStartTimeout = 60 * time.Second
	// formTimeout bounds how long a freshly started cluster may take until
	// every node lists every broker.
	formTimeout = 30 * time.Second
	// maxCapturedOutput caps the output kept in memory per node; older
	// output is dropped (the tail is what explains a failure).
	maxCapturedOutput = 8 << 20
	// logTailLines is how much of each node's output a failed test prints.
	logTailLines = 150
)

// baseOverrides are the test-speed settings every cluster gets unless a
// test overrides them: failures are detected in seconds instead of Kafka's
// production defaults (9 s session, 30 s replica lag).
var baseOverrides = [][2]string{
	{"broker.session.timeout.ms", "3000"},
	{"broker.heartbeat.interval.ms", "500"},
	{"replica.lag.time.max.ms", "3000"},
	{"group.initial.rebalance.delay.ms", "0"},
	{"offsets.topic.replication.factor", "3"},
	// Fewer __consumer_offsets partitions keep start-up and failover
	// cheap on two cores; the coordinator logic is the same.
	{"offsets.topic.num.partitions", "6"},
	{"auto.create.topics.enable", "false"},
}

// binaryPath builds the broker once per test binary, or uses $VLTAVA_BIN.
var binaryPath = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("VLTAVA_BIN"); bin != "" {
		return filepath.Abs(bin)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("module root not found from test directory: %w", err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go tool not in PATH: %w", err)
	}
	// A name without "vltava": other people's `pkill vltava` on a shared
	// machine must not take the suite's nodes down with theirs.
	out := filepath.Join(buildDir, "vcnode")
	cmd := exec.Command(gobin, "build", "-o", out, "./cmd/vltava")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/vltava: %w\n%s", err, msg)
	}
	return out, nil
})

// buildDir holds the binary built for this test binary; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vcluster-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	// The binary is rebuilt from source on every run, which the test cache
	// cannot see; touching a fresh path makes the run uncacheable.
	_, _ = os.Stat(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// topology says where each node listens and how the test reaches it:
// loopback ports on this host, or addresses inside network namespaces.
type topology interface {
	// brokerAddr is node id's Kafka listener (PLAINTEXT), host:port.
	brokerAddr(id int32) string
	// controllerAddr is node id's Raft listener (CONTROLLER), host:port.
	controllerAddr(id int32) string
	// command wraps the node's command line (for instance in ip netns exec).
	command(id int32, bin string, args []string) *exec.Cmd
	// dial is how clients connect; nil means the default dialer.
	dial() func(ctx context.Context, network, host string) (net.Conn, error)
	// describe names the topology in logs.
	describe() string
}

// loopbackTopology puts every node on 127.0.0.1 with two ports of its own.
type loopbackTopology struct {
	broker, controller map[int32]string
}

func newLoopbackTopology(t testing.TB, n int) *loopbackTopology {
	t.Helper()
	lt := &loopbackTopology{broker: map[int32]string{}, controller: map[int32]string{}}
	// Ports outside the ephemeral range: a broker-only node's raft
	// transport binds port 0, and could otherwise take a port chosen for
	// a node that has not bound it yet.
	for id := int32(1); id <= int32(n); id++ {
		lt.broker[id], lt.controller[id] = freeport.Addr(t), freeport.Addr(t)
	}
	return lt
}

func (lt *loopbackTopology) brokerAddr(id int32) string     { return lt.broker[id] }
func (lt *loopbackTopology) controllerAddr(id int32) string { return lt.controller[id] }
func (lt *loopbackTopology) command(_ int32, bin string, args []string) *exec.Cmd {
	return exec.Command(bin, args...)
}
func (lt *loopbackTopology) dial() func(context.Context, string, string) (net.Conn, error) {
	return nil
}
func (lt *loopbackTopology) describe() string { return "loopback 127.0.0.1" }

// clusterOptions collects StartCluster options.
type clusterOptions struct {
	nodes      int
	overrides  [][2]string
	topo       topology
	brokerOnly []int32
	// logDirs is the number of log dirs per node (Node.LogDirs).
	logDirs int
	// faultTrigger sets the storage fault test hook (Node.FaultTriggerFile).
	faultTrigger bool
	// env is added to every node's environment (WithEnv).
	env []string
	// dynamic forms the quorum the KIP-853 way (WithDynamicQuorum); the
	// nodes in later are formatted to join later and not started.
	dynamic bool
	later   []int32
	// clientOpts are added to every client the harness makes (the
	// security of WithSecureListeners).
	clientOpts []kgo.Opt
}

// Option configures StartCluster.
type Option func(*clusterOptions)

// WithNodes sets the number of nodes (default 3), all combined
// broker+controller voters.
func WithNodes(n int) Option { return func(o *clusterOptions) { o.nodes = n } }

// WithBrokerOnly makes nodes ids brokers only (process.roles=broker): they
// are not quorum voters and replicate the metadata log as observers.
func WithBrokerOnly(ids ...int32) Option {
	return func(o *clusterOptions) { o.brokerOnly = append(o.brokerOnly, ids...) }
}

// WithOverride sets a broker config on every node (later ones win).
func WithOverride(key, value string) Option {
	return func(o *clusterOptions) { o.overrides = append(o.overrides, [2]string{key, value}) }
}

// WithLogDirs gives every node n log dirs (JBOD), see Node.LogDirs.
func WithLogDirs(n int) Option { return func(o *clusterOptions) { o.logDirs = n } }

// WithFaultTrigger enables the storage fault-injection test hook on every
// node: I/O under the dirs listed in Node.FaultTriggerFile fails.
func WithFaultTrigger() Option { return func(o *clusterOptions) { o.faultTrigger = true } }

// WithEnv sets an environment variable of every node (a test hook such as
// broker.DropAckedWritesEnv).
func WithEnv(key, value string) Option {
	return func(o *clusterOptions) { o.env = append(o.env, key+"="+value) }
}

// WithDynamicQuorum configures every node with
// controller.quorum.bootstrap.servers (the initial controllers' endpoints)
// instead of controller.quorum.voters, and formats their storage before the
// first start, as Kafka 4 requires: the nodes not in later with
// --initial-controllers (all of them, with their directory ids), the nodes
// in later with --no-initial-controllers. Nodes in later are not started by
// StartCluster; Node.Restart starts them, and they join as observers.
func WithDynamicQuorum(later ...int32) Option {
	return func(o *clusterOptions) { o.dynamic, o.later = true, append(o.later, later...) }
}

// withTopology replaces the loopback topology (the netns test uses it).
func withTopology(tp topology) Option { return func(o *clusterOptions) { o.topo = tp } }

// Cluster is a set of Vltava nodes owned by one test. Its methods are safe
// for concurrent use; node processes are changed only through Node.
type Cluster struct {
	t     testing.TB
	bin   string
	topo  topology
	opts  clusterOptions
	nodes []*Node
}

// Node is one vltava process (node.id = ID) with its data dir, kept across
// restarts. Kill, Restart, Pause and Resume belong to the owning test;
// the rest may be called from any goroutine.
type Node struct {
	ID      int32
	c       *Cluster
	dataDir string
	output  *capturedOutput
	// admin is the node's admin listener (/metrics), metrics_test.go.
	admin string

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{} // closed once cmd.Wait returned
		paused bool          // SIGSTOP sent and no SIGCONT since
		killed bool          // the harness sent SIGKILL or SIGTERM to the current process
		// exitExpected is set by ExpectExit: the test makes the process
		// stop itself.
		exitExpected bool
		err          error // cmd.Wait's result, valid once exited is closed
		// unexpected describes exits the harness did not cause (a crash,
		// or a signal from outside the test), across restarts.
		unexpected []string
	}
}

// StartCluster starts every node at once (a combined node needs a quorum
// before it serves), waits until each answers ApiVersions and lists every
// broker in its Metadata, and registers a cleanup that kills them and, if
// the test failed, prints and saves their output.
func StartCluster(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	bin, err := binaryPath()
	if err != nil {
		t.Fatalf("building vltava: %v", err)
	}
	o := clusterOptions{nodes: 3}
	for _, opt := range opts {
		opt(&o)
	}
	if o.topo == nil {
		o.topo = newLoopbackTopology(t, o.nodes)
	}
	c := &Cluster{t: t, bin: bin, topo: o.topo, opts: o}
	root := t.TempDir()
	for id := int32(1); id <= int32(o.nodes); id++ {
		c.nodes = append(c.nodes, &Node{ID: id, c: c, dataDir: filepath.Join(root, fmt.Sprintf("node-%d", id)), output: &capturedOutput{},
			admin: freeport.Addr(t)})
	}
	t.Cleanup(c.cleanup)
	t.Logf("starting %d-node cluster (%s)", o.nodes, o.topo.describe())

	if o.dynamic {
		c.formatDynamic()
	}
	start := time.Now()
	errs := make([]error, len(c.nodes))
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		if slices.Contains(o.later, n.ID) {
			continue
		}
		if err := n.exec(); err != nil {
			t.Fatalf("node %d: %v", n.ID, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.waitReady()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("cluster did not start: %v", err)
	}
	c.WaitFormed()
	t.Logf("cluster formed in %v: brokers %s", time.Since(start).Round(time.Millisecond), c.BootstrapServers())
	return c
}

// WaitFormed waits until every running node lists every running node as
// a live broker in its Metadata response.
func (c *Cluster) WaitFormed() {
	c.t.Helper()
	var want []int32
	for _, n := range c.nodes {
		if n.Running() {
			want = append(want, n.ID)
		}
	}
	waitFor(c.t, formTimeout, fmt.Sprintf("every node lists brokers %v", want), func() (bool, string) {
		var status []string
		ok := true
		for _, id := range want {
			got, err := c.brokersSeenBy(id)
			if err != nil {
				ok = false
				status = append(status, fmt.Sprintf("node %d: %v", id, err))
				continue
			}
			if !slices.Equal(got, want) {
				ok = false
			}
			status = append(status, fmt.Sprintf("node %d lists %v", id, got))
		}
		return ok, strings.Join(status, "; ")
	})
}

// brokersSeenBy asks node id alone for Metadata and returns the broker ids
// it lists, sorted.
func (c *Cluster) brokersSeenBy(id int32) ([]int32, error) {
	cl, err := c.newClient([]string{c.topo.brokerAddr(id)})
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// Node returns node id (1-based).
func (c *Cluster) Node(id int32) *Node {
	c.t.Helper()
	if id < 1 || int(id) > len(c.nodes) {
		c.t.Fatalf("no node %d in a %d-node cluster", id, len(c.nodes))
	}
	return c.nodes[id-1]
}

// Nodes returns every node, in id order.
func (c *Cluster) Nodes() []*Node { return slices.Clone(c.nodes) }

// BootstrapServers is every node's Kafka address, comma-separated.
func (c *Cluster) BootstrapServers() string { return strings.Join(c.addrs(nil), ",") }

// addrs returns the Kafka addresses of ids (every node if ids is empty).
func (c *Cluster) addrs(ids []int32) []string {
	var out []string
	for _, n := range c.nodes {
		if len(ids) == 0 || slices.Contains(ids, n.ID) {
			out = append(out, c.topo.brokerAddr(n.ID))
		}
	}
	return out
}

// newClient is a kgo client seeded with addrs, reaching them through the
// topology's dialer, with metadata refreshed quickly so that leadership
// changes are seen within a second.
func (c *Cluster) newClient(addrs []string, opts ...kgo.Opt) (*kgo.Client, error) {
	return c.newClientAs(nil, addrs, opts...)
}

// newClientAs is newClient connecting with security (TLS and SASL options,
// as WithSecureListeners' harness options) instead of the cluster's own
// client options (the admin user's), unless security is empty. SASL
// options add up in franz-go, so the two cannot be combined.
func (c *Cluster) newClientAs(security []kgo.Opt, addrs []string, opts ...kgo.Opt) (*kgo.Client, error) {
	if len(security) == 0 {
		security = c.opts.clientOpts
	}
	base := []kgo.Opt{
		kgo.SeedBrokers(addrs...),
		kgo.MetadataMinAge(200 * time.Millisecond),
		kgo.MetadataMaxAge(2 * time.Second),
		kgo.DialTimeout(2 * time.Second),
	}
	if d := c.topo.dial(); d != nil {
		base = append(base, kgo.Dialer(d))
	}
	base = append(base, security...)
	return kgo.NewClient(append(base, opts...)...)
}

// Client returns a kgo client seeded with every node, closed at cleanup.
func (c *Cluster) Client(opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	return c.ClientOf(nil, opts...)
}

// ClientOf returns a kgo client seeded with nodes ids only (every node if
// ids is empty), closed at cleanup.
func (c *Cluster) ClientOf(ids []int32, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	cl, err := c.newClient(c.addrs(ids), opts...)
	if err != nil {
		c.t.Fatalf("creating client: %v", err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// Admin returns a kadm client over every node, closed at cleanup.
func (c *Cluster) Admin() *kadm.Client {
	c.t.Helper()
	return kadm.NewClient(c.Client(kgo.RequestRetries(2)))
}

// AdminOf returns a kadm client seeded with nodes ids only.
func (c *Cluster) AdminOf(ids ...int32) *kadm.Client {
	c.t.Helper()
	return kadm.NewClient(c.ClientOf(ids, kgo.RequestRetries(2)))
}

// args is node n's command line: the combined-mode configuration
// (broker-only nodes: no CONTROLLER listener, not a voter) with this
// cluster's overrides appended.
func (c *Cluster) args(n *Node) []string {
	args := []string{"server"}
	for _, p := range c.config(n) {
		args = append(args, "--override", p[0]+"="+p[1])
	}
	return args
}

// config is node n's configuration as key/value pairs.
func (c *Cluster) config(n *Node) [][2]string {
	var voters, bootstrap []string
	for _, m := range c.nodes {
		if !slices.Contains(c.opts.brokerOnly, m.ID) {
			voters = append(voters, fmt.Sprintf("%d@%s", m.ID, c.topo.controllerAddr(m.ID)))
			if !slices.Contains(c.opts.later, m.ID) {
				bootstrap = append(bootstrap, c.topo.controllerAddr(m.ID))
			}
		}
	}
	quorumKey, quorumValue := "controller.quorum.voters", strings.Join(voters, ",")
	if c.opts.dynamic {
		quorumKey, quorumValue = "controller.quorum.bootstrap.servers", strings.Join(bootstrap, ",")
	}
	broker := c.topo.brokerAddr(n.ID)
	roles, listeners := "broker,controller", "PLAINTEXT://"+broker+",CONTROLLER://"+c.topo.controllerAddr(n.ID)
	if slices.Contains(c.opts.brokerOnly, n.ID) {
		roles, listeners = "broker", "PLAINTEXT://"+broker
	}
	kv := [][2]string{
		{"node.id", strconv.Itoa(int(n.ID))},
		{"process.roles", roles},
		{"listeners", listeners},
		{"advertised.listeners", "PLAINTEXT://" + broker},
		{"controller.listener.names", "CONTROLLER"},
		{"inter.broker.listener.name", "PLAINTEXT"},
		{"listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
		{quorumKey, quorumValue},
		{"log.dirs", strings.Join(n.LogDirs(), ",")},
		{"admin.listeners", "http://" + n.admin},
		{"rest.listeners", ""},
		{"schema.registry.listeners", ""},
		{"console.listeners", ""},
	}
	kv = append(kv, baseOverrides...)
	return append(kv, c.opts.overrides...)
}

// formatDynamic runs `vltava storage format` on every node of a dynamic
// quorum (WithDynamicQuorum), as an operator would before the first start.
func (c *Cluster) formatDynamic() {
	c.t.Helper()
	clusterID := c.runTool("storage", "random-uuid")
	var initial []string
	for _, n := range c.nodes {
		if !slices.Contains(c.opts.later, n.ID) && !slices.Contains(c.opts.brokerOnly, n.ID) {
			initial = append(initial, fmt.Sprintf("%d@%s:%s", n.ID, c.topo.controllerAddr(n.ID), c.runTool("storage", "random-uuid")))
		}
	}
	for _, n := range c.nodes {
		args := []string{"storage", "format", "--cluster-id", clusterID}
		switch {
		case slices.Contains(c.opts.brokerOnly, n.ID):
		case slices.Contains(c.opts.later, n.ID):
			args = append(args, "--no-initial-controllers")
		default:
			args = append(args, "--initial-controllers", strings.Join(initial, ","))
		}
		for _, p := range c.config(n) {
			args = append(args, "--override", p[0]+"="+p[1])
		}
		n.output.note("=== harness: " + strings.Join(args, " ") + " ===")
		n.output.note(c.runTool(args...))
	}
}

// runTool runs the vltava binary with args and returns its trimmed
// standard output; a failure fails the test.
func (c *Cluster) runTool(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		c.t.Fatalf("vltava %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// WriteConfig writes node n's configuration as a properties file (for the
// commands that read a node's config) and returns its path.
func (c *Cluster) WriteConfig(n *Node) string {
	c.t.Helper()
	var b strings.Builder
	for _, p := range c.config(n) {
		fmt.Fprintf(&b, "%s=%s\n", p[0], p[1])
	}
	path := filepath.Join(c.t.TempDir(), fmt.Sprintf("node-%d.properties", n.ID))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
	return path
}

// cleanup kills every node (data dirs are discarded, so a clean shutdown
// would only cost time) and reports their output if the test failed.
func (c *Cluster) cleanup() {
	for _, n := range c.nodes {
		n.kill()
	}
	for _, n := range c.nodes {
		n.mu.Lock()
		unexpected := n.mu.unexpected
		n.mu.Unlock()
		for _, u := range unexpected {
			c.t.Errorf("node %d %s", n.ID, u)
		}
	}
	if !c.t.Failed() && os.Getenv("VLTAVA_CLUSTER_VERBOSE") == "" {
		return
	}
	dir := os.Getenv("VLTAVA_CLUSTER_LOGS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "vltava-cluster-logs")
	}
	dir = filepath.Join(dir, strings.ReplaceAll(c.t.Name(), "/", "_")+"-"+time.Now().Format("150405"))
	saved := os.MkdirAll(dir, 0o755) == nil
	for _, n := range c.nodes {
		out := n.output.String()
		where := ""
		if saved {
			path := filepath.Join(dir, fmt.Sprintf("node-%d.log", n.ID))
			if os.WriteFile(path, []byte(out), 0o644) == nil {
				where = " (full output: " + path + ")"
			}
		}
		c.t.Logf("node %d output, last %d lines%s:\n%s", n.ID, logTailLines, where, tailLines(out, logTailLines))
	}
}

// DataDir is the node's log.dirs, kept across restarts.
func (n *Node) DataDir() string { return n.dataDir }

// LogDirs are the node's log dirs: its data dir, then one sibling per
// extra dir of WithLogDirs. The first also holds the metadata log.
func (n *Node) LogDirs() []string {
	dirs := []string{n.dataDir}
	for i := 2; i <= n.c.opts.logDirs; i++ {
		dirs = append(dirs, fmt.Sprintf("%s-dir%d", n.dataDir, i))
	}
	return dirs
}

// ExpectExit tells the harness that the current process will stop on its
// own (the test made it), so its exit is not reported as a failure, and
// returns a channel closed once it has exited.
func (n *Node) ExpectExit() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.exitExpected = true
	return n.mu.exited
}

// FaultTriggerFile is the node's storage fault trigger (WithFaultTrigger):
// each line names a directory whose I/O fails from then on.
func (n *Node) FaultTriggerFile() string { return n.dataDir + "-faults" }

// Addr is the node's Kafka address.
func (n *Node) Addr() string { return n.c.topo.brokerAddr(n.ID) }

// Output is everything the node wrote so far, across restarts.
func (n *Node) Output() string { return n.output.String() }

// Running reports whether the node's process is alive (paused counts).
func (n *Node) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked()
}

func (n *Node) runningLocked() bool {
	if n.mu.cmd == nil {
		return false
	}
	select {
	case <-n.mu.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL (a crash: no controlled shutdown) and waits for exit.
func (n *Node) Kill() {
	n.c.t.Helper()
	if !n.Running() {
		n.c.t.Fatalf("Kill: node %d is not running", n.ID)
	}
	n.kill()
	logf(n.c.t, "node %d killed (SIGKILL)", n.ID)
}

func (n *Node) kill() {
	n.mu.Lock()
	cmd, exited, running := n.mu.cmd, n.mu.exited, n.runningLocked()
	n.mu.paused = false
	n.mu.killed = true
	n.mu.Unlock()
	if !running {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	n.output.note("=== harness: SIGKILL ===")
}

// Stop sends SIGTERM (a controlled shutdown) and waits up to timeout for
// the process to exit; it returns the exit error (nil for status 0). A
// node still running at the timeout is killed and reported.
func (n *Node) Stop(timeout time.Duration) error {
	n.c.t.Helper()
	n.mu.Lock()
	cmd, exited, running := n.mu.cmd, n.mu.exited, n.runningLocked()
	n.mu.killed = true // an exit the harness asked for
	n.mu.Unlock()
	if !running {
		n.c.t.Fatalf("Stop: node %d is not running", n.ID)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	n.output.note("=== harness: SIGTERM ===")
	select {
	case <-exited:
	case <-time.After(timeout):
		n.kill()
		return fmt.Errorf("node %d did not exit within %v of SIGTERM; killed", n.ID, timeout)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.err
}

// Restart starts a killed node again with the same ports and data dir and
// waits until it answers ApiVersions.
func (n *Node) Restart() {
	n.c.t.Helper()
	if n.Running() {
		n.c.t.Fatalf("Restart: node %d is still running", n.ID)
	}
	n.output.note("=== harness: restart ===")
	start := time.Now()
	if err := n.exec(); err != nil {
		n.c.t.Fatalf("restarting node %d: %v", n.ID, err)
	}
	if err := n.waitReady(); err != nil {
		n.c.t.Fatalf("restarting node %d: %v", n.ID, err)
	}
	logf(n.c.t, "node %d restarted, serving after %v", n.ID, time.Since(start).Round(time.Millisecond))
}

// Pause stops the process with SIGSTOP: it keeps its sockets but answers
// nothing, like a long GC pause or a hung disk.
func (n *Node) Pause() {
	n.c.t.Helper()
	n.signal(syscall.SIGSTOP, true)
	logf(n.c.t, "node %d paused (SIGSTOP)", n.ID)
}

// Resume continues a paused process with SIGCONT.
func (n *Node) Resume() {
	n.c.t.Helper()
	n.signal(syscall.SIGCONT, false)
	logf(n.c.t, "node %d resumed (SIGCONT)", n.ID)
}

func (n *Node) signal(sig syscall.Signal, paused bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.runningLocked() {
		n.c.t.Fatalf("signal %v: node %d is not running", sig, n.ID)
	}
	if err := n.mu.cmd.Process.Signal(sig); err != nil {
		n.c.t.Fatalf("signal %v to node %d: %v", sig, n.ID, err)
	}
	n.mu.paused = paused
	n.output.note(fmt.Sprintf("=== harness: %v ===", sig))
}

// exec starts the process without waiting for readiness.
func (n *Node) exec() error {
	cmd := n.c.topo.command(n.ID, n.c.bin, n.c.args(n))
	if n.c.opts.faultTrigger {
		cmd.Env = append(os.Environ(), "VLTAVA_TEST_FAULT_TRIGGER_FILE="+n.FaultTriggerFile())
	}
	if len(n.c.opts.env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, n.c.opts.env...)
	}
	cmd.Stdout = n.output
	cmd.Stderr = n.output
	cmd.SysProcAttr = nodeProcAttr()
	n.output.note("=== harness: exec " + strings.Join(cmd.Args, " ") + " ===")
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	n.mu.Lock()
	n.mu.cmd, n.mu.exited, n.mu.paused, n.mu.killed, n.mu.exitExpected = cmd, exited, false, false, false
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.mu.err = err
		if !n.mu.killed && !n.mu.exitExpected {
			why := fmt.Sprintf("%s: exited on its own (%v)", time.Now().Format("15:04:05.000"), err)
			if sig := lastShutdownSignal(n.output.String()); sig != "" {
				why += ", after a " + sig + " the test did not send"
			}
			n.mu.unexpected = append(n.mu.unexpected, why)
		}
		n.mu.Unlock()
		n.output.note(fmt.Sprintf("=== harness: process exited: %v ===", err))
		close(exited)
	}()
	return nil
}

// waitReady polls until the node answers ApiVersions, its process exits,
// or nodeStartTimeout passes.
func (n *Node) waitReady() error {
	n.mu.Lock()
	exited := n.mu.exited
	n.mu.Unlock()
	deadline := time.Now().Add(nodeStartTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("node %d exited before it was ready (last probe: %v); output tail:\n%s",
				n.ID, last, tailLines(n.output.String(), 30))
		default:
		}
		if last = n.probe(); last == nil {
			return nil
		}
		select {
		case <-exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("node %d not ready within %v: %v", n.ID, nodeStartTimeout, last)
}

// probe performs one ApiVersions round trip with the node alone.
func (n *Node) probe() error {
	cl, err := n.c.newClient([]string{n.Addr()}, kgo.RequestRetries(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		return fmt.Errorf("ApiVersions error code %d, %d APIs", resp.ErrorCode, len(resp.ApiKeys))
	}
	return nil
}

// shutdownSignal matches the node's log line for a signal-initiated
// shutdown.
var shutdownSignal = regexp.MustCompile(`msg="shutting down" signal=(\w+)`)

// lastShutdownSignal returns the signal named by the last such line.
func lastShutdownSignal(out string) string {
	m := shutdownSignal.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		return ""
	}
	return "SIG" + strings.ToUpper(m[len(m)-1][1])
}

// capturedOutput collects a process's stdout and stderr, safe for exec's
// concurrent copy goroutines; it keeps the last maxCapturedOutput bytes.
type capturedOutput struct {
	mu struct {
		sync.Mutex
		buf bytes.Buffer
	}
}

func (c *capturedOutput) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.buf.Write(p)
	if over := c.mu.buf.Len() - maxCapturedOutput; over > 0 {
		c.mu.buf.Next(over)
	}
	return len(p), nil
}

func (c *capturedOutput) note(line string) {
	_, _ = c.Write([]byte(time.Now().Format("15:04:05.000") + " " + line + "\n"))
}

func (c *capturedOutput) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.buf.String()
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitFor polls cond every 100 ms until it reports true or timeout passes;
// then the test fails with what and cond's last status.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	if err := poll(timeout, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// poll is waitFor without the test: it returns an error carrying cond's
// last status if cond is not true within timeout.
func poll(timeout time.Duration, cond func() (bool, string)) error {
	return testpoll.Err(timeout, func() error {
		if ok, status := cond(); !ok {
			return errors.New(status)
		}
		return nil
	})
}
