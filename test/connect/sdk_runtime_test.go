package connect

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/vltava/vltava/connect"
	"github.com/vltava/vltava/connect/runtime"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// seqSource is a source connector written with the public SDK only: it
// emits "seq-<i>" for i below count, keeping the next i as its offset.
const seqClass = "com.example.test.SequenceSourceConnector"

var seqDef = connect.NewConfigDef().
	Define(connect.ConfigKey{Name: "topic", Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Topic to write to."}).
	Define(connect.ConfigKey{Name: "count", Type: connect.TypeLong, Default: int64(5), Importance: connect.Medium, Doc: "How many records.", Check: connect.InRange(1, 1000)})

type seqSource struct{ props map[string]string }

func (c *seqSource) Version() string                     { return "1.0" }
func (c *seqSource) Config() *connect.ConfigDef          { return seqDef }
func (c *seqSource) Initialize(connect.ConnectorContext) {}
func (c *seqSource) Start(props map[string]string) error { c.props = props; return nil }
func (c *seqSource) Stop() error                         { return nil }
func (c *seqSource) NewTask() connect.SourceTask         { return &seqTask{} }
func (c *seqSource) TaskConfigs(int) ([]map[string]string, error) {
	return []map[string]string{c.props}, nil
}

type seqTask struct {
	ctx         connect.SourceTaskContext
	topic       string
	next, count int64
}

var seqPartition = map[string]any{"seq": "main"}

func (t *seqTask) Version() string                          { return "1.0" }
func (t *seqTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }
func (t *seqTask) Commit() error                            { return nil }
func (t *seqTask) Stop() error                              { return nil }
func (t *seqTask) Start(props map[string]string) error {
	p, err := seqDef.Parse(props)
	if err != nil {
		return err
	}
	t.topic, t.count = p["topic"].(string), p["count"].(int64)
	off, err := t.ctx.OffsetStorageReader().Offset(seqPartition)
	if err != nil {
		return err
	}
	if n, ok := off["next"].(int64); ok {
		t.next = n
	}
	return nil
}

func (t *seqTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	if t.next >= t.count {
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
		return nil, nil
	}
	n := t.next
	t.next++
	return []connect.SourceRecord{{
		Record:          connect.Record{Topic: t.topic, ValueSchema: &connect.Schema{Type: connect.String}, Value: fmt.Sprintf("seq-%d", n)},
		SourcePartition: seqPartition,
		SourceOffset:    map[string]any{"next": n + 1},
	}}, nil
}

func init() {
	connect.RegisterSource(seqClass, "1.0", func() connect.SourceConnector { return &seqSource{} })
}

// A connector written with the public SDK (package connect), run by the
// public runtime (package connect/runtime): it is listed among the
// plugins, its ConfigDef feeds /config/validate and the 400 of a bad
// create, its records reach the topic, and a restarted worker resumes
// from the offset the task kept.
func TestSDKConnectorOnPublicRuntime(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	port := freeport.Port(t)
	u := fmt.Sprintf("http://127.0.0.1:%d", port)
	props := map[string]string{
		"bootstrap.servers":            b.addr,
		"listeners":                    u,
		"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":              "org.apache.kafka.connect.storage.StringConverter",
		"offset.flush.interval.ms":     "200",
		"offset.storage.file.filename": filepath.Join(t.TempDir(), "offsets"),
	}
	if _, err := runtime.Start(runtime.Distributed, props, map[string]string{"name": "x"}); err == nil {
		t.Fatal("a distributed worker took connectors at start")
	}
	w, err := runtime.Start(runtime.Standalone, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if w != nil {
			w.Close()
		}
	})
	var plugins []map[string]string
	mustCall(t, u, "GET", "/connector-plugins", nil, 200, &plugins)
	if !hasPlugin(plugins, seqClass, "source") {
		t.Fatalf("plugins: %v", plugins)
	}
	var v validation
	mustCall(t, u, "PUT", "/connector-plugins/SequenceSourceConnector/config/validate", map[string]string{"name": "seq", "connector.class": seqClass, "count": "0"}, 200, &v)
	if v.ErrorCount != 2 || len(v.errorsOf("topic")) != 1 || len(v.errorsOf("count")) != 1 {
		t.Fatalf("validate: %+v", v)
	}
	expectError(t, u, "POST", "/connectors", map[string]any{"name": "seq", "config": map[string]string{"connector.class": seqClass, "count": "0", "topic": "seq"}}, 400, "count")
	cfg := map[string]string{"name": "seq", "connector.class": "SequenceSource", "topic": "seq-out", "count": "20"}
	mustCall(t, u, "POST", "/connectors", map[string]any{"name": "seq", "config": cfg}, 201, nil)
	if got := topicValues(t, b, "seq-out", 20); sameSet(got, seqValues(0, 20)) != nil {
		t.Fatalf("seq-out: %v", got)
	}
	poll.Until(t, 30*time.Second, "the task's offset to be flushed", func() error {
		var off struct {
			Offsets []struct {
				Offset map[string]any `json:"offset"`
			} `json:"offsets"`
		}
		mustCall(t, u, "GET", "/connectors/seq/offsets", nil, 200, &off)
		if len(off.Offsets) != 1 || off.Offsets[0].Offset["next"] != float64(20) {
			return fmt.Errorf("%+v", off)
		}
		return nil
	})
	w.Close()
	w = nil

	cfg["count"] = "30"
	w, err = runtime.Start(runtime.Standalone, props, cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, u, "seq", 1)
	// Read until idle for two seconds: a re-read from the start would show.
	if got := committedValues(t, b, "seq-out", 30, 2*time.Second); sameSet(got, seqValues(0, 30)) != nil {
		t.Fatalf("seq-out after the restart: %d records, want seq-0..seq-29 once", len(got))
	}
}

func seqValues(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("seq-%d", i))
	}
	return out
}
