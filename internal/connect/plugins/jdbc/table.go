package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strings"

	"github.com/vltava/vltava/connect"
)

// ensureTable creates the table (auto.create) or adds missing columns
// (auto.evolve) so that it holds every column of m; known tables are
// cached by the caller. It returns the table's columns afterwards.
func (c *sinkConfig) ensureTable(ctx context.Context, db *sql.DB, table string, have map[string]string, m *fieldsMeta) (map[string]string, error) {
	d := c.conn.target.dialect
	var err error
	if have == nil {
		if have, err = d.columns(ctx, db, table); err != nil {
			return nil, &sqlError{fmt.Errorf("reading the columns of %s: %w", table, err)}
		}
	}
	if have == nil {
		if !c.autoCreate {
			return nil, fmt.Errorf("Table %s is missing and auto-creation is disabled", d.quote(table))
		}
		ddl, err := c.createTable(table, m)
		if err != nil {
			return nil, err
		}
		slog.Info("jdbc: creating table", "table", table, "sql", ddl)
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return nil, &sqlError{fmt.Errorf("%s: %w", ddl, err)}
		}
		return catalogErr(d.columns(ctx, db, table))
	}
	var missing []column
	for _, col := range m.cols {
		if _, ok := have[strings.ToLower(col.name)]; !ok {
			missing = append(missing, col)
		}
	}
	if len(missing) == 0 {
		return have, nil
	}
	names := make([]string, len(missing))
	for i, col := range missing {
		names[i] = col.name
	}
	if !c.autoEvolve {
		return nil, fmt.Errorf("Table %s is missing fields (%s) and auto-evolution is disabled", d.quote(table), strings.Join(names, ", "))
	}
	for _, col := range missing {
		if col.key {
			return nil, fmt.Errorf("Cannot ALTER TABLE %s to add missing field %s, as it is part of the primary key", d.quote(table), col.name)
		}
		if !col.schema.Optional && col.schema.Default == nil {
			return nil, fmt.Errorf("Cannot ALTER TABLE %s to add missing field %s, as the field is not optional and does not have a default value", d.quote(table), col.name)
		}
		def, err := c.columnDef(col)
		if err != nil {
			return nil, err
		}
		ddl := "ALTER TABLE " + d.quote(table) + " ADD " + def
		slog.Info("jdbc: altering table", "table", table, "sql", ddl)
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			return nil, &sqlError{fmt.Errorf("%s: %w", ddl, err)}
		}
	}
	return catalogErr(d.columns(ctx, db, table))
}

// catalogErr marks a catalog query's error as the database's.
func catalogErr(cols map[string]string, err error) (map[string]string, error) {
	if err != nil {
		return nil, &sqlError{err}
	}
	return cols, nil
}

func (c *sinkConfig) columnDef(col column) (string, error) {
	d := c.conn.target.dialect
	typ, err := d.sqlType(col.schema, col.key)
	if err != nil {
		return "", err
	}
	def := d.quote(col.name) + " " + typ
	if col.schema.Default != nil {
		if lit, ok := sqlLiteral(col.schema.Default); ok {
			def += " DEFAULT " + lit
		}
	}
	if col.key || !col.schema.Optional {
		def += " NOT NULL"
	} else {
		def += " NULL"
	}
	return def, nil
}

func (c *sinkConfig) createTable(table string, m *fieldsMeta) (string, error) {
	d := c.conn.target.dialect
	defs := make([]string, 0, len(m.cols)+1)
	for _, col := range m.cols {
		def, err := c.columnDef(col)
		if err != nil {
			return "", err
		}
		defs = append(defs, def)
	}
	if m.nKeys > 0 {
		keys := make([]string, m.nKeys)
		for i, k := range m.keyNames() {
			keys[i] = d.quote(k)
		}
		defs = append(defs, "PRIMARY KEY("+strings.Join(keys, ",")+")")
	}
	return "CREATE TABLE " + d.quote(table) + " (\n" + strings.Join(defs, ",\n") + ")", nil
}

// isStruct reports whether a value schema can be written (a struct).
func isStruct(s *connect.Schema) bool { return s != nil && s.Type == connect.StructT }
