package registry

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hamba/avro/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Dependency is a referenced schema for NewCodec: the reference's name and
// the referenced version's text.
type Dependency = dependency

// Codec converts between JSON documents and one schema's encoding, the
// payload of the registry's wire format (after magic byte and id).
type Codec interface {
	// Encode turns a JSON document into the schema's encoding.
	Encode(doc []byte) ([]byte, error)
	// Decode turns the schema's encoding back into JSON.
	Decode(payload []byte) ([]byte, error)
}

// NewCodec builds the codec of a schema (type, text, dependencies).
func NewCodec(typ, text string, deps []Dependency) (Codec, error) {
	p, err := parseSchema(typ, text, deps, false)
	if err != nil {
		return nil, err
	}
	switch s := p.(type) {
	case *avroSchema:
		return avroCodec{s.schema}, nil
	case *jsonSchema:
		return jsonCodec{s}, nil
	case *protobufSchema:
		if s.file.Messages().Len() == 0 {
			return nil, errors.New("the protobuf schema has no message")
		}
		return protoCodec{s.file}, nil
	}
	return nil, fmt.Errorf("no codec for %T", p)
}

// EncodeWire prefixes a payload with the wire format's magic byte and id.
func EncodeWire(id int, payload []byte) []byte {
	out := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, payload...)
}

// DecodeWire splits wire-format data into its schema id and payload.
func DecodeWire(b []byte) (int, []byte, error) {
	if len(b) < 5 || b[0] != 0 {
		return 0, nil, errors.New("not in the schema registry's wire format (magic byte 0 and a 4-byte schema id)")
	}
	return int(int32(binary.BigEndian.Uint32(b[1:5]))), b[5:], nil
}

// jsonCodec: the payload is the JSON document itself, checked against the
// schema on the way in.
type jsonCodec struct{ s *jsonSchema }

func (c jsonCodec) Encode(doc []byte) ([]byte, error) {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, err
	}
	if err := c.s.Validate(v); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, doc); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (c jsonCodec) Decode(payload []byte) ([]byte, error) {
	if !json.Valid(payload) {
		return nil, errors.New("payload is not JSON")
	}
	return payload, nil
}

// protoCodec: the first message of the file (message index [0], written
// as the single byte 0), its JSON form being protojson's.
type protoCodec struct{ file protoreflect.FileDescriptor }

func (c protoCodec) Encode(doc []byte) ([]byte, error) {
	m := dynamicpb.NewMessage(c.file.Messages().Get(0))
	if err := protojson.Unmarshal(doc, m); err != nil {
		return nil, err
	}
	b, err := proto.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append([]byte{0}, b...), nil
}

func (c protoCodec) Decode(payload []byte) ([]byte, error) {
	// Message indexes: a zigzag varint count, then that many indexes; a
	// count of 0 means [0].
	count, n := binary.Varint(payload)
	if n <= 0 || count < 0 || count > 100 {
		return nil, errors.New("bad protobuf message indexes")
	}
	payload = payload[n:]
	idx := []int64{0}
	if count > 0 {
		idx = idx[:0]
		for range count {
			i, n := binary.Varint(payload)
			if n <= 0 {
				return nil, errors.New("bad protobuf message indexes")
			}
			idx = append(idx, i)
			payload = payload[n:]
		}
	}
	msgs := c.file.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range idx {
		if i < 0 || int(i) >= msgs.Len() {
			return nil, fmt.Errorf("message index %d out of range", i)
		}
		md = msgs.Get(int(i))
		msgs = md.Messages()
	}
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(payload, m); err != nil {
		return nil, err
	}
	return protojson.Marshal(m)
}

// avroCodec: Avro binary encoding; the JSON side is Avro's JSON encoding
// (unions as {"type": value}, except a nullable union's plain value).
type avroCodec struct{ s avro.Schema }

func (c avroCodec) Encode(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	native, err := avroFromJSON(c.s, v, "")
	if err != nil {
		return nil, err
	}
	return avro.Marshal(c.s, native)
}

func (c avroCodec) Decode(payload []byte) ([]byte, error) {
	var v any
	if err := avro.Unmarshal(c.s, payload, &v); err != nil {
		return nil, err
	}
	return json.Marshal(avroToJSON(c.s, v))
}

func avroFromJSON(s avro.Schema, v any, path string) (any, error) {
	s = deref(s)
	bad := func() (any, error) {
		return nil, fmt.Errorf("%s: %v is not a %s", strings.TrimPrefix(path, "."), v, s.Type())
	}
	switch t := s.(type) {
	case *avro.UnionSchema:
		if v == nil {
			if t.Nullable() {
				return nil, nil
			}
			return bad()
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, inner := range m {
				for _, b := range t.Types() {
					if avroTypeName(b) == name {
						x, err := avroFromJSON(b, inner, path)
						if err != nil {
							return nil, err
						}
						if t.Nullable() && len(t.Types()) == 2 {
							return x, nil
						}
						return map[string]any{name: x}, nil
					}
				}
			}
		}
		if t.Nullable() && len(t.Types()) == 2 {
			_, i := t.Indices()
			return avroFromJSON(t.Types()[i], v, path)
		}
		return nil, fmt.Errorf("%s: a union value is written {\"<type>\": value}", strings.TrimPrefix(path, "."))
	case *avro.RecordSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(t.Fields()))
		for _, f := range t.Fields() {
			fv, ok := m[f.Name()]
			if !ok {
				if !f.HasDefault() {
					return nil, fmt.Errorf("%s.%s: missing, and the field has no default", strings.TrimPrefix(path, "."), f.Name())
				}
				out[f.Name()] = f.Default()
				continue
			}
			x, err := avroFromJSON(f.Type(), fv, path+"."+f.Name())
			if err != nil {
				return nil, err
			}
			out[f.Name()] = x
		}
		return out, nil
	case *avro.ArraySchema:
		a, ok := v.([]any)
		if !ok {
			return bad()
		}
		out := make([]any, len(a))
		for i, e := range a {
			x, err := avroFromJSON(t.Items(), e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case *avro.MapSchema:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		out := make(map[string]any, len(m))
		for k, e := range m {
			x, err := avroFromJSON(t.Values(), e, path+"."+k)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	case *avro.EnumSchema:
		if str, ok := v.(string); ok {
			return str, nil
		}
		return bad()
	case *avro.FixedSchema:
		if str, ok := v.(string); ok {
			return avroBytes(str), nil
		}
		return bad()
	}
	switch s.Type() {
	case avro.Null:
		if v == nil {
			return nil, nil
		}
	case avro.Boolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case avro.String:
		if str, ok := v.(string); ok {
			return str, nil
		}
	case avro.Bytes:
		if str, ok := v.(string); ok {
			return avroBytes(str), nil
		}
	case avro.Int, avro.Long:
		if n, ok := v.(json.Number); ok {
			i, err := n.Int64()
			if err != nil {
				return bad()
			}
			if s.Type() == avro.Int {
				if i < math.MinInt32 || i > math.MaxInt32 {
					return bad()
				}
				return int(i), nil
			}
			return i, nil
		}
	case avro.Float, avro.Double:
		if n, ok := v.(json.Number); ok {
			f, err := n.Float64()
			if err != nil {
				return bad()
			}
			if s.Type() == avro.Float {
				return float32(f), nil
			}
			return f, nil
		}
	}
	return bad()
}

// avroBytes reads Avro JSON's bytes: each code point 0-255 is one byte.
func avroBytes(s string) []byte {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = append(out, byte(r))
	}
	return out
}

// avroTypeName is how a union branch is named in Avro's JSON encoding.
func avroTypeName(s avro.Schema) string {
	s = deref(s)
	if n, ok := s.(avro.NamedSchema); ok {
		return n.FullName()
	}
	return string(s.Type())
}

// avroToJSON turns decoded generic values into Avro's JSON encoding.
func avroToJSON(s avro.Schema, v any) any {
	s = deref(s)
	switch t := s.(type) {
	case *avro.UnionSchema:
		if v == nil {
			return nil
		}
		if m, ok := v.(map[string]any); ok && len(m) == 1 {
			for name, inner := range m {
				for _, b := range t.Types() {
					if avroTypeName(b) == name {
						return map[string]any{name: avroToJSON(b, inner)}
					}
				}
			}
		}
		if t.Nullable() && len(t.Types()) == 2 {
			_, i := t.Indices()
			return avroToJSON(t.Types()[i], v)
		}
		return v
	case *avro.RecordSchema:
		m, _ := v.(map[string]any)
		out := make(map[string]any, len(m))
		for _, f := range t.Fields() {
			out[f.Name()] = avroToJSON(f.Type(), m[f.Name()])
		}
		return out
	case *avro.ArraySchema:
		a, _ := v.([]any)
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = avroToJSON(t.Items(), e)
		}
		return out
	case *avro.MapSchema:
		m, _ := v.(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(map[string]any, len(m))
		for _, k := range keys {
			out[k] = avroToJSON(t.Values(), m[k])
		}
		return out
	}
	switch b := v.(type) {
	case []byte:
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		return string(r)
	case [16]byte:
		return avroToJSON(s, b[:])
	}
	return v
}
