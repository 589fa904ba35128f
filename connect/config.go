package connect

import (
	"fmt"
	"strconv"
	"strings"
)

// ConfigType is a configuration key's type, as Kafka's ConfigDef.Type.
type ConfigType string

// The config types.
const (
	TypeBoolean  ConfigType = "BOOLEAN"
	TypeString   ConfigType = "STRING"
	TypeInt      ConfigType = "INT"
	TypeShort    ConfigType = "SHORT"
	TypeLong     ConfigType = "LONG"
	TypeDouble   ConfigType = "DOUBLE"
	TypeList     ConfigType = "LIST"
	TypeClass    ConfigType = "CLASS"
	TypePassword ConfigType = "PASSWORD"
)

// Importance is a key's importance, as Kafka's ConfigDef.Importance.
type Importance string

// The importances.
const (
	High   Importance = "HIGH"
	Medium Importance = "MEDIUM"
	Low    Importance = "LOW"
)

// Width is a key's display width, as Kafka's ConfigDef.Width.
type Width string

// The widths.
const (
	WidthNone   Width = "NONE"
	WidthShort  Width = "SHORT"
	WidthMedium Width = "MEDIUM"
	WidthLong   Width = "LONG"
)

// ConfigKey defines one configuration key.
type ConfigKey struct {
	Name       string
	Type       ConfigType
	Default    any  // the parsed default; ignored when Required
	Required   bool // no default: the key must be given
	Importance Importance
	Doc        string
	Group      string
	Order      int
	Width      Width
	Display    string
	Dependents []string
	// Check, when set, validates the parsed value (nil for an unset optional
	// key without default is never checked).
	Check func(name string, value any) error
	// Recommended, when set, lists recommended values given the parsed config.
	Recommended func(parsed map[string]any) []any
}

// ConfigDef is an ordered set of configuration keys (Kafka's ConfigDef).
type ConfigDef struct {
	keys  []ConfigKey
	index map[string]int
}

// NewConfigDef makes an empty definition.
func NewConfigDef() *ConfigDef { return &ConfigDef{index: map[string]int{}} }

// Define adds a key; defining a name twice panics (a programming error).
func (d *ConfigDef) Define(k ConfigKey) *ConfigDef {
	if _, dup := d.index[k.Name]; dup {
		panic("connect: config key defined twice: " + k.Name)
	}
	if k.Width == "" {
		k.Width = WidthNone
	}
	if k.Importance == "" {
		k.Importance = Medium
	}
	d.index[k.Name] = len(d.keys)
	d.keys = append(d.keys, k)
	return d
}

// Merge returns a definition with d's keys then o's (keys already in d win).
func (d *ConfigDef) Merge(o *ConfigDef) *ConfigDef {
	m := NewConfigDef()
	for _, k := range d.Keys() {
		m.Define(k)
	}
	if o != nil {
		for _, k := range o.Keys() {
			if _, dup := m.index[k.Name]; !dup {
				m.Define(k)
			}
		}
	}
	return m
}

// Keys returns the keys in definition order.
func (d *ConfigDef) Keys() []ConfigKey {
	if d == nil {
		return nil
	}
	return append([]ConfigKey(nil), d.keys...)
}

// Key returns the named key.
func (d *ConfigDef) Key(name string) (ConfigKey, bool) {
	if d == nil {
		return ConfigKey{}, false
	}
	i, ok := d.index[name]
	if !ok {
		return ConfigKey{}, false
	}
	return d.keys[i], true
}

// ConfigValue is the validation result for one key (Kafka's ConfigValue).
type ConfigValue struct {
	Name              string
	Value             any
	RecommendedValues []any
	Errors            []string
	Visible           bool
}

// Parse parses props against the definition: every defined key gets its
// typed value (or default); an undefined key is kept as its string. The
// first error (a missing required key, a malformed value, a failed check)
// is returned.
func (d *ConfigDef) Parse(props map[string]string) (map[string]any, error) {
	out := make(map[string]any, len(props))
	for k, v := range props {
		out[k] = v
	}
	for _, k := range d.Keys() {
		v, err := k.parse(props)
		if err != nil {
			return nil, err
		}
		out[k.Name] = v
	}
	return out, nil
}

// Validate checks props against every key and returns one ConfigValue per
// defined key, with its errors (no error stops the others).
func (d *ConfigDef) Validate(props map[string]string) []ConfigValue {
	parsed := map[string]any{}
	vals := make([]ConfigValue, 0, len(d.Keys()))
	for _, k := range d.Keys() {
		cv := ConfigValue{Name: k.Name, Visible: true}
		if raw, ok := props[k.Name]; ok {
			cv.Value = raw
		}
		v, err := k.parse(props)
		if err != nil {
			cv.Errors = append(cv.Errors, err.Error())
		} else {
			parsed[k.Name] = v
		}
		vals = append(vals, cv)
	}
	for i, k := range d.Keys() {
		if k.Recommended != nil {
			vals[i].RecommendedValues = k.Recommended(parsed)
		}
	}
	return vals
}

func (k ConfigKey) parse(props map[string]string) (any, error) {
	raw, ok := props[k.Name]
	if !ok {
		if k.Required {
			return nil, fmt.Errorf("Missing required configuration \"%s\" which has no default value.", k.Name)
		}
		if k.Default != nil && k.Check != nil {
			if err := k.Check(k.Name, k.Default); err != nil {
				return nil, err
			}
		}
		return k.Default, nil
	}
	v, err := ParseValue(k.Type, strings.TrimSpace(raw))
	if err != nil {
		return nil, fmt.Errorf("Invalid value %s for configuration %s: %v", raw, k.Name, err)
	}
	if k.Check != nil {
		if err := k.Check(k.Name, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// ParseValue parses one value of a config type: bool, string, int32, int16,
// int64, float64, []string (LIST, comma-separated, blanks trimmed), string
// (CLASS, PASSWORD).
func ParseValue(t ConfigType, s string) (any, error) {
	switch t {
	case TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("Expected value to be either true or false")
	case TypeString, TypeClass, TypePassword:
		return s, nil
	case TypeInt:
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("Not a number of type INT")
		}
		return int32(n), nil
	case TypeShort:
		n, err := strconv.ParseInt(s, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("Not a number of type SHORT")
		}
		return int16(n), nil
	case TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("Not a number of type LONG")
		}
		return n, nil
	case TypeDouble:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("Not a number of type DOUBLE")
		}
		return f, nil
	case TypeList:
		if s == "" {
			return []string{}, nil
		}
		parts := strings.Split(s, ",")
		for i := range parts {
			parts[i] = strings.TrimSpace(parts[i])
		}
		return parts, nil
	}
	return nil, fmt.Errorf("unknown config type %s", t)
}

// InRange is a Check for numeric keys within [lo, hi].
func InRange(lo, hi float64) func(string, any) error {
	return func(name string, v any) error {
		var f float64
		switch n := v.(type) {
		case int16:
			f = float64(n)
		case int32:
			f = float64(n)
		case int64:
			f = float64(n)
		case float64:
			f = n
		default:
			return nil
		}
		if f < lo || f > hi {
			return fmt.Errorf("Invalid value %v for configuration %s: Value must be in [%v, %v]", v, name, lo, hi)
		}
		return nil
	}
}

// OneOf is a Check for string keys taking one of the given values
// (case-insensitively when fold is set).
func OneOf(fold bool, allowed ...string) func(string, any) error {
	return func(name string, v any) error {
		s, _ := v.(string)
		for _, a := range allowed {
			if s == a || (fold && strings.EqualFold(s, a)) {
				return nil
			}
		}
		return fmt.Errorf("Invalid value %v for configuration %s: String must be one of: %s", v, name, strings.Join(allowed, ", "))
	}
}
