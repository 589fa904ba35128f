package transforms

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/connect"
)

func mk(t *testing.T, class string, props map[string]string) connect.Transformation {
	t.Helper()
	tr, err := connect.NewTransformation(class)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Configure(props); err != nil {
		t.Fatalf("%s %v: %v", class, props, err)
	}
	return tr
}

func apply(t *testing.T, tr connect.Transformation, r *connect.Record) *connect.Record {
	t.Helper()
	out, err := tr.Apply(r)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	strS  = &connect.Schema{Type: connect.String}
	i32S  = &connect.Schema{Type: connect.Int32}
	i64S  = &connect.Schema{Type: connect.Int64}
	f64S  = &connect.Schema{Type: connect.Float64}
	boolS = &connect.Schema{Type: connect.Boolean}
)

func structOf(fields ...any) (*connect.Schema, *connect.Struct) {
	s := &connect.Schema{Type: connect.StructT, Name: "row"}
	var vals []any
	for i := 0; i < len(fields); i += 3 {
		addField(s, fields[i].(string), fields[i+1].(*connect.Schema))
		vals = append(vals, fields[i+2])
	}
	st := connect.NewStruct(s)
	for i, f := range s.Fields {
		if vals[i] != nil {
			if err := st.Put(f.Name, vals[i]); err != nil {
				panic(err)
			}
		}
	}
	return s, st
}

func fieldNames(s *connect.Schema) string {
	var n []string
	for _, f := range s.Fields {
		n = append(n, f.Name)
	}
	return strings.Join(n, ",")
}

func part(p int32) *int32 { return &p }

func TestInsertField(t *testing.T) {
	ts := time.UnixMilli(1700000000123).UTC()
	props := map[string]string{"topic.field": "t!", "partition.field": "p", "timestamp.field": "ts", "static.field": "s", "static.value": "v"}
	tr := mk(t, "org.apache.kafka.connect.transforms.InsertField$Value", props)
	// schemaless
	out := apply(t, tr, &connect.Record{Topic: "orders", Partition: part(3), Timestamp: ts, Value: map[string]any{"a": int64(1)}})
	want := map[string]any{"a": int64(1), "t": "orders", "p": int32(3), "ts": int64(1700000000123), "s": "v"}
	if !reflect.DeepEqual(out.Value, want) {
		t.Fatalf("schemaless: %#v", out.Value)
	}
	// schema'd: the inserted fields are optional unless marked !
	s, st := structOf("a", i64S, int64(1))
	out = apply(t, tr, &connect.Record{Topic: "orders", Partition: part(3), Timestamp: ts, ValueSchema: s, Value: st})
	if fieldNames(out.ValueSchema) != "a,t,p,ts,s" {
		t.Fatalf("fields %s", fieldNames(out.ValueSchema))
	}
	if out.ValueSchema.Field("t").Schema.Optional || !out.ValueSchema.Field("p").Schema.Optional ||
		out.ValueSchema.Field("ts").Schema.Name != connect.TimestampName {
		t.Fatalf("schema %+v", out.ValueSchema.Fields)
	}
	v := out.Value.(*connect.Struct)
	if get(v, "t") != "orders" || get(v, "p") != int32(3) || !get(v, "ts").(time.Time).Equal(ts) || get(v, "s") != "v" || get(v, "a") != int64(1) {
		t.Fatalf("struct %+v", v)
	}
	// the input record is not changed, a tombstone passes
	if _, ok := st.Schema().Field("t"), true; !ok || st.Schema().Field("t") != nil {
		t.Fatal("input schema changed")
	}
	if out := apply(t, tr, &connect.Record{Topic: "x"}); out.Value != nil {
		t.Fatal("tombstone changed")
	}
	if _, err := tr.Apply(&connect.Record{Topic: "x", Value: "str"}); err == nil || !strings.Contains(err.Error(), "Only Map objects supported") {
		t.Fatalf("string value: %v", err)
	}
	// The key variant works on the key.
	kt := mk(t, "InsertField$Key", map[string]string{"static.field": "k", "static.value": "1"})
	out = apply(t, kt, &connect.Record{Key: map[string]any{}, Value: "v"})
	if out.Key.(map[string]any)["k"] != "1" || out.Value != "v" {
		t.Fatalf("key variant %+v", out)
	}
	if err := (&InsertField{}).Configure(map[string]string{"offset.field": "o"}); err == nil {
		t.Fatal("offset.field accepted without offsets to insert")
	}
}

func TestReplaceField(t *testing.T) {
	s, st := structOf("a", i64S, int64(1), "b", strS, "x", "c", boolS, true)
	cases := []struct {
		props  map[string]string
		fields string
	}{
		{map[string]string{"exclude": "b"}, "a,c"},
		{map[string]string{"include": "a,b", "exclude": "b"}, "a"},
		{map[string]string{"renames": "a:id,c:flag"}, "id,b,flag"},
		{map[string]string{"blacklist": "a"}, "b,c"},
		{map[string]string{"whitelist": "c"}, "c"},
	}
	for _, tc := range cases {
		tr := mk(t, "org.apache.kafka.connect.transforms.ReplaceField$Value", tc.props)
		out := apply(t, tr, &connect.Record{ValueSchema: s, Value: st})
		if got := fieldNames(out.ValueSchema); got != tc.fields {
			t.Fatalf("%v: %s, want %s", tc.props, got, tc.fields)
		}
		m := apply(t, tr, &connect.Record{Value: map[string]any{"a": 1, "b": 2, "c": 3}}).Value.(map[string]any)
		if len(m) != len(strings.Split(tc.fields, ",")) {
			t.Fatalf("%v schemaless: %v", tc.props, m)
		}
	}
	out := apply(t, mk(t, "ReplaceField$Value", map[string]string{"renames": "a:id"}), &connect.Record{ValueSchema: s, Value: st})
	if get(out.Value.(*connect.Struct), "id") != int64(1) {
		t.Fatal("renamed value lost")
	}
	if err := (&ReplaceField{}).Configure(map[string]string{"renames": "a"}); err == nil {
		t.Fatal("bad rename accepted")
	}
}

func TestMaskField(t *testing.T) {
	s, st := structOf("n", i32S, int32(5), "s", strS, "secret", "f", f64S, 1.5, "keep", strS, "k")
	out := apply(t, mk(t, "MaskField$Value", map[string]string{"fields": "n,s,f"}), &connect.Record{ValueSchema: s, Value: st})
	v := out.Value.(*connect.Struct)
	if get(v, "n") != int32(0) || get(v, "s") != "" || get(v, "f") != 0.0 || get(v, "keep") != "k" {
		t.Fatalf("masked %+v", v)
	}
	out = apply(t, mk(t, "MaskField$Value", map[string]string{"fields": "n,s", "replacement": "42"}), &connect.Record{Value: map[string]any{"n": int64(5), "s": "x"}})
	if m := out.Value.(map[string]any); m["n"] != int64(42) || m["s"] != "42" {
		t.Fatalf("replaced %v", m)
	}
	if _, err := mk(t, "MaskField$Value", map[string]string{"fields": "b", "replacement": "x"}).Apply(&connect.Record{Value: map[string]any{"b": true}}); err == nil {
		t.Fatal("boolean masked with a replacement")
	}
	if err := (&MaskField{}).Configure(map[string]string{}); err == nil {
		t.Fatal("missing fields accepted")
	}
}

func TestValueToKeyAndExtractAndHoist(t *testing.T) {
	s, st := structOf("id", i64S, int64(9), "name", strS, "n")
	out := apply(t, mk(t, "org.apache.kafka.connect.transforms.ValueToKey", map[string]string{"fields": "id"}), &connect.Record{ValueSchema: s, Value: st})
	if fieldNames(out.KeySchema) != "id" || get(out.Key.(*connect.Struct), "id") != int64(9) {
		t.Fatalf("key %+v", out.Key)
	}
	out = apply(t, mk(t, "ValueToKey", map[string]string{"fields": "id"}), &connect.Record{Value: map[string]any{"id": 1, "x": 2}})
	if !reflect.DeepEqual(out.Key, map[string]any{"id": 1}) {
		t.Fatalf("schemaless key %v", out.Key)
	}
	if _, err := mk(t, "ValueToKey", map[string]string{"fields": "nope"}).Apply(&connect.Record{ValueSchema: s, Value: st}); err == nil {
		t.Fatal("unknown field accepted")
	}
	// ExtractField$Key after ValueToKey: the classic "key from id" chain.
	k := apply(t, mk(t, "ExtractField$Key", map[string]string{"field": "id"}), out)
	if k.Key != 1 {
		t.Fatalf("extracted %v", k.Key)
	}
	ex := apply(t, mk(t, "ExtractField$Value", map[string]string{"field": "name"}), &connect.Record{ValueSchema: s, Value: st})
	if ex.Value != "n" || ex.ValueSchema != strS {
		t.Fatalf("extract %v %v", ex.Value, ex.ValueSchema)
	}
	inner, innerV := structOf("c", strS, "deep")
	outer, outerV := structOf("b", inner, innerV)
	ex = apply(t, mk(t, "ExtractField$Value", map[string]string{"field": "b.c", "field.syntax.version": "V2"}), &connect.Record{ValueSchema: outer, Value: outerV})
	if ex.Value != "deep" {
		t.Fatalf("nested extract %v", ex.Value)
	}
	h := apply(t, mk(t, "HoistField$Value", map[string]string{"field": "line"}), &connect.Record{ValueSchema: strS, Value: "hello"})
	if fieldNames(h.ValueSchema) != "line" || get(h.Value.(*connect.Struct), "line") != "hello" {
		t.Fatalf("hoist %+v", h.Value)
	}
	h = apply(t, mk(t, "HoistField$Value", map[string]string{"field": "line"}), &connect.Record{Value: "hello"})
	if !reflect.DeepEqual(h.Value, map[string]any{"line": "hello"}) {
		t.Fatalf("schemaless hoist %v", h.Value)
	}
}

func TestCast(t *testing.T) {
	s, st := structOf("a", i64S, int64(300), "b", strS, "42", "c", f64S, 3.9, "d", boolS, true)
	tr := mk(t, "Cast$Value", map[string]string{"spec": "a:int8,b:int32,c:int64,d:string"})
	out := apply(t, tr, &connect.Record{ValueSchema: s, Value: st})
	v := out.Value.(*connect.Struct)
	// Java's narrowing: 300 as a byte is 44; 3.9 as a long is 3.
	if get(v, "a") != int8(44) || get(v, "b") != int32(42) || get(v, "c") != int64(3) || get(v, "d") != "true" {
		t.Fatalf("cast %v %v %v %v", get(v, "a"), get(v, "b"), get(v, "c"), get(v, "d"))
	}
	if out.ValueSchema.Field("a").Schema.Type != connect.Int8 {
		t.Fatal("schema not cast")
	}
	whole := apply(t, mk(t, "Cast$Value", map[string]string{"spec": "string"}), &connect.Record{ValueSchema: f64S, Value: 1e10})
	if whole.Value != "1.0E10" || whole.ValueSchema.Type != connect.String {
		t.Fatalf("whole %v", whole.Value)
	}
	sl := apply(t, mk(t, "Cast$Value", map[string]string{"spec": "x:boolean,y:float32"}), &connect.Record{Value: map[string]any{"x": "TRUE", "y": int64(2)}})
	if m := sl.Value.(map[string]any); m["x"] != true || m["y"] != float32(2) {
		t.Fatalf("schemaless %v", m)
	}
	if _, err := mk(t, "Cast$Value", map[string]string{"spec": "b:int8"}).Apply(&connect.Record{ValueSchema: s, Value: st}); err != nil {
		t.Fatal(err) // "42" fits an int8
	}
	if _, err := mk(t, "Cast$Value", map[string]string{"spec": "b:int8"}).Apply(&connect.Record{Value: map[string]any{"b": "x"}}); err == nil {
		t.Fatal("unparsable string cast")
	}
	if err := (&Cast{}).Configure(map[string]string{"spec": "a:date"}); err == nil {
		t.Fatal("bad type accepted")
	}
}

func TestTimestampConverter(t *testing.T) {
	ts := time.Date(2024, 3, 1, 10, 11, 12, 345e6, time.UTC)
	cases := []struct {
		props map[string]string
		in    any
		want  any
	}{
		{map[string]string{"target.type": "string", "format": "yyyy-MM-dd HH:mm:ss.SSS"}, ts, "2024-03-01 10:11:12.345"},
		{map[string]string{"target.type": "unix"}, ts, ts.UnixMilli()},
		{map[string]string{"target.type": "unix", "unix.precision": "seconds"}, ts, ts.Unix()},
		{map[string]string{"target.type": "Timestamp"}, ts.UnixMilli(), ts},
		{map[string]string{"target.type": "Date"}, ts, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{map[string]string{"target.type": "Time"}, ts, time.Date(1970, 1, 1, 10, 11, 12, 345e6, time.UTC)},
		{map[string]string{"target.type": "Timestamp", "format": "yyyy-MM-dd'T'HH:mm:ss"}, "2024-03-01T10:11:12", ts.Truncate(time.Second)},
	}
	for _, tc := range cases {
		props := map[string]string{"field": "ts"}
		for k, v := range tc.props {
			props[k] = v
		}
		out := apply(t, mk(t, "TimestampConverter$Value", props), &connect.Record{Value: map[string]any{"ts": tc.in, "x": 1}})
		got := out.Value.(map[string]any)["ts"]
		if gt, ok := got.(time.Time); ok {
			if !gt.Equal(tc.want.(time.Time)) {
				t.Fatalf("%v: %v", tc.props, got)
			}
		} else if got != tc.want {
			t.Fatalf("%v: %#v, want %#v", tc.props, got, tc.want)
		}
	}
	// schema'd field and whole value
	s, st := structOf("ts", i64S, ts.UnixMilli())
	out := apply(t, mk(t, "TimestampConverter$Value", map[string]string{"field": "ts", "target.type": "Timestamp"}), &connect.Record{ValueSchema: s, Value: st})
	if out.ValueSchema.Field("ts").Schema.Name != connect.TimestampName || !get(out.Value.(*connect.Struct), "ts").(time.Time).Equal(ts) {
		t.Fatalf("schema'd %+v", out.Value)
	}
	out = apply(t, mk(t, "TimestampConverter$Value", map[string]string{"target.type": "unix"}),
		&connect.Record{ValueSchema: &connect.Schema{Type: connect.Int64, Name: connect.TimestampName, Version: 1}, Value: ts})
	if out.Value != ts.UnixMilli() || out.ValueSchema.Type != connect.Int64 || out.ValueSchema.Name != "" {
		t.Fatalf("whole %v %+v", out.Value, out.ValueSchema)
	}
	if err := (&TimestampConverter{}).Configure(map[string]string{"target.type": "string"}); err == nil {
		t.Fatal("string without format accepted")
	}
}

func TestRouters(t *testing.T) {
	out := apply(t, mk(t, "org.apache.kafka.connect.transforms.RegexRouter", map[string]string{"regex": "(.*)-raw", "replacement": "$1-clean"}), &connect.Record{Topic: "orders-raw"})
	if out.Topic != "orders-clean" {
		t.Fatal(out.Topic)
	}
	if out := apply(t, mk(t, "RegexRouter", map[string]string{"regex": "raw", "replacement": "x"}), &connect.Record{Topic: "orders-raw"}); out.Topic != "orders-raw" {
		t.Fatal("partial match renamed", out.Topic)
	}
	tr := mk(t, "TimestampRouter", map[string]string{})
	out = apply(t, tr, &connect.Record{Topic: "logs", Timestamp: time.Date(2024, 3, 1, 23, 0, 0, 0, time.UTC)})
	if out.Topic != "logs-20240301" {
		t.Fatal(out.Topic)
	}
	tr = mk(t, "TimestampRouter", map[string]string{"topic.format": "${timestamp}_${topic}", "timestamp.format": "yyyy.MM"})
	if out := apply(t, tr, &connect.Record{Topic: "a", Timestamp: time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)}); out.Topic != "2024.03_a" {
		t.Fatal(out.Topic)
	}
	if _, err := tr.Apply(&connect.Record{Topic: "a"}); err == nil {
		t.Fatal("no timestamp accepted")
	}
}

func TestFlatten(t *testing.T) {
	inner := &connect.Schema{Type: connect.StructT, Optional: true}
	addField(inner, "c", strS)
	outer := &connect.Schema{Type: connect.StructT, Name: "o"}
	addField(outer, "a", i32S)
	addField(outer, "b", inner)
	iv := connect.NewStruct(inner)
	_ = iv.Put("c", "x")
	ov := connect.NewStruct(outer)
	_ = ov.Put("a", int32(1))
	_ = ov.Put("b", iv)
	out := apply(t, mk(t, "Flatten$Value", map[string]string{"delimiter": "_"}), &connect.Record{ValueSchema: outer, Value: ov})
	if fieldNames(out.ValueSchema) != "a,b_c" || !out.ValueSchema.Field("b_c").Schema.Optional || get(out.Value.(*connect.Struct), "b_c") != "x" {
		t.Fatalf("flatten %+v", out.ValueSchema.Fields)
	}
	m := apply(t, mk(t, "Flatten$Value", nil), &connect.Record{Value: map[string]any{"a": map[string]any{"b": map[string]any{"c": 1}}, "d": []any{1}}}).Value
	if !reflect.DeepEqual(m, map[string]any{"a.b.c": 1, "d": []any{1}}) {
		t.Fatalf("schemaless %v", m)
	}
}

func TestSetSchemaMetadataAndHeaders(t *testing.T) {
	s, st := structOf("a", i32S, int32(1))
	out := apply(t, mk(t, "SetSchemaMetadata$Value", map[string]string{"schema.name": "com.example.Order", "schema.version": "3"}), &connect.Record{ValueSchema: s, Value: st})
	if out.ValueSchema.Name != "com.example.Order" || out.ValueSchema.Version != 3 || out.Value.(*connect.Struct).Schema() != out.ValueSchema {
		t.Fatalf("metadata %+v", out.ValueSchema)
	}
	if _, err := mk(t, "SetSchemaMetadata$Value", map[string]string{"schema.name": "x"}).Apply(&connect.Record{Value: 1}); err == nil {
		t.Fatal("schemaless accepted")
	}
	r := &connect.Record{Headers: []connect.Header{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}, {Key: "a", Value: "3"}}}
	out = apply(t, mk(t, "DropHeaders", map[string]string{"headers": "a"}), r)
	if len(out.Headers) != 1 || out.Headers[0].Key != "b" || len(r.Headers) != 3 {
		t.Fatalf("drop %+v", out.Headers)
	}
	out = apply(t, mk(t, "InsertHeader", map[string]string{"header": "n", "value.literal": "42"}), r)
	if h := out.Header("n"); h == nil || h.Value != int8(42) || h.Schema.Type != connect.Int8 {
		t.Fatalf("insert %+v", out.Headers)
	}
	if out, _ := mk(t, "Filter", nil).Apply(r); out != nil {
		t.Fatal("filter kept a record")
	}
}

func TestPredicates(t *testing.T) {
	mkp := func(class string, props map[string]string) connect.Predicate {
		p, err := connect.NewPredicate(class)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Configure(props); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tn := mkp("org.apache.kafka.connect.transforms.predicates.TopicNameMatches", map[string]string{"pattern": "orders-.*"})
	for topic, want := range map[string]bool{"orders-1": true, "xorders-1": false, "orders": false} {
		if got, _ := tn.Test(&connect.Record{Topic: topic}); got != want {
			t.Fatalf("%s: %v", topic, got)
		}
	}
	hh := mkp("HasHeaderKey", map[string]string{"name": "trace"})
	if ok, _ := hh.Test(&connect.Record{Headers: []connect.Header{{Key: "trace"}}}); !ok {
		t.Fatal("header not seen")
	}
	if ok, _ := hh.Test(&connect.Record{}); ok {
		t.Fatal("absent header seen")
	}
	tomb := mkp("RecordIsTombstone", nil)
	if ok, _ := tomb.Test(&connect.Record{Value: nil}); !ok {
		t.Fatal("tombstone not seen")
	}
	if ok, _ := tomb.Test(&connect.Record{Value: "x"}); ok {
		t.Fatal("value seen as tombstone")
	}
	if err := (&TopicNameMatches{}).Configure(map[string]string{"pattern": "("}); err == nil {
		t.Fatal("bad pattern accepted")
	}
}

func TestJavaLayout(t *testing.T) {
	for in, want := range map[string]string{
		"yyyyMMdd":                     "20060102",
		"yyyy-MM-dd'T'HH:mm:ss.SSSXXX": "2006-01-02T15:04:05.000Z07:00",
		"dd/MMM/yy hh:mm a":            "02/Jan/06 03:04 PM",
	} {
		got, err := javaLayout(in)
		if err != nil || got != want {
			t.Fatalf("%s: %q %v", in, got, err)
		}
	}
	for _, bad := range []string{"yyyy'01'", "G", "'unterminated"} {
		if _, err := javaLayout(bad); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
