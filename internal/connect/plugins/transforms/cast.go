package transforms

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("Cast", func(s side) connect.Transformation { return &Cast{side: s} })
}

// Cast casts fields, or the whole key or value, to another primitive type
// (Kafka's Cast): spec is field:type,… or a single type for the whole
// value; types are int8, int16, int32, int64, float32, float64, boolean and
// string.
type Cast struct {
	closeNone
	side        side
	whole       connect.Type // set for a whole-value cast
	casts       map[string]connect.Type
	replaceNull bool
	cache       schemaCache
}

// Config implements connect.Transformation.
func (t *Cast) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "spec", Type: connect.TypeList, Required: true, Importance: connect.High, Check: nonEmptyList,
			Doc: "List of fields and the type to cast them to of the form field1:type,field2:type to cast fields of Maps or Structs. A single type to cast the entire value."}).
		Define(replaceNullKey())
}

var castTargets = map[string]connect.Type{
	"int8": connect.Int8, "int16": connect.Int16, "int32": connect.Int32, "int64": connect.Int64,
	"float32": connect.Float32, "float64": connect.Float64, "boolean": connect.Boolean, "string": connect.String,
}

// Configure implements connect.Transformation.
func (t *Cast) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	spec := p["spec"].([]string)
	t.casts = map[string]connect.Type{}
	t.replaceNull = p["replace.null.with.default"].(bool)
	bad := func(msg string) error {
		return fmt.Errorf("Invalid value %s for configuration spec: %s", props["spec"], msg)
	}
	for _, s := range spec {
		field, typ, hasField := strings.Cut(s, ":")
		if !hasField {
			typ, field = s, ""
		}
		target, ok := castTargets[strings.ToLower(strings.TrimSpace(typ))]
		if !ok {
			return bad("Invalid type found in casting spec: " + typ)
		}
		if !hasField {
			if len(spec) > 1 {
				return bad("Cast expects a single type to cast the whole value, or field:type pairs")
			}
			t.whole = target
			return nil
		}
		t.casts[strings.TrimSpace(field)] = target
	}
	return nil
}

const castPurpose = "cast types"

// Apply implements connect.Transformation.
func (t *Cast) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil {
		return r, nil
	}
	if t.whole != "" {
		v, err := castValue(value, schema, t.whole)
		if err != nil {
			return nil, err
		}
		var ns *connect.Schema
		if schema != nil {
			ns = &connect.Schema{Type: t.whole, Optional: schema.Optional}
		}
		return t.side.with(r, ns, v), nil
	}
	if schema == nil {
		m, err := requireMap(value, castPurpose)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
			if target, ok := t.casts[k]; ok && v != nil {
				if out[k], err = castValue(v, nil, target); err != nil {
					return nil, err
				}
			}
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, castPurpose)
	if err != nil {
		return nil, err
	}
	ns, err := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := structBasics(st.Schema())
		for _, f := range st.Schema().Fields {
			target, ok := t.casts[f.Name]
			if !ok {
				addField(b, f.Name, f.Schema)
				continue
			}
			fs := &connect.Schema{Type: target, Optional: f.Schema.Optional}
			if f.Schema.Default != nil {
				d, err := castValue(f.Schema.Default, f.Schema, target)
				if err != nil {
					return nil, err
				}
				fs.Default = d
			}
			addField(b, f.Name, fs)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	out := connect.NewStruct(ns)
	for _, f := range st.Schema().Fields {
		v := getRaw(st, f.Name, t.replaceNull)
		if target, ok := t.casts[f.Name]; ok && v != nil {
			if v, err = castValue(v, f.Schema, target); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, v); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, ns, out), nil
}

// castValue converts one value as Kafka's Cast.castValueToType does: Java's
// numeric conversions, true/false ↔ 1/0, strings parsed, and to-string as
// Java prints (bytes as base64, dates in ISO-8601).
func castValue(v any, s *connect.Schema, target connect.Type) (any, error) {
	if s != nil && s.Type == connect.Bytes && s.Name == "" && target != connect.String {
		return nil, fmt.Errorf("Cast transformation does not support casting from BYTES to %s", strings.ToUpper(string(target)))
	}
	if target == connect.String {
		return castToString(v, s)
	}
	switch x := v.(type) {
	case string:
		return parseAs(x, target)
	case bool:
		if target == connect.Boolean {
			return x, nil
		}
		n := int64(0)
		if x {
			n = 1
		}
		return fromInt(n, target), nil
	case int8:
		return fromInt(int64(x), target), nil
	case int16:
		return fromInt(int64(x), target), nil
	case int32:
		return fromInt(int64(x), target), nil
	case int64:
		return fromInt(x, target), nil
	case float32:
		return fromFloat(float64(x), target), nil
	case float64:
		return fromFloat(x, target), nil
	case connect.Decimal:
		f, _ := new(big.Rat).SetFrac(x.Unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale)), nil)).Float64()
		return fromFloat(f, target), nil
	case time.Time:
		if s != nil && s.Name == connect.DateName {
			return fromInt(x.Unix()/86400, target), nil
		}
		return fromInt(x.UnixMilli(), target), nil
	}
	return nil, fmt.Errorf("Unexpected type in Cast transformation: %T", v)
}

func fromInt(n int64, target connect.Type) any {
	switch target {
	case connect.Int8:
		return int8(n)
	case connect.Int16:
		return int16(n)
	case connect.Int32:
		return int32(n)
	case connect.Int64:
		return n
	case connect.Float32:
		return float32(n)
	case connect.Float64:
		return float64(n)
	case connect.Boolean:
		return n != 0
	}
	panic("cast to " + string(target) + " from an integer")
}

// fromFloat narrows as Java does: NaN to 0, out of range saturates to the
// long range, then wraps to narrower types.
func fromFloat(f float64, target connect.Type) any {
	switch target {
	case connect.Float32:
		return float32(f)
	case connect.Float64:
		return f
	case connect.Boolean:
		return javaLong(f) != 0
	case connect.Int32, connect.Int16, connect.Int8:
		// Java narrows a double to int first, saturating at the int range.
		var i int32
		switch {
		case math.IsNaN(f):
		case f >= math.MaxInt32:
			i = math.MaxInt32
		case f <= math.MinInt32:
			i = math.MinInt32
		default:
			i = int32(f)
		}
		return fromInt(int64(i), target)
	}
	return fromInt(javaLong(f), target)
}

func javaLong(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func parseAs(s string, target connect.Type) (any, error) {
	bad := func(err error) error {
		return fmt.Errorf("Value (%s) was out of range for requested data type or could not be parsed: %v", s, err)
	}
	switch target {
	case connect.Boolean:
		return strings.EqualFold(s, "true"), nil // Boolean.parseBoolean
	case connect.Int8, connect.Int16, connect.Int32, connect.Int64:
		bits := map[connect.Type]int{connect.Int8: 8, connect.Int16: 16, connect.Int32: 32, connect.Int64: 64}[target]
		n, err := strconv.ParseInt(s, 10, bits)
		if err != nil {
			return nil, bad(err)
		}
		return fromInt(n, target), nil
	case connect.Float32, connect.Float64:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, bad(err)
		}
		return fromFloat(f, target), nil
	}
	return nil, fmt.Errorf("cannot parse a string as %s", target)
}

func castToString(v any, s *connect.Schema) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case []byte:
		return base64.StdEncoding.EncodeToString(x), nil
	case float32:
		return javaFloat(float64(x), 32), nil
	case float64:
		return javaFloat(x, 64), nil
	case time.Time:
		switch {
		case s != nil && s.Name == connect.DateName:
			return x.UTC().Format("2006-01-02"), nil
		case s != nil && s.Name == connect.TimeName:
			return x.UTC().Format("15:04:05.000Z"), nil
		}
		return x.UTC().Format("2006-01-02T15:04:05.000Z"), nil
	case connect.Decimal:
		return x.String(), nil
	case bool, int8, int16, int32, int64:
		return fmt.Sprint(x), nil
	}
	return "", fmt.Errorf("Unexpected type in Cast transformation: %T", v)
}

// javaFloat prints a float as Java's Float/Double.toString: plain notation
// with at least one decimal in [1e-3, 1e7), computerized scientific
// notation (1.0E10) outside.
func javaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bits)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bits)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	neg := strings.HasPrefix(exp, "-")
	exp = strings.TrimLeft(strings.TrimPrefix(exp, "-"), "0")
	if neg {
		exp = "-" + exp
	}
	return mant + "E" + exp
}
