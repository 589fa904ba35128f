package jdbc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/vltava/vltava/connect"
)

// The sink's class names.
const (
	SinkClass       = "io.confluent.connect.jdbc.JdbcSinkConnector"
	SinkVltavaClass = "io.vltava.connect.jdbc.JdbcSinkConnector"
)

const version = "1.0"

func init() {
	connect.RegisterSink(SinkClass, version, func() connect.SinkConnector { return &SinkConnector{} }, SinkVltavaClass)
	connect.RegisterSource(SourceClass, version, func() connect.SourceConnector { return &SourceConnector{} }, SourceVltavaClass)
}

// SinkConnector writes records into PostgreSQL or MySQL/MariaDB tables.
// Every task gets the same configuration; the topics' partitions are
// shared among them by the consumer group.
type SinkConnector struct{ props map[string]string }

// Version implements connect.Connector.
func (c *SinkConnector) Version() string { return version }

// Config implements connect.Connector.
func (c *SinkConnector) Config() *connect.ConfigDef { return sinkConfigDef() }

// Initialize implements connect.Connector.
func (c *SinkConnector) Initialize(connect.ConnectorContext) {}

// Validate implements connect.Validator (the cross-key rules).
func (c *SinkConnector) Validate(props map[string]string) []connect.ConfigValue {
	if _, err := parseSinkConfig(props); err != nil {
		return []connect.ConfigValue{{Name: "connection.url", Value: props["connection.url"], Errors: []string{err.Error()}, Visible: true}}
	}
	return nil
}

// Start implements connect.Connector.
func (c *SinkConnector) Start(props map[string]string) error {
	if _, err := parseSinkConfig(props); err != nil {
		return err
	}
	c.props = props
	return nil
}

// TaskConfigs implements connect.Connector.
func (c *SinkConnector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	out := make([]map[string]string, maxTasks)
	for i := range out {
		out[i] = c.props
	}
	return out, nil
}

// Stop implements connect.Connector.
func (c *SinkConnector) Stop() error { return nil }

// NewTask implements connect.SinkConnector.
func (c *SinkConnector) NewTask() connect.SinkTask { return &SinkTask{} }

// SinkTask writes each Put in one transaction: records are grouped per
// table into multi-row INSERT (or upsert) statements of up to batch.size
// rows, tombstones become DELETEs when delete.enabled. A failed write is
// retried max.retries times, retry.backoff.ms apart (the worker redelivers
// the batch), then fails the task. The worker calls every method from the
// task's goroutine, so the task needs no lock.
type SinkTask struct {
	cfg       *sinkConfig
	ctx       connect.SinkTaskContext
	db        *sql.DB
	metas     map[metaKey]*fieldsMeta
	tables    map[string]map[string]string // table → columns (lower → real)
	remaining int                          // retries left
}

// Version implements connect.SinkTask.
func (t *SinkTask) Version() string { return version }

// Initialize implements connect.SinkTask.
func (t *SinkTask) Initialize(ctx connect.SinkTaskContext) { t.ctx = ctx }

// Start implements connect.SinkTask; the database is connected on the
// first Put, as Confluent's sink does.
func (t *SinkTask) Start(props map[string]string) error {
	cfg, err := parseSinkConfig(props)
	if err != nil {
		return err
	}
	t.cfg = cfg
	t.metas = map[metaKey]*fieldsMeta{}
	t.tables = map[string]map[string]string{}
	t.remaining = cfg.maxRetries
	return nil
}

// Open implements connect.SinkTask.
func (t *SinkTask) Open([]connect.TopicPartition) error { return nil }

// Close implements connect.SinkTask.
func (t *SinkTask) Close([]connect.TopicPartition) error { return nil }

// PreCommit implements connect.SinkTask: every Put is committed before it
// returns, so the offsets put are the offsets written.
func (t *SinkTask) PreCommit(current map[connect.TopicPartition]int64) (map[connect.TopicPartition]int64, error) {
	return current, nil
}

// Stop implements connect.SinkTask.
func (t *SinkTask) Stop() error {
	if t.db != nil {
		err := t.db.Close()
		t.db = nil
		return err
	}
	return nil
}

// sqlError marks a failure of the database (retried), as opposed to a
// record the sink cannot write (fatal).
type sqlError struct{ err error }

func (e *sqlError) Error() string { return e.err.Error() }
func (e *sqlError) Unwrap() error { return e.err }

// Put implements connect.SinkTask.
func (t *SinkTask) Put(records []connect.SinkRecord) error {
	if len(records) == 0 {
		return nil
	}
	if t.db == nil {
		db, err := t.cfg.conn.open(context.Background())
		if err != nil {
			return err
		}
		t.db = db
	}
	err := t.write(records)
	if err == nil {
		t.remaining = t.cfg.maxRetries
		return nil
	}
	var se *sqlError
	if !errors.As(err, &se) {
		return err
	}
	if t.remaining <= 0 {
		return fmt.Errorf("Exceeded max retries (%d) writing to the database: %w", t.cfg.maxRetries, err)
	}
	t.remaining--
	slog.Warn("jdbc: write failed, will retry", "remaining", t.remaining, "err", err)
	// A fresh connection pool for the retry, as the original closes its
	// connection.
	_ = t.db.Close()
	t.db = nil
	t.tables = map[string]map[string]string{}
	if t.ctx != nil {
		t.ctx.Timeout(t.cfg.retryBackoff)
	}
	return connect.Retriable(err)
}

// op is one run of same-kind writes to one table.
type op struct {
	table  string
	meta   *fieldsMeta
	delete bool
	rows   [][]any
	index  map[string]int // upsert: key values → row, so a key appears once per statement
}

// write plans the records into ops, makes sure the tables exist, then runs
// the ops in one transaction.
func (t *SinkTask) write(records []connect.SinkRecord) error {
	ctx := context.Background()
	var ops []*op
	last := map[string]*op{} // table → its open op
	for i := range records {
		r := &records[i]
		table := t.cfg.tableName(r.Topic)
		tomb := r.Value == nil
		if tomb && !t.cfg.deleteOn {
			return fmt.Errorf("Sink connector is configured with 'delete.enabled=false' and 'pk.mode=%s' and therefore requires records with a non-null Struct value and non-null Struct schema, but found record at (topic='%s',partition=%d,offset=%d) with a null value and %s value schema.",
				t.cfg.pkMode, r.Topic, partOf(r), r.KafkaOffset, nullOr(r.ValueSchema))
		}
		if !tomb && (!isStruct(r.ValueSchema) || !isStructValue(r.Value)) {
			return fmt.Errorf("Sink connector requires records with a non-null Struct value and non-null Struct schema, but found record at (topic='%s',partition=%d,offset=%d) with a %T value and %s value schema.",
				r.Topic, partOf(r), r.KafkaOffset, r.Value, nullOr(r.ValueSchema))
		}
		vs := r.ValueSchema
		if tomb {
			vs = nil
		}
		m, err := t.meta(table, r.KeySchema, vs)
		if err != nil {
			return err
		}
		o := last[table]
		if o == nil || o.delete != tomb || (!tomb && o.meta != m) || (tomb && !sameKeys(o.meta, m)) || len(o.rows) >= t.cfg.batchSize {
			o = &op{table: table, meta: m, delete: tomb}
			if !tomb && t.cfg.insertMode == "upsert" {
				o.index = map[string]int{}
			}
			ops = append(ops, o)
			last[table] = o
		}
		n := len(m.cols)
		if tomb {
			n = m.nKeys
		}
		row := make([]any, n)
		for j := 0; j < n; j++ {
			v, err := m.extract[j](r)
			if err != nil {
				return fmt.Errorf("record at (topic='%s',partition=%d,offset=%d): %w", r.Topic, partOf(r), r.KafkaOffset, err)
			}
			if row[j], err = bindValue(m.cols[j].schema, v); err != nil {
				return fmt.Errorf("record at (topic='%s',partition=%d,offset=%d), column %s: %w", r.Topic, partOf(r), r.KafkaOffset, m.cols[j].name, err)
			}
		}
		if o.index != nil {
			k := fmt.Sprint(row[:m.nKeys]...)
			if at, dup := o.index[k]; dup {
				o.rows[at] = row // the later record wins, as it would row by row
				continue
			}
			o.index[k] = len(o.rows)
		}
		o.rows = append(o.rows, row)
	}
	for _, o := range ops {
		if o.delete {
			continue
		}
		if _, ok := t.tables[o.table]; ok && t.tables[o.table] != nil && t.hasAll(o.table, o.meta) {
			continue
		}
		cols, err := t.cfg.ensureTable(ctx, t.db, o.table, t.tables[o.table], o.meta)
		if err != nil {
			return err
		}
		t.tables[o.table] = cols
	}
	if _, pg := t.cfg.conn.target.dialect.(postgres); pg && t.cfg.insertMode == "insert" && copyable(ops) {
		if err := t.writeCopy(ctx, ops); err != nil {
			return &sqlError{err}
		}
		return nil
	}
	tx, err := t.db.BeginTx(ctx, nil)
	if err != nil {
		return &sqlError{err}
	}
	for _, o := range ops {
		if err := t.run(ctx, tx, o); err != nil {
			_ = tx.Rollback()
			return &sqlError{err}
		}
	}
	if err := tx.Commit(); err != nil {
		return &sqlError{err}
	}
	return nil
}

func (t *SinkTask) hasAll(table string, m *fieldsMeta) bool {
	have := t.tables[table]
	for _, c := range m.cols {
		if _, ok := have[strings.ToLower(c.name)]; !ok {
			return false
		}
	}
	return true
}

func (t *SinkTask) meta(table string, ks, vs *connect.Schema) (*fieldsMeta, error) {
	k := metaKey{ks, vs}
	if m, ok := t.metas[k]; ok {
		return m, nil
	}
	m, err := t.cfg.buildMeta(table, ks, vs)
	if err != nil {
		return nil, err
	}
	if len(t.metas) > 64 {
		t.metas = map[metaKey]*fieldsMeta{}
	}
	t.metas[k] = m
	return m, nil
}

// run executes one op: multi-row statements for inserts and upserts,
// one statement per row for updates and deletes.
func (t *SinkTask) run(ctx context.Context, tx *sql.Tx, o *op) error {
	d := t.cfg.conn.target.dialect
	q := d.quote(o.table)
	m := o.meta
	switch {
	case o.delete:
		where := t.keyWhere(m, 1)
		stmt, err := tx.PrepareContext(ctx, "DELETE FROM "+q+" WHERE "+where)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, row := range o.rows {
			if _, err := stmt.ExecContext(ctx, row...); err != nil {
				return err
			}
		}
		return nil
	case t.cfg.insertMode == "update":
		set := make([]string, 0, len(m.cols)-m.nKeys)
		n := 1
		for _, c := range m.cols[m.nKeys:] {
			set = append(set, d.quote(c.name)+"="+d.placeholder(n))
			n++
		}
		if len(set) == 0 {
			return nil // nothing but the key: nothing to update
		}
		stmt, err := tx.PrepareContext(ctx, "UPDATE "+q+" SET "+strings.Join(set, ",")+" WHERE "+t.keyWhere(m, n))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, row := range o.rows {
			args := append(append([]any{}, row[m.nKeys:]...), row[:m.nKeys]...)
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		return nil
	}
	cols := make([]string, len(m.cols))
	for i, c := range m.cols {
		cols[i] = d.quote(c.name)
	}
	head := "INSERT INTO " + q + " (" + strings.Join(cols, ",") + ") VALUES "
	tail := ""
	if t.cfg.insertMode == "upsert" {
		tail = d.upsert(m.keyNames(), m.nonKeyNames())
	}
	per := d.maxParams() / len(m.cols)
	var b strings.Builder
	args := make([]any, 0, min(per, len(o.rows))*len(m.cols))
	for start := 0; start < len(o.rows); start += per {
		end := min(start+per, len(o.rows))
		b.Reset()
		args = args[:0]
		b.WriteString(head)
		n := 1
		for i, row := range o.rows[start:end] {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('(')
			for j := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteString(d.placeholder(n))
				n++
			}
			b.WriteByte(')')
			args = append(args, row...)
		}
		b.WriteString(tail)
		if _, err := tx.ExecContext(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// keyWhere is "k1=$first AND k2=$first+1 …" over m's key columns.
func (t *SinkTask) keyWhere(m *fieldsMeta, first int) string {
	d := t.cfg.conn.target.dialect
	parts := make([]string, m.nKeys)
	for i, k := range m.keyNames() {
		parts[i] = d.quote(k) + "=" + d.placeholder(first+i)
	}
	return strings.Join(parts, " AND ")
}

func sameKeys(a, b *fieldsMeta) bool {
	if a.nKeys != b.nKeys {
		return false
	}
	for i := 0; i < a.nKeys; i++ {
		if a.cols[i].name != b.cols[i].name {
			return false
		}
	}
	return true
}

func partOf(r *connect.SinkRecord) int32 {
	if r.Partition != nil {
		return *r.Partition
	}
	return r.OriginalPartition
}

func nullOr(s *connect.Schema) string {
	if s == nil {
		return "null"
	}
	return string(s.Type)
}

func isStructValue(v any) bool {
	_, ok := v.(*connect.Struct)
	return ok
}

// copyable reports whether every insert of ops can go through PostgreSQL's
// binary COPY: columns of plain types, whose Go values pgx encodes for the
// column types auto.create makes (or any compatible type), and timestamps.
// Decimals, dates and times are bound as text for INSERT; their ops take
// the INSERT path.
func copyable(ops []*op) bool {
	for _, o := range ops {
		if o.delete {
			continue
		}
		for _, c := range o.meta.cols {
			if c.schema == nil {
				return false
			}
			switch c.schema.Name {
			case "", connect.TimestampName:
			default:
				return false
			}
			switch c.schema.Type {
			case connect.Int8, connect.Int16, connect.Int32, connect.Int64, connect.Float32, connect.Float64,
				connect.Boolean, connect.String, connect.Bytes:
			default:
				return false
			}
		}
	}
	return true
}

// writeCopy runs ops in one PostgreSQL transaction with insert.mode=insert:
// each batch of inserts is one binary COPY (the rows of a multi-row INSERT,
// without the statement's parameters to parse and plan), deletes one
// statement per row.
func (t *SinkTask) writeCopy(ctx context.Context, ops []*op) error {
	c, err := t.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	d := t.cfg.conn.target.dialect
	return c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("jdbc: %T is not a pgx connection", dc)
		}
		tx, err := sc.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }() // nothing once committed
		for _, o := range ops {
			if o.delete {
				q := "DELETE FROM " + d.quote(o.table) + " WHERE " + t.keyWhere(o.meta, 1)
				for _, row := range o.rows {
					if _, err := tx.Exec(ctx, q, row...); err != nil {
						return err
					}
				}
				continue
			}
			names := make([]string, len(o.meta.cols))
			for i, col := range o.meta.cols {
				names[i] = col.name
			}
			n, err := tx.CopyFrom(ctx, pgx.Identifier{o.table}, names, pgx.CopyFromRows(o.rows))
			if err != nil {
				return err
			}
			if n != int64(len(o.rows)) {
				return fmt.Errorf("jdbc: COPY into %s wrote %d rows of %d", o.table, n, len(o.rows))
			}
		}
		return tx.Commit(ctx)
	})
}
