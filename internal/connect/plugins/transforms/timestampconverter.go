package transforms

import (
	"fmt"
	"time"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("TimestampConverter", func(s side) connect.Transformation { return &TimestampConverter{side: s} })
}

// The timestamp kinds of Kafka's TimestampConverter target.type.
const (
	tsString    = "string"
	tsUnix      = "unix"
	tsDate      = "Date"
	tsTime      = "Time"
	tsTimestamp = "Timestamp"
)

// TimestampConverter converts a timestamp field (or the whole key or value)
// between a formatted string, a Unix time, and the Date, Time and
// Timestamp logical types (Kafka's TimestampConverter). Times are UTC.
type TimestampConverter struct {
	closeNone
	side        side
	field       string
	target      string
	layout      string // Go layout of format; "" when none
	precision   time.Duration
	replaceNull bool
	cache       schemaCache
}

// Config implements connect.Transformation.
func (t *TimestampConverter) Config() *connect.ConfigDef {
	return noKeys().
		Define(stringKey("field", "", "The field containing the timestamp, or empty if the entire value is a timestamp")).
		Define(connect.ConfigKey{Name: "target.type", Type: connect.TypeString, Required: true, Importance: connect.High,
			Check: connect.OneOf(false, tsString, tsUnix, tsDate, tsTime, tsTimestamp),
			Doc:   "The desired timestamp representation: string, unix, Date, Time, or Timestamp"}).
		Define(stringKey("format", "", "A SimpleDateFormat-compatible format for the timestamp. Used to generate the output when type=string or used to parse the input if the input is a string.")).
		Define(connect.ConfigKey{Name: "unix.precision", Type: connect.TypeString, Default: "milliseconds", Importance: connect.Low,
			Check: connect.OneOf(false, "nanoseconds", "microseconds", "milliseconds", "seconds"),
			Doc:   "The desired Unix precision for the timestamp: seconds, milliseconds, microseconds, or nanoseconds."}).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *TimestampConverter) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.field = p["field"].(string)
	t.target = p["target.type"].(string)
	t.replaceNull = p["replace.null.with.default"].(bool)
	if f := p["format"].(string); f != "" {
		if t.layout, err = javaLayout(f); err != nil {
			return fmt.Errorf("Invalid value %s for configuration format: %v", f, err)
		}
	}
	if t.target == tsString && t.layout == "" {
		return fmt.Errorf("TimestampConverter requires format option to be specified when using string timestamps")
	}
	t.precision = map[string]time.Duration{"nanoseconds": time.Nanosecond, "microseconds": time.Microsecond,
		"milliseconds": time.Millisecond, "seconds": time.Second}[p["unix.precision"].(string)]
	return nil
}

const tsPurpose = "converting timestamp formats"

// Apply implements connect.Transformation.
func (t *TimestampConverter) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil && t.field != "" {
		return r, nil
	}
	if t.field == "" {
		var kind string
		var err error
		if schema != nil {
			if kind, err = kindOfSchema(schema); err != nil {
				return nil, err
			}
		}
		out, err := t.convert(value, kind)
		if err != nil {
			return nil, err
		}
		var ns *connect.Schema
		if schema != nil {
			ns = t.targetSchema(schema.Optional)
		}
		return t.side.with(r, ns, out), nil
	}
	if schema == nil {
		m, err := requireMap(value, tsPurpose)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[k] = v
		}
		if out[t.field], err = t.convert(m[t.field], ""); err != nil {
			return nil, err
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, tsPurpose)
	if err != nil {
		return nil, err
	}
	ns, err := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := structBasics(st.Schema())
		b.Optional = st.Schema().Optional
		found := false
		for _, f := range st.Schema().Fields {
			if f.Name == t.field {
				found = true
				addField(b, f.Name, t.targetSchema(f.Schema.Optional))
			} else {
				addField(b, f.Name, f.Schema)
			}
		}
		if !found {
			return nil, fmt.Errorf("Field %s does not exist in the record schema", t.field)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	out := connect.NewStruct(ns)
	for _, f := range st.Schema().Fields {
		v := getRaw(st, f.Name, t.replaceNull)
		if f.Name == t.field {
			kind, err := kindOfSchema(f.Schema)
			if err != nil {
				return nil, err
			}
			if v, err = t.convert(v, kind); err != nil {
				return nil, err
			}
		}
		if err := put(out, f.Name, v); err != nil {
			return nil, err
		}
	}
	return t.side.with(r, ns, out), nil
}

func kindOfSchema(s *connect.Schema) (string, error) {
	switch {
	case s.Name == connect.TimestampName:
		return tsTimestamp, nil
	case s.Name == connect.DateName:
		return tsDate, nil
	case s.Name == connect.TimeName:
		return tsTime, nil
	case s.Type == connect.String:
		return tsString, nil
	case s.Type == connect.Int64:
		return tsUnix, nil
	}
	return "", fmt.Errorf("Schema %s does not correspond to a known timestamp type format", s.Type)
}

func kindOfValue(v any) (string, error) {
	switch v.(type) {
	case time.Time:
		return tsTimestamp, nil
	case int64, int32, int:
		return tsUnix, nil
	case string:
		return tsString, nil
	}
	return "", fmt.Errorf("TimestampConverter does not support %T objects as timestamps", v)
}

func (t *TimestampConverter) targetSchema(optional bool) *connect.Schema {
	switch t.target {
	case tsString:
		return &connect.Schema{Type: connect.String, Optional: optional}
	case tsUnix:
		return &connect.Schema{Type: connect.Int64, Optional: optional}
	case tsDate:
		return &connect.Schema{Type: connect.Int32, Name: connect.DateName, Version: 1, Optional: optional}
	case tsTime:
		return &connect.Schema{Type: connect.Int32, Name: connect.TimeName, Version: 1, Optional: optional}
	}
	return &connect.Schema{Type: connect.Int64, Name: connect.TimestampName, Version: 1, Optional: optional}
}

// convert turns v (of kind, or inferred when "") into the target kind,
// through a UTC time.
func (t *TimestampConverter) convert(v any, kind string) (any, error) {
	if v == nil {
		return nil, nil
	}
	var err error
	if kind == "" {
		if kind, err = kindOfValue(v); err != nil {
			return nil, err
		}
	}
	var ts time.Time
	switch kind {
	case tsString:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("Expected string timestamp to be a String, but found %T", v)
		}
		if t.layout == "" {
			return nil, fmt.Errorf("TimestampConverter requires format option to be specified when using string timestamps")
		}
		if ts, err = time.ParseInLocation(t.layout, s, time.UTC); err != nil {
			return nil, fmt.Errorf("Could not parse timestamp: value (%s) does not match pattern: %v", s, err)
		}
	case tsUnix:
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case int32:
			n = int64(x)
		case int:
			n = int64(x)
		default:
			return nil, fmt.Errorf("Expected Unix timestamp to be a Long, but found %T", v)
		}
		ts = time.Unix(0, 0).Add(time.Duration(n) * t.precision).UTC()
	default:
		tv, ok := v.(time.Time)
		if !ok {
			return nil, fmt.Errorf("Expected %s to be a java.util.Date, but found %T", kind, v)
		}
		ts = tv.UTC()
	}
	switch t.target {
	case tsString:
		return ts.Format(t.layout), nil
	case tsUnix:
		return ts.UnixNano() / int64(t.precision), nil
	case tsDate:
		return time.Date(ts.Year(), ts.Month(), ts.Day(), 0, 0, 0, 0, time.UTC), nil
	case tsTime:
		return time.Date(1970, 1, 1, ts.Hour(), ts.Minute(), ts.Second(), ts.Nanosecond()/1e6*1e6, time.UTC), nil
	}
	return ts, nil
}
