package connect

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// The `vltava connect` client subcommands against a standalone worker:
// create -f, list, status, pause, resume, stop, restart, offsets (show,
// --alter-file, --reset) and delete, each checked by its output and by the
// worker's REST API; an error answer is a failed command with the
// worker's message.
func TestConnectClientCommands(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, workerProps(b, port, "offset.storage.file.filename="+filepath.Join(dir, "offsets")))
	in := writeFile(t, dir, "in.txt", numbered("c", 0, 10))
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, bin, append([]string{"connect"}, append(args, "--connect-url", w.url)...)...).CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("vltava connect %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	state := func(want string) {
		t.Helper()
		poll.Until(t, 30*time.Second, "cli-src "+want, func() error {
			if out := run(true, "status", "cli-src"); !strings.Contains(out, "connector cli-src (source)  "+want) {
				return fmt.Errorf("%s", out)
			}
			return nil
		})
	}

	cfg := writeFile(t, dir, "cli-src.properties", fmt.Sprintf("name=cli-src\nconnector.class=FileStreamSource\nfile=%s\ntopic=cli-out\n", in))
	if out := run(true, "create", "-f", cfg); !strings.Contains(out, "Created connector cli-src") {
		t.Fatalf("create: %s", out)
	}
	if out := run(false, "create", "-f", cfg); !strings.Contains(out, "409: Connector cli-src already exists") {
		t.Fatalf("create again: %s", out)
	}
	waitRunning(t, w.url, "cli-src", 1)
	if out := run(true, "list"); !strings.Contains(out, "cli-src") || !strings.Contains(out, "source") || !strings.Contains(out, "1 RUNNING") {
		t.Fatalf("list: %s", out)
	}
	state("RUNNING")
	run(true, "pause", "cli-src")
	state("PAUSED")
	run(true, "resume", "cli-src")
	state("RUNNING")
	if out := run(true, "restart", "cli-src", "--include-tasks", "--output", "json"); !strings.Contains(out, `"state": "RESTARTING"`) {
		t.Fatalf("restart --include-tasks: %s", out)
	}
	waitRunning(t, w.url, "cli-src", 1)
	run(true, "restart", "cli-src", "--task", "0")
	waitRunning(t, w.url, "cli-src", 1)
	poll.Until(t, 30*time.Second, "the source's offset", func() error {
		if out := run(true, "offsets", "cli-src"); !strings.Contains(out, `"position"`) {
			return fmt.Errorf("%s", out)
		}
		return nil
	})
	run(false, "offsets", "cli-src", "--reset")
	run(true, "stop", "cli-src")
	state("STOPPED")
	alter := writeFile(t, dir, "offsets.json", fmt.Sprintf(`{"offsets":[{"partition":{"filename":%q},"offset":{"position":7}}]}`, in))
	if out := run(true, "offsets", "cli-src", "--alter-file", alter); !strings.Contains(out, "altered successfully") {
		t.Fatalf("offsets --alter-file: %s", out)
	}
	if out := run(true, "offsets", "cli-src"); !strings.Contains(out, `"position": 7`) {
		t.Fatalf("offsets after the alter: %s", out)
	}
	if out := run(true, "offsets", "cli-src", "--reset"); !strings.Contains(out, "reset successfully") {
		t.Fatalf("offsets --reset: %s", out)
	}
	if out := run(true, "delete", "cli-src"); !strings.Contains(out, "Deleted connector cli-src") {
		t.Fatalf("delete: %s", out)
	}
	if out := run(false, "status", "cli-src"); !strings.Contains(out, "404") {
		t.Fatalf("status of a deleted connector: %s", out)
	}
	var names []string
	mustCall(t, w.url, "GET", "/connectors", nil, 200, &names)
	if len(names) != 0 {
		t.Fatalf("connectors after delete: %v", names)
	}
}
