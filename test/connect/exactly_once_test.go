package connect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// eosWorkerProps is a distributed worker with exactly-once source support.
// offset.flush.interval.ms is ten minutes: a worker without transactions
// would flush no offsets before the test kills it, and its successor would
// read the file again from the start.
func eosWorkerProps(b *broker, port int, extra ...string) string {
	return workerProps(b, port, append([]string{
		"group.id=eos-cluster", "config.storage.topic=eos-configs", "offset.storage.topic=eos-offsets",
		"status.storage.topic=eos-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
		"status.storage.replication.factor=1", "exactly.once.source.support=enabled", "offset.flush.interval.ms=600000",
		"session.timeout.ms=6000", "heartbeat.interval.ms=1000", "scheduled.rebalance.max.delay.ms=2000",
	}, extra...)...)
}

// committedValues reads a topic with read_committed from the start until it
// has been idle for quiet after holding at least want records.
func committedValues(t testing.TB, b *broker, topic string, want int, quiet time.Duration) []string {
	t.Helper()
	cl := b.client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	var out []string
	deadline := time.Now().Add(90 * time.Second)
	last := time.Now()
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := len(out)
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
		if len(out) > n {
			last = time.Now()
		}
		if len(out) >= want && time.Since(last) >= quiet {
			break
		}
	}
	return out
}

// A FileStream source under exactly.once.source.support=enabled: the worker
// is killed with SIGKILL while lines are being appended, a second worker
// of the group takes the task over, and the topic read with read_committed
// holds every line exactly once. Without transactions the offsets of the
// first worker's records were never flushed (ten-minute interval), so the
// second worker would copy the file again from its start.
func TestExactlyOnceSourceSurvivesKill(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "in.txt")
	writeFile(t, dir, "in.txt", "")
	p1 := freeport.Port(t)
	w1 := startWorker(t, "distributed", p1, eosWorkerProps(b, p1))
	poll.Until(t, 60*time.Second, "the connector to be created", func() error {
		code, body, err := call(w1.url, "POST", "/connectors", map[string]any{"name": "eos-file", "config": map[string]string{
			"connector.class": "FileStreamSource", "file": file, "topic": "eos-out", "tasks.max": "1",
			"exactly.once.support": "required", "batch.size": "50"}})
		if err != nil {
			return err
		}
		if code != 201 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	waitRunning(t, w1.url, "eos-file", 1)

	const total = 3000
	var want []string
	for i := 0; i < total; i++ {
		want = append(want, fmt.Sprintf("line-%d", i))
	}
	// Lines arrive in small appends while the worker dies and its
	// successor starts.
	var wg sync.WaitGroup
	wg.Add(1)
	defer wg.Wait() // before the file's directory is removed
	go func() {
		defer wg.Done()
		for i := 0; i < total; i += 25 {
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND, 0)
			if err == nil {
				_, err = f.WriteString(numbered("line", i, i+25))
				f.Close()
			}
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	seen := b.client(t, kgo.ConsumeTopics("eos-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	poll.Until(t, 60*time.Second, "a third of the lines to be committed", func() error {
		n := 0
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for ctx.Err() == nil && n < total/3 {
			seen.PollFetches(ctx).EachRecord(func(*kgo.Record) { n++ })
		}
		if n < total/3 {
			return fmt.Errorf("%d committed", n)
		}
		return nil
	})
	w1.kill()
	p2 := freeport.Port(t)
	w2 := startWorker(t, "distributed", p2, eosWorkerProps(b, p2))
	wg.Wait()
	got := committedValues(t, b, "eos-out", total, 5*time.Second)
	if err := sameSet(got, want); err != nil {
		t.Fatalf("read_committed after the kill: %v", err)
	}
	st := waitRunning(t, w2.url, "eos-file", 1)
	if "http://"+st.Tasks[0].WorkerID != w2.url {
		t.Fatalf("task not on the surviving worker: %+v", st)
	}
}

// Zombie fencing and preflight validation under exactly-once support:
//   - a producer holding task 0's transactional id with an open transaction
//     (a task instance that outlived its worker's membership) is fenced when
//     the stopped connector's offsets are altered, so its records never
//     become visible;
//   - exactly.once.support=required is refused for a connector that cannot
//     promise it, and transaction.boundary=connector for one that cannot
//     define boundaries, with Kafka's messages.
func TestExactlyOnceFencingAndValidation(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "in.txt", numbered("row", 0, 10))
	port := freeport.Port(t)
	w := startWorker(t, "distributed", port, eosWorkerProps(b, port))

	for _, c := range []struct {
		key, val, file, want string
	}{
		{"exactly.once.support", "required", "", "The connector does not support exactly-once semantics with the provided configuration."},
		{"transaction.boundary", "connector", file, "The connector does not support connector-defined transaction boundaries with the given configuration."},
	} {
		cfg := map[string]string{"connector.class": "FileStreamSource", "topic": "x", c.key: c.val}
		if c.file != "" {
			cfg["file"] = c.file
		}
		var v validation
		mustCall(t, w.url, "PUT", "/connector-plugins/FileStreamSource/config/validate", cfg, 200, &v)
		if errs := v.errorsOf(c.key); len(errs) != 1 || !strings.HasPrefix(errs[0], c.want) {
			t.Errorf("%s=%s: %s: %q; want %q", c.key, c.val, c.key, errs, c.want)
		}
	}

	poll.Until(t, 60*time.Second, "the connector to be created", func() error {
		code, body, err := call(w.url, "POST", "/connectors", map[string]any{"name": "fenced", "config": map[string]string{
			"connector.class": "FileStreamSource", "file": file, "topic": "fenced-out", "tasks.max": "1"}})
		if err != nil {
			return err
		}
		if code != 201 {
			return fmt.Errorf("%d %s", code, body)
		}
		return nil
	})
	waitRunning(t, w.url, "fenced", 1)
	if got := committedValues(t, b, "fenced-out", 10, time.Second); len(got) != 10 {
		t.Fatalf("%d records before the stop, want 10: %v", len(got), got)
	}
	mustCall(t, w.url, "PUT", "/connectors/fenced/stop", nil, 202, nil)
	poll.Until(t, 30*time.Second, "the connector to stop", func() error {
		st, err := status(w.url, "fenced")
		if err != nil {
			return err
		}
		if st.Connector.State != "STOPPED" || len(st.Tasks) != 0 {
			return fmt.Errorf("%+v", st)
		}
		return nil
	})

	zombie := b.client(t, kgo.TransactionalID("eos-cluster-fenced-0"), kgo.DefaultProduceTopic("fenced-out"))
	if err := zombie.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := zombie.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	mustCall(t, w.url, "DELETE", "/connectors/fenced/offsets", nil, 200, nil)
	err := zombie.EndTransaction(ctx, kgo.TryCommit)
	if err == nil {
		t.Fatal("a producer holding the stopped task's transactional id committed after the offsets were reset")
	}
	if !strings.Contains(err.Error(), "FENCED") && !strings.Contains(err.Error(), "EPOCH") && !errors.Is(err, kgo.ErrAborting) {
		t.Logf("zombie commit: %v", err)
	}
	for _, v := range committedValues(t, b, "fenced-out", 10, 2*time.Second) {
		if v == "zombie" {
			t.Fatal("the fenced producer's record is visible to read_committed")
		}
	}
	// Resumed after the reset, the task copies the file again from its
	// start, in its own transactions.
	mustCall(t, w.url, "PUT", "/connectors/fenced/resume", nil, 202, nil)
	if got := committedValues(t, b, "fenced-out", 20, 2*time.Second); len(got) != 20 {
		t.Fatalf("%d records after the reset, want 20", len(got))
	}
}
