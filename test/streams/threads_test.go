package streamstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/streams"
)

// TestStreamThreadsAndInternalTopics runs a count with
// num.stream.threads=2 against a broker: the two threads of one App split
// the four tasks between them, the counts (output and interactive queries
// across both threads' tasks) equal a direct count, and the store's
// changelog is <application.id>-<store>-changelog, compacted, with a
// partition per task. A join of topics with different partition counts
// fails Start, naming both.
func TestStreamThreadsAndInternalTopics(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("th-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	for topic, parts := range map[string]int32{"th-in": 4, "th-out": 4, "cp-a": 4, "cp-b": 2} {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	newApp := func(id string, b *streams.Builder) *streams.App {
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := streams.ParseConfig(map[string]string{"application.id": id, "bootstrap.servers": addr,
			"num.stream.threads": "2", "state.dir": t.TempDir(), "commit.interval.ms": "100"})
		if err != nil {
			t.Fatal(err)
		}
		a, err := streams.New(topo, cfg, streams.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}

	t.Run("co-partitioning", func(t *testing.T) {
		b := streams.NewBuilder()
		l := streams.NewStream(b, "cp-a", streams.String(), streams.String())
		r := streams.NewStream(b, "cp-b", streams.String(), streams.String())
		streams.Join(l, r, func(x, y string) string { return x + y }, streams.JoinWindowsOfTimeDifferenceWithNoGrace(time.Second)).To("th-out")
		err := newApp("copart", b).Start(ctx)
		if err == nil || !strings.Contains(err.Error(), "co-partitioned") || !strings.Contains(err.Error(), `"cp-a" (4 partitions)`) || !strings.Contains(err.Error(), `"cp-b" (2 partitions)`) {
			t.Fatalf("Start: %v, want a co-partitioning error naming cp-a (4) and cp-b (2)", err)
		}
	})

	b := streams.NewBuilder()
	streams.NewStream(b, "th-in", streams.String(), streams.String()).GroupByKey().
		Count(streams.Materialized("th-counts")).ToStream().To("th-out")
	a := newApp("threads", b)
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	var rs []*kgo.Record
	for i := 0; i < 2000; i++ {
		k := fmt.Sprintf("k%d", (i*7)%50)
		want[k]++
		rs = append(rs, &kgo.Record{Key: []byte(k), Value: []byte("v")})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("th-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int64{}
	poll.Until(t, 2*time.Minute, "output counts equal the direct count", func() error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := out.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) })
		for k, n := range want {
			if got[k] != n {
				return fmt.Errorf("%s: %d, want %d", k, got[k], n)
			}
		}
		return nil
	})

	poll.Until(t, time.Minute, "two threads, each running tasks", func() error {
		md := a.LocalThreadsMetadata()
		seen := map[string]bool{}
		for _, th := range md {
			if len(th.ActiveTasks) == 0 {
				return fmt.Errorf("thread %s runs no task: %+v", th.ThreadName, md)
			}
			for _, id := range th.ActiveTasks {
				if seen[id.String()] {
					return fmt.Errorf("task %s on two threads: %+v", id, md)
				}
				seen[id.String()] = true
			}
		}
		if len(md) != 2 || len(seen) != 4 {
			return fmt.Errorf("%d threads, %d tasks: %+v", len(md), len(seen), md)
		}
		return nil
	})
	st, err := streams.QueryKeyValueStore(a, "th-counts", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	for k, n := range want {
		if v, ok, err := st.Get(k); err != nil || !ok || v != n {
			t.Errorf("store th-counts %s: %d %v %v, want %d", k, v, ok, err, n)
		}
	}

	const changelog = "threads-th-counts-changelog"
	details, err := adm.ListTopics(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := details[changelog]; !ok || d.Err != nil || len(d.Partitions) != 4 {
		t.Errorf("changelog %s: %+v, want 4 partitions", changelog, details[changelog])
	}
	cfgs, err := adm.DescribeTopicConfigs(ctx, changelog)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfgs.On(changelog, nil)
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, kv := range c.Configs {
		if kv.Key == "cleanup.policy" {
			policy = kv.MaybeValue()
		}
	}
	if policy != "compact" {
		t.Errorf("%s cleanup.policy %q, want compact", changelog, policy)
	}
}
