package registry

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestCodecRoundTrips encodes a JSON document with each format's codec
// and decodes it back to the same document; bad documents are refused.
func TestCodecRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name, typ, schema, doc, bad string
	}{
		{"avro", TypeAvro, `{"type":"record","name":"U","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},` +
			`{"name":"email","type":["null","string"],"default":null},{"name":"tags","type":{"type":"array","items":"string"}},` +
			`{"name":"score","type":"double"},{"name":"kind","type":{"type":"enum","name":"K","symbols":["A","B"]}}]}`,
			`{"age":7,"email":"a@b","kind":"B","name":"ann","score":1.5,"tags":["x","y"]}`, `{"name":"ann","age":"seven"}`},
		{"json", TypeJSON, `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},"required":["name"]}`,
			`{"age":7,"name":"ann"}`, `{"age":7}`},
		{"protobuf", TypeProtobuf, "syntax = \"proto3\";\nmessage U { string name = 1; int32 age = 2; repeated string tags = 3; }\n",
			`{"name":"ann","age":7,"tags":["x"]}`, `{"name":1}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			codec, err := NewCodec(c.typ, c.schema, nil)
			if err != nil {
				t.Fatal(err)
			}
			payload, err := codec.Encode([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			id, rest, err := DecodeWire(EncodeWire(9, payload))
			if err != nil || id != 9 {
				t.Fatalf("wire: %d, %v", id, err)
			}
			back, err := codec.Decode(rest)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			_ = json.Unmarshal([]byte(c.doc), &want)
			if err := json.Unmarshal(back, &got); err != nil || !reflect.DeepEqual(want, got) {
				t.Fatalf("round trip: %s, want %s (%v)", back, c.doc, err)
			}
			if _, err := codec.Encode([]byte(c.bad)); err == nil {
				t.Fatalf("%s encoded", c.bad)
			}
		})
	}
	if _, _, err := DecodeWire([]byte("plain")); err == nil {
		t.Fatal("data without the magic byte decoded")
	}
}
