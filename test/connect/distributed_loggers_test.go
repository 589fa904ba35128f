package connect

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// KIP-976: PUT /admin/loggers/{name}?scope=cluster on one distributed
// worker writes logger-cluster-<name> {"level": ...} to the config topic
// and answers 204; every running worker applies the level when it reads
// the record, and one started later does not (as in Kafka).
func TestDistributedClusterLoggerLevel(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	start := func() *worker {
		port := freeport.Port(t)
		return startWorker(t, "distributed", port, workerProps(b, port,
			"group.id=loggers-cluster", "config.storage.topic=loggers-configs", "offset.storage.topic=loggers-offsets",
			"status.storage.topic=loggers-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
			"status.storage.replication.factor=1"))
	}
	w1, w2 := start(), start()
	const ns = "kip976.test"
	expectError(t, w1.url, "PUT", "/admin/loggers/"+ns+"?scope=cluster", map[string]string{"level": "LOUD"}, 400, "")
	expectError(t, w1.url, "PUT", "/admin/loggers/"+ns+"?scope=galaxy", map[string]string{"level": "DEBUG"}, 400, "")
	if body := mustCall(t, w1.url, "PUT", "/admin/loggers/"+ns+"?scope=Cluster", map[string]string{"level": "debug"}, 204, nil); len(body) != 0 {
		t.Fatalf("204 with a body: %q", body)
	}
	seen := func(w *worker) {
		t.Helper()
		poll.Until(t, 30*time.Second, "the cluster-wide level on "+w.url, func() error {
			code, body, err := call(w.url, "GET", "/admin/loggers/"+ns, nil)
			if err != nil {
				return err
			}
			var lvl struct {
				Level        string `json:"level"`
				LastModified *int64 `json:"last_modified"`
			}
			if code != 200 || json.Unmarshal(body, &lvl) != nil || lvl.Level != "DEBUG" || lvl.LastModified == nil {
				return fmt.Errorf("GET: %d %s", code, body)
			}
			return nil
		})
	}
	seen(w1)
	seen(w2)
	// A worker started afterwards does not take it up: Kafka's workers
	// ignore the logging-level records they read at start-up.
	w3 := start()
	code, body, err := call(w3.url, "GET", "/admin/loggers/"+ns, nil)
	if err != nil {
		t.Fatal(err)
	}
	var late struct {
		Level        string `json:"level"`
		LastModified *int64 `json:"last_modified"`
	}
	if code == 200 && json.Unmarshal(body, &late) == nil && late.LastModified != nil {
		t.Fatalf("a worker started after the cluster-wide level was set applied it: %s", body)
	}

	cl := b.client(t, kgo.ConsumeTopics("loggers-configs"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for found := false; !found; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no logger-cluster-" + ns + " record in the config topic")
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == "logger-cluster-"+ns {
				if string(r.Value) != `{"level":"DEBUG"}` {
					t.Fatalf("record value %s", r.Value)
				}
				found = true
			}
		})
	}
}

// In standalone mode scope=cluster applies the level to this worker, as
// scope=worker does (Kafka logs a warning).
func TestStandaloneClusterLoggerLevel(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, workerProps(b, port, "offset.storage.file.filename="+filepath.Join(t.TempDir(), "offsets")))
	var changed []string
	mustCall(t, w.url, "PUT", "/admin/loggers/kip976.solo?scope=cluster", map[string]string{"level": "WARN"}, 200, &changed)
	var lvl map[string]any
	mustCall(t, w.url, "GET", "/admin/loggers/kip976.solo", nil, 200, &lvl)
	if lvl["level"] != "WARN" || lvl["last_modified"] == nil {
		t.Fatalf("changed %v, level %v", changed, lvl)
	}
}
