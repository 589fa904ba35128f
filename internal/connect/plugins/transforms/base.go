// Package transforms holds Kafka Connect's Single Message Transforms and
// predicates, under Kafka's class names (org.apache.kafka.connect.transforms.*
// and …transforms.predicates.*) and with Kafka's configuration keys. A
// transformation that works on a record's key or value comes in two
// classes, Name$Key and Name$Value; each handles schema'd records (Struct
// values with a struct schema) and schemaless ones (map[string]any values)
// as Kafka's does, and passes tombstones (a nil value) through unchanged
// where Kafka's does.
package transforms

import (
	"fmt"
	"sync"

	"github.com/vltava/vltava/connect"
)

// pkgPrefix is the package of Kafka's transformations.
const pkgPrefix = "org.apache.kafka.connect.transforms."

const version = "1.0"

// side says which half of a record a transformation works on.
type side int

const (
	keySide side = iota
	valueSide
)

func (s side) String() string {
	if s == keySide {
		return "Key"
	}
	return "Value"
}

// operating returns the schema and value the transformation works on.
func (s side) operating(r *connect.Record) (*connect.Schema, any) {
	if s == keySide {
		return r.KeySchema, r.Key
	}
	return r.ValueSchema, r.Value
}

// with returns a copy of r with that side replaced.
func (s side) with(r *connect.Record, schema *connect.Schema, value any) *connect.Record {
	c := r.Clone()
	if s == keySide {
		c.KeySchema, c.Key = schema, value
	} else {
		c.ValueSchema, c.Value = schema, value
	}
	return c
}

// registerBoth registers Name$Key and Name$Value.
func registerBoth(name string, make func(side) connect.Transformation) {
	connect.RegisterTransformation(pkgPrefix+name+"$Key", version, func() connect.Transformation { return make(keySide) })
	connect.RegisterTransformation(pkgPrefix+name+"$Value", version, func() connect.Transformation { return make(valueSide) })
}

// requireMap is Kafka's Requirements.requireMap.
func requireMap(v any, purpose string) (map[string]any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("Only Map objects supported in absence of schema for [%s], found: %s", purpose, typeName(v))
	}
	return m, nil
}

// requireStruct is Kafka's Requirements.requireStruct.
func requireStruct(v any, purpose string) (*connect.Struct, error) {
	st, ok := v.(*connect.Struct)
	if !ok {
		return nil, fmt.Errorf("Only Struct objects supported for [%s], found: %s", purpose, typeName(v))
	}
	return st, nil
}

func typeName(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// structBasics is Kafka's SchemaUtil.copySchemaBasics into a new struct
// schema: name, version, doc and parameters (not optionality or default).
func structBasics(s *connect.Schema) *connect.Schema {
	out := &connect.Schema{Type: connect.StructT, Name: s.Name, Version: s.Version, Doc: s.Doc}
	if s.Parameters != nil {
		out.Parameters = make(map[string]string, len(s.Parameters))
		for k, v := range s.Parameters {
			out.Parameters[k] = v
		}
	}
	return out
}

// addField appends a field to a struct schema under construction.
func addField(s *connect.Schema, name string, fs *connect.Schema) {
	s.Fields = append(s.Fields, connect.Field{Name: name, Index: len(s.Fields), Schema: fs})
}

// schemaCache remembers the output schema made for each input schema, as
// Kafka's transformations keep an LRU of them; schemas are immutable once
// built, so the pointer is the key.
type schemaCache struct {
	mu sync.Mutex // guards m
	m  map[*connect.Schema]*connect.Schema
}

const schemaCacheSize = 16

func (c *schemaCache) get(in *connect.Schema, build func() (*connect.Schema, error)) (*connect.Schema, error) {
	c.mu.Lock()
	out, ok := c.m[in]
	c.mu.Unlock()
	if ok {
		return out, nil
	}
	out, err := build()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= schemaCacheSize {
		c.m = map[*connect.Schema]*connect.Schema{}
	}
	c.m[in] = out
	c.mu.Unlock()
	return out, nil
}

// get reads a struct field known to exist.
func get(st *connect.Struct, name string) any {
	v, _ := st.Get(name)
	return v
}

// getRaw reads a struct field, without substituting its default when
// replace.null.with.default=false.
func getRaw(st *connect.Struct, name string, replaceNullWithDefault bool) any {
	if replaceNullWithDefault {
		return get(st, name)
	}
	v, _ := st.GetWithoutDefault(name)
	return v
}

// put sets a struct field, failing as Kafka does on a bad value.
func put(st *connect.Struct, name string, v any) error {
	if v == nil {
		return nil
	}
	return st.Put(name, v)
}

// noKeys is an empty configuration definition.
func noKeys() *connect.ConfigDef { return connect.NewConfigDef() }

// listKey is a LIST key with a default.
func listKey(name string, def []string, doc string) connect.ConfigKey {
	return connect.ConfigKey{Name: name, Type: connect.TypeList, Default: def, Importance: connect.Medium, Doc: doc}
}

// stringKey is a STRING key with a default.
func stringKey(name, def, doc string) connect.ConfigKey {
	return connect.ConfigKey{Name: name, Type: connect.TypeString, Default: def, Importance: connect.Medium, Doc: doc}
}

// replaceNullKey is the replace.null.with.default key several SMTs share
// (KIP-1040).
func replaceNullKey() connect.ConfigKey {
	return connect.ConfigKey{Name: "replace.null.with.default", Type: connect.TypeBoolean, Default: true, Importance: connect.Medium,
		Doc: "Whether to replace fields that have a default value and that are null to the default value."}
}

// closeNone is the Close of transformations holding nothing.
type closeNone struct{}

func (closeNone) Close() error { return nil }
