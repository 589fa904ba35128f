package jdbc

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// querier reads one table (or the query) incrementally, as Confluent's
// TableQuerier: it keeps the last offset, and an open result set across
// Polls until it is exhausted.
type querier struct {
	cfg       *sourceConfig
	d         dialect
	table     string // "" for the query
	topic     string
	partition map[string]any

	// The offset: the last incrementing value, and the last timestamp.
	inc int64
	ts  time.Time

	rows   *sql.Rows
	schema *connect.Schema
	conv   []func(any) (any, error)
	incIdx int
	tsIdx  []int
	next   time.Time // when to query again
}

func (q *querier) name() string {
	if q.table == "" {
		return "query"
	}
	return q.table
}

// restore reads a stored offset ({"incrementing":N},
// {"timestamp":ms,"timestamp_nanos":ns}).
func (q *querier) restore(off map[string]any) error {
	if off == nil {
		return nil
	}
	if v, ok := off["incrementing"]; ok && v != nil {
		n, err := number(v)
		if err != nil {
			return fmt.Errorf("stored incrementing offset: %w", err)
		}
		q.inc = n
	}
	if v, ok := off["timestamp"]; ok && v != nil {
		ms, err := number(v)
		if err != nil {
			return fmt.Errorf("stored timestamp offset: %w", err)
		}
		var nanos int64
		if nv, ok := off["timestamp_nanos"]; ok && nv != nil {
			if nanos, err = number(nv); err != nil {
				return fmt.Errorf("stored timestamp_nanos offset: %w", err)
			}
		}
		sec := ms / 1000
		if ms < 0 && ms%1000 != 0 {
			sec--
		}
		q.ts = time.Unix(sec, nanos).UTC()
	}
	return nil
}

func number(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case float64:
		return int64(x), nil
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

// offset is the offset map after the last row read.
func (q *querier) offset() map[string]any {
	m := map[string]any{}
	if q.cfg.mode == modeIncrementing || q.cfg.mode == modeTimestampIncrementing {
		m["incrementing"] = q.inc
	}
	if q.cfg.mode == modeTimestamp || q.cfg.mode == modeTimestampIncrementing {
		m["timestamp"] = q.ts.UnixMilli()
		m["timestamp_nanos"] = int64(q.ts.Nanosecond())
	}
	return m
}

func (q *querier) validateNonNull(ctx context.Context, db *sql.DB) error {
	cols := append([]string{}, q.cfg.tsColumns...)
	if q.cfg.mode != modeTimestamp {
		cols = append(cols, q.cfg.incColumn)
	}
	for _, c := range cols {
		var nullable string
		var err error
		if _, pg := q.d.(postgres); pg {
			err = db.QueryRowContext(ctx, `SELECT is_nullable FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2`, q.table, c).Scan(&nullable)
		} else {
			err = db.QueryRowContext(ctx, `SELECT is_nullable FROM information_schema.columns
				WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?`, q.table, c).Scan(&nullable)
		}
		if err == sql.ErrNoRows {
			return fmt.Errorf("Cannot find column %s in table %s", c, q.table)
		}
		if err != nil {
			return fmt.Errorf("checking column %s of %s: %w", c, q.table, err)
		}
		if nullable == "YES" {
			return fmt.Errorf("Cannot make incremental queries using column %s on %s because this column is nullable.", c, q.table)
		}
	}
	return nil
}

// statement builds the query and its arguments for the mode.
func (q *querier) statement() (string, []any) {
	base := q.cfg.query
	if base == "" {
		base = "SELECT * FROM " + q.d.quote(q.table)
	}
	ph := q.d.placeholder
	tsExpr := ""
	if len(q.cfg.tsColumns) == 1 {
		tsExpr = q.d.quote(q.cfg.tsColumns[0])
	} else if len(q.cfg.tsColumns) > 1 {
		parts := make([]string, len(q.cfg.tsColumns))
		for i, c := range q.cfg.tsColumns {
			parts[i] = q.d.quote(c)
		}
		tsExpr = "COALESCE(" + strings.Join(parts, ",") + ")"
	}
	inc := q.d.quote(q.cfg.incColumn)
	end := time.Now().UTC().Add(-q.cfg.tsDelay)
	var sqlText string
	var args []any
	switch q.cfg.mode {
	case modeBulk:
		sqlText = base
	case modeIncrementing:
		sqlText = base + " WHERE " + inc + " > " + ph(1) + " ORDER BY " + inc + " ASC"
		args = []any{q.inc}
	case modeTimestamp:
		sqlText = base + " WHERE " + tsExpr + " > " + ph(1) + " AND " + tsExpr + " < " + ph(2) + " ORDER BY " + tsExpr + " ASC"
		args = []any{q.ts, end}
	case modeTimestampIncrementing:
		sqlText = base + " WHERE " + tsExpr + " < " + ph(1) + " AND ((" + tsExpr + " = " + ph(2) + " AND " + inc + " > " + ph(3) + ") OR " +
			tsExpr + " > " + ph(4) + ") ORDER BY " + tsExpr + "," + inc + " ASC"
		args = []any{end, q.ts, q.inc, q.ts}
	}
	if q.cfg.querySuffix != "" {
		sqlText += " " + q.cfg.querySuffix
	}
	return sqlText, args
}

func (q *querier) close() {
	if q.rows != nil {
		_ = q.rows.Close()
		q.rows = nil
	}
}

// poll reads up to batch.max.rows rows, running the query first if no
// result set is open.
func (q *querier) poll(ctx context.Context, db *sql.DB) ([]connect.SourceRecord, error) {
	if q.rows == nil {
		text, args := q.statement()
		rows, err := db.QueryContext(ctx, text, args...)
		if err != nil {
			return nil, err
		}
		q.rows = rows
		if err := q.describe(); err != nil {
			return nil, err
		}
	}
	var out []connect.SourceRecord
	dest := make([]any, len(q.conv))
	ptrs := make([]any, len(q.conv))
	for i := range dest {
		ptrs[i] = &dest[i]
	}
	for len(out) < q.cfg.batchMaxRows {
		if !q.rows.Next() {
			err := q.rows.Err()
			q.close()
			q.next = time.Now().Add(q.cfg.pollInterval)
			if err != nil {
				return nil, err
			}
			break
		}
		if err := q.rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		st := connect.NewStruct(q.schema)
		for i, f := range q.schema.Fields {
			v, err := q.conv[i](dest[i])
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.Name, err)
			}
			if v != nil {
				if err := st.Put(f.Name, v); err != nil {
					return nil, err
				}
			}
		}
		if err := q.advance(st); err != nil {
			return nil, err
		}
		out = append(out, connect.SourceRecord{
			Record:          connect.Record{Topic: q.topic, ValueSchema: q.schema, Value: st},
			SourcePartition: q.partition,
			SourceOffset:    q.offset(),
		})
	}
	return out, nil
}

// advance moves the offset to the row just read.
func (q *querier) advance(st *connect.Struct) error {
	if q.incIdx >= 0 {
		v, _ := st.Get(q.schema.Fields[q.incIdx].Name)
		switch n := v.(type) {
		case int8:
			q.inc = int64(n)
		case int16:
			q.inc = int64(n)
		case int32:
			q.inc = int64(n)
		case int64:
			q.inc = n
		case connect.Decimal:
			if !n.Unscaled.IsInt64() || n.Scale != 0 {
				return fmt.Errorf("incrementing column value %s is not a 64-bit integer", n)
			}
			q.inc = n.Unscaled.Int64()
		default:
			return fmt.Errorf("incrementing column %s has a value of type %T, not an integer", q.cfg.incColumn, v)
		}
	}
	for _, i := range q.tsIdx {
		v, _ := st.Get(q.schema.Fields[i].Name)
		if t, ok := v.(time.Time); ok {
			q.ts = t
			break
		}
	}
	return nil
}

// describe builds the value schema from the result set's columns (the
// struct is named after the table, as Confluent's source names it) and a
// converter per column.
func (q *querier) describe() error {
	types, err := q.rows.ColumnTypes()
	if err != nil {
		return err
	}
	s := &connect.Schema{Type: connect.StructT, Name: q.table}
	if q.table == "" {
		s.Name = ""
	}
	q.conv = q.conv[:0]
	q.incIdx, q.tsIdx = -1, nil
	for i, ct := range types {
		fs, conv, err := columnSchema(ct)
		if err != nil {
			return fmt.Errorf("column %s: %w", ct.Name(), err)
		}
		s.Fields = append(s.Fields, connect.Field{Name: ct.Name(), Index: i, Schema: fs})
		q.conv = append(q.conv, conv)
		if q.cfg.incColumn != "" && strings.EqualFold(ct.Name(), q.cfg.incColumn) {
			q.incIdx = i
		}
	}
	for _, c := range q.cfg.tsColumns {
		for i, ct := range types {
			if strings.EqualFold(ct.Name(), c) {
				q.tsIdx = append(q.tsIdx, i)
			}
		}
	}
	needInc := q.cfg.mode == modeIncrementing || q.cfg.mode == modeTimestampIncrementing
	if needInc && q.incIdx < 0 {
		return fmt.Errorf("the result of %s has no incrementing column %s", q.name(), q.cfg.incColumn)
	}
	if (q.cfg.mode == modeTimestamp || q.cfg.mode == modeTimestampIncrementing) && len(q.tsIdx) == 0 {
		return fmt.Errorf("the result of %s has no timestamp column %v", q.name(), q.cfg.tsColumns)
	}
	if q.schema == nil || !connect.SchemasEqual(q.schema, s) {
		q.schema = s
	}
	return nil
}

// columnSchema maps a column to a Connect schema (Confluent's
// GenericDatabaseDialect.addFieldToSchema with numeric.mapping=none) and a
// converter from what the driver scans.
func columnSchema(ct *sql.ColumnType) (*connect.Schema, func(any) (any, error), error) {
	nullable, known := ct.Nullable()
	opt := nullable || !known
	typ := strings.ToUpper(ct.DatabaseTypeName())
	sch := func(t connect.Type) *connect.Schema { return &connect.Schema{Type: t, Optional: opt} }
	switch typ {
	case "INT2", "SMALLINT", "TINYINT", "UNSIGNED TINYINT", "YEAR":
		if typ == "TINYINT" {
			return sch(connect.Int8), intConv(8), nil
		}
		return sch(connect.Int16), intConv(16), nil
	case "INT4", "INT", "INTEGER", "MEDIUMINT", "UNSIGNED SMALLINT", "UNSIGNED MEDIUMINT", "SERIAL":
		return sch(connect.Int32), intConv(32), nil
	case "INT8", "BIGINT", "UNSIGNED INT", "BIGSERIAL":
		return sch(connect.Int64), intConv(64), nil
	case "FLOAT4", "REAL", "FLOAT":
		return sch(connect.Float32), floatConv(32), nil
	case "FLOAT8", "DOUBLE", "DOUBLE PRECISION":
		return sch(connect.Float64), floatConv(64), nil
	case "BOOL", "BOOLEAN", "BIT":
		return sch(connect.Boolean), boolConv, nil
	case "TEXT", "VARCHAR", "CHAR", "BPCHAR", "NAME", "UUID", "JSON", "JSONB", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT", "ENUM", "SET", "XML", "CITEXT", "NVARCHAR":
		return sch(connect.String), stringConv, nil
	case "BYTEA", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB", "BINARY", "VARBINARY":
		return sch(connect.Bytes), bytesConv, nil
	case "NUMERIC", "DECIMAL", "UNSIGNED BIGINT":
		scale := int64(0)
		if typ != "UNSIGNED BIGINT" {
			_, sc, ok := ct.DecimalSize()
			if !ok {
				return nil, nil, fmt.Errorf("NUMERIC without a declared scale cannot map to a Decimal")
			}
			scale = sc
		}
		s := sch(connect.Bytes)
		s.Name, s.Version = connect.DecimalName, 1
		s.Parameters = map[string]string{connect.DecimalScaleParam: strconv.FormatInt(scale, 10)}
		return s, decimalConv(int32(scale)), nil
	case "DATE":
		s := sch(connect.Int32)
		s.Name, s.Version = connect.DateName, 1
		return s, timeConv("2006-01-02"), nil
	case "TIME", "TIMETZ":
		s := sch(connect.Int32)
		s.Name, s.Version = connect.TimeName, 1
		return s, timeConv("15:04:05.999999999"), nil
	case "TIMESTAMP", "TIMESTAMPTZ", "DATETIME":
		s := sch(connect.Int64)
		s.Name, s.Version = connect.TimestampName, 1
		return s, timeConv("2006-01-02 15:04:05.999999999"), nil
	}
	return nil, nil, fmt.Errorf("JDBC type %s is not supported", typ)
}

func text(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func intConv(bits int) func(any) (any, error) {
	return func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		var n int64
		switch x := v.(type) {
		case int64:
			n = x
		case int32:
			n = int64(x)
		case uint64:
			n = int64(x)
		default:
			s, ok := text(v)
			if !ok {
				return nil, fmt.Errorf("%T is not an integer", v)
			}
			var err error
			if n, err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, err
			}
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	}
}

func floatConv(bits int) func(any) (any, error) {
	return func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case float32:
			f = float64(x)
		default:
			s, ok := text(v)
			if !ok {
				return nil, fmt.Errorf("%T is not a number", v)
			}
			var err error
			if f, err = strconv.ParseFloat(s, 64); err != nil {
				return nil, err
			}
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	}
}

func boolConv(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case int64:
		return x != 0, nil
	case []byte:
		if len(x) == 1 && (x[0] == 0 || x[0] == 1) { // BIT(1)
			return x[0] == 1, nil
		}
	}
	s, ok := text(v)
	if !ok {
		return nil, fmt.Errorf("%T is not a boolean", v)
	}
	return strconv.ParseBool(s)
}

func stringConv(v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if s, ok := text(v); ok {
		return s, nil
	}
	return fmt.Sprint(v), nil
}

func bytesConv(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		return append([]byte(nil), x...), nil
	case string:
		return []byte(x), nil
	}
	return nil, fmt.Errorf("%T is not bytes", v)
}

func decimalConv(scale int32) func(any) (any, error) {
	return func(v any) (any, error) {
		if v == nil {
			return nil, nil
		}
		var s string
		switch x := v.(type) {
		case int64:
			s = strconv.FormatInt(x, 10)
		case float64:
			s = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			var ok bool
			if s, ok = text(v); !ok {
				return nil, fmt.Errorf("%T is not a decimal", v)
			}
		}
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal", s)
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
		if !r.IsInt() {
			return nil, fmt.Errorf("%s has more digits than the column's scale %d", s, scale)
		}
		return connect.Decimal{Unscaled: new(big.Int).Set(r.Num()), Scale: scale}, nil
	}
}

func timeConv(layout string) func(any) (any, error) {
	return func(v any) (any, error) {
		switch x := v.(type) {
		case nil:
			return nil, nil
		case time.Time:
			if layout == "15:04:05.999999999" {
				u := x.UTC()
				return time.Date(1970, 1, 1, u.Hour(), u.Minute(), u.Second(), u.Nanosecond()/1e6*1e6, time.UTC), nil
			}
			return x.UTC(), nil
		}
		s, ok := text(v)
		if !ok {
			return nil, fmt.Errorf("%T is not a time", v)
		}
		t, err := time.ParseInLocation(layout, s, time.UTC)
		if err != nil {
			return nil, err
		}
		if layout == "15:04:05.999999999" {
			t = time.Date(1970, 1, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond()/1e6*1e6, time.UTC)
		}
		return t, nil
	}
}
