package compat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Impl names the broker implementation under test.
type Impl string

const (
	// ImplVltava is the default: the binary built from ./cmd/vltava.
	ImplVltava Impl = "vltava"
	// ImplKfake is franz-go's kfake run as a process (./bench/kfake), the
	// reference peer used to validate the suites themselves.
	ImplKfake Impl = "kfake"
)

const (
	// startTimeout bounds how long a broker may take from exec to answering
	// ApiVersions; generous because CI has two cores and builds in parallel.
	startTimeout = 45 * time.Second
	// stopTimeout bounds a SIGTERM shutdown before the harness gives up.
	stopTimeout = 30 * time.Second
	// maxCapturedOutput caps the broker output kept in memory per broker;
	// older output is dropped (the tail is what explains a failure).
	maxCapturedOutput = 4 << 20
)

// impl is the implementation selected by VLTAVA_COMPAT_IMPL for this run.
var impl = func() Impl {
	switch v := os.Getenv("VLTAVA_COMPAT_IMPL"); v {
	case "", string(ImplVltava):
		return ImplVltava
	case string(ImplKfake):
		return ImplKfake
	default:
		panic(fmt.Sprintf("VLTAVA_COMPAT_IMPL=%q: want vltava or kfake", v))
	}
}()

// skipOnKfake skips t when running against the kfake reference peer. It
// never skips on Vltava: use it only for behaviour kfake does not implement.
func skipOnKfake(t testing.TB, reason string) {
	t.Helper()
	if impl == ImplKfake {
		t.Skipf("kfake reference peer: %s", reason)
	}
}

// brokerBinary builds (once per test binary) the program for impl, or uses
// $VLTAVA_BIN for Vltava.
var brokerBinary = sync.OnceValues(func() (string, error) {
	if impl == ImplVltava {
		if bin := os.Getenv("VLTAVA_BIN"); bin != "" {
			return filepath.Abs(bin)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("module root not found from test directory: %w", err)
	}
	pkg := "./cmd/vltava"
	if impl == ImplKfake {
		pkg = "./bench/kfake"
	}
	out := filepath.Join(buildDir, string(impl))
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("go tool not in PATH: %w", err)
	}
	cmd := exec.Command(gobin, "build", "-o", out, pkg)
	cmd.Dir = root
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	return out, nil
})

// buildDir holds the binaries built for this test binary; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vltava-compat-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	// The binary is rebuilt from source on every run, which the go test
	// cache cannot see; touching a fresh path makes the run uncacheable so a
	// changed broker is never reported with a stale "ok (cached)".
	_, _ = os.Stat(dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// brokerOptions collects StartBroker options.
type brokerOptions struct {
	overrides [][2]string
	// extraListeners follow the PLAINTEXT listener the harness probes.
	extraListeners []string
	// env is added to the process's environment (KEY=value).
	env []string
}

// Option configures StartBroker.
type Option func(*brokerOptions)

// WithOverride sets a Kafka broker config (passed to Vltava as
// --override key=value; translated to the matching kfake flag).
func WithOverride(key, value string) Option {
	return func(o *brokerOptions) { o.overrides = append(o.overrides, [2]string{key, value}) }
}

// WithExtraListeners adds listeners (NAME://host:port) after the
// PLAINTEXT one the harness uses to tell the broker is ready.
func WithExtraListeners(ls ...string) Option {
	return func(o *brokerOptions) { o.extraListeners = append(o.extraListeners, ls...) }
}

// WithEnv adds KEY=value entries to the broker process's environment.
func WithEnv(kv ...string) Option {
	return func(o *brokerOptions) { o.env = append(o.env, kv...) }
}

// Broker is one broker process under test, owned by a single test.
//
// Addr, DataDir and Output may be called from any goroutine (subtests);
// Kill, Stop and Restart change the process and belong to the owning test.
type Broker struct {
	t       testing.TB
	bin     string
	addr    string
	dataDir string
	opts    brokerOptions
	output  *capturedOutput

	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		exited chan struct{} // closed once cmd.Wait returned
		err    error         // cmd.Wait's result, valid after exited closes
		starts int
	}
}

// StartBroker builds (once) and starts a broker on a free loopback port with
// a fresh data dir, waits until it answers ApiVersions, and registers a
// cleanup that stops it and, if the test failed, logs its output.
func StartBroker(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatalf("building the broker under test (%s): %v", impl, err)
	}
	b := &Broker{t: t, bin: bin, dataDir: t.TempDir(), output: &capturedOutput{}}
	for _, o := range opts {
		o(&b.opts)
	}
	t.Cleanup(func() {
		if b.running() {
			if err := b.stop(); err != nil {
				t.Logf("stopping broker at cleanup: %v", err)
			}
		}
		if t.Failed() || os.Getenv("VLTAVA_COMPAT_VERBOSE") != "" {
			t.Logf("%s output (%s, data dir %s):\n%s", impl, b.addr, b.dataDir, b.output.String())
		}
	})
	// A free port can be taken by someone else between picking and binding
	// it; retry with a new port if the process dies before it is ready.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		b.addr = freeLoopbackAddr(t)
		if lastErr = b.start(); lastErr == nil {
			return b
		}
		if !errors.Is(lastErr, errExitedEarly) {
			break // it ran but never answered: a new port would not help
		}
	}
	t.Fatalf("starting %s broker: %v", impl, lastErr)
	return nil
}

// Addr is the broker's host:port.
func (b *Broker) Addr() string { return b.addr }

// DataDir is the broker's data directory (log.dirs), kept across restarts.
func (b *Broker) DataDir() string { return b.dataDir }

// Output returns everything the broker wrote to stdout and stderr so far,
// across restarts.
func (b *Broker) Output() string { return b.output.String() }

// Kill sends SIGKILL and waits for the process to exit.
func (b *Broker) Kill() {
	b.t.Helper()
	cmd, exited := b.process()
	if cmd == nil {
		b.t.Fatal("Kill: broker is not running")
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	b.output.note("=== harness: SIGKILL ===")
}

// Stop sends SIGTERM and waits for a clean exit (status 0).
func (b *Broker) Stop() {
	b.t.Helper()
	if err := b.stop(); err != nil {
		b.t.Fatalf("Stop: %v", err)
	}
}

// Restart starts the broker again on the same port and data dir after Kill
// or Stop, and waits until it is ready.
func (b *Broker) Restart() {
	b.t.Helper()
	if b.running() {
		b.t.Fatal("Restart: broker is still running; Kill or Stop it first")
	}
	b.output.note("=== harness: restart ===")
	if err := b.start(); err != nil {
		b.t.Fatalf("restarting %s broker: %v", impl, err)
	}
}

func (b *Broker) stop() error {
	cmd, exited := b.process()
	if cmd == nil {
		return errors.New("broker is not running")
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(stopTimeout):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return fmt.Errorf("no exit within %v of SIGTERM; killed", stopTimeout)
	}
	b.output.note("=== harness: stopped with SIGTERM ===")
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.mu.err != nil {
		return fmt.Errorf("exit after SIGTERM: %w", b.mu.err)
	}
	return nil
}

func (b *Broker) process() (*exec.Cmd, chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.cmd, b.mu.exited
}

func (b *Broker) running() bool {
	cmd, exited := b.process()
	if cmd == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// args returns the command line for impl.
func (b *Broker) args() []string {
	if impl == ImplKfake {
		args := []string{"-addr", b.addr, "-data-dir", b.dataDir}
		for _, kv := range b.opts.overrides {
			switch kv[0] {
			case "auto.create.topics.enable":
				args = append(args, "-auto-create="+kv[1])
			case "num.partitions":
				args = append(args, "-partitions", kv[1])
			default:
				args = append(args, "-config", kv[0]+"="+kv[1])
			}
		}
		return args
	}
	listeners := strings.Join(append([]string{"PLAINTEXT://" + b.addr}, b.opts.extraListeners...), ",")
	args := []string{"server",
		"--override", "listeners=" + listeners,
		"--override", "log.dirs=" + b.dataDir,
		// No admin port per broker unless a test asks for one
		// (startBrokerWithAdmin): a taken one would stop start-up.
		"--override", "admin.listeners=",
		"--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=", // no REST Proxy unless a test asks (WithOverride)
	}
	for _, kv := range b.opts.overrides {
		args = append(args, "--override", kv[0]+"="+kv[1])
	}
	return args
}

// start execs the process and waits until it is ready; on a readiness
// failure the process is killed.
func (b *Broker) start() error {
	cmd := exec.Command(b.bin, b.args()...)
	if len(b.opts.env) > 0 {
		cmd.Env = append(os.Environ(), b.opts.env...)
	}
	cmd.Stdout = b.output
	cmd.Stderr = b.output
	cmd.SysProcAttr = brokerProcAttr()
	b.output.note(fmt.Sprintf("=== harness: exec %s %s ===", filepath.Base(b.bin), strings.Join(cmd.Args[1:], " ")))
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	b.mu.Lock()
	b.mu.cmd, b.mu.exited, b.mu.err = cmd, exited, nil
	b.mu.starts++
	b.mu.Unlock()
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.mu.err = err
		b.mu.Unlock()
		close(exited)
	}()

	if err := waitReady(b.addr, exited); err != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		return err
	}
	return nil
}

// errExitedEarly reports a broker process that died before it was ready,
// for instance because its port was taken after freeLoopbackAddr chose it.
var errExitedEarly = errors.New("process exited before it was ready")

// waitReady polls until addr accepts a connection and answers an ApiVersions
// request without error, the process exits, or startTimeout passes.
func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("%w (last probe: %v)", errExitedEarly, last)
		default:
		}
		if last = probeAPIVersions(addr); last == nil {
			return nil
		}
		select {
		case <-exited:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready within %v: %v", startTimeout, last)
}

// probeAPIVersions performs one ApiVersions v3 round trip, as every modern
// client does first.
func probeAPIVersions(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := dialRawContext(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "vltava-compat"
	req.ClientSoftwareVersion = "1.0"
	resp, err := conn.roundTrip(req)
	if err != nil {
		return err
	}
	av := resp.(*kmsg.ApiVersionsResponse)
	if av.ErrorCode != 0 {
		return fmt.Errorf("ApiVersions error code %d", av.ErrorCode)
	}
	if len(av.ApiKeys) == 0 {
		return errors.New("ApiVersions response lists no APIs")
	}
	return nil
}

// freeLoopbackAddr returns 127.0.0.1:<port> for a port that was free a
// moment ago.
func freeLoopbackAddr(t testing.TB) string {
	t.Helper()
	return freeport.Addr(t)
}

// capturedOutput is an io.Writer collecting a broker's stdout and stderr,
// safe for the concurrent writes of exec's copy goroutines. It keeps the
// last maxCapturedOutput bytes.
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

func (c *capturedOutput) note(line string) { _, _ = c.Write([]byte(line + "\n")) }

func (c *capturedOutput) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.buf.String()
}
