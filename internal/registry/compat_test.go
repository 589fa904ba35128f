package registry

import (
	"strings"
	"testing"
)

// verdicts is the expected outcome per level for one (previous, candidate)
// pair: true is compatible.
type verdicts struct{ backward, forward, full bool }

type compatCase struct {
	name                string
	previous, candidate string
	want                verdicts
}

func runCompatTable(t *testing.T, typ string, cases []compatCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, err := parseSchema(typ, c.previous, nil, false)
			if err != nil {
				t.Fatalf("previous: %v", err)
			}
			cand, err := parseSchema(typ, c.candidate, nil, false)
			if err != nil {
				t.Fatalf("candidate: %v", err)
			}
			for _, lv := range []struct {
				level string
				want  bool
			}{
				{CompatBackward, c.want.backward}, {CompatForward, c.want.forward}, {CompatFull, c.want.full},
				{CompatBackwardTransitive, c.want.backward}, {CompatForwardTransitive, c.want.forward},
				{CompatFullTransitive, c.want.full}, {CompatNone, true},
			} {
				msgs := []string(nil)
				if lv.level != CompatNone {
					msgs = incompatibilities(lv.level, cand, prev)
				}
				if got := len(msgs) == 0; got != lv.want {
					t.Errorf("%s: compatible=%v, want %v (%s)", lv.level, got, lv.want, strings.Join(msgs, "; "))
				}
			}
		})
	}
}

func TestAvroCompatibility(t *testing.T) {
	rec := func(fields string) string {
		return `{"type":"record","name":"User","namespace":"ex","fields":[` + fields + `]}`
	}
	name := `{"name":"name","type":"string"}`
	runCompatTable(t, TypeAvro, []compatCase{
		{"identical", rec(name), rec(name), verdicts{true, true, true}},
		{"field added without default", rec(name), rec(name + `,{"name":"age","type":"int"}`), verdicts{false, true, false}},
		{"field added with default", rec(name), rec(name + `,{"name":"age","type":"int","default":0}`), verdicts{true, true, true}},
		{"field removed without default", rec(name + `,{"name":"age","type":"int"}`), rec(name), verdicts{true, false, false}},
		{"field removed with default", rec(name + `,{"name":"age","type":"int","default":0}`), rec(name), verdicts{true, true, true}},
		{"int promoted to long", rec(`{"name":"n","type":"int"}`), rec(`{"name":"n","type":"long"}`), verdicts{true, false, false}},
		{"long promoted to double", rec(`{"name":"n","type":"long"}`), rec(`{"name":"n","type":"double"}`), verdicts{true, false, false}},
		{"float promoted to double", rec(`{"name":"n","type":"float"}`), rec(`{"name":"n","type":"double"}`), verdicts{true, false, false}},
		{"string to bytes", rec(`{"name":"n","type":"string"}`), rec(`{"name":"n","type":"bytes"}`), verdicts{true, true, true}},
		{"int to string", rec(`{"name":"n","type":"int"}`), rec(`{"name":"n","type":"string"}`), verdicts{false, false, false}},
		{"enum symbol added", `{"type":"enum","name":"E","symbols":["A","B"]}`, `{"type":"enum","name":"E","symbols":["A","B","C"]}`, verdicts{true, false, false}},
		{"enum symbol added, reader default", `{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}`, `{"type":"enum","name":"E","symbols":["A","B","C"],"default":"A"}`, verdicts{true, true, true}},
		{"union branch added", rec(`{"name":"n","type":["null","string"]}`), rec(`{"name":"n","type":["null","string","int"]}`), verdicts{true, false, false}},
		{"type made nullable", rec(`{"name":"n","type":"string"}`), rec(`{"name":"n","type":["null","string"]}`), verdicts{true, false, false}},
		{"record renamed", rec(name), `{"type":"record","name":"Person","namespace":"ex","fields":[` + name + `]}`, verdicts{false, false, false}},
		{"record renamed with alias", rec(name), `{"type":"record","name":"Person","namespace":"ex","aliases":["ex.User"],"fields":[` + name + `]}`, verdicts{true, false, false}},
		{"fixed size changed", `{"type":"fixed","name":"F","size":4}`, `{"type":"fixed","name":"F","size":8}`, verdicts{false, false, false}},
		{"array items promoted", `{"type":"array","items":"int"}`, `{"type":"array","items":"long"}`, verdicts{true, false, false}},
		{"map values changed", `{"type":"map","values":"int"}`, `{"type":"map","values":"boolean"}`, verdicts{false, false, false}},
	})
}

func TestJSONSchemaCompatibility(t *testing.T) {
	obj := func(props, extra string) string {
		s := `{"type":"object","properties":{` + props + `}`
		if extra != "" {
			s += "," + extra
		}
		return s + "}"
	}
	name := `"name":{"type":"string"}`
	age := `"age":{"type":"integer"}`
	runCompatTable(t, TypeJSON, []compatCase{
		{"identical", obj(name, ""), obj(name, ""), verdicts{true, true, true}},
		{"property added to open content model", obj(name, ""), obj(name+","+age, ""), verdicts{false, true, false}},
		{"property added to closed content model", obj(name, `"additionalProperties":false`), obj(name+","+age, `"additionalProperties":false`), verdicts{true, false, false}},
		{"property removed from open content model", obj(name+","+age, ""), obj(name, ""), verdicts{true, false, false}},
		{"property removed from closed content model", obj(name+","+age, `"additionalProperties":false`), obj(name, `"additionalProperties":false`), verdicts{false, true, false}},
		{"empty-schema property added to open model", obj(name, ""), obj(name+`,"x":{}`, ""), verdicts{true, true, true}},
		{"required property added", obj(name, ""), obj(name, `"required":["name"]`), verdicts{false, true, false}},
		{"required property with default added", obj(name, ""), obj(`"name":{"type":"string","default":"x"}`, `"required":["name"]`), verdicts{true, true, true}},
		{"type widened integer to number", obj(`"n":{"type":"integer"}`, ""), obj(`"n":{"type":"number"}`, ""), verdicts{true, false, false}},
		{"type changed", obj(`"n":{"type":"integer"}`, ""), obj(`"n":{"type":"string"}`, ""), verdicts{false, false, false}},
		{"type list extended", obj(`"n":{"type":"string"}`, ""), obj(`"n":{"type":["string","null"]}`, ""), verdicts{true, false, false}},
		{"additionalProperties closed", obj(name, ""), obj(name, `"additionalProperties":false`), verdicts{false, true, false}},
		{"maxLength decreased", obj(`"s":{"type":"string","maxLength":10}`, ""), obj(`"s":{"type":"string","maxLength":5}`, ""), verdicts{false, true, false}},
		{"minimum added", obj(`"n":{"type":"number"}`, ""), obj(`"n":{"type":"number","minimum":0}`, ""), verdicts{false, true, false}},
		{"enum extended", `{"enum":["a","b"]}`, `{"enum":["a","b","c"]}`, verdicts{true, false, false}},
		{"items type changed", `{"type":"array","items":{"type":"string"}}`, `{"type":"array","items":{"type":"integer"}}`, verdicts{false, false, false}},
		{"oneOf branch added", `{"oneOf":[{"type":"string"},{"type":"integer"}]}`, `{"oneOf":[{"type":"string"},{"type":"integer"},{"type":"boolean"}]}`, verdicts{true, false, false}},
		{"local $ref followed", `{"$defs":{"a":{"type":"string"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`,
			`{"$defs":{"a":{"type":"integer"}},"type":"object","properties":{"x":{"$ref":"#/$defs/a"}}}`, verdicts{false, false, false}},
	})
}

func TestProtobufCompatibility(t *testing.T) {
	msg := func(body string) string {
		return "syntax = \"proto3\";\npackage ex;\nmessage User {\n" + body + "\n}\n"
	}
	runCompatTable(t, TypeProtobuf, []compatCase{
		{"identical", msg("string name = 1;"), msg("string name = 1;"), verdicts{true, true, true}},
		{"field added", msg("string name = 1;"), msg("string name = 1;\nint32 age = 2;"), verdicts{true, true, true}},
		{"field removed", msg("string name = 1;\nint32 age = 2;"), msg("string name = 1;"), verdicts{true, true, true}},
		{"field renamed", msg("string name = 1;"), msg("string full_name = 1;"), verdicts{true, true, true}},
		{"field number reused with another type", msg("string name = 1;"), msg("int64 name = 1;"), verdicts{false, false, false}},
		{"int32 to int64 (same wire type)", msg("int32 n = 1;"), msg("int64 n = 1;"), verdicts{true, true, true}},
		{"string to bytes", msg("string s = 1;"), msg("bytes s = 1;"), verdicts{true, true, true}},
		{"singular to repeated message", "syntax = \"proto3\";\npackage ex;\nmessage A {}\nmessage User { A a = 1; }\n",
			"syntax = \"proto3\";\npackage ex;\nmessage A {}\nmessage User { repeated A a = 1; }\n", verdicts{false, false, false}},
		{"message removed", msg("string name = 1;") + "message Other { int32 x = 1; }\n", msg("string name = 1;"), verdicts{false, true, false}},
		{"message added", msg("string name = 1;"), msg("string name = 1;") + "message Other { int32 x = 1; }\n", verdicts{true, false, false}},
		{"package changed", msg("string name = 1;"), strings.Replace(msg("string name = 1;"), "package ex;", "package other;", 1), verdicts{false, false, false}},
		{"field type message changed", "syntax = \"proto3\";\nmessage A {}\nmessage B {}\nmessage User { A a = 1; }\n",
			"syntax = \"proto3\";\nmessage A {}\nmessage B {}\nmessage User { B a = 1; }\n", verdicts{false, false, false}},
		{"fields moved into a new oneof", msg("string a = 1;\nstring b = 2;"), msg("oneof x { string a = 1; string b = 2; }"), verdicts{false, true, false}},
		{"enum field to string", "syntax = \"proto3\";\nenum E { E0 = 0; }\nmessage User { E e = 1; }\n",
			"syntax = \"proto3\";\nenum E { E0 = 0; }\nmessage User { string e = 1; }\n", verdicts{false, false, false}},
	})
}

// TestTransitiveLevelsCheckEveryVersion: v1 {name}, v2 adds age with a
// default, v3 drops the default: BACKWARD (against v2 only) accepts v3's
// reading of v2, but BACKWARD_TRANSITIVE also checks v1, which has no age.
func TestTransitiveLevelsCheckEveryVersion(t *testing.T) {
	rec := func(fields string) string {
		return `{"type":"record","name":"User","fields":[` + fields + `]}`
	}
	v1 := rec(`{"name":"name","type":"string"}`)
	v2 := rec(`{"name":"name","type":"string"},{"name":"age","type":"int","default":0}`)
	v3 := rec(`{"name":"name","type":"string"},{"name":"age","type":"int"}`)
	var live []SchemaVersion
	for i, s := range []string{v1, v2} {
		live = append(live, SchemaVersion{Subject: "s", Version: i + 1, ID: i + 1, Type: TypeAvro, Schema: s})
	}
	svc := &Service{state: NewState()}
	cand, err := parseSchema(TypeAvro, v3, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if msgs := svc.check(TypeAvro, cand, live, CompatBackward); len(msgs) != 0 {
		t.Errorf("BACKWARD: %v, want compatible", msgs)
	}
	if msgs := svc.check(TypeAvro, cand, live, CompatBackwardTransitive); len(msgs) == 0 {
		t.Error("BACKWARD_TRANSITIVE: compatible, want refused against version 1")
	}
}
