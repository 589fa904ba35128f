// Command connector is an example of a source connector written with the
// Connect SDK: "counter" emits one record per interval with an increasing
// number, keeping the number as its source offset so that a restarted
// worker continues the count. It registers the connector and runs a
// standalone worker with it:
//
//	go run ./examples/connector -bootstrap 127.0.0.1:9092 -topic counts
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/vltava/vltava/connect"
	"github.com/vltava/vltava/connect/runtime"
)

const class = "com.example.CounterSourceConnector"

var def = connect.NewConfigDef().
	Define(connect.ConfigKey{Name: "topic", Type: connect.TypeString, Required: true, Importance: connect.High, Doc: "Topic to write the counts to."}).
	Define(connect.ConfigKey{Name: "interval.ms", Type: connect.TypeLong, Default: int64(1000), Importance: connect.Medium, Doc: "Time between records.", Check: connect.InRange(1, 1<<40)})

type counter struct{ props map[string]string }

func (c *counter) Version() string                     { return "1.0" }
func (c *counter) Config() *connect.ConfigDef          { return def }
func (c *counter) Initialize(connect.ConnectorContext) {}
func (c *counter) Start(props map[string]string) error { c.props = props; return nil }
func (c *counter) Stop() error                         { return nil }
func (c *counter) NewTask() connect.SourceTask         { return &counterTask{} }
func (c *counter) TaskConfigs(int) ([]map[string]string, error) {
	cfg := map[string]string{"topic": c.props["topic"]}
	if v, ok := c.props["interval.ms"]; ok {
		cfg["interval.ms"] = v
	}
	return []map[string]string{cfg}, nil
}

type counterTask struct {
	ctx      connect.SourceTaskContext
	topic    string
	interval time.Duration
	next     int64
}

var partition = map[string]any{"counter": "main"}

func (t *counterTask) Version() string                          { return "1.0" }
func (t *counterTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }
func (t *counterTask) Commit() error                            { return nil }
func (t *counterTask) Stop() error                              { return nil }

func (t *counterTask) Start(props map[string]string) error {
	p, err := def.Parse(props)
	if err != nil {
		return err
	}
	t.topic, t.interval = p["topic"].(string), time.Duration(p["interval.ms"].(int64))*time.Millisecond
	off, err := t.ctx.OffsetStorageReader().Offset(partition)
	if err != nil {
		return err
	}
	if n, ok := off["next"].(int64); ok {
		t.next = n
	}
	return nil
}

func (t *counterTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	select {
	case <-ctx.Done():
		return nil, nil
	case <-time.After(t.interval):
	}
	n := t.next
	t.next++
	return []connect.SourceRecord{{
		Record:          connect.Record{Topic: t.topic, ValueSchema: &connect.Schema{Type: connect.String}, Value: strconv.FormatInt(n, 10)},
		SourcePartition: partition,
		SourceOffset:    map[string]any{"next": n + 1},
	}}, nil
}

func init() {
	connect.RegisterSource(class, "1.0", func() connect.SourceConnector { return &counter{} })
}

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:9092", "Kafka bootstrap servers")
	topic := flag.String("topic", "counts", "topic to write to")
	rest := flag.String("listeners", "http://127.0.0.1:8083", "the worker's REST listener")
	flag.Parse()
	r, err := runtime.Start(runtime.Standalone, map[string]string{
		"bootstrap.servers":            *bootstrap,
		"listeners":                    *rest,
		"key.converter":                "org.apache.kafka.connect.storage.StringConverter",
		"value.converter":              "org.apache.kafka.connect.storage.StringConverter",
		"offset.storage.file.filename": filepath.Join(os.TempDir(), "counter.offsets"),
		"offset.flush.interval.ms":     "1000",
	}, map[string]string{"name": "counter", "connector.class": class, "topic": *topic})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("counter running; REST API on", *rest, "- Ctrl-C stops it")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	r.Close()
}
