package streamstest

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/streams"
)

// restoreEvents records OnRestoreStart and OnRestoreEnd calls in order.
type restoreEvents struct {
	mu     sync.Mutex
	starts map[string]int64 // store/partition -> start offset
	ends   map[string]int64 // store/partition -> total restored
}

func (r *restoreEvents) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts, r.ends = map[string]int64{}, map[string]int64{}
}

func (r *restoreEvents) OnRestoreStart(store string, p int32, start, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[fmt.Sprintf("%s/%d", store, p)] = start
}

func (r *restoreEvents) OnBatchRestored(string, int32, int64, int64) {}

func (r *restoreEvents) OnRestoreEnd(store string, p int32, total int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ends[fmt.Sprintf("%s/%d", store, p)] = total
}

// TestStandbyReplicas runs a count as two instances with
// num.standby.replicas=1 under exactly_once_v2: each instance keeps a
// standby of every task the other runs, QueryMetadataForKey names it as a
// key's standby host, and when one instance leaves, the other takes its
// tasks over from the standbys, restoring only the changelog past the
// standby's position, with counts still equal to a direct computation.
func TestStandbyReplicas(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("words"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 4, 1, nil, "words", "counts"); err != nil {
		t.Fatal(err)
	}
	const app = "standby"
	start := func(server string, rl streams.RestoreListener) *streams.App {
		b := streams.NewBuilder()
		streams.NewStream(b, "words", streams.String(), streams.String()).GroupByKey().
			Count(streams.Materialized("counts-store")).ToStream().To("counts")
		topo, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := streams.ParseConfig(map[string]string{"application.id": app, "bootstrap.servers": addr,
			"processing.guarantee": "exactly_once_v2", "num.standby.replicas": "1", "state.dir": t.TempDir(),
			"application.server": server})
		if err != nil {
			t.Fatal(err)
		}
		opts := []streams.AppOption{streams.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}
		if rl != nil {
			opts = append(opts, streams.WithRestoreListener(rl))
		}
		a, err := streams.New(topo, cfg, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { a.Close() })
		return a
	}
	rl := &restoreEvents{}
	rl.reset()
	a := start("a:1", nil)
	b := start("b:1", rl)

	rng := rand.New(rand.NewSource(3))
	want := map[string]int64{}
	produce := func(n int) {
		var rs []*kgo.Record
		for i := 0; i < n; i++ {
			w := fmt.Sprintf("w%d", rng.Intn(100))
			want[w]++
			rs = append(rs, &kgo.Record{Key: []byte(w), Value: []byte(w)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("counts"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]int64{}
	converge := func(what string) {
		poll.Until(t, 2*time.Minute, what, func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := out.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Key)] = int64(binary.BigEndian.Uint64(r.Value)) })
			for w, n := range want {
				if got[w] != n {
					return fmt.Errorf("%s: %d, want %d", w, got[w], n)
				}
			}
			return nil
		})
	}
	tasks := func(x *streams.App) (active, standby []string) {
		for _, md := range x.LocalThreadsMetadata() {
			for _, id := range md.ActiveTasks {
				active = append(active, id.String())
			}
			for _, id := range md.StandbyTasks {
				standby = append(standby, id.String())
			}
		}
		slices.Sort(active)
		slices.Sort(standby)
		return
	}
	produce(3000)
	converge("counts with two instances")
	poll.Until(t, time.Minute, "each instance a standby of the other's tasks", func() error {
		aa, as := tasks(a)
		ba, bs := tasks(b)
		if len(aa)+len(ba) != 4 || !slices.Equal(as, ba) || !slices.Equal(bs, aa) || len(aa) == 0 || len(ba) == 0 {
			return fmt.Errorf("a: active %v standby %v; b: active %v standby %v", aa, as, ba, bs)
		}
		return nil
	})
	aActive, _ := tasks(a)
	for w := range want {
		md, err := streams.QueryMetadataForKey(a, "counts-store", w, streams.String())
		if err != nil {
			t.Fatal(err)
		}
		standbyOn := "b:1"
		if !slices.Contains(aActive, md.Task.String()) {
			standbyOn = "a:1"
		}
		if md.ActiveHost == standbyOn || !slices.Equal(md.StandbyHosts, []string{standbyOn}) {
			t.Errorf("%s (task %s): active %q, standby %v; want the standby on %s", w, md.Task, md.ActiveHost, md.StandbyHosts, standbyOn)
		}
		break
	}
	produce(3000)
	converge("counts after more input")
	// Give b's standbys a moment to read the last commits, then take a
	// away: b takes a's tasks over from its standbys.
	time.Sleep(2 * time.Second)
	rl.reset()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, time.Minute, "b running every task", func() error {
		ba, _ := tasks(b)
		if len(ba) != 4 {
			return fmt.Errorf("b active %v", ba)
		}
		return nil
	})
	produce(2000)
	converge("counts after a left")
	ends, err := adm.ListEndOffsets(ctx, app+"-counts-store-changelog")
	if err != nil {
		t.Fatal(err)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for _, id := range aActive {
		var p int32
		fmt.Sscanf(id, "0_%d", &p)
		key := fmt.Sprintf("counts-store/%d", p)
		startAt, ok := rl.starts[key]
		end, _ := ends.Lookup(app+"-counts-store-changelog", p)
		if !ok || startAt <= 0 {
			t.Errorf("task %s: restore started at %d (seen %v); want the standby's position, past 0", id, startAt, ok)
		}
		if rl.ends[key] >= end.Offset {
			t.Errorf("task %s: %d changelog records restored of %d; want only what the standby had not read", id, rl.ends[key], end.Offset)
		}
		t.Logf("task %s: restored from offset %d, %d records; changelog end now %d", id, startAt, rl.ends[key], end.Offset)
	}
}
