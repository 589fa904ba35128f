package streamstest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/streams"
)

type fkOrder struct {
	Customer string `json:"customer"`
	Amount   int    `json:"amount"`
}

// restoreLog records a restore listener's calls.
type restoreLog struct {
	mu      sync.Mutex
	starts  map[string]int64 // store/partition -> end offset
	batches map[string]int64 // store/partition -> records in batches
	ends    map[string]int64 // store/partition -> total restored
}

func newRestoreLog() *restoreLog {
	return &restoreLog{starts: map[string]int64{}, batches: map[string]int64{}, ends: map[string]int64{}}
}

func (l *restoreLog) OnRestoreStart(store string, p int32, _, end int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts[fmt.Sprintf("%s/%d", store, p)] = end
}

func (l *restoreLog) OnBatchRestored(store string, p int32, _ int64, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches[fmt.Sprintf("%s/%d", store, p)] += n
}

func (l *restoreLog) OnRestoreEnd(store string, p int32, total int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ends[fmt.Sprintf("%s/%d", store, p)] = total
}

// TestForeignKeyJoinAgainstBroker runs a foreign-key join of orders (4
// partitions) to customers (2 partitions) in an App against a broker: the
// internal topics are sized from each side, and the joined table equals a
// direct computation. The App is then closed and started again with a
// restore listener: every store, the subscription store among them, is
// restored from its changelog (the listener's batch counts add up to its
// totals), and a customer renamed after the restart reaches every order
// that points at it, which needs the restored subscriptions.
func TestForeignKeyJoinAgainstBroker(t *testing.T) {
	addr := startBroker(t)
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	if _, err := adm.CreateTopics(ctx, 4, 1, nil, "orders", "enriched"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopics(ctx, 2, 1, nil, "customers"); err != nil {
		t.Fatal(err)
	}
	const app = "fkjoin"
	topo := func() *streams.Topology {
		b := streams.NewBuilder()
		orders := streams.NewTable(b, "orders", streams.String(), streams.JSON[fkOrder]())
		customers := streams.NewTable(b, "customers", streams.String(), streams.String())
		streams.ForeignKeyJoin(orders, customers, func(o fkOrder) string { return o.Customer },
			func(o fkOrder, name string) string { return fmt.Sprintf("%d %s", o.Amount, name) },
			streams.Materialized("enriched-store")).ToStream().To("enriched")
		tp, err := b.Build()
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	stateDir := t.TempDir()
	run := func(opts ...streams.AppOption) *streams.App {
		cfg, err := streams.ParseConfig(map[string]string{"application.id": app, "bootstrap.servers": addr,
			"processing.guarantee": "exactly_once_v2", "state.dir": stateDir})
		if err != nil {
			t.Fatal(err)
		}
		a, err := streams.New(topo(), cfg, append(opts, streams.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))...)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		return a
	}

	rng := rand.New(rand.NewSource(7))
	customers, orders := map[string]string{}, map[string]fkOrder{}
	produce := func(rs ...*kgo.Record) {
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var rs []*kgo.Record
	for i := 0; i < 20; i++ {
		c := fmt.Sprintf("c%d", i)
		customers[c] = fmt.Sprintf("name%d", i)
		rs = append(rs, &kgo.Record{Topic: "customers", Key: []byte(c), Value: []byte(customers[c])})
	}
	produce(rs...)
	rs = nil
	for i := 0; i < 400; i++ {
		id := fmt.Sprintf("o%d", rng.Intn(200))
		o := fkOrder{Customer: fmt.Sprintf("c%d", rng.Intn(25)), Amount: i} // c20..c24 do not exist
		orders[id] = o
		v, _ := json.Marshal(o)
		rs = append(rs, &kgo.Record{Topic: "orders", Key: []byte(id), Value: v})
	}
	produce(rs...)
	for _, c := range []string{"c3", "c21"} { // one customer deleted, one created
		if c == "c3" {
			delete(customers, c)
			produce(&kgo.Record{Topic: "customers", Key: []byte(c)})
		} else {
			customers[c] = "late"
			produce(&kgo.Record{Topic: "customers", Key: []byte(c), Value: []byte("late")})
		}
	}

	want := func() map[string]string {
		out := map[string]string{}
		for id, o := range orders {
			if name, ok := customers[o.Customer]; ok {
				out[id] = fmt.Sprintf("%d %s", o.Amount, name)
			}
		}
		return out
	}
	out, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("enriched"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	got := map[string]string{}
	converge := func(what string) {
		poll.Until(t, 2*time.Minute, what, func() error {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			fs := out.PollFetches(pctx)
			cancel()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Value == nil {
					delete(got, string(r.Key))
				} else {
					got[string(r.Key)] = string(r.Value)
				}
			})
			w := want()
			var diff []string
			for k, v := range w {
				if got[k] != v {
					diff = append(diff, fmt.Sprintf("%s: %q want %q", k, got[k], v))
				}
			}
			for k, v := range got {
				if _, ok := w[k]; !ok {
					diff = append(diff, fmt.Sprintf("%s: %q want none", k, v))
				}
			}
			if len(diff) > 0 {
				return fmt.Errorf("%d keys differ, e.g. %s", len(diff), strings.Join(diff[:min(3, len(diff))], "; "))
			}
			return nil
		})
	}

	a := run()
	converge("the joined table")
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var reg, resp, subLog string
	for name, d := range topics {
		switch {
		case strings.HasPrefix(name, app+"-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-") && strings.HasSuffix(name, "-topic"):
			reg = name
			if len(d.Partitions) != 2 {
				t.Errorf("%s: %d partitions, want the right table's 2", name, len(d.Partitions))
			}
		case strings.HasPrefix(name, app+"-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-") && strings.HasSuffix(name, "-topic"):
			resp = name
			if len(d.Partitions) != 4 {
				t.Errorf("%s: %d partitions, want the left table's 4", name, len(d.Partitions))
			}
		case strings.HasPrefix(name, app+"-KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-") && strings.HasSuffix(name, "-changelog"):
			subLog = name
			if len(d.Partitions) != 2 {
				t.Errorf("%s: %d partitions, want 2", name, len(d.Partitions))
			}
		}
	}
	if reg == "" || resp == "" || subLog == "" {
		t.Fatalf("internal topics missing (registration %q, response %q, subscription changelog %q)", reg, resp, subLog)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	rl := newRestoreLog()
	a = run(streams.WithRestoreListener(rl))
	defer a.Close()
	// Renamed after the restart: every order of c5 follows.
	customers["c5"] = "renamed"
	produce(&kgo.Record{Topic: "customers", Key: []byte("c5"), Value: []byte("renamed")})
	converge("the joined table after a restart and a rename")

	ends, err := adm.ListEndOffsets(ctx, subLog)
	if err != nil {
		t.Fatal(err)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	restored := 0
	for key, total := range rl.ends {
		if rl.batches[key] != total {
			t.Errorf("%s: batches restored %d records, the end reported %d", key, rl.batches[key], total)
		}
		store, part, _ := strings.Cut(key, "/")
		if strings.HasPrefix(store, "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-") {
			var p int32
			fmt.Sscan(part, &p)
			end, _ := ends.Lookup(subLog, p)
			if rl.starts[key] != end.Offset || total == 0 {
				t.Errorf("%s: restore started towards offset %d with %d restored; the changelog ends at %d", key, rl.starts[key], total, end.Offset)
			}
			restored++
		}
	}
	if restored != 2 {
		t.Errorf("subscription store partitions restored: %d, want 2 (%v)", restored, rl.ends)
	}
}
