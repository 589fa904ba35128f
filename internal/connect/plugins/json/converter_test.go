package json

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/connect"
)

func configured(t *testing.T, props map[string]string) *Converter {
	t.Helper()
	c := New()
	if err := c.Configure(props, false); err != nil {
		t.Fatal(err)
	}
	return c
}

// The serialized forms are those Kafka's JsonConverter writes for the same
// Connect data (its documented envelope: type first, optional after the
// type's own keys, a field's name last).
func TestFromConnectDataWritesKafkaEnvelope(t *testing.T) {
	c := configured(t, nil)
	st := &connect.Schema{Type: connect.StructT, Name: "com.example.Row", Version: 2, Fields: []connect.Field{
		{Name: "id", Index: 0, Schema: &connect.Schema{Type: connect.Int32}},
		{Name: "name", Index: 1, Schema: &connect.Schema{Type: connect.String, Optional: true}},
	}}
	row := connect.NewStruct(st)
	_ = row.Put("id", int32(7))
	_ = row.Put("name", "x")
	dec := &connect.Schema{Type: connect.Bytes, Name: connect.DecimalName, Version: 1, Parameters: map[string]string{"scale": "2"}}
	cases := []struct {
		name   string
		schema *connect.Schema
		value  any
		want   string
	}{
		{"boolean", &connect.Schema{Type: connect.Boolean}, true, `{"schema":{"type":"boolean","optional":false},"payload":true}`},
		{"int8", &connect.Schema{Type: connect.Int8}, int8(12), `{"schema":{"type":"int8","optional":false},"payload":12}`},
		{"float64", &connect.Schema{Type: connect.Float64}, 12.0, `{"schema":{"type":"double","optional":false},"payload":12.0}`},
		{"string", &connect.Schema{Type: connect.String}, "foo-bar-baz", `{"schema":{"type":"string","optional":false},"payload":"foo-bar-baz"}`},
		{"bytes", &connect.Schema{Type: connect.Bytes}, []byte("test-string"), `{"schema":{"type":"bytes","optional":false},"payload":"dGVzdC1zdHJpbmc="}`},
		{"array", &connect.Schema{Type: connect.Array, Value: &connect.Schema{Type: connect.Int32}}, []any{int32(1), int32(2), int32(3)},
			`{"schema":{"type":"array","items":{"type":"int32","optional":false},"optional":false},"payload":[1,2,3]}`},
		{"map string keys", &connect.Schema{Type: connect.Map, Key: &connect.Schema{Type: connect.String}, Value: &connect.Schema{Type: connect.Int32}},
			map[any]any{"key1": int32(12), "key2": int32(15)},
			`{"schema":{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":{"key1":12,"key2":15}}`},
		{"map int keys", &connect.Schema{Type: connect.Map, Key: &connect.Schema{Type: connect.Int32}, Value: &connect.Schema{Type: connect.Int32}},
			map[any]any{int32(1): int32(12), int32(2): int32(15)},
			`{"schema":{"type":"map","keys":{"type":"int32","optional":false},"values":{"type":"int32","optional":false},"optional":false},"payload":[[1,12],[2,15]]}`},
		{"struct", st, row,
			`{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"com.example.Row","version":2},"payload":{"id":7,"name":"x"}}`},
		{"decimal", dec, connect.Decimal{Unscaled: big.NewInt(156), Scale: 2},
			`{"schema":{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"AJw="}`},
		{"date", &connect.Schema{Type: connect.Int32, Name: connect.DateName, Version: 1}, time.Unix(10000*86400, 0).UTC(),
			`{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Date","version":1},"payload":10000}`},
		{"time", &connect.Schema{Type: connect.Int32, Name: connect.TimeName, Version: 1}, time.UnixMilli(14400000).UTC(),
			`{"schema":{"type":"int32","optional":false,"name":"org.apache.kafka.connect.data.Time","version":1},"payload":14400000}`},
		{"timestamp", &connect.Schema{Type: connect.Int64, Name: connect.TimestampName, Version: 1}, time.UnixMilli(4000000000).UTC(),
			`{"schema":{"type":"int64","optional":false,"name":"org.apache.kafka.connect.data.Timestamp","version":1},"payload":4000000000}`},
		{"default replaces null", &connect.Schema{Type: connect.Int32, Optional: true, Default: int32(42)}, nil,
			`{"schema":{"type":"int32","optional":true,"default":42},"payload":42}`},
		{"schemaless", nil, map[string]any{"a": int64(1), "b": []any{"x", true}}, `{"schema":null,"payload":{"a":1,"b":["x",true]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.FromConnectData("t", nil, tc.schema, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			// And back: the same schema and an equal value.
			s, v, err := c.ToConnectData("t", nil, got)
			if err != nil {
				t.Fatal(err)
			}
			if !connect.SchemasEqual(s, tc.schema) {
				t.Fatalf("schema back %+v, want %+v", s, tc.schema)
			}
			again, err := c.FromConnectData("t", nil, s, v)
			if err != nil || string(again) != tc.want {
				t.Fatalf("round trip gave %s (%v)", again, err)
			}
		})
	}
}

func TestToConnectDataReadsKafkaExamples(t *testing.T) {
	c := configured(t, nil)
	_, v, err := c.ToConnectData("t", nil, []byte(`{ "schema": { "type": "struct", "fields": [{ "field": "field1", "type": "boolean" }, { "field": "field2", "type": "string" }] }, "payload": { "field1": true, "field2": "string" } }`))
	if err != nil {
		t.Fatal(err)
	}
	st := v.(*connect.Struct)
	if f1, _ := st.Get("field1"); f1 != true {
		t.Fatalf("field1 = %v", f1)
	}
	if f2, _ := st.Get("field2"); f2 != "string" {
		t.Fatalf("field2 = %v", f2)
	}
	_, v, err = c.ToConnectData("t", nil, []byte(`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":-1.56}`))
	if err != nil || v.(connect.Decimal).String() != "-1.56" {
		t.Fatalf("numeric decimal = %v, %v", v, err)
	}
	_, v, _ = c.ToConnectData("t", nil, []byte(`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"}},"payload":"/2Q="}`))
	if v.(connect.Decimal).String() != "-1.56" {
		t.Fatalf("base64 negative decimal = %v", v)
	}
	// A required field given null is refused, a missing optional one is null.
	if _, _, err := c.ToConnectData("t", nil, []byte(`{"schema":{"type":"int32"},"payload":null}`)); err == nil {
		t.Fatal("null for a required int32 accepted")
	}
}

func TestSchemasEnableRequiresTheEnvelope(t *testing.T) {
	c := configured(t, nil)
	for _, in := range []string{`{"a":1}`, `{"schema":null,"payload":1,"x":2}`, `[1]`, `12`} {
		_, _, err := c.ToConnectData("t", nil, []byte(in))
		if err == nil || !strings.Contains(err.Error(), `requires "schema" and "payload"`) {
			t.Fatalf("%s: %v", in, err)
		}
	}
	if _, _, err := c.ToConnectData("t", nil, []byte(`{"schema":`)); err == nil {
		t.Fatal("truncated JSON accepted")
	}
	plain := configured(t, map[string]string{"schemas.enable": "false"})
	s, v, err := plain.ToConnectData("t", nil, []byte(`{"a":1,"b":[1.5,"x"],"c":null}`))
	if err != nil || s != nil {
		t.Fatal(s, err)
	}
	m := v.(map[string]any)
	if m["a"] != int64(1) || m["b"].([]any)[0] != 1.5 || m["c"] != nil {
		t.Fatalf("schemaless = %#v", m)
	}
	out, _ := plain.FromConnectData("t", nil, nil, m)
	if string(out) != `{"a":1,"b":[1.5,"x"],"c":null}` {
		t.Fatalf("schemaless out %s", out)
	}
	if out, _ := plain.FromConnectData("t", nil, nil, nil); out != nil {
		t.Fatalf("null gives %q, want nil bytes", out)
	}
}

func TestDecimalFormatNumericAndReplaceNull(t *testing.T) {
	c := configured(t, map[string]string{"decimal.format": "NUMERIC", "replace.null.with.default": "false"})
	dec := &connect.Schema{Type: connect.Bytes, Name: connect.DecimalName, Version: 1, Parameters: map[string]string{"scale": "3"}}
	out, err := c.FromConnectData("t", nil, dec, connect.Decimal{Unscaled: big.NewInt(-12345), Scale: 3})
	if err != nil || !strings.HasSuffix(string(out), `"payload":-12.345}`) {
		t.Fatalf("%s %v", out, err)
	}
	opt := &connect.Schema{Type: connect.Int32, Optional: true, Default: int32(42)}
	out, _ = c.FromConnectData("t", nil, opt, nil)
	if !strings.HasSuffix(string(out), `"payload":null}`) {
		t.Fatalf("replace.null.with.default=false wrote %s", out)
	}
	if err := New().Configure(map[string]string{"decimal.format": "HEX"}, false); err == nil {
		t.Fatal("decimal.format=HEX accepted")
	}
}

func TestSchemaCacheDisabled(t *testing.T) {
	c := configured(t, map[string]string{"schemas.cache.size": "0"})
	s := &connect.Schema{Type: connect.String}
	for i := 0; i < 3; i++ {
		if _, err := c.FromConnectData("t", nil, s, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.cache.out) != 0 {
		t.Fatal("a cache of size 0 cached")
	}
	c = configured(t, map[string]string{"schemas.cache.size": "1"})
	_, _ = c.FromConnectData("t", nil, s, "x")
	_, _ = c.FromConnectData("t", nil, &connect.Schema{Type: connect.Int32}, int32(1))
	if len(c.cache.out) != 1 {
		t.Fatalf("cache of size 1 holds %d", len(c.cache.out))
	}
}

func TestSimpleHeaderConverterParsesAsKafkaValues(t *testing.T) {
	h := SimpleHeaderConverter{}
	cases := []struct {
		in   string
		typ  connect.Type
		name string
		out  any
	}{
		{"", connect.String, "", ""},
		{"true", connect.Boolean, "", true},
		{"12", connect.Int8, "", int8(12)},
		{"1000", connect.Int16, "", int16(1000)},
		{"100000", connect.Int32, "", int32(100000)},
		{"10000000000", connect.Int64, "", int64(10000000000)},
		{"1.5", connect.Float32, "", float32(1.5)},
		{"hello world", connect.String, "", "hello world"},
		{"2024-03-01", connect.Int32, connect.DateName, time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"2024-03-01T10:11:12.345Z", connect.Int64, connect.TimestampName, time.Date(2024, 3, 1, 10, 11, 12, 345e6, time.UTC)},
	}
	for _, tc := range cases {
		s, v, err := h.ToConnectHeader("t", "k", []byte(tc.in))
		if err != nil || s.Type != tc.typ || s.Name != tc.name {
			t.Fatalf("%q: schema %+v, %v", tc.in, s, err)
		}
		if tt, ok := tc.out.(time.Time); ok {
			if !v.(time.Time).Equal(tt) {
				t.Fatalf("%q: %v", tc.in, v)
			}
		} else if v != tc.out {
			t.Fatalf("%q: %#v, want %#v", tc.in, v, tc.out)
		}
		back, _ := h.FromConnectHeader("t", "k", s, v)
		if string(back) != tc.in {
			t.Fatalf("%q written back as %q", tc.in, back)
		}
	}
	s, v, _ := h.ToConnectHeader("t", "k", []byte(`[1,2,3]`))
	if s.Type != connect.Array || s.Value.Type != connect.Int8 || len(v.([]any)) != 3 {
		t.Fatalf("array: %+v %v", s, v)
	}
	s, v, _ = h.ToConnectHeader("t", "k", []byte(`{"a":"x","b":"y"}`))
	if s.Type != connect.Map || v.(map[any]any)["b"] != "y" {
		t.Fatalf("map: %+v %v", s, v)
	}
	back, _ := h.FromConnectHeader("t", "k", s, v)
	if string(back) != `{"a":"x","b":"y"}` {
		t.Fatalf("map back %s", back)
	}
}

func TestRegisteredUnderKafkaNames(t *testing.T) {
	if _, err := connect.NewConverter(Class); err != nil {
		t.Fatal(err)
	}
	if _, err := connect.NewHeaderConverter(SimpleHeaderClass); err != nil {
		t.Fatal(err)
	}
	if h, err := connect.NewHeaderConverter(Class); err != nil {
		t.Fatal(err)
	} else if _, ok := h.(*HeaderConverter); !ok {
		t.Fatalf("JsonConverter as header converter is a %T", h)
	}
}

func FuzzToConnectData(f *testing.F) {
	f.Add([]byte(`{"schema":{"type":"struct","fields":[{"field":"a","type":"map","keys":{"type":"int8"},"values":{"type":"string"}}]},"payload":{"a":[[1,"x"]]}}`))
	f.Add([]byte(`{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2"}},"payload":"AJw="}`))
	c := New()
	f.Fuzz(func(t *testing.T, data []byte) {
		s, v, err := c.ToConnectData("t", nil, data)
		if err != nil {
			return
		}
		// Whatever was read can be written again.
		if _, err := c.FromConnectData("t", nil, s, v); err != nil {
			t.Fatalf("read %q but cannot write it back: %v", data, err)
		}
	})
}

func TestJSONHeaderConverterRoundTrip(t *testing.T) {
	h := NewHeaderConverter()
	if err := h.Configure(map[string]string{"schemas.enable": "false"}); err != nil {
		t.Fatal(err)
	}
	b, err := h.FromConnectHeader("t", "k", &connect.Schema{Type: connect.Int64}, int64(5))
	if err != nil || string(b) != "5" {
		t.Fatalf("%s %v", b, err)
	}
	_, v, err := h.ToConnectHeader("t", "k", b)
	if err != nil || v != int64(5) {
		t.Fatalf("%v %v", v, err)
	}
}

// The same schema text on every record, as JsonConverter writes it, is
// parsed once; the same schema written differently maps to the same
// schema too, and the payload is read the same either way.
func TestToConnectDataCachesTheSchemaByItsText(t *testing.T) {
	c := configured(t, nil)
	a := []byte(`{"schema":{"type":"struct","fields":[{"field":"n","type":"int64"}]},"payload":{"n":7}}`)
	b := []byte(`{ "payload" : {"n":8}, "schema" : { "fields" : [ { "type" : "int64", "field" : "n" } ], "type" : "struct" } }`)
	s1, v1, err := c.ToConnectData("t", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	s2, _, err := c.ToConnectData("t", nil, a)
	if err != nil || s2 != s1 {
		t.Fatalf("the same schema text parsed again (%p, %p, %v)", s1, s2, err)
	}
	s3, v3, err := c.ToConnectData("t", nil, b)
	if err != nil || s3 != s1 {
		t.Fatalf("the same schema written differently is another schema (%p, %p, %v)", s1, s3, err)
	}
	if n, _ := v1.(*connect.Struct).Get("n"); n != int64(7) {
		t.Fatalf("n = %#v", n)
	}
	if n, _ := v3.(*connect.Struct).Get("n"); n != int64(8) {
		t.Fatalf("n = %#v", n)
	}
}
