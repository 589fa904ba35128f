package transforms

import (
	"fmt"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("SetSchemaMetadata", func(s side) connect.Transformation { return &SetSchemaMetadata{side: s} })
}

// SetSchemaMetadata sets the key or value schema's name and version
// (Kafka's SetSchemaMetadata); a struct value is rebuilt on the renamed
// schema.
type SetSchemaMetadata struct {
	closeNone
	side        side
	name        string
	version     int
	replaceNull bool
	cache       schemaCache
}

// Config implements connect.Transformation.
func (t *SetSchemaMetadata) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "schema.name", Type: connect.TypeString, Importance: connect.High, Doc: "Schema name to set."}).
		Define(connect.ConfigKey{Name: "schema.version", Type: connect.TypeInt, Importance: connect.High, Doc: "Schema version to set."}).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *SetSchemaMetadata) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.name, _ = p["schema.name"].(string)
	if v, ok := p["schema.version"].(int32); ok {
		t.version = int(v)
	}
	if t.name == "" && t.version == 0 {
		return fmt.Errorf("Neither schema name nor version configured")
	}
	t.replaceNull = p["replace.null.with.default"].(bool)
	return nil
}

// Apply implements connect.Transformation.
func (t *SetSchemaMetadata) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if schema == nil {
		return nil, fmt.Errorf("Schema required for [updating schema metadata]")
	}
	ns, _ := t.cache.get(schema, func() (*connect.Schema, error) {
		c := *schema
		if t.name != "" {
			c.Name = t.name
		}
		if t.version != 0 {
			c.Version = t.version
		}
		return &c, nil
	})
	if st, ok := value.(*connect.Struct); ok {
		out := connect.NewStruct(ns)
		for _, f := range ns.Fields {
			if err := put(out, f.Name, getRaw(st, f.Name, t.replaceNull)); err != nil {
				return nil, err
			}
		}
		value = out
	}
	return t.side.with(r, ns, value), nil
}
