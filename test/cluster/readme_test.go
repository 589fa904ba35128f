package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"

	"github.com/twmb/franz-go/pkg/kadm"
)

// readmeClusterHeading starts the README section whose commands
// TestReadmeClusterCommands runs.
const readmeClusterHeading = "## Running a 3-node cluster on one machine"

// TestReadmeClusterCommands starts the cluster exactly as the README tells
// a reader to (its shell block: variables, then one `vltava server` line per
// node) with two substitutions so it cannot collide with anything on the
// machine: every 127.0.0.1 port becomes a free one, and every log.dirs a
// temporary directory. Then the commands the README goes on to name work:
// `vltava cluster describe` lists the three brokers and the quorum, a
// replicated topic is created, written and read back with the CLI, and
// reads still work with a node killed.
func TestReadmeClusterCommands(t *testing.T) {
	block := readmeClusterBlock(t)
	rt := newReadmeTopology(t, block)
	c := StartCluster(t, withTopology(rt), WithNodes(len(rt.servers)))

	out, err := c.runCLI("cluster", "describe")
	if err != nil {
		t.Fatalf("vltava cluster describe: %v\n%s", err, out)
	}
	t.Logf("vltava cluster describe:\n%s", out)
	for id := int32(1); id <= int32(len(rt.servers)); id++ {
		_, port, _ := net.SplitHostPort(rt.brokerAddr(id))
		if !strings.Contains(out, port) {
			t.Errorf("vltava cluster describe does not list broker %d (port %s)", id, port)
		}
	}
	for _, word := range []string{"Controller", "Leader", "Follower"} {
		if !strings.Contains(strings.ToLower(out), strings.ToLower(word)) {
			t.Errorf("vltava cluster describe does not mention %q (controller and quorum voters)", word)
		}
	}

	if out, err := c.runCLI("topics", "create", "orders", "--partitions", "6", "--replication-factor", "3"); err != nil {
		t.Fatalf("vltava topics create: %v\n%s", err, out)
	}
	c.waitFullyReplicated("orders", 6, 30*time.Second)
	const n = 60
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf("user%d:event%d", i%7, i))
	}
	produce := exec.Command(c.bin, "produce", "orders", "--key-separator", ":", "--bootstrap-server", c.BootstrapServers())
	produce.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	if out, err := produce.CombinedOutput(); err != nil {
		t.Fatalf("vltava produce: %v\n%s", err, out)
	}
	consume := func(when string) {
		t.Helper()
		out, err := c.runCLI("consume", "orders", "--from-beginning", "--format", "kv", "--max-messages", strconv.Itoa(n))
		if err != nil {
			t.Fatalf("%s: vltava consume: %v\n%s", when, err, out)
		}
		for i := range n {
			if want := fmt.Sprintf("event%d", i); !regexp.MustCompile(`\b` + want + `\b`).MatchString(out) {
				t.Errorf("%s: vltava consume output lacks %s:\n%s", when, want, out)
				return
			}
		}
	}
	consume("all nodes up")

	// The README's cluster sets no offsets.topic.replication.factor: it
	// gets Kafka's default of 3, not a replica count cut to the brokers at
	// hand. A group commit creates __consumer_offsets.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := c.Admin()
	var offsets kadm.Offsets
	offsets.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 1, LeaderEpoch: -1})
	for {
		resp, err := adm.CommitOffsets(ctx, "readme-group", offsets)
		if err == nil && resp.Ok() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("committing an offset of readme-group: %v %v", err, resp)
		}
		time.Sleep(200 * time.Millisecond) // retry interval of a retriable error, not a wait for a condition
	}
	c.waitTopic("__consumer_offsets", 30*time.Second, "__consumer_offsets with 3 replicas per partition", func(v topicView) bool {
		if len(v.Partitions) == 0 {
			return false
		}
		for _, p := range v.Partitions {
			if len(p.Replicas) != 3 {
				t.Fatalf("__consumer_offsets partition has replicas %v, want 3 (offsets.topic.replication.factor defaults to 3)", p.Replicas)
			}
		}
		return true
	})

	c.Node(1).Kill()
	c.waitTopic("orders", 30*time.Second, "every partition led by a live node", func(v topicView) bool {
		for _, p := range v.Partitions {
			if p.Leader < 1 || p.Leader == 1 {
				return false
			}
		}
		return len(v.Partitions) == 6
	}, 1)
	consume("node 1 killed")
}

// readmeClusterBlock returns the first sh code block after the README's
// cluster heading.
func readmeClusterBlock(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), readmeClusterHeading)
	if !ok {
		t.Fatalf("README.md has no %q section: the issue asks for one", readmeClusterHeading)
	}
	_, rest, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md %q has no ```sh block", readmeClusterHeading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: unterminated code block")
	}
	return block
}

// readmeTopology runs the README's server lines. Each node is
// `sh -c '<the block's variable lines>; exec <its server line>'`, with the
// ports and directories remapped, so the shell expands the README's
// variables exactly as a reader's shell would.
type readmeTopology struct {
	prelude string            // the block's variable assignments
	servers []string          // one server command line per node, node.id order
	brokers map[int32]string  // node id → its PLAINTEXT address
	ports   map[string]string // README port → free port, for the log
	dirs    []string          // README log.dirs, remapped to dir-1, dir-2, …
}

var (
	readmeAddr    = regexp.MustCompile(`(127\.0\.0\.1|localhost):(\d+)`)
	readmeLogDirs = regexp.MustCompile(`log\.dirs=(\S+)`)
	readmeNodeID  = regexp.MustCompile(`node\.id=(\d+)`)
	readmeVar     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	readmeServer  = regexp.MustCompile(`^(\./|bin/)?vltava\s+server\b|^go run \./cmd/vltava\s+server\b`)
	readmePlain   = regexp.MustCompile(`PLAINTEXT://([^,\s"']+)`)
)

func newReadmeTopology(t testing.TB, block string) *readmeTopology {
	t.Helper()
	rt := &readmeTopology{brokers: map[int32]string{}, ports: map[string]string{}}
	tmp := t.TempDir()
	block = readmeAddr.ReplaceAllStringFunc(block, func(m string) string {
		port := readmeAddr.FindStringSubmatch(m)[2]
		if _, ok := rt.ports[port]; !ok {
			rt.ports[port] = strconv.Itoa(freeport.Port(t))
		}
		return "127.0.0.1:" + rt.ports[port]
	})
	block = readmeLogDirs.ReplaceAllStringFunc(block, func(m string) string {
		dir := readmeLogDirs.FindStringSubmatch(m)[1]
		// Named by position, not by the README's name: a path with
		// "vltava" in it would be hit by someone else's pkill -f vltava.
		rt.dirs = append(rt.dirs, dir)
		return "log.dirs=" + filepath.Join(tmp, fmt.Sprintf("dir-%d", len(rt.dirs)))
	})
	var prelude []string
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case readmeServer.MatchString(line):
			line = strings.TrimSuffix(strings.TrimSpace(line), "&")
			line = readmeServer.ReplaceAllString(line, `"$$VLTAVA" server`)
			rt.servers = append(rt.servers, line)
		case readmeVar.MatchString(line):
			prelude = append(prelude, line)
		default:
			t.Fatalf("README cluster block: line %q is neither a variable nor a `vltava server` command; teach TestReadmeClusterCommands about it", line)
		}
	}
	if len(rt.servers) < 3 {
		t.Fatalf("README cluster block has %d `vltava server` lines, want 3", len(rt.servers))
	}
	rt.prelude = strings.Join(prelude, "\n")
	// Expand the prelude once to learn each node's id and client address.
	for i, line := range rt.servers {
		expanded, err := exec.Command("sh", "-c", rt.prelude+"\necho "+line).Output()
		if err != nil {
			t.Fatalf("expanding README line %q: %v", line, err)
		}
		id, want := int32(0), int32(i+1)
		if m := readmeNodeID.FindSubmatch(expanded); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			id = int32(n)
		}
		if id != want {
			t.Fatalf("README server line %d has node.id=%d, want %d (the harness numbers nodes 1..N in order): %s", i+1, id, want, expanded)
		}
		m := readmePlain.FindSubmatch(expanded)
		if m == nil {
			t.Fatalf("README server line %d has no PLAINTEXT listener: %s", i+1, expanded)
		}
		rt.brokers[id] = string(m[1])
	}
	t.Logf("README ports remapped %v, log dirs %v remapped to dir-1… under %s", rt.ports, rt.dirs, tmp)
	return rt
}

func (rt *readmeTopology) brokerAddr(id int32) string  { return rt.brokers[id] }
func (rt *readmeTopology) controllerAddr(int32) string { return "" }
func (rt *readmeTopology) describe() string            { return "README.md's commands" }
func (rt *readmeTopology) dial() func(context.Context, string, string) (net.Conn, error) {
	return nil
}

// command ignores the harness's own arguments: the README's line is the
// whole configuration.
func (rt *readmeTopology) command(id int32, bin string, _ []string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", rt.prelude+"\nexec "+rt.servers[id-1])
	cmd.Env = append(os.Environ(), "VLTAVA="+bin)
	return cmd
}
