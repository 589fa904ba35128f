package restproxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/hamba/avro/v2"

	"github.com/vltava/vltava/internal/registry"
)

// avroCodec serializes Avro's JSON encoding (unions as {"type": value})
// into Avro binary with hamba/avro, and back.
type avroCodec struct{ schema avro.Schema }

// newAvroCodec parses schema with its references' named types (deps,
// dependencies first) known.
func newAvroCodec(schema string, deps []registry.Dependency) (*avroCodec, error) {
	cache := &avro.SchemaCache{}
	for _, d := range deps {
		if _, err := avro.ParseWithCache(d.Schema, "", cache); err != nil {
			return nil, fmt.Errorf("reference %s: %w", d.Name, err)
		}
	}
	s, err := avro.ParseWithCache(schema, "", cache)
	if err != nil {
		return nil, err
	}
	return &avroCodec{schema: s}, nil
}

func (c *avroCodec) encode(data json.RawMessage) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if len(bytes.TrimSpace(data)) > 0 {
		if err := dec.Decode(&v); err != nil {
			return nil, errf(codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
		}
	}
	native, err := avroNative(c.schema, v)
	if err != nil {
		return nil, errf(codeJSONConversion, "Conversion of JSON to Object failed: %v", err)
	}
	b, err := avro.Marshal(c.schema, native)
	if err != nil {
		return nil, errf(codeSerialization, "Error serializing message. %v", err)
	}
	return b, nil
}

func (c *avroCodec) decode(payload []byte) (json.RawMessage, error) {
	var v any
	if err := avro.Unmarshal(c.schema, payload, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// avroNative converts a JSON value (numbers as json.Number) to the Go
// value hamba/avro writes for schema s.
func avroNative(s avro.Schema, v any) (any, error) {
	switch s := s.(type) {
	case *avro.RefSchema:
		return avroNative(s.Schema(), v)
	case *avro.PrimitiveSchema:
		return avroPrimitive(s.Type(), v)
	case *avro.RecordSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("record %s: want a JSON object", s.FullName())
		}
		out := make(map[string]any, len(s.Fields()))
		for _, f := range s.Fields() {
			fv, present := obj[f.Name()]
			if !present {
				if !f.HasDefault() {
					return nil, fmt.Errorf("record %s: field %s missing", s.FullName(), f.Name())
				}
				out[f.Name()] = f.Default()
				continue
			}
			nv, err := avroNative(f.Type(), fv)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			out[f.Name()] = nv
		}
		return out, nil
	case *avro.ArraySchema:
		arr, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("want a JSON array")
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			nv, err := avroNative(s.Items(), e)
			if err != nil {
				return nil, err
			}
			out[i] = nv
		}
		return out, nil
	case *avro.MapSchema:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a JSON object")
		}
		out := make(map[string]any, len(obj))
		for k, e := range obj {
			nv, err := avroNative(s.Values(), e)
			if err != nil {
				return nil, err
			}
			out[k] = nv
		}
		return out, nil
	case *avro.EnumSchema:
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("enum %s: want a string", s.FullName())
		}
		return str, nil
	case *avro.FixedSchema:
		str, ok := v.(string)
		if !ok || len(str) != s.Size() {
			return nil, fmt.Errorf("fixed %s: want a string of %d bytes", s.FullName(), s.Size())
		}
		return []byte(str), nil
	case *avro.UnionSchema:
		if v == nil {
			if !s.Nullable() {
				return nil, fmt.Errorf("null for a union without null")
			}
			return nil, nil
		}
		obj, ok := v.(map[string]any)
		if !ok || len(obj) != 1 {
			return nil, fmt.Errorf("union: want {\"<type>\": value}")
		}
		for name, inner := range obj {
			for _, t := range s.Types() {
				if avroTypeName(t) == name {
					nv, err := avroNative(t, inner)
					if err != nil {
						return nil, err
					}
					if s.Nullable() && len(s.Types()) == 2 {
						return nv, nil
					}
					return map[string]any{name: nv}, nil
				}
			}
			return nil, fmt.Errorf("union has no branch %q", name)
		}
	}
	return nil, fmt.Errorf("unsupported Avro schema %s", s.Type())
}

// avroTypeName is a union branch's name in Avro's JSON encoding.
func avroTypeName(s avro.Schema) string {
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

func avroPrimitive(t avro.Type, v any) (any, error) {
	num := func() (json.Number, error) {
		n, ok := v.(json.Number)
		if !ok {
			return "", fmt.Errorf("%s: want a number", t)
		}
		return n, nil
	}
	switch t {
	case avro.Null:
		if v != nil {
			return nil, fmt.Errorf("null: want null")
		}
		return nil, nil
	case avro.Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("boolean: want true or false")
		}
		return b, nil
	case avro.Int:
		n, err := num()
		if err != nil {
			return nil, err
		}
		i, err := strconv.ParseInt(string(n), 10, 32)
		return int(i), err
	case avro.Long:
		n, err := num()
		if err != nil {
			return nil, err
		}
		return n.Int64()
	case avro.Float:
		n, err := num()
		if err != nil {
			return nil, err
		}
		f, err := strconv.ParseFloat(string(n), 32)
		return float32(f), err
	case avro.Double:
		n, err := num()
		if err != nil {
			return nil, err
		}
		return n.Float64()
	case avro.String:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("string: want a string")
		}
		return s, nil
	case avro.Bytes:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("bytes: want a string")
		}
		return []byte(s), nil
	}
	return nil, fmt.Errorf("unsupported Avro type %s", t)
}
