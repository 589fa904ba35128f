package cluster

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/broker"
)

// verifyOutput is `vltava verify --output json`.
type verifyOutput struct {
	Acknowledged int64
	Read         int64
	Kills        int
	Counts       map[string]int64
	Anomalies    []json.RawMessage
}

// startVerify runs `vltava verify` against the cluster in the background;
// the returned func waits for it and decodes its report.
func (c *Cluster) startVerify(args ...string) func() (verifyOutput, error) {
	c.t.Helper()
	cmd := exec.Command(c.bin, append([]string{"verify", "--bootstrap-server", c.BootstrapServers(), "--output", "json"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	return func() (verifyOutput, error) {
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Minute):
			cmd.Process.Kill()
			c.t.Fatalf("vltava verify did not finish within 5 minutes; stderr:\n%s", stderr.String())
		}
		var out verifyOutput
		if jerr := json.Unmarshal(stdout.Bytes(), &out); jerr != nil {
			c.t.Fatalf("vltava verify: %v, output %q; stderr:\n%s", err, stdout.String(), stderr.String())
		}
		c.t.Logf("vltava verify: %v; %d acknowledged, %d read, %d kills, counts %v", err, out.Acknowledged, out.Read, out.Kills, out.Counts)
		return out, err
	}
}

// pid is the node's current process id.
func (n *Node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.cmd.Process.Pid
}

// TestVerifyHealthyClusterUnderKills runs `vltava verify` against a healthy
// 3-node cluster while nodes are killed: one by verify itself
// (--kill-pids), restarted by the test, and then another killed and
// restarted by the test. No acknowledged record may be lost, duplicated,
// reordered or misplaced.
func TestVerifyHealthyClusterUnderKills(t *testing.T) {
	c := StartCluster(t)
	victim := c.Node(3)
	exited := victim.ExpectExit()
	wait := c.startVerify("--records", "6000", "--throughput", "500", "--producers", "3", "--partitions", "3",
		"--replication-factor", "3", "--kill-pids", strconv.Itoa(victim.pid()), "--kill-interval", "2s")
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatal("verify --kill-pids did not kill node 3")
	}
	logf(t, "verify killed node 3")
	victim.Restart()
	c.Node(1).Kill()
	c.Node(1).Restart()
	out, err := wait()
	if err != nil || out.Acknowledged == 0 || len(out.Anomalies) != 0 {
		t.Fatalf("verify on a healthy cluster: %v, %d acknowledged, anomalies %v (counts %v)", err, out.Acknowledged, len(out.Anomalies), out.Counts)
	}
	if out.Kills < 1 {
		t.Errorf("verify reports %d kills, want at least 1", out.Kills)
	}
}

// TestVerifyFindsDroppedWrites points `vltava verify` at a broker whose
// test-only fault switch acknowledges every third batch without writing
// it, and expects the losses reported and a non-zero exit.
func TestVerifyFindsDroppedWrites(t *testing.T) {
	c := StartCluster(t, WithNodes(1), WithEnv(broker.DropAckedWritesEnv, "3"))
	out, err := c.startVerify("--records", "600", "--throughput", "300", "--producers", "2", "--partitions", "2", "--replication-factor", "1")()
	if err == nil {
		t.Fatal("verify exited 0 against a broker that drops acknowledged writes")
	}
	if out.Counts["lost"] == 0 {
		t.Fatalf("verify found no lost records: counts %v", out.Counts)
	}
}
