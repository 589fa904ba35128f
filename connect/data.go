package connect

import (
	"errors"
	"fmt"
	"math/big"
	"time"
)

// Type is the type of a Connect schema, as Kafka Connect's Schema.Type.
type Type string

// The schema types.
const (
	Int8    Type = "int8"
	Int16   Type = "int16"
	Int32   Type = "int32"
	Int64   Type = "int64"
	Float32 Type = "float32"
	Float64 Type = "float64"
	Boolean Type = "boolean"
	String  Type = "string"
	Bytes   Type = "bytes"
	Array   Type = "array"
	Map     Type = "map"
	StructT Type = "struct"
)

// The logical types, carried in a schema's Name as in Kafka Connect.
const (
	// DecimalName is a BYTES schema holding a Decimal; parameter "scale".
	DecimalName = "org.apache.kafka.connect.data.Decimal"
	// DateName is an INT32 schema of days since the epoch; Go value time.Time (UTC midnight).
	DateName = "org.apache.kafka.connect.data.Date"
	// TimeName is an INT32 schema of milliseconds since midnight; Go value time.Time on 1970-01-01 UTC.
	TimeName = "org.apache.kafka.connect.data.Time"
	// TimestampName is an INT64 schema of milliseconds since the epoch; Go value time.Time.
	TimestampName = "org.apache.kafka.connect.data.Timestamp"
	// DecimalScaleParam is the Decimal schema parameter holding the scale.
	DecimalScaleParam = "scale"
)

// Schema describes a value's structure, as Kafka Connect's Schema. Values of
// a schema are Go values:
//
//	int8 int16 int32 int64 float32 float64 bool string []byte
//	[]any (Array), map[any]any (Map: keys must be comparable), *Struct (StructT)
//	Decimal (DecimalName), time.Time (DateName, TimeName, TimestampName)
//
// A nil Schema means schemaless data: the value is then any of the Go types
// above, with map[string]any for objects.
type Schema struct {
	Type       Type
	Optional   bool
	Default    any
	Name       string
	Version    int // 0: none
	Doc        string
	Parameters map[string]string
	Fields     []Field // StructT only, in order
	Key        *Schema // Map only
	Value      *Schema // Map and Array
}

// Field is one field of a struct schema.
type Field struct {
	Name   string
	Index  int
	Schema *Schema
}

// Field returns the named field, or nil.
func (s *Schema) Field(name string) *Field {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// Decimal is an arbitrary-precision decimal: Unscaled × 10^-Scale.
type Decimal struct {
	Unscaled *big.Int
	Scale    int32
}

// String renders the decimal in plain notation.
func (d Decimal) String() string {
	r := new(big.Rat).SetFrac(d.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	if d.Scale <= 0 {
		return r.FloatString(0)
	}
	return r.FloatString(int(d.Scale))
}

// Struct is a value of a StructT schema.
type Struct struct {
	schema *Schema
	values []any
}

// NewStruct makes an empty struct of the schema, which must be a StructT.
func NewStruct(s *Schema) *Struct {
	if s == nil || s.Type != StructT {
		panic("connect: NewStruct needs a struct schema")
	}
	return &Struct{schema: s, values: make([]any, len(s.Fields))}
}

// Schema returns the struct's schema.
func (st *Struct) Schema() *Schema { return st.schema }

// Get returns the named field's value (its default if unset), or an error for
// an unknown field.
func (st *Struct) Get(name string) (any, error) {
	f := st.schema.Field(name)
	if f == nil {
		return nil, fmt.Errorf("%s is not a valid field name", name)
	}
	v := st.values[f.Index]
	if v == nil && f.Schema != nil {
		return f.Schema.Default, nil
	}
	return v, nil
}

// Put sets the named field, checking the value against the field's schema.
func (st *Struct) Put(name string, v any) error {
	f := st.schema.Field(name)
	if f == nil {
		return fmt.Errorf("%s is not a valid field name", name)
	}
	if err := Validate(f.Schema, v); err != nil {
		return fmt.Errorf("invalid value for field %s: %w", name, err)
	}
	st.values[f.Index] = v
	return nil
}

// Validate checks a whole struct: every required field without a default is set.
func (st *Struct) Validate() error {
	for _, f := range st.schema.Fields {
		if err := Validate(f.Schema, st.values[f.Index]); err != nil {
			if st.values[f.Index] == nil && f.Schema.Default != nil {
				continue
			}
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
	}
	return nil
}

// ErrNilForRequired is returned by Validate for a nil value of a required schema.
var ErrNilForRequired = errors.New("null value for a required schema")

// Validate checks that v is a value of schema s (a nil schema accepts anything).
func Validate(s *Schema, v any) error {
	if s == nil {
		return nil
	}
	if v == nil {
		if s.Optional || s.Default != nil {
			return nil
		}
		return ErrNilForRequired
	}
	switch s.Name {
	case DecimalName:
		if _, ok := v.(Decimal); !ok {
			return fmt.Errorf("%T is not a Decimal", v)
		}
		return nil
	case DateName, TimeName, TimestampName:
		if _, ok := v.(time.Time); !ok {
			return fmt.Errorf("%T is not a time.Time for %s", v, s.Name)
		}
		return nil
	}
	ok := false
	switch s.Type {
	case Int8:
		_, ok = v.(int8)
	case Int16:
		_, ok = v.(int16)
	case Int32:
		_, ok = v.(int32)
	case Int64:
		_, ok = v.(int64)
	case Float32:
		_, ok = v.(float32)
	case Float64:
		_, ok = v.(float64)
	case Boolean:
		_, ok = v.(bool)
	case String:
		_, ok = v.(string)
	case Bytes:
		_, ok = v.([]byte)
	case Array:
		var a []any
		if a, ok = v.([]any); ok {
			for i, e := range a {
				if err := Validate(s.Value, e); err != nil {
					return fmt.Errorf("element %d: %w", i, err)
				}
			}
		}
	case Map:
		var m map[any]any
		if m, ok = v.(map[any]any); ok {
			for k, e := range m {
				if err := Validate(s.Key, k); err != nil {
					return fmt.Errorf("map key: %w", err)
				}
				if err := Validate(s.Value, e); err != nil {
					return fmt.Errorf("map value: %w", err)
				}
			}
		}
	case StructT:
		var st *Struct
		if st, ok = v.(*Struct); ok && st.schema != s && !SchemasEqual(st.schema, s) {
			return fmt.Errorf("struct schema %q does not match %q", st.schema.Name, s.Name)
		}
	default:
		return fmt.Errorf("unknown schema type %q", s.Type)
	}
	if !ok {
		return fmt.Errorf("%T is not a value of a %s schema", v, s.Type)
	}
	return nil
}

// SchemasEqual reports whether two schemas are structurally equal.
func SchemasEqual(a, b *Schema) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.Type != b.Type || a.Optional != b.Optional || a.Name != b.Name || a.Version != b.Version ||
		a.Doc != b.Doc || len(a.Parameters) != len(b.Parameters) || len(a.Fields) != len(b.Fields) {
		return false
	}
	for k, v := range a.Parameters {
		if b.Parameters[k] != v {
			return false
		}
	}
	for i := range a.Fields {
		if a.Fields[i].Name != b.Fields[i].Name || !SchemasEqual(a.Fields[i].Schema, b.Fields[i].Schema) {
			return false
		}
	}
	return SchemasEqual(a.Key, b.Key) && SchemasEqual(a.Value, b.Value) && fmt.Sprint(a.Default) == fmt.Sprint(b.Default)
}
