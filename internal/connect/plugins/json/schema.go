package json

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"github.com/vltava/vltava/connect"
)

// The envelope and schema field names of Kafka's JsonConverter.
const (
	envelopeSchema  = "schema"
	envelopePayload = "payload"
	fieldType       = "type"
	fieldOptional   = "optional"
	fieldName       = "name"
	fieldVersion    = "version"
	fieldDoc        = "doc"
	fieldParameters = "parameters"
	fieldDefault    = "default"
	fieldFields     = "fields"
	fieldField      = "field"
	fieldItems      = "items"
	fieldKeys       = "keys"
	fieldValues     = "values"
)

// writeSchema appends the JSON form of s, with Kafka's key order: type, then
// fields/items/keys+values, optional, name, version, doc, parameters,
// default. A struct field's schema carries its name under "field", last.
func (c *Converter) writeSchema(b *bytes.Buffer, s *connect.Schema, fieldName string) error {
	if s == nil {
		b.WriteString("null")
		return nil
	}
	b.WriteString(`{"type":`)
	writeString(b, jsonTypeName(s.Type))
	switch s.Type {
	case connect.StructT:
		b.WriteString(`,"fields":[`)
		for i, f := range s.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.writeSchema(b, f.Schema, f.Name); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case connect.Array:
		b.WriteString(`,"items":`)
		if err := c.writeSchema(b, s.Value, ""); err != nil {
			return err
		}
	case connect.Map:
		b.WriteString(`,"keys":`)
		if err := c.writeSchema(b, s.Key, ""); err != nil {
			return err
		}
		b.WriteString(`,"values":`)
		if err := c.writeSchema(b, s.Value, ""); err != nil {
			return err
		}
	}
	b.WriteString(`,"optional":`)
	b.WriteString(strconv.FormatBool(s.Optional))
	if s.Name != "" {
		b.WriteString(`,"name":`)
		writeString(b, s.Name)
	}
	if s.Version != 0 {
		b.WriteString(`,"version":`)
		b.WriteString(strconv.Itoa(s.Version))
	}
	if s.Doc != "" {
		b.WriteString(`,"doc":`)
		writeString(b, s.Doc)
	}
	if s.Parameters != nil {
		b.WriteString(`,"parameters":{`)
		keys := make([]string, 0, len(s.Parameters))
		for k := range s.Parameters {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeString(b, s.Parameters[k])
		}
		b.WriteByte('}')
	}
	if s.Default != nil {
		b.WriteString(`,"default":`)
		if err := c.writeValue(b, s, s.Default); err != nil {
			return fmt.Errorf("default value: %w", err)
		}
	}
	if fieldName != "" {
		b.WriteString(`,"field":`)
		writeString(b, fieldName)
	}
	b.WriteByte('}')
	return nil
}

// parseSchema turns the JSON form of a schema (as decoded by decode) into
// a Connect schema, as Kafka's JsonConverter.asConnectSchema.
func (c *Converter) parseSchema(v any) (*connect.Schema, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, dataErr("Schema must be a JSON object")
	}
	typ, ok := m[fieldType].(string)
	if !ok {
		return nil, dataErr("Schema must contain 'type' field")
	}
	s := &connect.Schema{Type: connectType(typ)}
	switch s.Type {
	case connect.Int8, connect.Int16, connect.Int32, connect.Int64, connect.Float32, connect.Float64,
		connect.Boolean, connect.String, connect.Bytes:
	case connect.Array:
		items, ok := m[fieldItems]
		if !ok || items == nil {
			return nil, dataErr("Array schema did not specify the element type")
		}
		e, err := c.parseSchema(items)
		if err != nil {
			return nil, err
		}
		s.Value = e
	case connect.Map:
		k, kok := m[fieldKeys]
		val, vok := m[fieldValues]
		if !kok || !vok || k == nil || val == nil {
			return nil, dataErr("Map schema did not specify the key or value type")
		}
		var err error
		if s.Key, err = c.parseSchema(k); err != nil {
			return nil, err
		}
		if s.Value, err = c.parseSchema(val); err != nil {
			return nil, err
		}
	case connect.StructT:
		fs, ok := m[fieldFields].([]any)
		if !ok {
			return nil, dataErr("Struct schema's \"fields\" argument is not an array.")
		}
		for i, f := range fs {
			fm, ok := f.(map[string]any)
			if !ok {
				return nil, dataErr("Struct schema's field is not an object.")
			}
			name, ok := fm[fieldField].(string)
			if !ok {
				return nil, dataErr("Struct schema's field name not specified properly")
			}
			fsch, err := c.parseSchema(fm)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, connect.Field{Name: name, Index: i, Schema: fsch})
		}
	default:
		return nil, dataErr("Unknown schema type: " + typ)
	}
	if o, ok := m[fieldOptional].(bool); ok && o {
		s.Optional = true
	}
	if n, ok := m[fieldName].(string); ok {
		s.Name = n
	}
	if ver, ok := m[fieldVersion]; ok && ver != nil {
		n, ok := ver.(jsonNumber)
		iv, err := strconv.Atoi(string(n))
		if !ok || err != nil {
			return nil, dataErr("Schema version must be an integer")
		}
		s.Version = iv
	}
	if d, ok := m[fieldDoc].(string); ok {
		s.Doc = d
	}
	if p, ok := m[fieldParameters]; ok && p != nil {
		pm, ok := p.(map[string]any)
		if !ok {
			return nil, dataErr("Schema parameters must be a JSON object")
		}
		s.Parameters = make(map[string]string, len(pm))
		for k, v := range pm {
			str, ok := v.(string)
			if !ok {
				return nil, dataErr("Schema parameters must have string values.")
			}
			s.Parameters[k] = str
		}
	}
	if d, ok := m[fieldDefault]; ok && d != nil {
		dv, err := c.toConnect(s, d)
		if err != nil {
			return nil, fmt.Errorf("default value: %w", err)
		}
		s.Default = dv
	}
	return s, nil
}

// Kafka's JSON schema names FLOAT32 and FLOAT64 "float" and "double"; the
// other types keep their Connect names.
func jsonTypeName(t connect.Type) string {
	switch t {
	case connect.Float32:
		return "float"
	case connect.Float64:
		return "double"
	}
	return string(t)
}

func connectType(name string) connect.Type {
	switch name {
	case "float":
		return connect.Float32
	case "double":
		return connect.Float64
	case "float32", "float64":
		return "" // not a JSON schema type name
	}
	return connect.Type(name)
}
