package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestVerifyTransactionalAgainstKfake runs `vltava verify --transactional`
// against franz-go's kfake, which implements transactions: every other
// transaction is aborted, so the read_committed read back must skip those
// records (no aborted-read) and find every committed one (no loss). It
// checks verify's transactional path against another Kafka
// implementation, as verify works against any.
func TestVerifyTransactionalAgainstKfake(t *testing.T) {
	b := startKfake(t)
	out := ok(t, b, "", "verify", "--transactional", "--abort-every", "2", "--txn-records", "10",
		"--records", "200", "--producers", "2", "--partitions", "2", "--output", "json")
	var r struct {
		Acknowledged, Aborted int64
		Counts                map[string]int64
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("verify output %q: %v", out, err)
	}
	if r.Acknowledged == 0 || r.Aborted == 0 {
		t.Fatalf("verify: %d committed, %d aborted, want both", r.Acknowledged, r.Aborted)
	}
	for k, n := range r.Counts {
		if n != 0 {
			t.Errorf("%s: %d", k, n)
		}
	}
	// The table form names every anomaly kind.
	table := ok(t, b, "", "verify", "--records", "50", "--producers", "1", "--partitions", "1")
	for _, k := range []string{"lost", "duplicated", "int-nonmonotonic", "ext-nonmonotonic", "aborted-read", "offset-mismatch", "no anomalies"} {
		if !strings.Contains(table, k) {
			t.Errorf("verify table lacks %q:\n%s", k, table)
		}
	}
}

// TestVerifyKillCommand checks --kill-command runs on its interval while
// the producers run (--throughput stretches the run over several).
func TestVerifyKillCommand(t *testing.T) {
	b := startKfake(t)
	marker := t.TempDir() + "/kills"
	out := ok(t, b, "", "verify", "--records", "300", "--throughput", "200", "--producers", "1", "--partitions", "1",
		"--kill-command", "echo x >> "+marker, "--kill-interval", "300ms", "--output", "json")
	var r struct{ Kills int }
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(marker)
	if err != nil || r.Kills < 2 || strings.Count(string(data), "x") != r.Kills {
		t.Fatalf("verify reports %d kills, the command ran %d times (%v); want at least 2", r.Kills, strings.Count(string(data), "x"), err)
	}
}

// TestVerifyProgressBar checks the progress bar verify draws on stderr
// while it produces (--progress draws it without a terminal): it is
// redrawn as acknowledgements arrive and ends at every record
// acknowledged, while stdout carries only the report.
func TestVerifyProgressBar(t *testing.T) {
	b := startKfake(t)
	r := run(t, b, "", "verify", "--records", "300", "--throughput", "300", "--producers", "1", "--partitions", "1",
		"--progress", "--output", "json")
	if r.code != 0 {
		t.Fatalf("verify: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	frames := strings.Split(strings.TrimRight(r.stderr, "\n"), "\r")
	last := frames[len(frames)-1]
	if !strings.Contains(last, "["+strings.Repeat("=", 30)+"] 100% 300/300 acknowledged, 0 failed") {
		t.Errorf("last progress frame %q, want a full bar at 300/300 acknowledged", last)
	}
	if strings.Count(r.stderr, "\r[") < 2 {
		t.Errorf("progress bar drawn %d times over a run of about a second, want it redrawn:\n%q", strings.Count(r.stderr, "\r["), r.stderr)
	}
	if strings.Contains(r.stdout, "acknowledged, 0 failed") {
		t.Errorf("the progress bar went to stdout: %q", r.stdout)
	}
	var rep struct{ Acknowledged int64 }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Acknowledged != 300 {
		t.Fatalf("verify report %q: %v, want 300 acknowledged", r.stdout, err)
	}
}
