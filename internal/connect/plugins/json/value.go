package json

import (
	"bytes"
	"encoding/base64"
	gojson "encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"sort"
	"strconv"
	"time"

	"github.com/vltava/vltava/connect"
)

type jsonNumber = gojson.Number

// DataError is a conversion failure (Kafka Connect's DataException).
type DataError struct{ Msg string }

func (e *DataError) Error() string { return e.Msg }

func dataErr(msg string) error { return &DataError{Msg: msg} }

func writeString(b *bytes.Buffer, s string) {
	enc, _ := gojson.Marshal(s) // a string always marshals
	b.Write(enc)
}

// writeValue appends the JSON form of v under schema s (nil: schemaless), as
// Kafka's JsonConverter.convertToJson.
func (c *Converter) writeValue(b *bytes.Buffer, s *connect.Schema, v any) error {
	if v == nil {
		if s == nil {
			b.WriteString("null")
			return nil
		}
		if s.Default != nil && c.replaceNullWithDefault {
			return c.writeValue(b, s, s.Default)
		}
		if s.Optional {
			b.WriteString("null")
			return nil
		}
		return dataErr("Conversion error: null value for field that is required and has no default value")
	}
	if s != nil {
		switch s.Name {
		case connect.DecimalName:
			d, ok := v.(connect.Decimal)
			if !ok {
				return dataErr(fmt.Sprintf("Invalid type for Decimal, expected Decimal but was %T", v))
			}
			if c.decimalNumeric {
				b.WriteString(d.String())
				return nil
			}
			return writeBase64(b, decimalBytes(d))
		case connect.DateName:
			t, ok := v.(time.Time)
			if !ok {
				return dataErr(fmt.Sprintf("Invalid type for Date, expected time.Time but was %T", v))
			}
			b.WriteString(strconv.FormatInt(t.UTC().Unix()/86400, 10))
			return nil
		case connect.TimeName:
			t, ok := v.(time.Time)
			if !ok {
				return dataErr(fmt.Sprintf("Invalid type for Time, expected time.Time but was %T", v))
			}
			u := t.UTC()
			ms := ((u.Hour()*60+u.Minute())*60+u.Second())*1000 + u.Nanosecond()/1e6
			b.WriteString(strconv.Itoa(ms))
			return nil
		case connect.TimestampName:
			t, ok := v.(time.Time)
			if !ok {
				return dataErr(fmt.Sprintf("Invalid type for Timestamp, expected time.Time but was %T", v))
			}
			b.WriteString(strconv.FormatInt(t.UnixMilli(), 10))
			return nil
		}
		if !matches(s.Type, v) {
			return dataErr(fmt.Sprintf("Invalid type for %s: %T", upper(s.Type), v))
		}
	}
	switch x := v.(type) {
	case int8:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int16:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int:
		b.WriteString(strconv.Itoa(x))
	case float32:
		return writeFloat(b, float64(x), 32)
	case float64:
		return writeFloat(b, x, 64)
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case []byte:
		return writeBase64(b, x)
	case connect.Decimal:
		b.WriteString(x.String())
	case time.Time:
		b.WriteString(strconv.FormatInt(x.UnixMilli(), 10))
	case []any:
		var es *connect.Schema
		if s != nil {
			es = s.Value
		}
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := c.writeValue(b, es, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		var vs *connect.Schema
		if s != nil {
			vs = s.Value
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := c.writeValue(b, vs, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case map[any]any:
		return c.writeMap(b, s, x)
	case *connect.Struct:
		st := x.Schema()
		if s != nil && st != s && !connect.SchemasEqual(st, s) {
			return dataErr("Mismatching schema.")
		}
		b.WriteByte('{')
		for i, f := range st.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, f.Name)
			b.WriteByte(':')
			fv, _ := x.Get(f.Name)
			if err := c.writeValue(b, f.Schema, fv); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return dataErr(fmt.Sprintf("Go type %T does not have a corresponding schema type.", v))
	}
	return nil
}

// matches reports whether v's Go type is one of type t's values.
func matches(t connect.Type, v any) bool {
	switch v.(type) {
	case int8:
		return t == connect.Int8
	case int16:
		return t == connect.Int16
	case int32:
		return t == connect.Int32
	case int64:
		return t == connect.Int64
	case float32:
		return t == connect.Float32
	case float64:
		return t == connect.Float64
	case bool:
		return t == connect.Boolean
	case string:
		return t == connect.String
	case []byte:
		return t == connect.Bytes
	case []any:
		return t == connect.Array
	case map[any]any, map[string]any:
		return t == connect.Map
	case *connect.Struct:
		return t == connect.StructT
	}
	return false
}

// writeMap writes a map: as a JSON object when its keys are strings (by
// schema, or all of them when schemaless), else as an array of [key, value]
// pairs, as Kafka does.
func (c *Converter) writeMap(b *bytes.Buffer, s *connect.Schema, m map[any]any) error {
	var ks, vs *connect.Schema
	objectMode := true
	if s != nil {
		ks, vs = s.Key, s.Value
		objectMode = ks != nil && ks.Type == connect.String
	} else {
		for k := range m {
			if _, ok := k.(string); !ok {
				objectMode = false
				break
			}
		}
	}
	keys := make([]any, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	if objectMode {
		b.WriteByte('{')
	} else {
		b.WriteByte('[')
	}
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		if objectMode {
			ksv, ok := k.(string)
			if !ok {
				return dataErr(fmt.Sprintf("map key %v is not a string", k))
			}
			writeString(b, ksv)
			b.WriteByte(':')
		} else {
			b.WriteByte('[')
			if err := c.writeValue(b, ks, k); err != nil {
				return err
			}
			b.WriteByte(',')
		}
		if err := c.writeValue(b, vs, m[k]); err != nil {
			return err
		}
		if !objectMode {
			b.WriteByte(']')
		}
	}
	if objectMode {
		b.WriteByte('}')
	} else {
		b.WriteByte(']')
	}
	return nil
}

func writeFloat(b *bytes.Buffer, f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		// Jackson writes these as the strings NaN, Infinity, -Infinity.
		switch {
		case math.IsNaN(f):
			b.WriteString(`"NaN"`)
		case f > 0:
			b.WriteString(`"Infinity"`)
		default:
			b.WriteString(`"-Infinity"`)
		}
		return nil
	}
	s := strconv.FormatFloat(f, 'g', -1, bits)
	if !bytes.ContainsAny([]byte(s), ".eEn") {
		s += ".0" // a float stays a float, as Jackson writes 1.0
	}
	b.WriteString(s)
	return nil
}

func writeBase64(b *bytes.Buffer, p []byte) error {
	b.WriteByte('"')
	b.WriteString(base64.StdEncoding.EncodeToString(p))
	b.WriteByte('"')
	return nil
}

// decimalBytes is Decimal.fromLogical: the unscaled value's big-endian two's
// complement bytes, shortest form.
func decimalBytes(d connect.Decimal) []byte {
	u := d.Unscaled
	if u == nil {
		u = new(big.Int)
	}
	if u.Sign() >= 0 {
		p := u.Bytes()
		if len(p) == 0 || p[0]&0x80 != 0 {
			p = append([]byte{0}, p...)
		}
		return p
	}
	// Two's complement of a negative number: 2^(8n) + u, with enough bytes
	// that the top bit is set.
	n := (u.BitLen() + 8) / 8
	mod := new(big.Int).Lsh(big.NewInt(1), uint(8*n))
	p := new(big.Int).Add(mod, u).Bytes()
	for len(p) < n {
		p = append([]byte{0xff}, p...)
	}
	return p
}

// decimalFromBytes is Decimal.toLogical.
func decimalFromBytes(p []byte, scale int32) connect.Decimal {
	u := new(big.Int).SetBytes(p)
	if len(p) > 0 && p[0]&0x80 != 0 {
		u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(p))))
	}
	return connect.Decimal{Unscaled: u, Scale: scale}
}

// decimalFromNumber parses a JSON number as a decimal of the given scale.
func decimalFromNumber(n string, scale int32) (connect.Decimal, error) {
	r, ok := new(big.Rat).SetString(n)
	if !ok {
		return connect.Decimal{}, dataErr("Invalid decimal " + n)
	}
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !r.IsInt() {
		return connect.Decimal{}, dataErr(fmt.Sprintf("Decimal %s has more digits than scale %d", n, scale))
	}
	return connect.Decimal{Unscaled: new(big.Int).Set(r.Num()), Scale: scale}, nil
}

func decimalScale(s *connect.Schema) (int32, error) {
	p, ok := s.Parameters[connect.DecimalScaleParam]
	if !ok {
		return 0, dataErr("Invalid Decimal schema: scale parameter not found.")
	}
	n, err := strconv.ParseInt(p, 10, 32)
	if err != nil {
		return 0, dataErr("Invalid scale parameter found in Decimal schema: " + p)
	}
	return int32(n), nil
}

// toConnect converts a decoded JSON value (decode's types) to a Connect
// value of schema s, or infers one when s is nil, as Kafka's
// JsonConverter.convertToConnect.
func (c *Converter) toConnect(s *connect.Schema, v any) (any, error) {
	if s == nil {
		return schemaless(v), nil
	}
	if v == nil {
		if s.Default != nil {
			if c.replaceNullWithDefault {
				return s.Default, nil
			}
			return nil, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, dataErr(fmt.Sprintf("Invalid null value for required %s field", upper(s.Type)))
	}
	switch s.Name {
	case connect.DecimalName:
		scale, err := decimalScale(s)
		if err != nil {
			return nil, err
		}
		switch x := v.(type) {
		case jsonNumber:
			return decimalFromNumber(string(x), scale)
		case string:
			p, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, dataErr("Invalid bytes field: " + err.Error())
			}
			return decimalFromBytes(p, scale), nil
		}
		return nil, dataErr(fmt.Sprintf("Invalid type for Decimal, underlying representation should be numeric or bytes but was %s", nodeType(v)))
	case connect.DateName:
		n, err := intOf(v, 32)
		if err != nil {
			return nil, dataErr("Invalid type for Date, underlying representation should be integer but was " + nodeType(v))
		}
		return time.Unix(n*86400, 0).UTC(), nil
	case connect.TimeName:
		n, err := intOf(v, 32)
		if err != nil {
			return nil, dataErr("Invalid type for Time, underlying representation should be integer but was " + nodeType(v))
		}
		return time.UnixMilli(n).UTC(), nil
	case connect.TimestampName:
		n, err := intOf(v, 64)
		if err != nil {
			return nil, dataErr("Invalid type for Timestamp, underlying representation should be integral but was " + nodeType(v))
		}
		return time.UnixMilli(n).UTC(), nil
	}
	switch s.Type {
	case connect.Int8, connect.Int16, connect.Int32, connect.Int64:
		bits := map[connect.Type]int{connect.Int8: 8, connect.Int16: 16, connect.Int32: 32, connect.Int64: 64}[s.Type]
		n, err := intOf(v, bits)
		if err != nil {
			return nil, dataErr(fmt.Sprintf("Invalid value %v for %s: %v", v, upper(s.Type), err))
		}
		switch s.Type {
		case connect.Int8:
			return int8(n), nil
		case connect.Int16:
			return int16(n), nil
		case connect.Int32:
			return int32(n), nil
		}
		return n, nil
	case connect.Float32, connect.Float64:
		f, err := floatOf(v)
		if err != nil {
			return nil, dataErr(fmt.Sprintf("Invalid value %v for %s", v, upper(s.Type)))
		}
		if s.Type == connect.Float32 {
			return float32(f), nil
		}
		return f, nil
	case connect.Boolean:
		bv, ok := v.(bool)
		if !ok {
			return nil, mismatch(s, v)
		}
		return bv, nil
	case connect.String:
		sv, ok := v.(string)
		if !ok {
			return nil, mismatch(s, v)
		}
		return sv, nil
	case connect.Bytes:
		sv, ok := v.(string)
		if !ok {
			return nil, mismatch(s, v)
		}
		p, err := base64.StdEncoding.DecodeString(sv)
		if err != nil {
			return nil, dataErr("Invalid bytes field: " + err.Error())
		}
		return p, nil
	case connect.Array:
		a, ok := v.([]any)
		if !ok {
			return nil, mismatch(s, v)
		}
		out := make([]any, len(a))
		for i, e := range a {
			ev, err := c.toConnect(s.Value, e)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case connect.Map:
		out := map[any]any{}
		if s.Key != nil && s.Key.Type == connect.String {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, mismatch(s, v)
			}
			for k, e := range m {
				ev, err := c.toConnect(s.Value, e)
				if err != nil {
					return nil, err
				}
				out[k] = ev
			}
			return out, nil
		}
		a, ok := v.([]any)
		if !ok {
			return nil, dataErr("Maps with non-string fields should be encoded as JSON array of tuples, but found " + nodeType(v))
		}
		for _, e := range a {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return nil, dataErr("Found invalid map entry instead of array tuple: " + nodeType(e))
			}
			kv, err := c.toConnect(s.Key, pair[0])
			if err != nil {
				return nil, err
			}
			if kv != nil && !reflect.TypeOf(kv).Comparable() {
				return nil, dataErr("map key is not comparable")
			}
			ev, err := c.toConnect(s.Value, pair[1])
			if err != nil {
				return nil, err
			}
			out[kv] = ev
		}
		return out, nil
	case connect.StructT:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, dataErr("Structs should be encoded as JSON objects, but found " + nodeType(v))
		}
		st := connect.NewStruct(s)
		for _, f := range s.Fields {
			fv, err := c.toConnect(f.Schema, m[f.Name])
			if err != nil {
				return nil, err
			}
			if fv != nil {
				if err := st.Put(f.Name, fv); err != nil {
					return nil, dataErr(err.Error())
				}
			}
		}
		return st, nil
	}
	return nil, dataErr("Unknown schema type: " + string(s.Type))
}

// schemaless converts decoded JSON with no schema: integers become int64,
// other numbers float64, objects map[string]any, arrays []any.
func schemaless(v any) any {
	switch x := v.(type) {
	case jsonNumber:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return n
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = schemaless(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = schemaless(e)
		}
		return out
	}
	return v
}

func intOf(v any, bits int) (int64, error) {
	n, ok := v.(jsonNumber)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	i, err := strconv.ParseInt(string(n), 10, bits)
	if err != nil {
		return 0, fmt.Errorf("not an integer of %d bits", bits)
	}
	return i, nil
}

func floatOf(v any) (float64, error) {
	switch x := v.(type) {
	case jsonNumber:
		return strconv.ParseFloat(string(x), 64)
	case string:
		switch x {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
	}
	return 0, fmt.Errorf("not a number")
}

func mismatch(s *connect.Schema, v any) error {
	return dataErr(fmt.Sprintf("Schema type %s does not match JSON %s", upper(s.Type), nodeType(v)))
}

func upper(t connect.Type) string {
	return string(bytes.ToUpper([]byte(t)))
}

func nodeType(v any) string {
	switch v.(type) {
	case nil:
		return "NULL"
	case bool:
		return "BOOLEAN"
	case jsonNumber:
		return "NUMBER"
	case string:
		return "STRING"
	case []any:
		return "ARRAY"
	case map[string]any:
		return "OBJECT"
	}
	return fmt.Sprintf("%T", v)
}
