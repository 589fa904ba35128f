package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// Two distributed workers on the eager protocol (connect.protocol=eager,
// Kafka's "default"): a change is refused with 409 while the group's first
// rebalance is pending (group.initial.rebalance.delay.ms), a follower
// forwards a create to the leader, the eager assignor spreads connectors
// and tasks over both, the config, status and offset topics hold Kafka
// Connect's records, and when the leader is killed with SIGKILL the
// survivor runs everything and takes changes.
func TestDistributedEagerConflictForwarding(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "group.initial.rebalance.delay.ms=15000")
	dir := t.TempDir()
	in := writeFile(t, dir, "in.txt", numbered("e", 0, 50))
	src := func(name string) map[string]any {
		return map[string]any{"name": name, "config": map[string]string{"connector.class": "FileStreamSource", "file": in, "topic": "eager-" + name}}
	}
	var ws []*worker
	for i := 0; i < 2; i++ {
		port := freeport.Port(t)
		ws = append(ws, startWorker(t, "distributed", port, workerProps(b, port,
			"group.id=eager-cluster", "config.storage.topic=eager-configs", "offset.storage.topic=eager-offsets",
			"status.storage.topic=eager-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
			"status.storage.replication.factor=1", "connect.protocol=eager", "session.timeout.ms=6000", "heartbeat.interval.ms=1000")))
		if i == 0 {
			expectError(t, ws[0].url, "POST", "/connectors", src("a"), 409, "Cannot complete request momentarily")
		}
	}

	// Once the group has formed, ?forward=false tells the leader (201)
	// from the follower (409); the follower forwards the same request.
	leader := -1
	poll.Until(t, 60*time.Second, "the group to form", func() error {
		for i, w := range ws {
			code, body, err := call(w.url, "POST", "/connectors?forward=false", src("a"))
			if err != nil {
				return err
			}
			if code == 201 {
				leader = i
				return nil
			}
			if code != 409 {
				t.Fatalf("POST ?forward=false: %d %s", code, body)
			}
		}
		return fmt.Errorf("no leader yet")
	})
	// Each change rebalances the eager group; settled waits it out.
	follower := ws[1-leader]
	settled := func(method, path string, body any, want int, contains string) {
		t.Helper()
		poll.Until(t, 60*time.Second, method+" "+path+" on the follower", func() error {
			code, b, err := call(follower.url, method, path, body)
			if err != nil {
				return err
			}
			if code == 409 && strings.Contains(string(b), "momentarily") {
				return fmt.Errorf("rebalancing: %s", b)
			}
			if code != want || !strings.Contains(string(b), contains) {
				t.Fatalf("%s %s: %d %s, want %d containing %q", method, path, code, b, want, contains)
			}
			return nil
		})
	}
	settled("POST", "/connectors?forward=false", src("b"), 409, "conflicting operation")
	settled("POST", "/connectors", src("b"), 201, `"name":"b"`)
	settled("PUT", "/connectors/b/pause", nil, 202, "")
	settled("PUT", "/connectors/b/resume", nil, 202, "")

	// Two connectors and their two tasks, round-robin over two workers.
	owners := map[string]int{}
	for _, n := range []string{"a", "b"} {
		s := waitRunning(t, follower.url, n, 1)
		owners[s.Connector.WorkerID]++
		owners[s.Tasks[0].WorkerID]++
	}
	for _, w := range ws {
		if owners[strings.TrimPrefix(w.url, "http://")] != 2 {
			t.Fatalf("eager assignment not two each: %v", owners)
		}
	}

	// Kafka Connect's records in the three topics.
	recs := map[string]map[string]any{}
	poll.Until(t, 60*time.Second, "Kafka Connect's records in the internal topics", func() error {
		for _, topic := range []string{"eager-configs", "eager-status", "eager-offsets"} {
			for k, v := range latestRecords(t, b, topic) {
				var m map[string]any
				if v != nil && json.Unmarshal(v, &m) != nil {
					return fmt.Errorf("%s %s: not a JSON object: %s", topic, k, v)
				}
				recs[k] = m
			}
		}
		props, _ := recs["connector-a"]["properties"].(map[string]any)
		taskProps, _ := recs["task-a-0"]["properties"].(map[string]any)
		st := recs["status-task-a-0"]
		off := recs[fmt.Sprintf(`["a",{"filename":%q}]`, in)]
		if props["file"] != in || taskProps["topic"] != "eager-a" || recs["commit-a"]["tasks"] != float64(1) ||
			st["state"] != "RUNNING" || st["worker_id"] == nil || recs["status-connector-b"]["state"] != "RUNNING" ||
			recs["target-state-b"]["state"] != "STARTED" || off["position"] == nil {
			return fmt.Errorf("records: %v", recs)
		}
		return nil
	})

	// The leader dies: the survivor runs every connector and task, and,
	// leader now, takes a change.
	ws[leader].kill()
	poll.Until(t, 60*time.Second, "everything on the survivor", func() error {
		for _, n := range []string{"a", "b"} {
			s, err := status(follower.url, n)
			if err != nil {
				return err
			}
			if len(s.Tasks) != 1 || s.Connector.State != "RUNNING" || s.Tasks[0].State != "RUNNING" ||
				"http://"+s.Connector.WorkerID != follower.url || "http://"+s.Tasks[0].WorkerID != follower.url {
				return fmt.Errorf("%+v", s)
			}
		}
		return nil
	})
	poll.Until(t, 30*time.Second, "the survivor to take a change", func() error {
		code, body, err := call(follower.url, "DELETE", "/connectors/a", nil)
		if err != nil || code != 204 {
			return fmt.Errorf("%d %s %v", code, body, err)
		}
		return nil
	})
	if got := topicValues(t, b, "eager-b", 50); len(got) < 50 {
		t.Fatalf("eager-b holds %d records, want at least 50", len(got))
	}
}

// latestRecords reads a topic from the start to its end and returns the
// last value of each key.
func latestRecords(t testing.TB, b *broker, topic string) map[string][]byte {
	t.Helper()
	cl := b.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	out := map[string][]byte{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { out[string(r.Key)] = r.Value })
	}
	return out
}
