package streams_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/streams"
)

const ms = time.Millisecond

func TestAggregations(t *testing.T) {
	for _, backend := range []streams.StoreBackend{streams.Pebble, streams.InMemory} {
		t.Run(backend.String(), func(t *testing.T) {
			b := streams.NewBuilder()
			s := streams.NewStream(b, "in", streams.String(), streams.Int64())
			g := s.GroupByKey()
			g.Count(streams.Materialized("counts"), streams.WithBackend(backend)).ToStream().To("count")
			g.Reduce(func(a, v int64) int64 { return a + v }, streams.WithBackend(backend)).ToStream().To("sum")
			streams.Aggregate(g, func() string { return "" }, func(k string, v int64, agg string) string {
				return agg + fmt.Sprint(v)
			}, streams.WithBackend(backend)).ToStream().To("concat")
			d := driver(t, b)
			in := streams.CreateInputTopic(d, "in", streams.String(), streams.Int64())
			pipe(t, in, "a", 1, 10)
			pipe(t, in, "b", 2, 20)
			pipe(t, in, "a", 3, 5) // out of order: the aggregate keeps the later timestamp
			if err := in.PipeTombstone("a", 30); err != nil {
				t.Fatal(err)
			}
			expect(t, "count", read(t, streams.CreateOutputTopic(d, "count", streams.String(), streams.Int64())), "a=1@10", "b=1@20", "a=2@10")
			expect(t, "sum", read(t, streams.CreateOutputTopic(d, "sum", streams.String(), streams.Int64())), "a=1@10", "b=2@20", "a=4@10")
			expect(t, "concat", read(t, streams.CreateOutputTopic(d, "concat", streams.String(), streams.String())), "a=1@10", "b=2@20", "a=13@10")
			st, err := streams.QueryKeyValueStore(d, "counts", streams.String(), streams.Int64())
			if err != nil {
				t.Fatal(err)
			}
			if v, ok, err := st.Get("a"); err != nil || !ok || v != 2 {
				t.Errorf("Get(a) = %d %v %v, want 2", v, ok, err)
			}
			var all []string
			if err := st.All(func(k string, v int64) bool { all = append(all, fmt.Sprintf("%s=%d", k, v)); return true }); err != nil {
				t.Fatal(err)
			}
			expect(t, "All", all, "a=2", "b=1")
			if m := d.Metrics(); m.Skipped != 3 { // the tombstone, skipped by each of the three aggregations
				t.Errorf("skipped %d, want 3", m.Skipped)
			}
		})
	}
}

func TestTumblingWindowsGraceAndLateRecords(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.WindowedBy(s.GroupByKey(), streams.TimeWindowsOfSizeAndGrace(10*ms, 5*ms)).
		Count(streams.Materialized("win")).ToStream().To("out")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	for _, ts := range []int64{0, 5, 12, 9, 16, 8} {
		pipe(t, in, "a", "x", ts)
	}
	expect(t, "windowed counts", read(t, streams.CreateOutputTopic(d, "out", streams.JSON[streams.Windowed[string]](), streams.Int64())),
		"[a@0/10]=1@0", "[a@0/10]=2@5", "[a@10/20]=1@12",
		"[a@0/10]=3@9", // stream time 12, window closes at 10+5: still open
		"[a@10/20]=2@16",
		// ts 8 at stream time 16: [0,10) closed at 15, dropped
	)
	if m := d.Metrics(); m.DroppedRecords != 1 {
		t.Errorf("dropped %d, want 1", m.DroppedRecords)
	}
	ws, err := streams.QueryWindowStore(d, "win", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ws.FetchAll("a", func(w streams.Window, v int64) bool {
		got = append(got, fmt.Sprintf("%d-%d:%d", w.Start, w.End, v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "window store", got, "0-10:3", "10-20:2")
}

func TestHoppingWindows(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.WindowedBy(s.GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(10*ms).AdvanceBy(5*ms)).
		Count().ToStream().To("out")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	for _, ts := range []int64{7, 12, 3} {
		pipe(t, in, "a", "x", ts)
	}
	expect(t, "hopping counts", read(t, streams.CreateOutputTopic(d, "out", streams.JSON[streams.Windowed[string]](), streams.Int64())),
		"[a@0/10]=1@7", "[a@5/15]=1@7", "[a@5/15]=2@12", "[a@10/20]=1@12")
	// ts 3 at stream time 12: [0,10) closed at 10 with no grace
	if m := d.Metrics(); m.DroppedRecords != 1 {
		t.Errorf("dropped %d, want 1", m.DroppedRecords)
	}
}

func TestSessionWindowsMerge(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.WindowedBySession(s.GroupByKey(), streams.SessionWindowsOfInactivityGapAndGrace(10*ms, 20*ms)).
		Count().ToStream().To("out")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	for _, ts := range []int64{0, 5, 30, 18, 24, 2} {
		pipe(t, in, "a", "x", ts)
	}
	expect(t, "session counts", read(t, streams.CreateOutputTopic(d, "out", streams.JSON[streams.Windowed[string]](), streams.Int64())),
		"[a@0/0]=1@0",
		"[a@0/0]=<nil>@5", "[a@0/5]=2@5", // extended: the old session is deleted
		"[a@30/30]=1@30",
		"[a@18/18]=1@18",                                             // 8 ms from [0,5]'s... gap 10 from 30: separate
		"[a@18/18]=<nil>@24", "[a@30/30]=<nil>@24", "[a@18/30]=3@24", // 24 bridges [18,18] and [30,30]
		// ts 2 would extend [0,5], which ended before stream time 30 - grace 20: dropped
	)
	if m := d.Metrics(); m.DroppedRecords != 1 {
		t.Errorf("dropped %d, want 1", m.DroppedRecords)
	}
}

func TestSuppressUntilWindowCloses(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.WindowedBy(s.GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(10*ms)).Count().
		Suppress(streams.UntilWindowCloses()).ToStream().To("out")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	out := streams.CreateOutputTopic(d, "out", streams.JSON[streams.Windowed[string]](), streams.Int64())
	pipe(t, in, "a", "x", 1)
	pipe(t, in, "a", "x", 3)
	pipe(t, in, "b", "x", 5)
	expect(t, "before close", read(t, out))
	pipe(t, in, "a", "x", 12)
	expect(t, "after [0,10) closed", read(t, out), "[a@0/10]=2@3", "[b@0/10]=1@5")
	pipe(t, in, "a", "x", 25)
	expect(t, "after [10,20) closed", read(t, out), "[a@10/20]=1@12")
}

func TestSuppressUntilTimeLimit(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	s.GroupByKey().Count().Suppress(streams.UntilTimeLimit(10 * ms)).ToStream().To("out")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	out := streams.CreateOutputTopic(d, "out", streams.String(), streams.Int64())
	pipe(t, in, "a", "x", 0)
	pipe(t, in, "a", "x", 5)
	pipe(t, in, "b", "x", 7)
	expect(t, "held", read(t, out))
	pipe(t, in, "a", "x", 10) // a's first update at 0: due at 10
	expect(t, "a due", read(t, out), "a=3@10")
	pipe(t, in, "b", "x", 20)
	expect(t, "b due", read(t, out), "b=2@20")
}

func optStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestStreamStreamJoins(t *testing.T) {
	w := streams.JoinWindowsOfTimeDifferenceWithNoGrace(10 * ms)
	type step struct {
		left bool
		k, v string
		ts   int64
	}
	steps := []step{
		{true, "k", "l1", 0}, {false, "k", "r1", 5}, {false, "k", "r2", 20}, {true, "k", "l2", 15},
		{true, "k", "l3", 3}, // late: 3 + 10 < stream time 20
		{true, "j", "x", 21}, {false, "k", "r3", 40}, {true, "k", "end", 100},
	}
	cases := []struct {
		name string
		join func(l, r streams.Stream[string, string]) streams.Stream[string, string]
		want []string
	}{
		{"inner", func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
			return streams.Join(l, r, func(a, b string) string { return a + "+" + b }, w)
		}, []string{"k=l1+r1@5", "k=l2+r1@15", "k=l2+r2@20"}},
		{"left", func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
			return streams.LeftJoin(l, r, func(a string, b *string) string { return a + "+" + optStr(b) }, w)
		}, []string{"k=l1+r1@5", "k=l2+r1@15", "k=l2+r2@20", "j=x+<nil>@21"}},
		{"outer", func(l, r streams.Stream[string, string]) streams.Stream[string, string] {
			return streams.OuterJoin(l, r, func(a, b *string) string { return optStr(a) + "+" + optStr(b) }, w)
		}, []string{"k=l1+r1@5", "k=l2+r1@15", "k=l2+r2@20", "j=x+<nil>@21", "k=<nil>+r3@40"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := streams.NewBuilder()
			l := streams.NewStream(b, "left", streams.String(), streams.String())
			r := streams.NewStream(b, "right", streams.String(), streams.String())
			c.join(l, r).To("out")
			d := driver(t, b)
			li := streams.CreateInputTopic(d, "left", streams.String(), streams.String())
			ri := streams.CreateInputTopic(d, "right", streams.String(), streams.String())
			for _, s := range steps {
				in := ri
				if s.left {
					in = li
				}
				pipe(t, in, s.k, s.v, s.ts)
			}
			expect(t, c.name+" join", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())), c.want...)
			if m := d.Metrics(); m.DroppedRecords != 1 {
				t.Errorf("dropped %d, want 1", m.DroppedRecords)
			}
		})
	}
}

func TestStreamTableJoins(t *testing.T) {
	for _, left := range []bool{false, true} {
		t.Run(fmt.Sprintf("left=%v", left), func(t *testing.T) {
			b := streams.NewBuilder()
			users := streams.NewTable(b, "users", streams.String(), streams.String())
			clicks := streams.NewStream(b, "clicks", streams.String(), streams.String())
			if left {
				streams.LeftJoinTable(clicks, users, func(url string, c *string) string { return url + "|" + optStr(c) }).To("out")
			} else {
				streams.JoinTable(clicks, users, func(url, c string) string { return url + "|" + c }).To("out")
			}
			d := driver(t, b)
			u := streams.CreateInputTopic(d, "users", streams.String(), streams.String())
			c := streams.CreateInputTopic(d, "clicks", streams.String(), streams.String())
			pipe(t, u, "u1", "CZ", 0)
			pipe(t, c, "u1", "/a", 1)
			pipe(t, c, "u2", "/b", 2)
			if err := u.PipeTombstone("u1", 3); err != nil {
				t.Fatal(err)
			}
			pipe(t, c, "u1", "/c", 4)
			pipe(t, u, "u2", "DE", 5)
			pipe(t, c, "u2", "/d", 6)
			want := []string{"u1=/a|CZ@1", "u2=/d|DE@6"}
			if left {
				want = []string{"u1=/a|CZ@1", "u2=/b|<nil>@2", "u1=/c|<nil>@4", "u2=/d|DE@6"}
			}
			expect(t, "stream-table join", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())), want...)
		})
	}
}

func TestGlobalTableJoin(t *testing.T) {
	b := streams.NewBuilder()
	countries := streams.NewGlobalTable(b, "countries", streams.String(), streams.String())
	orders := streams.NewStream(b, "orders", streams.String(), streams.String())
	key := func(_, code string) string { return code }
	streams.JoinGlobal(orders, countries, key, func(code, name string) string { return code + ":" + name }).To("inner")
	streams.LeftJoinGlobal(orders, countries, key, func(code string, name *string) string { return code + ":" + optStr(name) }).To("left")
	d := driver(t, b)
	pipe(t, streams.CreateInputTopic(d, "countries", streams.String(), streams.String()), "CZ", "Czechia", 1)
	o := streams.CreateInputTopic(d, "orders", streams.String(), streams.String())
	pipe(t, o, "o1", "CZ", 2)
	pipe(t, o, "o2", "XX", 3)
	expect(t, "inner", read(t, streams.CreateOutputTopic(d, "inner", streams.String(), streams.String())), "o1=CZ:Czechia@2")
	expect(t, "left", read(t, streams.CreateOutputTopic(d, "left", streams.String(), streams.String())), "o1=CZ:Czechia@2", "o2=XX:<nil>@3")
}

func TestTableTombstones(t *testing.T) {
	b := streams.NewBuilder()
	tb := streams.NewTable(b, "t", streams.String(), streams.String(), streams.Materialized("t-store"))
	tb.ToStream().To("out")
	tb.Filter(func(_, v string) bool { return strings.HasPrefix(v, "keep") }).ToStream().To("filtered")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "t", streams.String(), streams.String())
	pipe(t, in, "k", "keep1", 1)
	pipe(t, in, "k", "drop", 2) // stops passing the filter: a delete downstream of it
	if err := in.PipeTombstone("k", 3); err != nil {
		t.Fatal(err)
	}
	expect(t, "table", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())), "k=keep1@1", "k=drop@2", "k=<nil>@3")
	expect(t, "filtered", read(t, streams.CreateOutputTopic(d, "filtered", streams.String(), streams.String())), "k=keep1@1", "k=<nil>@2")
	st, err := streams.QueryKeyValueStore(d, "t-store", streams.String(), streams.String())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.Get("k"); ok {
		t.Error("tombstoned key still in the store")
	}
}

func TestTableTableJoins(t *testing.T) {
	cases := []struct {
		kind string
		want []string
	}{
		{"inner", []string{"k=a1+b1@2", "k=a2+b1@3", "k=<nil>@4"}},
		{"left", []string{"k=a1+<nil>@1", "k=a1+b1@2", "k=a2+b1@3", "k=a2+<nil>@4", "k=<nil>@5"}},
		{"outer", []string{"k=a1+<nil>@1", "k=a1+b1@2", "k=a2+b1@3", "k=a2+<nil>@4", "k=<nil>@5", "k=<nil>+b2@6"}},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			b := streams.NewBuilder()
			ta := streams.NewTable(b, "a", streams.String(), streams.String())
			tb := streams.NewTable(b, "b", streams.String(), streams.String())
			var j streams.Table[string, string]
			switch c.kind {
			case "inner":
				j = streams.TableJoin(ta, tb, func(x, y string) string { return x + "+" + y })
			case "left":
				j = streams.TableLeftJoin(ta, tb, func(x string, y *string) string { return x + "+" + optStr(y) })
			case "outer":
				j = streams.TableOuterJoin(ta, tb, func(x, y *string) string { return optStr(x) + "+" + optStr(y) })
			}
			j.ToStream().To("out")
			d := driver(t, b)
			a := streams.CreateInputTopic(d, "a", streams.String(), streams.String())
			bi := streams.CreateInputTopic(d, "b", streams.String(), streams.String())
			pipe(t, a, "k", "a1", 1)
			pipe(t, bi, "k", "b1", 2)
			pipe(t, a, "k", "a2", 3)
			if err := bi.PipeTombstone("k", 4); err != nil {
				t.Fatal(err)
			}
			if err := a.PipeTombstone("k", 5); err != nil {
				t.Fatal(err)
			}
			pipe(t, bi, "k", "b2", 6)
			expect(t, c.kind+" table join", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())), c.want...)
		})
	}
}

// Sliding windows (KIP-450), time difference 10 ms: each record's left
// window ends at it, its right window starts just after it when later
// records fall there, early records share [0, 10], and an out-of-order
// record updates every window holding it and creates its own.
func TestSlidingWindowCount(t *testing.T) {
	b := streams.NewBuilder()
	wk := streams.TimeWindowedSerde(streams.String(), 10*time.Millisecond)
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.WindowedBySliding(s.GroupByKey(), streams.SlidingWindowsOfTimeDifferenceAndGrace(10*time.Millisecond, 5*time.Millisecond)).
		Count(streams.Materialized("sliding")).ToStream().To("out", streams.WithKeySerde(wk), streams.WithValueSerde(streams.Int64()))
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	out := streams.CreateOutputTopic(d, "out", wk, streams.Int64())
	pipe(t, in, "a", "x", 5)
	expect(t, "early record", read(t, out), "[a@0/10]=1@5")
	pipe(t, in, "a", "x", 15)
	expect(t, "in order", read(t, out), "[a@5/15]=2@15", "[a@6/16]=1@15")
	pipe(t, in, "a", "x", 12)
	expect(t, "out of order", read(t, out), "[a@2/12]=2@12", "[a@5/15]=3@15", "[a@6/16]=2@15", "[a@13/23]=1@15")
	pipe(t, in, "b", "x", 25) // stream time 25, grace 5: windows ending at or before 20 are closed
	read(t, out)
	pipe(t, in, "a", "x", 17) // its left window [7,17] is closed; 15's right window [16,26] now holds 17
	expect(t, "grace", read(t, out), "[a@13/23]=2@17", "[a@16/26]=1@17")
	pipe(t, in, "a", "x", 9) // 9+1+10 <= 20: even its right window is closed
	expect(t, "late record", read(t, out))
	if m := d.Metrics(); m.DroppedRecords != 1 {
		t.Errorf("dropped %d records, want 1", m.DroppedRecords)
	}
	ws, err := streams.QueryWindowStore(d, "sliding", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ws.FetchAll("a", func(w streams.Window, v int64) bool {
		got = append(got, fmt.Sprintf("%d/%d=%d", w.Start, w.End, v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "store", got, "0/10=1", "2/12=2", "5/15=3", "6/16=2", "13/23=2", "16/26=1")
}
