package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/vltava/vltava/connect"

	_ "github.com/go-sql-driver/mysql" // MySQL and MariaDB
	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL
)

// connKeys are the connection keys both connectors share.
func connKeys(d *connect.ConfigDef) *connect.ConfigDef {
	return d.
		Define(connect.ConfigKey{Name: "connection.url", Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Connection",
			Doc: "JDBC connection URL: jdbc:postgresql://host:port/database, jdbc:mysql://host:port/database or jdbc:mariadb://host:port/database."}).
		Define(connect.ConfigKey{Name: "connection.user", Type: connect.TypeString, Importance: connect.High, Group: "Connection", Doc: "JDBC connection user."}).
		Define(connect.ConfigKey{Name: "connection.password", Type: connect.TypePassword, Importance: connect.High, Group: "Connection", Doc: "JDBC connection password."}).
		Define(connect.ConfigKey{Name: "connection.attempts", Type: connect.TypeInt, Default: int32(3), Importance: connect.Low, Group: "Connection",
			Check: connect.InRange(1, 1<<31-1), Doc: "Maximum number of attempts to retrieve a valid JDBC connection. Must be a positive integer."}).
		Define(connect.ConfigKey{Name: "connection.backoff.ms", Type: connect.TypeLong, Default: int64(10000), Importance: connect.Low, Group: "Connection",
			Check: connect.InRange(0, 1<<62), Doc: "Backoff time in milliseconds between connection attempts."}).
		Define(connect.ConfigKey{Name: "dialect.name", Type: connect.TypeString, Default: "", Importance: connect.Low, Group: "Connection",
			Check: func(name string, v any) error {
				switch v {
				case "", "PostgreSqlDatabaseDialect", "MySqlDatabaseDialect":
					return nil
				}
				return fmt.Errorf("Invalid value %v for configuration %s: String must be one of: , PostgreSqlDatabaseDialect, MySqlDatabaseDialect", v, name)
			},
			Doc: "The name of the database dialect that should be used for this connector. By default this is empty, and the connector automatically determines the dialect based upon the JDBC connection URL."})
}

// connConfig is the parsed connection part of a configuration.
type connConfig struct {
	target   *target
	attempts int
	backoff  time.Duration
}

func parseConn(p map[string]any) (*connConfig, error) {
	user, _ := p["connection.user"].(string)
	pw, _ := p["connection.password"].(string)
	t, err := parseURL(p["connection.url"].(string), user, pw)
	if err != nil {
		return nil, err
	}
	if dn := p["dialect.name"].(string); dn != "" && dn != t.dialect.name() {
		return nil, fmt.Errorf("dialect.name %s does not match connection.url (%s)", dn, t.dialect.name())
	}
	return &connConfig{target: t, attempts: int(p["connection.attempts"].(int32)),
		backoff: time.Duration(p["connection.backoff.ms"].(int64)) * time.Millisecond}, nil
}

// open connects, trying connection.attempts times connection.backoff.ms
// apart, as Confluent's CachedConnectionProvider.
func (c *connConfig) open(ctx context.Context) (*sql.DB, error) {
	db, err := sql.Open(c.target.dialect.driver(), c.target.dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(2)
	var last error
	for attempt := 1; attempt <= c.attempts; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		last = db.PingContext(pctx)
		cancel()
		if last == nil {
			return db, nil
		}
		slog.Warn("jdbc: unable to connect to the database", "attempt", attempt, "of", c.attempts, "err", last)
		if attempt < c.attempts {
			select {
			case <-ctx.Done():
				db.Close()
				return nil, ctx.Err()
			case <-time.After(c.backoff):
			}
		}
	}
	db.Close()
	return nil, fmt.Errorf("Failed to create connection to the database after %d attempts: %w", c.attempts, last)
}
