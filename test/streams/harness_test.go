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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
		"--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=")
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
