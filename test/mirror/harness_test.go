// Package mirror holds the MirrorMaker suites: `vltava mirror` (the built
// binary) between real Vltava clusters on loopback, and from franz-go's
// kfake, checked with franz-go, kcat and kafka-python.
package mirror

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

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Generous: CI shares two cores between the suites.
const (
	startTimeout  = 45 * time.Second
	mirrorTimeout = 90 * time.Second
)

var buildDir string

var binary = sync.OnceValues(func() (string, error) {
	if bin := os.Getenv("VLTAVA_BIN"); bin != "" {
		return filepath.Abs(bin)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	out := filepath.Join(buildDir, "vltava")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/vltava")
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, msg)
	}
	return out, nil
})

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vltava-mirror-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// proc is a process the test started; cleanup kills it.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    *output
	exited chan struct{}
}

func startProc(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, out: &output{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() || os.Getenv("VLTAVA_MIRROR_VERBOSE") != "" {
			out := p.out.String()
			if len(out) > 20000 {
				out = out[len(out)-20000:]
			}
			t.Logf("%s output:\n%s", p.name, out)
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill is kill -9, and waits for the exit.
func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.exited
}

// cluster is a one-node Vltava cluster.
type cluster struct {
	*proc
	addr string
}

func startCluster(t testing.TB, name string) *cluster {
	return startClusterAt(t, name, freeport.Addr(t))
}

func startClusterAt(t testing.TB, name, addr string) *cluster {
	return startClusterWith(t, name, addr, nil)
}

// startClusterWith starts a one-node cluster with extra "key=value"
// overrides; its harness client connects with opts.
func startClusterWith(t testing.TB, name, addr string, opts []kgo.Opt, overrides ...string) *cluster {
	t.Helper()
	args := []string{"server", "--override", "listeners=PLAINTEXT://" + addr, "--override", "log.dirs=" + t.TempDir(),
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners="}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	c := &cluster{proc: startProc(t, "cluster "+name, args...), addr: addr}
	cl := c.client(t, opts...)
	poll.Until(t, startTimeout, "cluster "+name+" to answer", func() error {
		if !c.running() {
			t.Fatalf("cluster %s exited:\n%s", name, c.out.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	return c
}

func (c *cluster) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	return clientOf(t, c.addr, opts...)
}

func clientOf(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(addr, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func admin(t testing.TB, addr string) *kadm.Client { return kadm.NewClient(clientOf(t, addr)) }

// mm2Props is an mm2.properties for clusters A and B, with short intervals
// and replication factors of one; extra lines follow.
func mm2Props(a, b string, extra ...string) string {
	lines := []string{
		"clusters = A, B",
		"A.bootstrap.servers = " + a,
		"B.bootstrap.servers = " + b,
		"replication.factor = 1",
		"checkpoints.topic.replication.factor = 1",
		"heartbeats.topic.replication.factor = 1",
		"offset-syncs.topic.replication.factor = 1",
		"offset.storage.replication.factor = 1",
		"refresh.topics.interval.seconds = 2",
		"refresh.groups.interval.seconds = 2",
		"sync.topic.configs.interval.seconds = 2",
		"emit.checkpoints.interval.seconds = 1",
		"offset.flush.interval.ms = 500",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

func writeFile(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "mm2.properties")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startMirror runs `vltava mirror --config <file>`.
func startMirror(t testing.TB, props string) (*proc, string) {
	t.Helper()
	path := writeFile(t, props)
	return startProc(t, "mirror", "mirror", "--config", path), path
}

// run runs a vltava command to completion and returns its output.
func run(t testing.TB, args ...string) (string, error) {
	t.Helper()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	return string(out), err
}

// createTopic creates a topic with configs.
func createTopic(t testing.TB, addr, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := admin(t, addr).CreateTopic(context.Background(), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// readAll consumes topic from the start until want records arrived or the
// deadline passes, read_committed.
func readAll(t testing.TB, addr, topic string, want int) []*kgo.Record {
	t.Helper()
	cl := clientOf(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.MetadataMinAge(250*time.Millisecond), kgo.MetadataMaxAge(time.Second))
	var out []*kgo.Record
	deadline := time.Now().Add(mirrorTimeout)
	for len(out) < want && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		out = append(out, fs.Records()...)
	}
	// A short extra poll catches records beyond want (duplicates).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	out = append(out, cl.PollFetches(ctx).Records()...)
	cancel()
	return out
}

func ptr(s string) *string { return &s }

// startCluster3 starts a three-node Vltava cluster (each node a broker and
// a controller) and returns its nodes and bootstrap list.
func startCluster3(t testing.TB, name string) ([]*proc, string) {
	t.Helper()
	var brokers, controllers, voters []string
	for id := 1; id <= 3; id++ {
		brokers, controllers = append(brokers, freeport.Addr(t)), append(controllers, freeport.Addr(t))
		voters = append(voters, fmt.Sprintf("%d@%s", id, controllers[id-1]))
	}
	var nodes []*proc
	for id := 1; id <= 3; id++ {
		kv := []string{
			"node.id=" + fmt.Sprint(id),
			"process.roles=broker,controller",
			"listeners=PLAINTEXT://" + brokers[id-1] + ",CONTROLLER://" + controllers[id-1],
			"advertised.listeners=PLAINTEXT://" + brokers[id-1],
			"controller.listener.names=CONTROLLER",
			"inter.broker.listener.name=PLAINTEXT",
			"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"controller.quorum.voters=" + strings.Join(voters, ","),
			"log.dirs=" + t.TempDir(),
			"offsets.topic.replication.factor=3", "offsets.topic.num.partitions=6",
			"transaction.state.log.replication.factor=3", "transaction.state.log.min.isr=2", "transaction.state.log.num.partitions=6",
			"admin.listeners=", "rest.listeners=", "schema.registry.listeners=", "console.listeners=",
		}
		args := []string{"server"}
		for _, p := range kv {
			args = append(args, "--override", p)
		}
		nodes = append(nodes, startProc(t, fmt.Sprintf("cluster %s node %d", name, id), args...))
	}
	boot := strings.Join(brokers, ",")
	cl := clientOf(t, boot)
	poll.Until(t, startTimeout, "cluster "+name+" with three brokers", func() error {
		for i, n := range nodes {
			if !n.running() {
				t.Fatalf("cluster %s node %d exited:\n%s", name, i+1, n.out.String())
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		bs, err := kadm.NewClient(cl).ListBrokers(ctx)
		if err != nil {
			return err
		}
		if len(bs) != 3 {
			return fmt.Errorf("%d brokers", len(bs))
		}
		return nil
	})
	return nodes, boot
}
