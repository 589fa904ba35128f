package main

import (
	"testing"

	"github.com/vltava/vltava/streams"
)

func TestWordCountTopology(t *testing.T) {
	topo, err := topology("in", "out")
	if err != nil {
		t.Fatal(err)
	}
	d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	for i, line := range []string{"Hello Kafka Streams", "All streams lead to Kafka", "Join Kafka Summit"} {
		if err := in.PipeInput("", line, int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := streams.CreateOutputTopic(d, "out", streams.String(), streams.Int64()).ReadKeyValuesToMap()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"hello": 1, "kafka": 3, "streams": 2, "all": 1, "lead": 1, "to": 1, "join": 1, "summit": 1}
	if len(got) != len(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for w, n := range want {
		if got[w] != n {
			t.Errorf("count of %q = %d, want %d", w, got[w], n)
		}
	}
	st, err := streams.QueryKeyValueStore(d, "counts", streams.String(), streams.Int64())
	if err != nil {
		t.Fatal(err)
	}
	if n, ok, _ := st.Get("kafka"); !ok || n != 3 {
		t.Errorf("store counts: kafka = %d, %v; want 3", n, ok)
	}
}
