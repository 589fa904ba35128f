package transforms

import (
	"fmt"
	"strings"

	"github.com/vltava/vltava/connect"
)

func init() {
	connect.RegisterTransformation(pkgPrefix+"ValueToKey", version, func() connect.Transformation { return &ValueToKey{} })
	registerBoth("ExtractField", func(s side) connect.Transformation { return &ExtractField{side: s} })
	registerBoth("HoistField", func(s side) connect.Transformation { return &HoistField{side: s} })
}

// ValueToKey replaces the key with a struct (or map) of fields of the
// value (Kafka's ValueToKey).
type ValueToKey struct {
	closeNone
	fields      []string
	replaceNull bool
	cache       schemaCache
}

// Config implements connect.Transformation.
func (t *ValueToKey) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "fields", Type: connect.TypeList, Required: true, Importance: connect.High,
			Doc: "Field names on the record value to extract as the record key.", Check: nonEmptyList}).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *ValueToKey) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.fields = p["fields"].([]string)
	t.replaceNull = p["replace.null.with.default"].(bool)
	return nil
}

const copyPurpose = "copying fields from value to key"

// Apply implements connect.Transformation.
func (t *ValueToKey) Apply(r *connect.Record) (*connect.Record, error) {
	if r.ValueSchema == nil {
		m, err := requireMap(r.Value, copyPurpose)
		if err != nil {
			return nil, err
		}
		key := make(map[string]any, len(t.fields))
		for _, f := range t.fields {
			key[f] = m[f]
		}
		c := r.Clone()
		c.KeySchema, c.Key = nil, key
		return c, nil
	}
	st, err := requireStruct(r.Value, copyPurpose)
	if err != nil {
		return nil, err
	}
	ks, err := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := &connect.Schema{Type: connect.StructT}
		for _, name := range t.fields {
			f := st.Schema().Field(name)
			if f == nil {
				return nil, fmt.Errorf("Field does not exist: %s", name)
			}
			addField(b, name, f.Schema)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	key := connect.NewStruct(ks)
	for _, name := range t.fields {
		if err := put(key, name, getRaw(st, name, t.replaceNull)); err != nil {
			return nil, err
		}
	}
	c := r.Clone()
	c.KeySchema, c.Key = ks, key
	return c, nil
}

// ExtractField replaces the key or value with one of its fields (Kafka's
// ExtractField). With field.syntax.version=V2 (KIP-821) a dotted name
// reaches into nested structs and maps.
type ExtractField struct {
	closeNone
	side        side
	path        []string
	replaceNull bool
}

// Config implements connect.Transformation.
func (t *ExtractField) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "field", Type: connect.TypeString, Required: true, Importance: connect.Medium,
			Doc: "Field name to extract."}).
		Define(connect.ConfigKey{Name: "field.syntax.version", Type: connect.TypeString, Default: "V1", Importance: connect.High,
			Check: connect.OneOf(true, "V1", "V2"), Doc: "Defines the version of the syntax to access fields: V1 takes the name as is, V2 reads dots as nested access."}).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *ExtractField) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	field := p["field"].(string)
	if strings.EqualFold(p["field.syntax.version"].(string), "V2") {
		t.path = strings.Split(field, ".")
	} else {
		t.path = []string{field}
	}
	t.replaceNull = p["replace.null.with.default"].(bool)
	return nil
}

const extractPurpose = "field extraction"

// Apply implements connect.Transformation.
func (t *ExtractField) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	for _, name := range t.path {
		if schema == nil {
			if value == nil {
				return t.side.with(r, nil, nil), nil
			}
			m, err := requireMap(value, extractPurpose)
			if err != nil {
				return nil, err
			}
			value = m[name]
			continue
		}
		if schema.Type != connect.StructT {
			return nil, fmt.Errorf("Only Struct objects supported for [%s], found: %s", extractPurpose, schema.Type)
		}
		f := schema.Field(name)
		if f == nil {
			return nil, fmt.Errorf("Unknown field: %s", strings.Join(t.path, "."))
		}
		if value != nil {
			st, err := requireStruct(value, extractPurpose)
			if err != nil {
				return nil, err
			}
			value = getRaw(st, name, t.replaceNull)
		}
		schema = f.Schema
	}
	return t.side.with(r, schema, value), nil
}

// HoistField wraps the key or value in a struct (or map) with one field
// (Kafka's HoistField).
type HoistField struct {
	closeNone
	side  side
	field string
	cache schemaCache
}

// Config implements connect.Transformation.
func (t *HoistField) Config() *connect.ConfigDef {
	return noKeys().Define(connect.ConfigKey{Name: "field", Type: connect.TypeString, Required: true, Importance: connect.Medium,
		Doc: "Field name for the single field that will be created in the resulting Struct or Map."})
}

// Configure implements connect.Transformation.
func (t *HoistField) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.field = p["field"].(string)
	return nil
}

// Apply implements connect.Transformation.
func (t *HoistField) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if schema == nil {
		return t.side.with(r, nil, map[string]any{t.field: value}), nil
	}
	ns, _ := t.cache.get(schema, func() (*connect.Schema, error) {
		b := &connect.Schema{Type: connect.StructT}
		addField(b, t.field, schema)
		return b, nil
	})
	st := connect.NewStruct(ns)
	if err := put(st, t.field, value); err != nil {
		return nil, err
	}
	return t.side.with(r, ns, st), nil
}
