package transforms

import (
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("MaskField", func(s side) connect.Transformation { return &MaskField{side: s} })
}

// MaskField replaces fields with their type's empty value (false, 0, "",
// an empty array or map, the epoch for dates) or with replacement parsed
// into the field's type (Kafka's MaskField).
type MaskField struct {
	closeNone
	side        side
	fields      map[string]bool
	replacement *string
	replaceNull bool
}

// Config implements connect.Transformation.
func (t *MaskField) Config() *connect.ConfigDef {
	return noKeys().
		Define(connect.ConfigKey{Name: "fields", Type: connect.TypeList, Required: true, Importance: connect.High,
			Doc: "Names of fields to mask.", Check: nonEmptyList}).
		Define(connect.ConfigKey{Name: "replacement", Type: connect.TypeString, Importance: connect.Low,
			Doc: "Custom value replacement, that will be applied to all 'fields' values (numeric or non-empty string values only)."}).
		Define(replaceNullKey())
}

func nonEmptyList(name string, v any) error {
	if l, ok := v.([]string); !ok || len(l) == 0 {
		return fmt.Errorf("Invalid value %v for configuration %s: Empty list", v, name)
	}
	return nil
}

// Configure implements connect.Transformation.
func (t *MaskField) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.fields = set(p["fields"].([]string))
	if s, ok := p["replacement"].(string); ok {
		if s == "" {
			return fmt.Errorf("Invalid value  for configuration replacement: String must be non-empty")
		}
		t.replacement = &s
	}
	t.replaceNull = p["replace.null.with.default"].(bool)
	return nil
}

const maskPurpose = "mask fields"

// Apply implements connect.Transformation.
func (t *MaskField) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil {
		return r, nil
	}
	if schema == nil {
		m, err := requireMap(value, maskPurpose)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
			if t.fields[k] {
				mv, err := t.masked(v)
				if err != nil {
					return nil, err
				}
				out[k] = mv
			}
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, maskPurpose)
	if err != nil {
		return nil, err
	}
	out := connect.NewStruct(st.Schema())
	for _, f := range st.Schema().Fields {
		v := getRaw(st, f.Name, t.replaceNull)
		if t.fields[f.Name] {
			if v, err = t.masked(v); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, v); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, st.Schema(), out), nil
}

func (t *MaskField) masked(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.replacement == nil {
		switch x := v.(type) {
		case bool:
			return false, nil
		case int8:
			return int8(0), nil
		case int16:
			return int16(0), nil
		case int32:
			return int32(0), nil
		case int64:
			return int64(0), nil
		case float32:
			return float32(0), nil
		case float64:
			return float64(0), nil
		case string:
			return "", nil
		case []byte:
			return []byte{}, nil
		case connect.Decimal:
			return connect.Decimal{Unscaled: new(big.Int), Scale: x.Scale}, nil
		case time.Time:
			return time.Unix(0, 0).UTC(), nil
		case []any:
			return []any{}, nil
		case map[string]any:
			return map[string]any{}, nil
		case map[any]any:
			return map[any]any{}, nil
		}
		return nil, fmt.Errorf("Cannot mask value of type: %T", v)
	}
	rep := *t.replacement
	bad := func() error { return fmt.Errorf("Unable to convert %s (%T) to number", rep, v) }
	switch v.(type) {
	case string:
		return rep, nil
	case int8:
		n, err := strconv.ParseInt(rep, 10, 8)
		if err != nil {
			return nil, bad()
		}
		return int8(n), nil
	case int16:
		n, err := strconv.ParseInt(rep, 10, 16)
		if err != nil {
			return nil, bad()
		}
		return int16(n), nil
	case int32:
		n, err := strconv.ParseInt(rep, 10, 32)
		if err != nil {
			return nil, bad()
		}
		return int32(n), nil
	case int64:
		n, err := strconv.ParseInt(rep, 10, 64)
		if err != nil {
			return nil, bad()
		}
		return n, nil
	case float32:
		f, err := strconv.ParseFloat(rep, 32)
		if err != nil {
			return nil, bad()
		}
		return float32(f), nil
	case float64:
		f, err := strconv.ParseFloat(rep, 64)
		if err != nil {
			return nil, bad()
		}
		return f, nil
	}
	return nil, fmt.Errorf("Cannot mask value of type %T with custom replacement.", v)
}
