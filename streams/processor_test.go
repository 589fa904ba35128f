package streams_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/streams"
)

// countingProcessor counts records per key in a store and, every 10 ms of
// stream time, forwards all counts; every second of wall-clock time it
// forwards a tick.
type countingProcessor struct {
	ctx   streams.ProcessorContext[string, string]
	store *streams.KeyValueStore[string, int64]
}

func (p *countingProcessor) Init(ctx streams.ProcessorContext[string, string]) error {
	p.ctx = ctx
	p.store = streams.GetKeyValueStore(ctx, "counts", streams.String(), streams.Int64())
	ctx.Schedule(10*time.Millisecond, streams.PunctuateStreamTime, func(ts int64) {
		_ = p.store.All(func(k string, v int64) bool {
			ctx.Forward(streams.Record[string, string]{Key: k, Value: fmt.Sprint(v), Timestamp: ts})
			return true
		})
	})
	ctx.Schedule(time.Second, streams.PunctuateWallClockTime, func(ts int64) {
		ctx.Forward(streams.Record[string, string]{Key: "tick", Value: "wall", Timestamp: ts})
	})
	return nil
}

func (p *countingProcessor) Process(r streams.Record[string, string]) error {
	n, _, err := p.store.Get(r.Key)
	if err != nil {
		return err
	}
	return p.store.Put(r.Key, n+1)
}

func TestProcessorAPI(t *testing.T) {
	b := streams.NewBuilder()
	streams.AddKeyValueStore(b, "counts", streams.String(), streams.Int64(), streams.InMemory, true)
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.Process(s, func() streams.Processor[string, string, string, string] { return &countingProcessor{} },
		streams.WithStores("counts")).To("out")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{ApplicationID: "p", WallClock: time.UnixMilli(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	out := streams.CreateOutputTopic(d, "out", streams.String(), streams.String())
	pipe(t, in, "a", "", 0) // first stream time: punctuation due at 10
	pipe(t, in, "b", "", 4)
	pipe(t, in, "a", "", 9)
	expect(t, "before 10", read(t, out))
	pipe(t, in, "a", "", 12)
	expect(t, "at 12", read(t, out), "a=3@12", "b=1@12")
	pipe(t, in, "b", "", 25) // fires once (not per missed interval)
	expect(t, "at 25", read(t, out), "a=3@25", "b=2@25")
	if err := d.AdvanceWallClockTime(999 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	expect(t, "wall 999", read(t, out))
	if err := d.AdvanceWallClockTime(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	expect(t, "wall 1000", read(t, out), "tick=wall@1000")
	cl := streams.CreateOutputTopic(d, "p-counts-changelog", streams.String(), streams.Int64())
	expect(t, "changelog", read(t, cl), "a=1@0", "b=1@4", "a=2@9", "a=3@12", "b=2@25")
}

func TestDeserializationHandler(t *testing.T) {
	build := func() *streams.Topology {
		b := streams.NewBuilder()
		streams.NewStream(b, "in", streams.String(), streams.Int64()).To("out")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	t.Run("fail", func(t *testing.T) {
		d, err := streams.NewTestDriver(build(), streams.TestDriverConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		in := streams.CreateInputTopic(d, "in", streams.String(), streams.Int64())
		err = in.PipeRaw([]byte("k"), []byte{1, 2, 3}, 1)
		if err == nil || !strings.Contains(err.Error(), "LogAndFail") {
			t.Fatalf("undecodable record: %v, want a LogAndFail error", err)
		}
	})
	t.Run("continue", func(t *testing.T) {
		d, err := streams.NewTestDriver(build(), streams.TestDriverConfig{DeserializationHandler: streams.DeserializationContinue})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		in := streams.CreateInputTopic(d, "in", streams.String(), streams.Int64())
		if err := in.PipeRaw([]byte("k"), []byte{1, 2, 3}, 1); err != nil {
			t.Fatal(err)
		}
		pipe(t, in, "k", 7, 2)
		expect(t, "out", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.Int64())), "k=7@2")
		if m := d.Metrics(); m.Skipped != 1 || m.Processed != 1 {
			t.Errorf("metrics %+v, want 1 skipped, 1 processed", m)
		}
	})
}

func TestParseConfig(t *testing.T) {
	c, err := streams.ParseConfig(map[string]string{"application.id": "a", "processing.guarantee": "exactly_once_v2", "bootstrap.servers": "h:1,h:2"})
	if err != nil || c.CommitInterval != 100*time.Millisecond || len(c.BootstrapServers) != 2 {
		t.Fatalf("EOS config %+v %v: want 100ms commit interval, two servers", c, err)
	}
	for key, val := range map[string]string{"num.standby.replicas": "-1", "no.such.key": "x", "processing.guarantee": "exactly_once", "statestore.cache.max.bytes": "10485760", "max.task.idle.ms": "0"} {
		_, err := streams.ParseConfig(map[string]string{"application.id": "a", key: val})
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: %v, want an error naming the key", key, val, err)
		}
	}
	if _, err := streams.ParseConfig(map[string]string{"application.id": "a", "max.task.idle.ms": "-1"}); err != nil {
		t.Errorf("max.task.idle.ms=-1 (never wait, what a task does): %v", err)
	}
}
