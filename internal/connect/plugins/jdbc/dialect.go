package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

func msDuration(ms int) time.Duration { return time.Duration(ms) * time.Millisecond }

// dialect is what differs between PostgreSQL and MySQL/MariaDB: quoting,
// placeholders, column types, the upsert clause and the catalog queries.
type dialect interface {
	name() string
	driver() string
	quote(ident string) string
	placeholder(n int) string // n counts from 1
	// sqlType is the column type for a field (key: part of the primary key).
	sqlType(s *connect.Schema, key bool) (string, error)
	// upsert is the clause after INSERT … VALUES … that turns it into an
	// upsert on the key columns.
	upsert(keys, nonKeys []string) string
	// columns lists a table's columns (lower-cased name → real name); nil
	// when the table does not exist.
	columns(ctx context.Context, db *sql.DB, table string) (map[string]string, error)
	// tables lists the tables of the connection's schema or database.
	tables(ctx context.Context, db *sql.DB) ([]string, error)
	// maxParams bounds the placeholders in one statement.
	maxParams() int
}

type postgres struct{}

func (postgres) name() string   { return "PostgreSqlDatabaseDialect" }
func (postgres) driver() string { return "pgx" }
func (postgres) quote(id string) string {
	return `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
}
func (postgres) placeholder(n int) string { return "$" + strconv.Itoa(n) }
func (postgres) maxParams() int           { return 65535 }

func (postgres) sqlType(s *connect.Schema, key bool) (string, error) {
	switch s.Name {
	case connect.DecimalName:
		return "DECIMAL", nil
	case connect.DateName:
		return "DATE", nil
	case connect.TimeName:
		return "TIME", nil
	case connect.TimestampName:
		return "TIMESTAMP", nil
	}
	switch s.Type {
	case connect.Int8, connect.Int16:
		return "SMALLINT", nil
	case connect.Int32:
		return "INT", nil
	case connect.Int64:
		return "BIGINT", nil
	case connect.Float32:
		return "REAL", nil
	case connect.Float64:
		return "DOUBLE PRECISION", nil
	case connect.Boolean:
		return "BOOLEAN", nil
	case connect.String:
		return "TEXT", nil
	case connect.Bytes:
		return "BYTEA", nil
	}
	return "", fmt.Errorf("%s (%s) type doesn't have a mapping to the SQL database column type", s.Type, s.Name)
}

func (d postgres) upsert(keys, nonKeys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = d.quote(k)
	}
	if len(nonKeys) == 0 {
		return " ON CONFLICT (" + strings.Join(q, ",") + ") DO NOTHING"
	}
	set := make([]string, len(nonKeys))
	for i, c := range nonKeys {
		set[i] = d.quote(c) + "=EXCLUDED." + d.quote(c)
	}
	return " ON CONFLICT (" + strings.Join(q, ",") + ") DO UPDATE SET " + strings.Join(set, ",")
}

func (postgres) columns(ctx context.Context, db *sql.DB, table string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1`, table)
	if err != nil {
		return nil, err
	}
	return scanColumns(rows)
}

func (postgres) tables(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type IN ('BASE TABLE', 'VIEW') ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	return scanNames(rows)
}

type mysqlDialect struct{}

func (mysqlDialect) name() string   { return "MySqlDatabaseDialect" }
func (mysqlDialect) driver() string { return "mysql" }
func (mysqlDialect) quote(id string) string {
	return "`" + strings.ReplaceAll(id, "`", "``") + "`"
}
func (mysqlDialect) placeholder(int) string { return "?" }
func (mysqlDialect) maxParams() int         { return 65535 }

func (mysqlDialect) sqlType(s *connect.Schema, key bool) (string, error) {
	switch s.Name {
	case connect.DecimalName:
		scale := s.Parameters[connect.DecimalScaleParam]
		if scale == "" {
			scale = "0"
		}
		return "DECIMAL(65," + scale + ")", nil
	case connect.DateName:
		return "DATE", nil
	case connect.TimeName:
		return "TIME(3)", nil
	case connect.TimestampName:
		return "DATETIME(3)", nil
	}
	switch s.Type {
	case connect.Int8:
		return "TINYINT", nil
	case connect.Int16:
		return "SMALLINT", nil
	case connect.Int32:
		return "INT", nil
	case connect.Int64:
		return "BIGINT", nil
	case connect.Float32:
		return "FLOAT", nil
	case connect.Float64:
		return "DOUBLE", nil
	case connect.Boolean:
		return "TINYINT", nil
	case connect.String:
		if key {
			return "VARCHAR(256)", nil // TEXT cannot be a key without a length
		}
		return "TEXT", nil
	case connect.Bytes:
		if key {
			return "VARBINARY(1024)", nil
		}
		return "VARBINARY(1024)", nil
	}
	return "", fmt.Errorf("%s (%s) type doesn't have a mapping to the SQL database column type", s.Type, s.Name)
}

func (d mysqlDialect) upsert(keys, nonKeys []string) string {
	if len(nonKeys) == 0 {
		// Nothing to update: a no-op assignment keeps the existing row.
		k := d.quote(keys[0])
		return " ON DUPLICATE KEY UPDATE " + k + "=" + k
	}
	set := make([]string, len(nonKeys))
	for i, c := range nonKeys {
		set[i] = d.quote(c) + "=VALUES(" + d.quote(c) + ")"
	}
	return " ON DUPLICATE KEY UPDATE " + strings.Join(set, ",")
}

func (mysqlDialect) columns(ctx context.Context, db *sql.DB, table string) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT column_name FROM information_schema.columns
		WHERE table_schema = DATABASE() AND table_name = ?`, table)
	if err != nil {
		return nil, err
	}
	return scanColumns(rows)
}

func (mysqlDialect) tables(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = DATABASE() ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	return scanNames(rows)
}

func scanNames(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func scanColumns(rows *sql.Rows) (map[string]string, error) {
	names, err := scanNames(rows)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[strings.ToLower(n)] = n
	}
	return m, nil
}
