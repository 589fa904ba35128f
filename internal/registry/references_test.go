package registry

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestReferences drives references with franz-go's sr client, for each
// format: a schema referencing another subject's version registers, keeps
// its references (by id and by version), is listed by the referenced
// version's referencedby, and encodes and decodes with the referenced
// schema as a dependency; the referenced subject cannot be deleted while a
// live version refers to it (42206), and can once that version is
// deleted; a reference to a version that does not exist is an invalid
// schema (42201). The by-id and by-version sub-resources, the schema
// types, per-subject configs and modes are checked on the way.
func TestReferences(t *testing.T) {
	cluster := newCluster(t)
	_, url := startRegistry(t, cluster, 0)
	ctx := context.Background()
	cl, err := sr.NewClient(sr.URLs(url))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, typ      string
		srType         sr.SchemaType
		refName        string
		dep, main, doc string
	}{
		{"avro", TypeAvro, sr.TypeAvro, "ex.Address",
			`{"type":"record","name":"Address","namespace":"ex","fields":[{"name":"city","type":"string"}]}`,
			`{"type":"record","name":"Order","namespace":"ex","fields":[{"name":"id","type":"long"},{"name":"ship","type":"ex.Address"}]}`,
			`{"id":7,"ship":{"city":"Brno"}}`},
		{"json", TypeJSON, sr.TypeJSON, "address.json",
			`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
			`{"type":"object","properties":{"id":{"type":"integer"},"ship":{"$ref":"address.json"}},"required":["id","ship"]}`,
			`{"id":7,"ship":{"city":"Brno"}}`},
		{"json-id", TypeJSON, sr.TypeJSON, "address.json",
			`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`,
			`{"$id":"http://example.com/schemas/order.json","type":"object","properties":{"id":{"type":"integer"},"ship":{"$ref":"address.json"}},"required":["id","ship"]}`,
			`{"id":7,"ship":{"city":"Brno"}}`},
		{"protobuf", TypeProtobuf, sr.TypeProtobuf, "address.proto",
			"syntax = \"proto3\";\npackage ex;\nmessage Address { string city = 1; }\n",
			"syntax = \"proto3\";\npackage ex;\nimport \"address.proto\";\nmessage Order { int64 id = 1; Address ship = 2; }\n",
			`{"id":"7","ship":{"city":"Brno"}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			depSubject, mainSubject := c.name+"-address", c.name+"-order-value"
			dep, err := cl.CreateSchema(ctx, depSubject, sr.Schema{Schema: c.dep, Type: c.srType})
			if err != nil {
				t.Fatalf("register the referenced schema: %v", err)
			}
			refs := []sr.SchemaReference{{Name: c.refName, Subject: depSubject, Version: dep.Version}}
			if _, err := cl.CreateSchema(ctx, c.name+"-dangling", sr.Schema{Schema: c.main, Type: c.srType,
				References: []sr.SchemaReference{{Name: c.refName, Subject: depSubject, Version: 9}}}); !hasCode(err, 42201) {
				t.Fatalf("a reference to a missing version: %v, want 42201", err)
			}
			main, err := cl.CreateSchema(ctx, mainSubject, sr.Schema{Schema: c.main, Type: c.srType, References: refs})
			if err != nil {
				t.Fatalf("register with a reference: %v", err)
			}
			if main.ID == dep.ID || !reflect.DeepEqual(main.References, refs) {
				t.Fatalf("registered %+v, want a new id with references %+v", main, refs)
			}
			byID, err := cl.SchemaByID(ctx, main.ID)
			if err != nil || byID.Type != c.srType || !reflect.DeepEqual(byID.References, refs) {
				t.Fatalf("by id: %+v, %v", byID, err)
			}
			if text, err := cl.SchemaTextByVersion(ctx, mainSubject, 1); err != nil || strings.TrimSpace(text) != strings.TrimSpace(c.main) {
				t.Fatalf("versions/1/schema: %q, %v", text, err)
			}
			if text, err := cl.SchemaTextByID(ctx, main.ID); err != nil || strings.TrimSpace(text) != strings.TrimSpace(c.main) {
				t.Fatalf("schemas/ids/%d/schema: %q, %v", main.ID, text, err)
			}
			if subs, err := cl.SubjectsByID(ctx, dep.ID); err != nil || !slices.Equal(subs, []string{depSubject}) {
				t.Fatalf("schemas/ids/%d/subjects: %v, %v", dep.ID, subs, err)
			}
			users, err := cl.SchemaReferences(ctx, depSubject, dep.Version)
			if err != nil || len(users) != 1 || users[0].Subject != mainSubject || users[0].ID != main.ID {
				t.Fatalf("referencedby: %+v, %v", users, err)
			}
			if _, err := cl.DeleteSubject(ctx, depSubject, sr.SoftDelete); !hasCode(err, 42206) {
				t.Fatalf("deleting a referenced subject: %v, want 42206", err)
			}
			if err := cl.DeleteSchema(ctx, depSubject, dep.Version, sr.SoftDelete); !hasCode(err, 42206) {
				t.Fatalf("deleting a referenced version: %v, want 42206", err)
			}
			// The dependency's text makes the codec; the document goes
			// through the wire format and back.
			codec, err := NewCodec(c.typ, c.main, []Dependency{{Name: c.refName, Schema: c.dep}})
			if err != nil {
				t.Fatal(err)
			}
			payload, err := codec.Encode([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			back, err := codec.Decode(payload)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			_ = json.Unmarshal([]byte(c.doc), &want)
			if err := json.Unmarshal(back, &got); err != nil || !reflect.DeepEqual(want, got) {
				t.Fatalf("round trip with a reference: %s, want %s", back, c.doc)
			}
			// The referenced schema's rules apply: a document the
			// dependency refuses is refused.
			bad := strings.Replace(c.doc, `"city":"Brno"`, `"city":5`, 1)
			if _, err := codec.Encode([]byte(bad)); err == nil {
				t.Fatalf("%s encoded: the reference was not followed", bad)
			}
			// Once the referencing subject is deleted, the referenced one
			// can be.
			if _, err := cl.DeleteSubject(ctx, mainSubject, sr.SoftDelete); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.DeleteSubject(ctx, depSubject, sr.SoftDelete); err != nil {
				t.Fatalf("deleting the no longer referenced subject: %v", err)
			}
		})
	}

	types, err := cl.SupportedTypes(ctx)
	if err != nil || len(types) != 3 || !slices.Contains(types, sr.TypeAvro) || !slices.Contains(types, sr.TypeJSON) || !slices.Contains(types, sr.TypeProtobuf) {
		t.Fatalf("schemas/types: %v, %v", types, err)
	}
	// A subject's own level and mode, then back to the global ones.
	if _, err := cl.CreateSchema(ctx, "levels-value", sr.Schema{Schema: userV1}); err != nil {
		t.Fatal(err)
	}
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "levels-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if res, err := cl.CheckCompatibility(ctx, "levels-value", -1, sr.Schema{Schema: userBad}); err != nil || !res.Is {
		t.Fatalf("NONE: %+v, %v; want compatible", res, err)
	}
	// Against every version (POST /compatibility/subjects/{s}/versions).
	if res, err := cl.CheckCompatibility(ctx, "levels-value", -2, sr.Schema{Schema: userV2}); err != nil || !res.Is {
		t.Fatalf("against all versions: %+v, %v; want compatible", res, err)
	}
	if r := cl.ResetCompatibility(ctx, "levels-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if res, err := cl.CheckCompatibility(ctx, "levels-value", -1, sr.Schema{Schema: userBad}); err != nil || res.Is {
		t.Fatalf("back to the global BACKWARD: %+v, %v; want incompatible", res, err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadOnly, "levels-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.CreateSchema(ctx, "levels-value", sr.Schema{Schema: userV2}); !hasCode(err, 42205) {
		t.Fatalf("register in the subject's READONLY mode: %v, want 42205", err)
	}
	if _, err := cl.CreateSchema(ctx, "other-levels-value", sr.Schema{Schema: userV2}); err != nil {
		t.Fatalf("another subject, in the global READWRITE mode: %v", err)
	}
	if r := cl.ResetMode(ctx, "levels-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.CreateSchema(ctx, "levels-value", sr.Schema{Schema: userV2}); err != nil {
		t.Fatalf("register once the subject's mode is reset: %v", err)
	}
}
