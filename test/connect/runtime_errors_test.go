package connect

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/connect/runner"
	cworker "github.com/vltava/vltava/internal/connect/worker"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// startInProcess runs a standalone worker in the test process (so it sees
// the test's plugins).
func startInProcess(t testing.TB, b *broker, extra ...string) string {
	t.Helper()
	port := freeport.Port(t)
	props := map[string]string{
		"bootstrap.servers":            b.addr,
		"listeners":                    fmt.Sprintf("http://127.0.0.1:%d", port),
		"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":              "org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms":     "500",
		"offset.storage.file.filename": filepath.Join(t.TempDir(), "offsets"),
	}
	for _, kv := range extra {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	r, err := runner.Start(runner.Options{Mode: cworker.Standalone, Worker: props})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

func produce(t testing.TB, b *broker, topic string, values ...string) {
	t.Helper()
	cl := b.client(t, kgo.AllowAutoTopicCreation())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// Kafka's JsonConverter and a chain of two transformations (Cast$Value,
// then ExtractField$Value): records the converter cannot read and a record
// the Cast cannot cast go to the dead letter queue with Kafka's
// __connect.errors.* context headers, the stage and the class that failed
// included, while the good ones reach the sink transformed
// (errors.tolerance=all); with errors.tolerance=none the first bad record
// fails the task with a trace, and the worker stays up.
func TestDeadLetterQueueWithContextHeaders(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	u := startInProcess(t, b)
	dir := t.TempDir()
	out := filepath.Join(dir, "good.txt")
	values := []string{`{"a":1}`, `not json`, `{"a":"2"}`, `{bad`, `{"a":"x"}`, `{"a":3}`}
	produce(t, b, "mixed", values...)
	const jsonConverter = "org.apache.kafka.connect.json.JsonConverter"
	chain := map[string]string{
		"value.converter":                jsonConverter,
		"value.converter.schemas.enable": "false",
		"transforms":                     "cast,extract",
		"transforms.cast.type":           "org.apache.kafka.connect.transforms.Cast$Value",
		"transforms.cast.spec":           "a:int32",
		"transforms.extract.type":        "org.apache.kafka.connect.transforms.ExtractField$Value",
		"transforms.extract.field":       "a",
	}
	cfg := map[string]string{
		"connector.class": "FileStreamSink", "file": out, "topics": "mixed",
		"errors.tolerance":                                "all",
		"errors.log.enable":                               "true",
		"errors.log.include.messages":                     "true",
		"errors.deadletterqueue.topic.name":               "mixed-dlq",
		"errors.deadletterqueue.topic.replication.factor": "1",
		"errors.deadletterqueue.context.headers.enable":   "true",
	}
	for k, v := range chain {
		cfg[k] = v
	}
	mustCall(t, u, "PUT", "/connectors/tolerant/config", cfg, 201, nil)
	poll.Until(t, 60*time.Second, "the good records in the sink, transformed", func() error {
		return sameSet(lines(out), []string{"1", "2", "3"})
	})
	cl := b.client(t, kgo.ConsumeTopics("mixed-dlq"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var dlq []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(dlq) < 3 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { dlq = append(dlq, r) })
	}
	if len(dlq) != 3 {
		t.Fatalf("dead letter queue: %d records, want 3", len(dlq))
	}
	for i, w := range []struct {
		value, offset, stage, class, message string
	}{
		{`not json`, "1", "VALUE_CONVERTER", jsonConverter, "Converting byte[] to Kafka Connect data failed"},
		{`{bad`, "3", "VALUE_CONVERTER", jsonConverter, "Converting byte[] to Kafka Connect data failed"},
		{`{"a":"x"}`, "4", "TRANSFORMATION", "org.apache.kafka.connect.transforms.Cast$Value", "could not be parsed"},
	} {
		r := dlq[i]
		h := map[string]string{}
		for _, kv := range r.Headers {
			h[kv.Key] = string(kv.Value)
		}
		if string(r.Value) != w.value {
			t.Fatalf("DLQ record %d: value %q, want the original %q", i, r.Value, w.value)
		}
		want := map[string]string{
			"__connect.errors.topic":          "mixed",
			"__connect.errors.partition":      "0",
			"__connect.errors.offset":         w.offset,
			"__connect.errors.connector.name": "tolerant",
			"__connect.errors.task.id":        "0",
			"__connect.errors.stage":          w.stage,
			"__connect.errors.class.name":     w.class,
		}
		for k, v := range want {
			if h[k] != v {
				t.Fatalf("DLQ record %d header %s = %q, want %q (all: %v)", i, k, h[k], v, h)
			}
		}
		for _, k := range []string{"__connect.errors.exception.class.name", "__connect.errors.exception.message", "__connect.errors.exception.stacktrace"} {
			if h[k] == "" {
				t.Fatalf("DLQ record %d lacks %s: %v", i, k, h)
			}
		}
		if !strings.Contains(h["__connect.errors.exception.message"], w.message) {
			t.Fatalf("DLQ record %d exception message %q, want it to contain %q", i, h["__connect.errors.exception.message"], w.message)
		}
	}

	// errors.tolerance=none: the task fails at the first bad record.
	strict := map[string]string{"connector.class": "FileStreamSink", "file": filepath.Join(dir, "strict.txt"), "topics": "mixed"}
	for k, v := range chain {
		strict[k] = v
	}
	mustCall(t, u, "PUT", "/connectors/strict/config", strict, 201, nil)
	poll.Until(t, 60*time.Second, "the strict sink's task to fail", func() error {
		s, err := status(u, "strict")
		if err != nil {
			return err
		}
		if len(s.Tasks) != 1 || s.Tasks[0].State != "FAILED" || !strings.Contains(s.Tasks[0].Trace, "Tolerance exceeded") {
			return fmt.Errorf("%+v", s)
		}
		if s.Connector.State != "RUNNING" {
			return fmt.Errorf("connector %s", s.Connector.State)
		}
		return nil
	})
	mustCall(t, u, "GET", "/", nil, 200, nil)
	waitRunning(t, u, "tolerant", 1)
}

// A task that fails at start is FAILED with a trace and the worker keeps
// serving; with vltava.task.auto.restart=true it is restarted with backoff
// and runs once the cause is gone.
func TestTaskFailingAtStart(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	u := startInProcess(t, b, "vltava.task.auto.restart=true", "vltava.task.auto.restart.backoff.max.ms=2000")
	dir := filepath.Join(t.TempDir(), "not-yet")
	out := filepath.Join(dir, "out.txt")
	produce(t, b, "later", "x", "y")
	mustCall(t, u, "POST", "/connectors", map[string]any{"name": "doomed", "config": map[string]string{
		"connector.class": "FileStreamSink", "file": out, "topics": "later"}}, 201, nil)
	poll.Until(t, 60*time.Second, "the task to be FAILED with a trace", func() error {
		s, err := status(u, "doomed")
		if err != nil {
			return err
		}
		if len(s.Tasks) != 1 || s.Tasks[0].State != "FAILED" || !strings.Contains(s.Tasks[0].Trace, "couldn't find or create file") {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
	mustCall(t, u, "GET", "/connectors", nil, 200, nil)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, u, "doomed", 1)
	poll.Until(t, 60*time.Second, "the restarted task to write", func() error { return sameSet(lines(out), []string{"x", "y"}) })
}
