package cli_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readmeSecurityHeading starts the README section whose shell block
// TestReadmeSecurityCommands runs.
const readmeSecurityHeading = "## Security: a SASL_SSL listener with SCRAM and ACLs"

// TestReadmeSecurityCommands runs the README's SASL_SSL + ACL walkthrough
// as a reader would, in a scratch directory, with three substitutions so
// it cannot collide with anything on the machine: the built binary for `go
// run ./cmd/vltava`, free ports for 9093 and 9094, and the admin HTTP
// listener off. Then what the README says happens: alice's record comes
// back through kcat in her group, her ACLs are listed, and her write to a
// topic she was not granted is refused with TOPIC_AUTHORIZATION_FAILED.
func TestReadmeSecurityCommands(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), readmeSecurityHeading)
	if !ok {
		t.Fatalf("README.md has no %q section", readmeSecurityHeading)
	}
	_, rest, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md %q has no ```sh block", readmeSecurityHeading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: unterminated code block")
	}
	for _, want := range []string{"go run ./cmd/vltava", "localhost:9093", "localhost:9094", "log.dirs=./data-secure\n"} {
		if !strings.Contains(block, want) {
			t.Fatalf("the README block no longer has %q; update this test with it", want)
		}
	}
	port := func() string {
		_, p, err := net.SplitHostPort(freeAddr(t))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	script := strings.NewReplacer(
		"go run ./cmd/vltava", mustBinary(t, vltavaBinary),
		"localhost:9093", "localhost:"+port(),
		"localhost:9094", "localhost:"+port(),
		"log.dirs=./data-secure\n", "log.dirs=./data-secure\nadmin.listeners=\nrest.listeners=\nschema.registry.listeners=\nconsole.listeners=\n",
	).Replace(block)
	// The block leaves the broker running in the background, as a reader
	// would; the test stops it when the block ends.
	script = "set -e\ntrap 'kill $(jobs -p) 2>/dev/null; wait' EXIT\n" + script

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On a timeout, end the whole group: the background broker too.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README block failed: %v\n%s", err, out)
	}
	t.Logf("README block output:\n%s", out)
	text := string(out)
	for _, want := range []string{
		"hello",                      // kcat read alice's record in group readers
		"User:alice",                 // acls --list shows her bindings
		"TOPIC_AUTHORIZATION_FAILED", // her write to payments
		"alice: payments refused",    // and the produce command failed
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the README block's output lacks %q", want)
		}
	}
}
