package streams_test

import (
	"fmt"
	"testing"

	"github.com/vltava/vltava/streams"
)

// TestRepartitionToTableAndTableOperators: an explicit Repartition (its
// topic named by Named), Split with NoDefaultBranch, Stream.ToTable with a
// tombstone, and the table operators FilterNot and TableMapValues.
func TestRepartitionToTableAndTableOperators(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	streams.SelectKey(s, func(_, v string) string { return v }).Repartition(streams.Named("by-value")).To("rekeyed")
	s.Split(streams.Named("s-")).Branch(func(_, v string) bool { return v == "x" }, "x").NoDefaultBranch()["s-x"].To("only-x")
	streams.NewStream(b, "in2", streams.String(), streams.String()).ToTable(streams.Materialized("latest")).ToStream().To("totable")
	tin := streams.NewTable(b, "tin", streams.String(), streams.Int64())
	tin.FilterNot(func(_ string, v int64) bool { return v%2 == 0 }).ToStream().To("odd")
	streams.TableMapValues(tin, func(k string, v int64) string { return fmt.Sprintf("%s:%d", k, v*10) }).ToStream().To("mapped")
	d := driver(t, b)

	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	pipe(t, in, "k1", "x", 1)
	pipe(t, in, "k2", "y", 2)
	pipe(t, in, "k3", "x", 3)
	str := func(topic string) []string {
		return read(t, streams.CreateOutputTopic(d, topic, streams.String(), streams.String()))
	}
	expect(t, "rekeyed", str("rekeyed"), "x=x@1", "y=y@2", "x=x@3")
	expect(t, "repartition topic", str("app-by-value-repartition"), "x=x@1", "y=y@2", "x=x@3")
	expect(t, "only-x (no default branch)", str("only-x"), "k1=x@1", "k3=x@3")

	in2 := streams.CreateInputTopic(d, "in2", streams.String(), streams.String())
	pipe(t, in2, "a", "1", 1)
	pipe(t, in2, "a", "2", 2)
	if err := in2.PipeTombstone("a", 3); err != nil {
		t.Fatal(err)
	}
	pipe(t, in2, "b", "3", 4)
	expect(t, "totable", str("totable"), "a=1@1", "a=2@2", "a=<nil>@3", "b=3@4")
	st, err := streams.QueryKeyValueStore(d, "latest", streams.String(), streams.String())
	if err != nil {
		t.Fatal(err)
	}
	var rng []string
	if err := st.Range("a", "z", func(k, v string) bool { rng = append(rng, k+"="+v); return true }); err != nil {
		t.Fatal(err)
	}
	expect(t, "latest store, range a..z", rng, "b=3")

	ti := streams.CreateInputTopic(d, "tin", streams.String(), streams.Int64())
	pipe(t, ti, "p", 1, 1)
	pipe(t, ti, "q", 2, 2) // even, never odd: nothing to delete
	pipe(t, ti, "p", 4, 3) // p stops passing: a delete
	if err := ti.PipeTombstone("q", 4); err != nil {
		t.Fatal(err)
	}
	expect(t, "odd", read(t, streams.CreateOutputTopic(d, "odd", streams.String(), streams.Int64())), "p=1@1", "p=<nil>@3")
	expect(t, "mapped", str("mapped"), "p=p:10@1", "q=q:20@2", "p=p:40@3", "q=<nil>@4")
}

// TestWindowedReduceAndAggregate: Reduce and the aggregations with an
// initializer over tumbling and session windows. A session aggregate
// starts a merge from the initializer and folds each merged session in
// with the merger, as Kafka Streams does (agg = merger(init, s1), then
// merger(agg, s2), then the adder).
func TestWindowedReduceAndAggregate(t *testing.T) {
	b := streams.NewBuilder()
	sum := func(a, v int64) int64 { return a + v }
	concat := func(_ string, v int64, agg string) string { return agg + fmt.Sprint(v) }
	tw := streams.WindowedBy(streams.NewStream(b, "in", streams.String(), streams.Int64()).GroupByKey(), streams.TimeWindowsOfSizeWithNoGrace(10*ms))
	tw.Reduce(sum, streams.Materialized("tw-sum")).ToStream().To("tw-sum")
	streams.WindowedAggregate(tw, func() string { return "" }, concat).ToStream().To("tw-agg")
	sw := streams.WindowedBySession(streams.NewStream(b, "sin", streams.String(), streams.Int64()).GroupByKey(), streams.SessionWindowsOfInactivityGapWithNoGrace(10*ms))
	sw.Reduce(sum, streams.Materialized("sw-sum")).ToStream().To("sw-sum")
	streams.SessionAggregate(sw, func() string { return "" }, concat, func(_ string, a, b string) string { return a + "|" + b }).ToStream().To("sw-agg")
	d := driver(t, b)
	wk := streams.JSON[streams.Windowed[string]]()

	in := streams.CreateInputTopic(d, "in", streams.String(), streams.Int64())
	pipe(t, in, "a", 1, 1)
	pipe(t, in, "a", 2, 4)
	pipe(t, in, "a", 5, 12)
	expect(t, "tumbling reduce", read(t, streams.CreateOutputTopic(d, "tw-sum", wk, streams.Int64())), "[a@0/10]=1@1", "[a@0/10]=3@4", "[a@10/20]=5@12")
	expect(t, "tumbling aggregate", read(t, streams.CreateOutputTopic(d, "tw-agg", wk, streams.String())), "[a@0/10]=1@1", "[a@0/10]=12@4", "[a@10/20]=5@12")
	ws, err := streams.QueryWindowStore(d, "tw-sum", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := ws.Fetch("a", 0, 5, func(w streams.Window, v int64) bool {
		got = append(got, fmt.Sprintf("%d/%d=%d", w.Start, w.End, v))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	expect(t, "tw-sum windows starting in [0,5]", got, "0/10=3")

	sin := streams.CreateInputTopic(d, "sin", streams.String(), streams.Int64())
	pipe(t, sin, "a", 1, 0)
	pipe(t, sin, "a", 2, 30)
	pipe(t, sin, "a", 3, 20) // joins [30,30]
	pipe(t, sin, "a", 4, 10) // bridges [0,0] and [20,30]
	expect(t, "session reduce", read(t, streams.CreateOutputTopic(d, "sw-sum", wk, streams.Int64())),
		"[a@0/0]=1@0", "[a@30/30]=2@30", "[a@30/30]=<nil>@20", "[a@20/30]=5@20",
		"[a@0/0]=<nil>@10", "[a@20/30]=<nil>@10", "[a@0/30]=10@10")
	expect(t, "session aggregate", read(t, streams.CreateOutputTopic(d, "sw-agg", wk, streams.String())),
		"[a@0/0]=1@0", "[a@30/30]=2@30", "[a@30/30]=<nil>@20", "[a@20/30]=|23@20",
		"[a@0/0]=<nil>@10", "[a@20/30]=<nil>@10", "[a@0/30]=|1||234@10")
}

// TestAsymmetricJoinWindowsWithGrace: JoinWindows with Before 0, After 10
// and a grace of 5. A left record joins right records up to 10 ms later,
// none earlier; an out-of-order record within the grace still joins, one
// past it is dropped.
func TestAsymmetricJoinWindowsWithGrace(t *testing.T) {
	b := streams.NewBuilder()
	l := streams.NewStream(b, "left", streams.String(), streams.String())
	r := streams.NewStream(b, "right", streams.String(), streams.String())
	w := streams.JoinWindowsOfTimeDifferenceAndGrace(0, 5*ms).WithAfter(10 * ms)
	streams.Join(l, r, func(a, b string) string { return a + "+" + b }, w).To("out")
	d := driver(t, b)
	li := streams.CreateInputTopic(d, "left", streams.String(), streams.String())
	ri := streams.CreateInputTopic(d, "right", streams.String(), streams.String())
	pipe(t, li, "k", "a", 10)
	pipe(t, ri, "k", "b", 15) // 5 after a
	pipe(t, ri, "k", "c", 5)  // 5+0+5 < stream time 15: dropped
	pipe(t, ri, "k", "d", 12) // out of order, within the grace; 2 after a
	pipe(t, li, "k", "e", 20) // b and d are earlier than e: no match
	pipe(t, li, "k", "f", 3)  // 3+10+5 < stream time 20: dropped
	pipe(t, li, "k", "g", 8)  // d and b lie 4 and 7 after it
	expect(t, "join", read(t, streams.CreateOutputTopic(d, "out", streams.String(), streams.String())),
		"k=a+b@15", "k=a+d@12", "k=g+d@12", "k=g+b@15")
	if m := d.Metrics(); m.DroppedRecords != 2 {
		t.Errorf("dropped %d, want 2", m.DroppedRecords)
	}
}
