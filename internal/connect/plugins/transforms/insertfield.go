package transforms

import (
	"fmt"
	"strings"

	"github.com/vltava/vltava/connect"
)

func init() {
	registerBoth("InsertField", func(s side) connect.Transformation { return &InsertField{side: s} })
}

// InsertField adds the record's topic, partition, timestamp and a static
// value as fields (Kafka's InsertField). A field name ending in "!" makes
// the inserted field required, "?" (or nothing) optional.
type InsertField struct {
	closeNone
	side                                      side
	topic, partition, timestamp, static, offs insertSpec
	staticValue                               string
	hasStatic                                 bool
	replaceNull                               bool
	cache                                     schemaCache
}

type insertSpec struct {
	name     string
	optional bool
}

func parseInsertSpec(s string) insertSpec {
	switch {
	case s == "":
		return insertSpec{}
	case strings.HasSuffix(s, "!"):
		return insertSpec{name: s[:len(s)-1]}
	case strings.HasSuffix(s, "?"):
		return insertSpec{name: s[:len(s)-1], optional: true}
	}
	return insertSpec{name: s, optional: true}
}

// Config implements connect.Transformation.
func (t *InsertField) Config() *connect.ConfigDef {
	return noKeys().
		Define(stringKey("topic.field", "", "Field name for Kafka topic. Suffix with ! to make this a required field, or ? to keep it optional (the default).")).
		Define(stringKey("partition.field", "", "Field name for Kafka partition. Suffix with ! to make this a required field, or ? to keep it optional (the default).")).
		Define(stringKey("offset.field", "", "Field name for Kafka offset - only applicable to sink connectors. Suffix with ! to make this a required field, or ? to keep it optional (the default).")).
		Define(stringKey("timestamp.field", "", "Field name for record timestamp. Suffix with ! to make this a required field, or ? to keep it optional (the default).")).
		Define(stringKey("static.field", "", "Field name for static data field. Suffix with ! to make this a required field, or ? to keep it optional (the default).")).
		Define(connect.ConfigKey{Name: "static.value", Type: connect.TypeString, Doc: "Static field value, if field name configured."}).
		Define(replaceNullKey())
}

// Configure implements connect.Transformation.
func (t *InsertField) Configure(props map[string]string) error {
	p, err := t.Config().Parse(props)
	if err != nil {
		return err
	}
	t.topic = parseInsertSpec(p["topic.field"].(string))
	t.partition = parseInsertSpec(p["partition.field"].(string))
	t.offs = parseInsertSpec(p["offset.field"].(string))
	t.timestamp = parseInsertSpec(p["timestamp.field"].(string))
	t.static = parseInsertSpec(p["static.field"].(string))
	t.staticValue, t.hasStatic = p["static.value"].(string)
	t.replaceNull = p["replace.null.with.default"].(bool)
	if t.offs.name != "" {
		// A transformation is handed the record without its Kafka offset.
		return fmt.Errorf("Invalid value %s for configuration offset.field: the Kafka offset is not available to transformations", props["offset.field"])
	}
	return nil
}

const insertPurpose = "field insertion"

// Apply implements connect.Transformation.
func (t *InsertField) Apply(r *connect.Record) (*connect.Record, error) {
	schema, value := t.side.operating(r)
	if value == nil {
		return r, nil // tombstones pass, as in Kafka since 2.x
	}
	if schema == nil {
		m, err := requireMap(value, insertPurpose)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(m)+4)
		for k, v := range m {
			out[k] = v
		}
		if t.topic.name != "" {
			out[t.topic.name] = r.Topic
		}
		if t.partition.name != "" {
			if r.Partition != nil {
				out[t.partition.name] = *r.Partition
			} else {
				out[t.partition.name] = nil
			}
		}
		if t.timestamp.name != "" {
			if r.Timestamp.IsZero() {
				out[t.timestamp.name] = nil
			} else {
				out[t.timestamp.name] = r.Timestamp.UnixMilli()
			}
		}
		if t.static.name != "" {
			out[t.static.name] = t.staticOrNil()
		}
		return t.side.with(r, nil, out), nil
	}
	st, err := requireStruct(value, insertPurpose)
	if err != nil {
		return nil, err
	}
	ns, err := t.cache.get(st.Schema(), func() (*connect.Schema, error) {
		b := structBasics(st.Schema())
		for _, f := range st.Schema().Fields {
			addField(b, f.Name, f.Schema)
		}
		for _, spec := range []struct {
			s insertSpec
			t *connect.Schema
		}{
			{t.topic, &connect.Schema{Type: connect.String}},
			{t.partition, &connect.Schema{Type: connect.Int32}},
			{t.timestamp, &connect.Schema{Type: connect.Int64, Name: connect.TimestampName, Version: 1}},
			{t.static, &connect.Schema{Type: connect.String}},
		} {
			if spec.s.name == "" {
				continue
			}
			if b.Field(spec.s.name) != nil {
				return nil, fmt.Errorf("Schema already contains a field named %s", spec.s.name)
			}
			spec.t.Optional = spec.s.optional
			addField(b, spec.s.name, spec.t)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	out := connect.NewStruct(ns)
	for _, f := range st.Schema().Fields {
		if err := put(out, f.Name, getRaw(st, f.Name, t.replaceNull)); err != nil {
			return nil, err
		}
	}
	set := func(spec insertSpec, v any) error {
		if spec.name == "" {
			return nil
		}
		if v == nil && !spec.optional {
			return fmt.Errorf("Missing value for the required field %s", spec.name)
		}
		return put(out, spec.name, v)
	}
	if err := set(t.topic, r.Topic); err != nil {
		return nil, err
	}
	var part any
	if r.Partition != nil {
		part = *r.Partition
	}
	if err := set(t.partition, part); err != nil {
		return nil, err
	}
	var ts any
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UTC()
	}
	if err := set(t.timestamp, ts); err != nil {
		return nil, err
	}
	if err := set(t.static, t.staticOrNil()); err != nil {
		return nil, err
	}
	return t.side.with(r, ns, out), nil
}

func (t *InsertField) staticOrNil() any {
	if !t.hasStatic {
		return nil
	}
	return t.staticValue
}
