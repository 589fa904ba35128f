package streamstest

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
)

// readmeClickstreamHeading starts the README section whose three commands
// TestReadmeClickstream runs.
const readmeClickstreamHeading = "## Streams: the clickstream example in three commands"

// TestReadmeClickstream runs the README's three clickstream commands as a
// reader would, against a broker on a free port instead of 127.0.0.1:9092,
// with the built binaries for bin/vltava and `go run ./examples/clickstream`
// (the second command runs in the background, as in a second terminal).
// Then the click the third command sent is counted in each output.
func TestReadmeClickstream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), readmeClickstreamHeading)
	if !ok {
		t.Fatalf("README.md has no %q section", readmeClickstreamHeading)
	}
	_, rest, _ := strings.Cut(section, "```sh\n")
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: no terminated ```sh block in the clickstream section")
	}
	lines := strings.Split(strings.TrimSpace(block), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "go run ./examples/clickstream ") || !strings.Contains(block, "127.0.0.1:9092") {
		t.Fatalf("the README block is no longer three commands with `go run ./examples/clickstream` second; update this test:\n%s", block)
	}
	addr := startBroker(t)
	r := strings.NewReplacer("127.0.0.1:9092", addr, "bin/vltava ", build(t, "./cmd/vltava")+" ",
		"go run ./examples/clickstream", build(t, "./examples/clickstream"))
	run := func(line string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "bash", "-c", "set -eo pipefail\n"+r.Replace(line)).CombinedOutput(); err != nil {
			t.Fatalf("README command %q: %v\n%s", line, err, out)
		}
	}
	run(lines[0])
	app := exec.Command("bash", "-c", "exec "+r.Replace(lines[1]))
	app.Env = append(os.Environ(), "TMPDIR="+t.TempDir()) // the default state.dir is under the temp dir
	p := &proc{cmd: app, out: &syncBuffer{}}
	app.Stdout, app.Stderr = p.out, p.out
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = app.Process.Kill()
		_ = app.Wait()
		if t.Failed() {
			t.Logf("clickstream output:\n%s", p.out.String())
		}
	})
	poll.True(t, time.Minute, "clickstream running", func() bool { return strings.Contains(p.out.String(), "clickstream: running") })
	run(lines[2])

	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("clicks_per_user_per_minute", "clicks_per_url", "clicks_enriched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]string{}
	poll.Until(t, 2*time.Minute, "the click in all three outputs", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		out.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if r.Topic != "clicks_enriched" {
				v = strconv.FormatUint(binary.BigEndian.Uint64(r.Value), 10)
			}
			got[r.Topic+" "+string(r.Key)] = v
		})
		if len(got) < 3 {
			return errString(strings.Join(keys(got), ", "))
		}
		return nil
	})
	if got["clicks_per_user_per_minute alice@0"] != "1" || got["clicks_per_url /home"] != "1" {
		t.Errorf("outputs %v, want alice@0=1 and /home=1", got)
	}
	var e struct{ User, URL, Country string }
	if err := json.Unmarshal([]byte(got["clicks_enriched alice"]), &e); err != nil || e.User != "alice" || e.URL != "/home" || e.Country != "" {
		t.Errorf("clicks_enriched alice: %q (%v), want alice's click with no country (no users row)", got["clicks_enriched alice"], err)
	}
}

type errString string

func (e errString) Error() string { return "got " + string(e) }

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
