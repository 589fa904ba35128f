package streams_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vltava/vltava/streams"
)

type fkOrder struct {
	Customer string `json:"customer"`
	Amount   int    `json:"amount"`
}

// fkTopology joins orders (key order id) to customers (key customer id)
// by each order's customer, inner or left, into "enriched".
func fkTopology(left bool) *streams.Builder {
	b := streams.NewBuilder()
	orders := streams.NewTable(b, "orders", streams.String(), streams.JSON[fkOrder]())
	customers := streams.NewTable(b, "customers", streams.String(), streams.String())
	byCustomer := func(o fkOrder) string { return o.Customer }
	var out streams.Table[string, string]
	if left {
		out = streams.ForeignKeyLeftJoin(orders, customers, byCustomer, func(o fkOrder, name *string) string {
			n := "<none>"
			if name != nil {
				n = *name
			}
			return fmt.Sprintf("%d %s", o.Amount, n)
		}, streams.Materialized("enriched-store"))
	} else {
		out = streams.ForeignKeyJoin(orders, customers, byCustomer, func(o fkOrder, name string) string {
			return fmt.Sprintf("%d %s", o.Amount, name)
		}, streams.Materialized("enriched-store"))
	}
	out.ToStream().To("enriched")
	return b
}

// TestForeignKeyJoin drives the inner and the left foreign-key join
// through updates of both sides against a hand-computed table: a right
// row arriving late, a right row updated, an order moving to another
// customer (and no longer following the old one), a right row deleted, a
// left row deleted, and an order moving to a customer that does not exist.
func TestForeignKeyJoin(t *testing.T) {
	type step struct {
		topic, key, value string // value "" is a tombstone
		ts                int64
		inner, left       []string
	}
	o := func(c string, amount int) string { return fmt.Sprintf(`{"customer":%q,"amount":%d}`, c, amount) }
	steps := []step{
		{"customers", "c1", "Ann", 1, nil, nil},
		{"orders", "o1", o("c1", 10), 2, []string{"o1=10 Ann@2"}, []string{"o1=10 Ann@2"}},
		{"orders", "o2", o("c2", 5), 3, nil, []string{"o2=5 <none>@3"}},
		{"customers", "c2", "Bob", 4, []string{"o2=5 Bob@4"}, []string{"o2=5 Bob@4"}},
		{"customers", "c1", "Anna", 5, []string{"o1=10 Anna@5"}, []string{"o1=10 Anna@5"}},
		{"orders", "o1", o("c2", 11), 6, []string{"o1=11 Bob@6"}, []string{"o1=11 Bob@6"}},
		{"customers", "c1", "Al", 7, nil, nil},
		{"customers", "c2", "", 8, []string{"o1=<nil>@8", "o2=<nil>@8"}, []string{"o1=11 <none>@8", "o2=5 <none>@8"}},
		{"orders", "o2", "", 9, []string{"o2=<nil>@9"}, []string{"o2=<nil>@9"}},
		{"orders", "o3", o("c3", 1), 10, nil, []string{"o3=1 <none>@10"}},
		{"orders", "o3", o("c1", 2), 11, []string{"o3=2 Al@11"}, []string{"o3=2 Al@11"}},
		{"orders", "o3", o("c9", 2), 12, []string{"o3=<nil>@12"}, []string{"o3=2 <none>@12"}},
	}
	for _, left := range []bool{false, true} {
		name := "inner"
		if left {
			name = "left"
		}
		t.Run(name, func(t *testing.T) {
			d := driver(t, fkTopology(left))
			in := map[string]*streams.TestInputTopic[string, string]{
				"orders":    streams.CreateInputTopic(d, "orders", streams.String(), streams.String()),
				"customers": streams.CreateInputTopic(d, "customers", streams.String(), streams.String()),
			}
			out := streams.CreateOutputTopic(d, "enriched", streams.String(), streams.String())
			for i, s := range steps {
				var err error
				if s.value == "" {
					err = in[s.topic].PipeTombstone(s.key, s.ts)
				} else {
					err = in[s.topic].PipeInput(s.key, s.value, s.ts)
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				want := s.inner
				if left {
					want = s.left
				}
				expect(t, fmt.Sprintf("step %d (%s %s=%q)", i, s.topic, s.key, s.value), read(t, out), want...)
			}
			store, err := streams.QueryKeyValueStore(d, "enriched-store", streams.String(), streams.String())
			if err != nil {
				t.Fatal(err)
			}
			v, ok, err := store.Get("o3")
			want := map[bool]string{false: "", true: "2 <none>"}[left]
			if err != nil || ok != left || v != want {
				t.Errorf("enriched-store o3: %q %v %v, want %q %v", v, ok, err, want, left)
			}
		})
	}
}

// TestForeignKeyJoinDropsStaleAnswers replays an answer computed for an
// order's earlier value: the join drops it, where the answer for the
// current value, replayed, gives the current result again.
func TestForeignKeyJoinDropsStaleAnswers(t *testing.T) {
	d := driver(t, fkTopology(false))
	orders := streams.CreateInputTopic(d, "orders", streams.String(), streams.String())
	customers := streams.CreateInputTopic(d, "customers", streams.String(), streams.String())
	out := streams.CreateOutputTopic(d, "enriched", streams.String(), streams.String())
	pipe(t, customers, "c1", "Ann", 1)
	pipe(t, customers, "c2", "Bob", 2)
	pipe(t, orders, "o1", `{"customer":"c1","amount":1}`, 3)
	pipe(t, orders, "o1", `{"customer":"c2","amount":2}`, 4)
	expect(t, "results", read(t, out), "o1=1 Ann@3", "o1=2 Bob@4")

	var resp, reg string
	for _, tp := range d.OutputTopics() {
		switch {
		case strings.Contains(tp, "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-") && strings.HasSuffix(tp, "-topic"):
			resp = tp
		case strings.Contains(tp, "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-") && strings.HasSuffix(tp, "-topic"):
			reg = tp
		}
	}
	if !strings.HasPrefix(resp, "app-") || !strings.HasPrefix(reg, "app-") {
		t.Fatalf("internal topics %v: want app-…-SUBSCRIPTION-REGISTRATION-…-topic and -RESPONSE-…-topic", d.OutputTopics())
	}
	// The move from c1 to c2 unsubscribed o1 from c1: the subscription
	// store's changelog ends with a tombstone for (c1, o1).
	var changelog string
	for _, tp := range d.OutputTopics() {
		if strings.Contains(tp, "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-") && strings.HasSuffix(tp, "-changelog") {
			changelog = tp
		}
	}
	if changelog == "" {
		t.Fatalf("no subscription store changelog in %v", d.OutputTopics())
	}
	entries, err := streams.CreateOutputTopic(d, changelog, streams.Bytes(), streams.Bytes()).ReadRecordsToList()
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]bool{} // key -> present
	for _, e := range entries {
		last[string(e.Key)] = !e.IsNullValue
	}
	c1o1, c2o1 := "\x00\x00\x00\x02c1o1", "\x00\x00\x00\x02c2o1"
	if p, ok := last[c1o1]; !ok || p {
		t.Errorf("subscription (c1, o1): logged %v, present at the end %v; want a tombstone last", ok, p)
	}
	if !last[c2o1] {
		t.Errorf("subscription (c2, o1) not in the store's changelog: %v", last)
	}
	answers, err := streams.CreateOutputTopic(d, resp, streams.Bytes(), streams.Bytes()).ReadRecordsToList()
	if err != nil || len(answers) != 2 {
		t.Fatalf("answers on %s: %d, %v; want 2", resp, len(answers), err)
	}
	raw := streams.CreateInputTopic(d, resp, streams.Bytes(), streams.Bytes())
	if err := raw.PipeRaw(answers[0].Key, answers[0].Value, 5); err != nil {
		t.Fatal(err)
	}
	expect(t, "stale answer replayed", read(t, out))
	if err := raw.PipeRaw(answers[1].Key, answers[1].Value, 6); err != nil {
		t.Fatal(err)
	}
	expect(t, "current answer replayed", read(t, out), "o1=2 Bob@6")
	if err := raw.PipeRaw(answers[1].Key, []byte{9, 9}, 7); err == nil {
		t.Error("an undecodable answer was accepted")
	}
}
