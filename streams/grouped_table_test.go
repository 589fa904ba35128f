package streams_test

import (
	"testing"

	"github.com/vltava/vltava/streams"
)

// A table regrouped by region: updates move a user between regions
// (subtract from the old, add to the new), a same-region update emits
// once, and a delete subtracts.
func TestTableGroupByCountAndReduce(t *testing.T) {
	b := streams.NewBuilder()
	users := streams.NewTable(b, "users", streams.String(), streams.String()) // user -> "region:score"
	byRegion := streams.TableGroupBy(users, func(user, v string) streams.KeyValue[string, int64] {
		region, score := v[:2], int64(v[3]-'0')
		return streams.KV(region, score)
	}, streams.WithValueSerde(streams.Int64()))
	byRegion.Count(streams.Materialized("region-counts")).ToStream().To("counts", streams.WithValueSerde(streams.Int64()))
	byRegion.Reduce(func(agg, v int64) int64 { return agg + v }, func(agg, v int64) int64 { return agg - v }).
		ToStream().To("sums", streams.WithValueSerde(streams.Int64()))
	streams.TableAggregate(byRegion, func() string { return "" },
		func(_ string, v int64, agg string) string { return agg + "+" + itoa(v) },
		func(_ string, v int64, agg string) string { return agg + "-" + itoa(v) },
		streams.WithValueSerde(streams.String())).ToStream().To("trail")
	d := driver(t, b)
	in := streams.CreateInputTopic(d, "users", streams.String(), streams.String())
	pipe(t, in, "ann", "eu:3", 1)
	pipe(t, in, "bob", "eu:4", 2)
	pipe(t, in, "ann", "us:5", 3) // moves ann eu -> us
	pipe(t, in, "bob", "eu:1", 4) // same region: one record
	if err := in.PipeTombstone("ann", 5); err != nil {
		t.Fatal(err)
	}
	if err := in.PipeTombstone("zed", 6); err != nil { // absent: nothing to subtract
		t.Fatal(err)
	}
	counts := streams.CreateOutputTopic(d, "counts", streams.String(), streams.Int64())
	expect(t, "counts", read(t, counts), "eu=1@1", "eu=2@2", "eu=1@3", "us=1@3", "eu=1@4", "us=0@5")
	expect(t, "sums", read(t, streams.CreateOutputTopic(d, "sums", streams.String(), streams.Int64())),
		"eu=3@1", "eu=7@2", "eu=4@3", "us=5@3", "eu=1@4", "us=0@5")
	expect(t, "aggregate trail", read(t, streams.CreateOutputTopic(d, "trail", streams.String(), streams.String())),
		"eu=+3@1", "eu=+3+4@2", "eu=+3+4-3@3", "us=+5@3", "eu=+3+4-3-4+1@4", "us=+5-5@5")
	st, err := streams.QueryKeyValueStore(d, "region-counts", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := st.Get("eu"); !ok || v != 1 {
		t.Errorf("store region-counts eu = %d, %v; want 1", v, ok)
	}
	// The repartition topic is named after the store, as Kafka Streams
	// names it.
	if n := streams.CreateOutputTopic(d, "app-region-counts-repartition", streams.String(), streams.String()).QueueSize(); n != 6 {
		t.Errorf("app-region-counts-repartition holds %d records, want 6 (subtract and add as separate records on a move)", n)
	}
}
