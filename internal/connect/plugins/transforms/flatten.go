package transforms

import (
	"fmt"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("Flatten", func(s side) connect.Transformation { return &Flatten{side: s} })
}

// Flatten flattens nested structs (or maps) into one level, joining field
// names with delimiter (Kafka's Flatten). A field inside an optional
// struct becomes optional; arrays and maps of a schema'd record are kept
// as they are.
type Flatten struct {
	closeNone
	side      side
	delimiter string
	cache     schemaCache
}

// Config implements connect.Transformation.
func (t *Flatten) Config() *connect.ConfigDef {
	return noKeys().Define(stringKey("delimiter", ".", "Delimiter to insert between field names from the input record when generating field names for the output record"))
}

// Configure implements connect.Transformation.
func (t *Flatten) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.delimiter = p["delimiter"].(string)
	return nil
}

const flattenPurpose = "flattening"

// Apply implements connect.Transformation.
func (t *Flatten) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(value, flattenPurpose)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		t.flattenMap(m, "", out)
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, flattenPurpose)
	if err != nil {
		return nil, err
	}
	ns, err := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := structBasics(st.Schema())
		b.Optional = st.Schema().Optional
		if err := t.buildSchema(st.Schema(), "", b, false); err != nil {
			return nil, err
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	out := connect.NewStruct(ns)
	if err := t.flattenStruct(st, "", out); err != nil {
		return nil, err
	}
	return t.side.with(r, ns, out), nil
}

func (t *Flatten) name(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + t.delimiter + field
}

func (t *Flatten) flattenMap(m map[string]any, prefix string, out map[string]any) {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			t.flattenMap(sub, t.name(prefix, k), out)
			continue
		}
		out[t.name(prefix, k)] = v
	}
}

func (t *Flatten) buildSchema(s *connect.Schema, prefix string, b *connect.Schema, optionalParent bool) error {
	for _, f := range s.Fields {
		name := t.name(prefix, f.Name)
		if f.Schema.Type == connect.StructT {
			if err := t.buildSchema(f.Schema, name, b, optionalParent || f.Schema.Optional); err != nil {
				return err
			}
			continue
		}
		if b.Field(name) != nil {
			return fmt.Errorf("Duplicate field name %s when flattening", name)
		}
		fs := f.Schema
		if optionalParent && !fs.Optional {
			c := *fs
			c.Optional = true
			fs = &c
		}
		addField(b, name, fs)
	}
	return nil
}

func (t *Flatten) flattenStruct(st *connect.Struct, prefix string, out *connect.Struct) error {
	for _, f := range st.Schema().Fields {
		name := t.name(prefix, f.Name)
		v := get(st, f.Name)
		if f.Schema.Type == connect.StructT {
			if v == nil {
				continue // every flattened field of a null struct stays null
			}
			sub, err := requireStruct(v, flattenPurpose)
			if err != nil {
				return err
			}
			if err := t.flattenStruct(sub, name, out); err != nil {
				return err
			}
			continue
		}
		if err := put(out, name, v); err != nil {
			return err
		}
	}
	return nil
}
