package connect

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Timeouts: generous, CI has two cores shared by the suites.
const (
	startTimeout = 45 * time.Second
	stopTimeout  = 30 * time.Second
)

// binary builds ./cmd/vltava once per test binary (or takes $VLTAVA_BIN).
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

var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vltava-connect-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// output collects a process's stdout and stderr.
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
	t      testing.TB
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
	p := &proc{t: t, name: name, out: &output{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() || os.Getenv("VLTAVA_CONNECT_VERBOSE") != "" {
			t.Logf("%s output:\n%s", p.name, p.out.String())
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

// kill sends SIGKILL (kill -9) and waits for the exit.
func (p *proc) kill() {
	if p.running() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-p.exited
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		p.kill()
		p.t.Fatalf("%s: no exit within %v of SIGTERM", p.name, stopTimeout)
	}
}

// broker is a single Vltava node.
type broker struct {
	*proc
	addr string
}

// startBroker starts a one-node cluster and waits until it answers.
func startBroker(t testing.TB, overrides ...string) *broker {
	t.Helper()
	addr := freeport.Addr(t)
	args := []string{"server", "--override", "listeners=PLAINTEXT://" + addr, "--override", "log.dirs=" + t.TempDir(),
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners="}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	b := &broker{proc: startProc(t, "broker "+addr, args...), addr: addr}
	cl := b.client(t)
	poll.Until(t, startTimeout, "the broker to answer", func() error {
		if !b.running() {
			t.Fatalf("broker exited:\n%s", b.out.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	})
	return b
}

// client is a franz-go client of the broker, closed at cleanup.
func (b *broker) client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// worker is a Connect worker process and its REST URL.
type worker struct {
	*proc
	url string
}

// workerProps are a worker config's lines for the broker, a REST port and
// the converters; extra "k=v" lines follow.
func workerProps(b *broker, port int, extra ...string) string {
	lines := []string{
		"bootstrap.servers=" + b.addr,
		fmt.Sprintf("listeners=http://127.0.0.1:%d", port),
		"key.converter=org.apache.kafka.connect.storage.StringConverter",
		"value.converter=org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms=500",
	}
	return strings.Join(append(lines, extra...), "\n") + "\n"
}

// writeFile writes a file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// startWorker runs `vltava connect <mode> worker.properties files...` and
// waits for its REST API.
func startWorker(t testing.TB, mode string, port int, props string, files ...string) *worker {
	t.Helper()
	dir := t.TempDir()
	wp := writeFile(t, dir, "worker.properties", props)
	args := append([]string{"connect", mode, wp}, files...)
	w := &worker{proc: startProc(t, fmt.Sprintf("%s worker :%d", mode, port), args...), url: fmt.Sprintf("http://127.0.0.1:%d", port)}
	w.waitREST(t)
	return w
}

func (w *worker) waitREST(t testing.TB) {
	t.Helper()
	poll.Until(t, startTimeout, "the worker's REST API", func() error {
		if !w.running() {
			t.Fatalf("worker exited:\n%s", w.out.String())
		}
		_, _, err := call(w.url, "GET", "/", nil)
		return err
	})
}

// call makes a REST request and returns the status and body.
func call(base, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			rd = strings.NewReader(b)
		default:
			j, err := json.Marshal(body)
			if err != nil {
				return 0, nil, err
			}
			rd = bytes.NewReader(j)
		}
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// mustCall makes a request, requires the status and decodes the body into out.
func mustCall(t testing.TB, base, method, path string, body any, want int, out any) []byte {
	t.Helper()
	code, b, err := call(base, method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if code != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, code, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return b
}

// connStatus is GET /connectors/{name}/status.
type connStatus struct {
	Name      string `json:"name"`
	Type      string `json:"type"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		Trace    string `json:"trace"`
	} `json:"tasks"`
}

func status(base, name string) (connStatus, error) {
	var s connStatus
	code, b, err := call(base, "GET", "/connectors/"+name+"/status", nil)
	if err != nil {
		return s, err
	}
	if code != 200 {
		return s, fmt.Errorf("status %d: %s", code, b)
	}
	return s, json.Unmarshal(b, &s)
}

// waitRunning waits until the connector and n tasks are RUNNING.
func waitRunning(t testing.TB, base, name string, n int) connStatus {
	t.Helper()
	var s connStatus
	poll.Until(t, 60*time.Second, name+" RUNNING with its tasks", func() error {
		var err error
		if s, err = status(base, name); err != nil {
			return err
		}
		if s.Connector.State != "RUNNING" || len(s.Tasks) != n {
			return fmt.Errorf("%+v", s)
		}
		for _, tk := range s.Tasks {
			if tk.State != "RUNNING" {
				return fmt.Errorf("%+v", s)
			}
		}
		return nil
	})
	return s
}

// lines reads a file's lines (none if it does not exist yet).
func lines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// numbered writes lines "prefix-i" for i in [from, to).
func numbered(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s-%d\n", prefix, i)
	}
	return b.String()
}

// appendFile appends content to a file.
func appendFile(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// topicValues reads every record value of a topic from the start until
// want records are read or the deadline passes.
func topicValues(t testing.TB, b *broker, topic string, want int) []string {
	t.Helper()
	cl := b.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(out) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}

// sameSet reports the difference between got and want as sets with counts.
func sameSet(got, want []string) error {
	g := append([]string(nil), got...)
	w := append([]string(nil), want...)
	sort.Strings(g)
	sort.Strings(w)
	if len(g) != len(w) {
		return fmt.Errorf("%d lines, want %d", len(g), len(w))
	}
	for i := range g {
		if g[i] != w[i] {
			return fmt.Errorf("line %q, want %q", g[i], w[i])
		}
	}
	return nil
}
