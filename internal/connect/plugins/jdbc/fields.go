package jdbc

import (
	"fmt"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// column is one column a record writes: its name, schema, and whether it
// belongs to the primary key.
type column struct {
	name   string
	schema *connect.Schema
	key    bool
}

// fieldsMeta is how the records of one key and value schema map onto
// columns (Confluent's FieldsMetadata): the key columns first, then the
// value columns, with an extractor per column.
type fieldsMeta struct {
	cols    []column
	extract []func(r *connect.SinkRecord) (any, error)
	nKeys   int
}

func (m *fieldsMeta) keyNames() []string {
	out := make([]string, m.nKeys)
	for i := range out {
		out[i] = m.cols[i].name
	}
	return out
}

func (m *fieldsMeta) nonKeyNames() []string {
	var out []string
	for _, c := range m.cols[m.nKeys:] {
		out = append(out, c.name)
	}
	return out
}

// metaKey identifies a fieldsMeta: schemas are immutable, so pointers do.
type metaKey struct {
	keySchema, valueSchema *connect.Schema
}

// buildMeta derives the columns for a record's schemas under pk.mode,
// pk.fields and fields.whitelist, with Confluent's rules and messages.
func (c *sinkConfig) buildMeta(table string, ks, vs *connect.Schema) (*fieldsMeta, error) {
	m := &fieldsMeta{}
	keySet := map[string]bool{}
	addKey := func(name string, s *connect.Schema, ex func(r *connect.SinkRecord) (any, error)) {
		m.cols = append(m.cols, column{name: name, schema: s, key: true})
		m.extract = append(m.extract, ex)
		keySet[name] = true
	}
	switch c.pkMode {
	case pkKafka:
		addKey(c.pkFields[0], &connect.Schema{Type: connect.String}, func(r *connect.SinkRecord) (any, error) { return r.Topic, nil })
		addKey(c.pkFields[1], &connect.Schema{Type: connect.Int32}, func(r *connect.SinkRecord) (any, error) {
			if r.Partition == nil {
				return nil, fmt.Errorf("record without a Kafka partition")
			}
			return int64(*r.Partition), nil
		})
		addKey(c.pkFields[2], &connect.Schema{Type: connect.Int64}, func(r *connect.SinkRecord) (any, error) { return r.KafkaOffset, nil })
	case pkRecordKey:
		if ks == nil {
			return nil, fmt.Errorf("PK mode for table '%s' is RECORD_KEY, but record key schema is missing", table)
		}
		if ks.Type != connect.StructT {
			if len(c.pkFields) != 1 {
				return nil, fmt.Errorf("Need exactly one PK column defined since the key schema for records is a primitive type, defined columns are: %v", c.pkFields)
			}
			addKey(c.pkFields[0], ks, func(r *connect.SinkRecord) (any, error) { return r.Key, nil })
			break
		}
		names := c.pkFields
		if len(names) == 0 {
			for _, f := range ks.Fields {
				names = append(names, f.Name)
			}
		}
		for _, n := range names {
			f := ks.Field(n)
			if f == nil {
				return nil, fmt.Errorf("PK mode for table '%s' is RECORD_KEY with configured PK fields %v, but record key schema does not contain field: %s", table, c.pkFields, n)
			}
			name := n
			addKey(name, f.Schema, func(r *connect.SinkRecord) (any, error) {
				st, ok := r.Key.(*connect.Struct)
				if !ok {
					return nil, fmt.Errorf("record key %T is not a Struct", r.Key)
				}
				return st.Get(name)
			})
		}
	case pkRecordValue:
		if vs == nil {
			return nil, fmt.Errorf("PK mode for table '%s' is RECORD_VALUE, but record value schema is missing", table)
		}
		names := c.pkFields
		if len(names) == 0 {
			for _, f := range vs.Fields {
				names = append(names, f.Name)
			}
		}
		for _, n := range names {
			f := vs.Field(n)
			if f == nil {
				return nil, fmt.Errorf("PK mode for table '%s' is RECORD_VALUE with configured PK fields %v, but record value schema does not contain field: %s", table, c.pkFields, n)
			}
			addKey(n, f.Schema, valueField(n))
		}
	}
	m.nKeys = len(m.cols)
	if vs != nil {
		if vs.Type != connect.StructT {
			return nil, fmt.Errorf("the JDBC sink needs a Struct value schema, found %s", vs.Type)
		}
		for _, f := range vs.Fields {
			if keySet[f.Name] || (c.whitelist != nil && !c.whitelist[f.Name]) {
				continue
			}
			if f.Schema.Type == connect.StructT || f.Schema.Type == connect.Array || f.Schema.Type == connect.Map {
				return nil, fmt.Errorf("%s (%s) type doesn't have a mapping to the SQL database column type", f.Schema.Type, f.Name)
			}
			m.cols = append(m.cols, column{name: f.Name, schema: f.Schema})
			m.extract = append(m.extract, valueField(f.Name))
		}
	}
	if len(m.cols) == 0 {
		return nil, fmt.Errorf("No fields found using key and value schemas for table: %s", table)
	}
	return m, nil
}

func valueField(name string) func(r *connect.SinkRecord) (any, error) {
	return func(r *connect.SinkRecord) (any, error) {
		st, ok := r.Value.(*connect.Struct)
		if !ok {
			return nil, fmt.Errorf("record value %T is not a Struct", r.Value)
		}
		return st.Get(name)
	}
}

// bindValue turns a Connect value into what the database driver takes.
func bindValue(s *connect.Schema, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64, float64, bool, string, []byte:
		return x, nil
	case float32:
		return float64(x), nil
	case connect.Decimal:
		return x.String(), nil
	case time.Time:
		switch s.Name {
		case connect.DateName:
			return x.UTC().Format("2006-01-02"), nil
		case connect.TimeName:
			return x.UTC().Format("15:04:05.000"), nil
		}
		return x.UTC(), nil
	}
	return nil, fmt.Errorf("value of type %T cannot be written to a column", v)
}

// sqlLiteral renders a default value for DDL.
func sqlLiteral(v any) (string, bool) {
	switch x := v.(type) {
	case int8, int16, int32, int64, float32, float64:
		return fmt.Sprint(x), true
	case bool:
		if x {
			return "1", true
		}
		return "0", true
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", true
	}
	return "", false
}
