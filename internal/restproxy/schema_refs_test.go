package restproxy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestSchemaClientResolvesReferences: a schema fetched by id with a
// reference to another subject's version gets its codec with that
// version's schema known, for every format: the referenced type's rules
// apply to the record, and a JSON Schema reference is never looked for
// anywhere but the registry.
func TestSchemaClientResolvesReferences(t *testing.T) {
	type schema struct {
		Subject    string            `json:"subject,omitempty"`
		Version    int               `json:"version,omitempty"`
		ID         int               `json:"id"`
		SchemaType string            `json:"schemaType,omitempty"`
		Schema     string            `json:"schema"`
		References []schemaReference `json:"references,omitempty"`
	}
	cases := []struct {
		format, typ, refName, dep, main, good, bad string
	}{
		{fmtAvro, "", "ex.Address",
			`{"type":"record","name":"Address","namespace":"ex","fields":[{"name":"city","type":"string"}]}`,
			`{"type":"record","name":"Order","namespace":"ex","fields":[{"name":"id","type":"long"},{"name":"ship","type":"ex.Address"}]}`,
			`{"id":7,"ship":{"city":"Brno"}}`, `{"id":7,"ship":{"city":5}}`},
		{fmtJSONSchema, "JSON", "address.json",
			`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
			`{"type":"object","properties":{"id":{"type":"integer"},"ship":{"$ref":"address.json"}},"required":["id","ship"]}`,
			`{"id":7,"ship":{"city":"Brno"}}`, `{"id":7,"ship":{"city":5}}`},
		{fmtProtobuf, "PROTOBUF", "address.proto",
			"syntax = \"proto3\";\npackage ex;\nmessage Address { string city = 1; }\n",
			"syntax = \"proto3\";\npackage ex;\nimport \"address.proto\";\nmessage Order { int64 id = 1; Address ship = 2; }\n",
			`{"id":"7","ship":{"city":"Brno"}}`, `{"id":"7","ship":{"city":5}}`},
	}
	byPath := map[string]schema{}
	for i, c := range cases {
		dep := schema{Subject: c.format + "-address", Version: 1, ID: 10 + i, SchemaType: c.typ, Schema: c.dep}
		byPath["/subjects/"+dep.Subject+"/versions/1"] = dep
		byPath["/schemas/ids/"+string(rune('1'+i))] = schema{ID: 1 + i, SchemaType: c.typ, Schema: c.main,
			References: []schemaReference{{Name: c.refName, Subject: dep.Subject, Version: 1}}}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, ok := byPath[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error_code":40403,"message":"not found"}`))
			return
		}
		json.NewEncoder(w).Encode(s)
	}))
	defer srv.Close()
	sc := newSchemaClient(srv.URL)
	for i, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			rs, err := sc.byID(context.Background(), 1+i)
			if err != nil {
				t.Fatalf("schema %d with a reference: %v", 1+i, err)
			}
			if rs.format != c.format {
				t.Fatalf("format %s, want %s", rs.format, c.format)
			}
			payload, err := rs.codec.encode(json.RawMessage(c.good))
			if err != nil {
				t.Fatalf("encode %s: %v", c.good, err)
			}
			back, err := rs.codec.decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			json.Unmarshal([]byte(c.good), &want)
			json.Unmarshal(back, &got)
			if mustJSON(want) != mustJSON(got) {
				t.Fatalf("round trip: %s, want %s", back, c.good)
			}
			if _, err := rs.codec.encode(json.RawMessage(c.bad)); err == nil {
				t.Fatalf("%s encoded: the referenced schema's rules were not applied", c.bad)
			}
		})
	}
}
