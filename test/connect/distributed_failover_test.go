package connect

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Three distributed workers share a FileStream sink's tasks; after one is
// killed with SIGKILL its tasks move to the two others within
// scheduled.rebalance.max.delay.ms (plus the session timeout that notices
// the death), and the sink files hold every record at least once.
func TestDistributedKillOneWorker(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	var ws []*worker
	for i := 0; i < 3; i++ {
		port := freeport.Port(t)
		props := workerProps(b, port,
			"group.id=connect-cluster", "config.storage.topic=connect-configs", "offset.storage.topic=connect-offsets",
			"status.storage.topic=connect-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
			"status.storage.replication.factor=1", "scheduled.rebalance.max.delay.ms=4000", "session.timeout.ms=6000",
			"heartbeat.interval.ms=1000")
		ws = append(ws, startWorker(t, "distributed", port, props))
	}
	var want []string
	for i := 0; i < 300; i++ {
		want = append(want, fmt.Sprintf("rec-%d", i))
	}
	produce(t, b, "dist-in", want[:150]...)
	// Created through any worker (a follower forwards to the leader); 409
	// while the group is still forming.
	n := 0
	poll.Until(t, 60*time.Second, "the connector to be created", func() error {
		w := ws[n%3]
		n++
		code, body, err := call(w.url, "POST", "/connectors", map[string]any{"name": "dsink", "config": map[string]string{
			"connector.class": "FileStreamSink", "file": filepath.Join(dir, "out.txt"), "topics": "dist-in", "tasks.max": "3"}})
		if err != nil {
			return err
		}
		if code != 201 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	s := waitRunning(t, ws[0].url, "dsink", 3)
	owners := map[string]bool{}
	for _, tk := range s.Tasks {
		owners[tk.WorkerID] = true
	}
	if len(owners) < 2 {
		t.Fatalf("tasks not spread over the workers: %+v", s)
	}
	// Kill the worker running task 0.
	victim := -1
	for i, w := range ws {
		if "http://"+s.Tasks[0].WorkerID == w.url {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("task 0's worker %s not found", s.Tasks[0].WorkerID)
	}
	ws[victim].kill()
	alive := ws[(victim+1)%3]
	killed := time.Now()
	poll.Until(t, 60*time.Second, "the killed worker's tasks to move", func() error {
		st, err := status(alive.url, "dsink")
		if err != nil {
			return err
		}
		if st.Connector.State != "RUNNING" || len(st.Tasks) != 3 {
			return fmt.Errorf("%+v", st)
		}
		for _, tk := range st.Tasks {
			if tk.State != "RUNNING" || "http://"+tk.WorkerID == ws[victim].url {
				return fmt.Errorf("%+v", st)
			}
		}
		return nil
	})
	t.Logf("tasks moved %v after the kill", time.Since(killed))
	produce(t, b, "dist-in", want[150:]...)
	poll.Until(t, 60*time.Second, "every record in the sink files", func() error {
		seen := map[string]bool{}
		for _, l := range lines(filepath.Join(dir, "out.txt")) {
			seen[l] = true
		}
		for _, r := range want {
			if !seen[r] {
				return fmt.Errorf("%s missing (%d of %d seen)", r, len(seen), len(want))
			}
		}
		return nil
	})
}
