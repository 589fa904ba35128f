// Package cli_test drives the vltava command line as a user would: it
// builds the binary once, starts a real broker on a free loopback port and
// runs commands against it, asserting on their output and exit status.
package cli_test

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

	"github.com/vltava/vltava/internal/testing/freeport"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	startTimeout   = 45 * time.Second
	commandTimeout = 30 * time.Second
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vltava-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildOnce builds ./pkg from the module root into binDir, once per test
// binary; $env (if set) names a prebuilt binary to use instead.
func buildOnce(pkg, name, env string) func() (string, error) {
	return sync.OnceValues(func() (string, error) {
		if bin := os.Getenv(env); bin != "" {
			return filepath.Abs(bin)
		}
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			return "", err
		}
		out := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if msg, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
		}
		return out, nil
	})
}

var (
	vltavaBinary = buildOnce("./cmd/vltava", "vltava", "VLTAVA_BIN")
	kfakeBinary  = buildOnce("./bench/kfake", "kfake", "VLTAVA_KFAKE_BIN")
)

func mustBinary(t testing.TB, build func() (string, error)) string {
	t.Helper()
	bin, err := build()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freeAddr(t testing.TB) string {
	t.Helper()
	return freeport.Addr(t)
}

// broker is a broker process owned by one test.
type broker struct {
	addr    string
	kind    string // "vltava" or "kfake"
	dataDir string // vltava's log.dirs
	output  bytes.Buffer
	// stop ends the process (SIGTERM, then SIGKILL after 20s) and waits
	// for it; it runs at cleanup too, so calling it is optional.
	stop func()
}

// startVltava starts `vltava server` on a free port with a fresh data dir.
func startVltava(t testing.TB) *broker {
	t.Helper()
	b := &broker{kind: "vltava", addr: freeAddr(t), dataDir: t.TempDir()}
	b.start(t, mustBinary(t, vltavaBinary), "server",
		"--override", "listeners=PLAINTEXT://"+b.addr,
		"--override", "log.dirs="+b.dataDir,
		"--override", "admin.listeners=",
		"--log-level", "warn")
	return b
}

// startKfake starts franz-go's kfake (./bench/kfake) on a free port.
func startKfake(t testing.TB) *broker {
	t.Helper()
	b := &broker{kind: "kfake", addr: freeAddr(t)}
	b.start(t, mustBinary(t, kfakeBinary), "-addr", b.addr, "-partitions", "2")
	return b
}

func (b *broker) start(t testing.TB, bin string, args ...string) {
	t.Helper()
	if len(args) > 0 && args[0] == "server" {
		// Several brokers run at once: none binds the REST Proxy's 8082.
		args = append([]string{"server", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners="}, args[1:]...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &lockedWriter{b: &b.output}, &lockedWriter{b: &b.output}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", b.kind, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	b.stop = sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	t.Cleanup(func() {
		b.stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", b.kind, b.output.String())
		}
	})
	deadline := time.Now().Add(startTimeout)
	for {
		if _, err := b.apiVersions(); err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before it was ready:\n%s", b.kind, b.output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer within %v", b.kind, startTimeout)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by deadline
	}
}

// apiVersions asks the broker for its API table.
func (b *broker) apiVersions() (*kmsg.ApiVersionsResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DialTimeout(time.Second), kgo.RetryTimeout(time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
}

type lockedWriter struct {
	mu sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// result is one finished command.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
}

// run runs the vltava CLI against b with stdin and returns its result.
func run(t testing.TB, b *broker, stdin string, args ...string) result {
	t.Helper()
	if b != nil {
		args = append(args, "--bootstrap-server", b.addr)
	}
	return runRaw(t, stdin, args...)
}

func runRaw(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, mustBinary(t, vltavaBinary), args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("vltava %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// ok runs a command that must succeed and returns its stdout.
func ok(t testing.TB, b *broker, stdin string, args ...string) string {
	t.Helper()
	r := run(t, b, stdin, args...)
	if r.code != 0 {
		t.Fatalf("vltava %s: exit %d after %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.elapsed, r.stdout, r.stderr)
	}
	return r.stdout
}

// fails runs a command that must fail and returns its stderr, which must
// be a single line.
func fails(t testing.TB, b *broker, stdin string, args ...string) string {
	t.Helper()
	r := run(t, b, stdin, args...)
	if r.code == 0 {
		t.Fatalf("vltava %s: succeeded, want failure\nstdout: %s", strings.Join(args, " "), r.stdout)
	}
	return r.stderr
}

// groupBroker returns a broker with consumer group support: Vltava when its
// ApiVersions lists FindCoordinator, otherwise kfake. The choice is logged.
func groupBroker(t *testing.T) *broker {
	t.Helper()
	v := startVltava(t)
	resp, err := v.apiVersions()
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.FindCoordinator) {
			t.Logf("group test runs against Vltava (it supports FindCoordinator v%d-v%d)", k.MinVersion, k.MaxVersion)
			return v
		}
	}
	t.Logf("group test runs against kfake: Vltava does not list FindCoordinator in ApiVersions yet")
	return startKfake(t)
}
