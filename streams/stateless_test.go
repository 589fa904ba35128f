package streams_test

import (
	"strings"
	"testing"

	"github.com/vltava/vltava/streams"
)

func TestStatelessOperators(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	s.Filter(func(k, v string) bool { return strings.HasPrefix(v, "a") }).To("filter")
	s.FilterNot(func(k, v string) bool { return strings.HasPrefix(v, "a") }).To("filternot")
	streams.MapValues(s, func(k, v string) int64 { return int64(len(v)) }).To("mapvalues")
	streams.Map(s, func(k, v string) (string, string) { return v, k }).To("map")
	streams.FlatMap(s, func(k, v string) []streams.KeyValue[string, string] {
		return []streams.KeyValue[string, string]{streams.KV(k+"1", v), streams.KV(k+"2", v)}
	}).To("flatmap")
	streams.FlatMapValues(s, func(k, v string) []string { return strings.Split(v, " ") }).To("flatmapvalues")
	streams.SelectKey(s, func(k, v string) string { return strings.ToUpper(k) }).To("selectkey")
	var peeked, each []string
	s.Peek(func(k, v string) { peeked = append(peeked, k) }).To("peek")
	s.Foreach(func(k, v string) { each = append(each, v) })
	other := streams.NewStream(b, "in2", streams.String(), streams.String())
	s.Merge(other).To("merge")
	br := s.Split(streams.Named("route-")).
		Branch(func(k, v string) bool { return strings.HasPrefix(v, "a") }, "a").
		Branch(func(k, v string) bool { return strings.HasPrefix(v, "b") }, "b").
		DefaultBranch("other")
	br["route-a"].To("branch-a")
	br["route-b"].To("branch-b")
	br["route-other"].To("branch-other")
	s.ToTopicFunc(func(k, v string, rc streams.RecordContext) string { return "dyn-" + k })
	d := driver(t, b)

	in := streams.CreateInputTopic(d, "in", streams.String(), streams.String())
	in2 := streams.CreateInputTopic(d, "in2", streams.String(), streams.String())
	pipe(t, in, "x", "apple pie", 1)
	pipe(t, in, "y", "banana", 2)
	pipe(t, in2, "z", "cherry", 3)
	pipe(t, in, "x", "coconut", 4)

	out := func(topic string) []string {
		return read(t, streams.CreateOutputTopic(d, topic, streams.String(), streams.String()))
	}
	expect(t, "filter", out("filter"), "x=apple pie@1")
	expect(t, "filternot", out("filternot"), "y=banana@2", "x=coconut@4")
	expect(t, "mapvalues", read(t, streams.CreateOutputTopic(d, "mapvalues", streams.String(), streams.Int64())), "x=9@1", "y=6@2", "x=7@4")
	expect(t, "map", out("map"), "apple pie=x@1", "banana=y@2", "coconut=x@4")
	expect(t, "flatmap", out("flatmap"), "x1=apple pie@1", "x2=apple pie@1", "y1=banana@2", "y2=banana@2", "x1=coconut@4", "x2=coconut@4")
	expect(t, "flatmapvalues", out("flatmapvalues"), "x=apple@1", "x=pie@1", "y=banana@2", "x=coconut@4")
	expect(t, "selectkey", out("selectkey"), "X=apple pie@1", "Y=banana@2", "X=coconut@4")
	expect(t, "peek", out("peek"), "x=apple pie@1", "y=banana@2", "x=coconut@4")
	expect(t, "peeked", peeked, "x", "y", "x")
	expect(t, "foreach", each, "apple pie", "banana", "coconut")
	expect(t, "merge", out("merge"), "x=apple pie@1", "y=banana@2", "z=cherry@3", "x=coconut@4")
	expect(t, "branch-a", out("branch-a"), "x=apple pie@1")
	expect(t, "branch-b", out("branch-b"), "y=banana@2")
	expect(t, "branch-other", out("branch-other"), "x=coconut@4")
	expect(t, "dyn-x", out("dyn-x"), "x=apple pie@1", "x=coconut@4")
	expect(t, "dyn-y", out("dyn-y"), "y=banana@2")
}

func TestRepartitionAndNaming(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "words", streams.String(), streams.String())
	counts := streams.GroupBy(s, func(_, v string) string { return v }).Count()
	counts.ToStream().To("counts", streams.WithValueSerde(streams.Int64()))
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	desc := topo.Describe()
	for _, want := range []string{"KSTREAM-SOURCE-0000000000", "KSTREAM-KEY-SELECT-0000000001",
		"KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition-sink", "KSTREAM-AGGREGATE-0000000003",
		"Sub-topology: 0", "Sub-topology: 1"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	if counts.StoreName() != "KSTREAM-AGGREGATE-STATE-STORE-0000000002" {
		t.Errorf("store name %q", counts.StoreName())
	}
	d, err := streams.NewTestDriver(topo, streams.TestDriverConfig{ApplicationID: "wc"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := streams.CreateInputTopic(d, "words", streams.String(), streams.String())
	pipe(t, in, "", "a", 1)
	pipe(t, in, "", "b", 2)
	pipe(t, in, "", "a", 3)
	expect(t, "counts", read(t, streams.CreateOutputTopic(d, "counts", streams.String(), streams.Int64())), "a=1@1", "b=1@2", "a=2@3")
	expect(t, "repartition", read(t, streams.CreateOutputTopic(d, "wc-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition", streams.String(), streams.String())), "a=a@1", "b=b@2", "a=a@3")
	expect(t, "changelog", read(t, streams.CreateOutputTopic(d, "wc-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog", streams.String(), streams.Bytes())),
		// timestamped value: 8-byte timestamp, then the Int64 count
		"a=[0 0 0 0 0 0 0 1 0 0 0 0 0 0 0 1]@1", "b=[0 0 0 0 0 0 0 2 0 0 0 0 0 0 0 1]@2", "a=[0 0 0 0 0 0 0 3 0 0 0 0 0 0 0 2]@3")
}

func TestBuildErrors(t *testing.T) {
	b := streams.NewBuilder()
	s := streams.NewStream(b, "in", streams.String(), streams.String())
	s.Filter(func(string, string) bool { return true }, streams.Materialized("x")) // Filter takes no store
	s.To("out", streams.WithValueSerde(streams.Int64()))                           // wrong type
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "Materialized") || !strings.Contains(err.Error(), "does not serialize") {
		t.Fatalf("Build error %v: want both misuses named", err)
	}
}
