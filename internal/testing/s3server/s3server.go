// Package s3server runs a real S3-compatible server for tests: the Versity
// S3 gateway (versitygw) with its posix backend in a temporary directory,
// listening on a loopback port. scripts/install-test-deps.sh installs the
// binary; a missing binary fails the test.
package s3server

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Server is one running gateway.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:port.
	Endpoint string
	// AccessKey and SecretKey are its root credentials.
	AccessKey, SecretKey string
	// Region is the region it answers for.
	Region string
	// Root is the directory whose subdirectories are the buckets.
	Root string

	addr string
	bin  string
	cmd  *exec.Cmd
	log  string
}

// Binary returns the path of versitygw: $VERSITYGW, then PATH, then
// $(go env GOPATH)/bin.
func Binary() (string, error) {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "versitygw")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("versitygw not found (run scripts/install-test-deps.sh): %w", err)
	}
	return p, nil
}

// Start runs a gateway with the given buckets created, stopped at the end of
// the test.
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	s, err := Run(t.TempDir(), freeport.Addr(t), buckets...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Run starts a gateway on addr whose buckets live under dir/buckets, with the
// given buckets created, for callers that are not tests (the benchmarks).
// The caller stops it.
func Run(dir, addr string, buckets ...string) (*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "buckets")
	for _, b := range buckets {
		if err := os.MkdirAll(filepath.Join(root, b), 0o755); err != nil {
			return nil, err
		}
	}
	s := &Server{
		AccessKey: "vltava-test-access",
		SecretKey: "vltava-test-secret",
		Region:    "us-east-1",
		Root:      root,
		addr:      addr,
		bin:       bin,
		log:       filepath.Join(dir, "versitygw.log"),
	}
	s.Endpoint = "http://" + s.addr
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) start() error {
	logf, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--port", s.addr, "--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", s.Region, "posix", s.Root)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	logf.Close()
	s.cmd = cmd
	err = poll.Err(30*time.Second, func() error {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			return err
		}
		c.Close()
		resp, err := http.Get(s.Endpoint + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})
	if err != nil {
		out, _ := os.ReadFile(s.log)
		return fmt.Errorf("versitygw did not start: %v\n%s", err, out)
	}
	return nil
}

// Pid is the running server's process id (0 when stopped).
func (s *Server) Pid() int {
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop kills the server (an outage, or the end of the test). Objects stay
// in Root.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts a stopped server again on the same port and directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}
