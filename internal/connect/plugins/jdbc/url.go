// Package jdbc is the JDBC sink and source connectors for PostgreSQL and
// MySQL/MariaDB, accepting the configuration keys of Confluent's JDBC
// connector (io.confluent.connect.jdbc.JdbcSinkConnector and
// JdbcSourceConnector are accepted as class names) so an existing
// connector config works. connection.url keeps its JDBC form
// (jdbc:postgresql://…, jdbc:mysql://…, jdbc:mariadb://…) and is turned
// into a pgx or go-sql-driver/mysql data source name.
package jdbc

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// target is a parsed connection.url.
type target struct {
	dialect dialect
	dsn     string // the database/sql data source name
}

// parseURL turns a JDBC URL and the connection.user/password keys (which
// win over user and password URL parameters) into a DSN.
func parseURL(jdbcURL, user, password string) (*target, error) {
	rest, ok := strings.CutPrefix(jdbcURL, "jdbc:")
	if !ok {
		return nil, fmt.Errorf("connection.url %q is not a JDBC URL (jdbc:postgresql://…, jdbc:mysql://… or jdbc:mariadb://…)", jdbcURL)
	}
	scheme, _, _ := strings.Cut(rest, ":")
	switch scheme {
	case "postgresql":
		return parsePostgres(rest, user, password)
	case "mysql", "mariadb":
		return parseMySQL(rest, user, password)
	}
	return nil, fmt.Errorf("connection.url %q: no dialect for the subprotocol %q (postgresql, mysql and mariadb are supported)", jdbcURL, scheme)
}

func parsePostgres(rest, user, password string) (*target, error) {
	u, err := url.Parse(rest)
	if err != nil {
		return nil, fmt.Errorf("connection.url: %w", err)
	}
	q := u.Query()
	if user == "" {
		user = q.Get("user")
	}
	if password == "" {
		password = q.Get("password")
	}
	q.Del("user")
	q.Del("password")
	host := u.Host
	if host == "" {
		host = "localhost:5432"
	} else if _, _, err := net.SplitHostPort(host); err != nil {
		host = net.JoinHostPort(host, "5432")
	}
	out := url.URL{Scheme: "postgres", Host: host, Path: u.Path}
	if user != "" {
		out.User = url.UserPassword(user, password)
	}
	params := url.Values{}
	// The PostgreSQL JDBC driver's parameters that have a libpq equivalent.
	for k, vs := range q {
		switch k {
		case "sslmode", "connect_timeout", "application_name", "options", "sslcert", "sslkey", "sslrootcert":
			params[k] = vs
		case "ssl":
			if vs[0] == "true" {
				params.Set("sslmode", "require")
			}
		case "currentSchema":
			params.Set("search_path", vs[0])
		case "ApplicationName":
			params.Set("application_name", vs[0])
		case "connectTimeout":
			params.Set("connect_timeout", vs[0])
		default:
			return nil, fmt.Errorf("connection.url: the PostgreSQL parameter %s is not supported", k)
		}
	}
	if params.Get("sslmode") == "" {
		params.Set("sslmode", "prefer")
	}
	out.RawQuery = params.Encode()
	return &target{dialect: postgres{}, dsn: out.String()}, nil
}

func parseMySQL(rest, user, password string) (*target, error) {
	u, err := url.Parse(rest)
	if err != nil {
		return nil, fmt.Errorf("connection.url: %w", err)
	}
	q := u.Query()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, password
	if cfg.User == "" {
		cfg.User = q.Get("user")
	}
	if cfg.Passwd == "" {
		cfg.Passwd = q.Get("password")
	}
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if cfg.Addr == "" {
		cfg.Addr = "localhost:3306"
	} else if _, _, err := net.SplitHostPort(cfg.Addr); err != nil {
		cfg.Addr = net.JoinHostPort(cfg.Addr, "3306")
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	cfg.ParseTime = true
	cfg.MultiStatements = false
	cfg.InterpolateParams = true // one round trip per multi-row statement
	for k, vs := range q {
		switch k {
		case "user", "password":
		case "useSSL", "sslMode":
			if vs[0] == "true" || strings.EqualFold(vs[0], "REQUIRED") {
				cfg.TLSConfig = "skip-verify"
			}
		case "connectTimeout":
			// milliseconds in the JDBC driver
			var ms int
			if _, err := fmt.Sscan(vs[0], &ms); err != nil {
				return nil, fmt.Errorf("connection.url: connectTimeout %q", vs[0])
			}
			cfg.Timeout = msDuration(ms)
		case "serverTimezone":
			if !strings.EqualFold(vs[0], "UTC") {
				return nil, fmt.Errorf("connection.url: serverTimezone=%s: times are written in UTC only", vs[0])
			}
		case "characterEncoding", "useUnicode":
			if !strings.EqualFold(vs[0], "UTF-8") && !strings.EqualFold(vs[0], "utf8") && vs[0] != "true" {
				return nil, fmt.Errorf("connection.url: %s=%s: the connection speaks UTF-8 only", k, vs[0])
			}
		case "rewriteBatchedStatements":
			// Batches are always sent as multi-row statements.
		case "allowPublicKeyRetrieval":
			// The Go driver asks the server for its RSA key when it needs it.
		default:
			return nil, fmt.Errorf("connection.url: the MySQL parameter %s is not supported", k)
		}
	}
	return &target{dialect: mysqlDialect{}, dsn: cfg.FormatDSN()}, nil
}
