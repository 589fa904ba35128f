// Package sqlserver starts real database servers for tests: PostgreSQL and
// MariaDB from Debian, each on a loopback port from freeport with a
// throwaway data directory and its unix socket inside that directory,
// stopped when the test ends. Started as root, the servers run as nobody
// (PostgreSQL refuses to run as root).
package sqlserver

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the MariaDB readiness check
	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL readiness check

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// The binaries, as Debian's postgresql-15 and mariadb-server install them.
const (
	PostgresBin  = "/usr/lib/postgresql/15/bin"
	MariaDBD     = "/usr/sbin/mariadbd"
	MariaInstall = "/usr/bin/mariadb-install-db"
)

// User and Password are the credentials of the test user on both servers.
const (
	User     = "connect"
	Password = "connect-secret"
	Database = "test"
)

// Server is a running database server.
type Server struct {
	Port int
	Dir  string // the data directory's parent, holding the socket
	// JDBCURL is the server's address as a JDBC URL (jdbc:postgresql://… or
	// jdbc:mariadb://…), naming Database.
	JDBCURL string
	// DSN opens Database as User with database/sql ("pgx" or "mysql").
	Driver, DSN string

	cmd  *exec.Cmd
	done chan struct{}
	logs *bytes.Buffer
}

// Options tune a server.
type Options struct {
	// Durable keeps fsync and synchronous commits on (benchmarks); tests
	// run without them.
	Durable bool
}

// dropPrivileges makes cmd run as nobody when the test runs as root.
func dropPrivileges(cmd *exec.Cmd) {
	if os.Geteuid() != 0 {
		return
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// workDir makes a directory the server's user can write.
func workDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	dropPrivileges(cmd)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %v: %v\n%s", name, args, err, out)
	}
	return nil
}

func (s *Server) start(name string, args ...string) error {
	s.logs = &bytes.Buffer{}
	s.cmd = exec.Command(name, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	dropPrivileges(s.cmd)
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %v", name, err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	return nil
}

// Close stops the server and removes its directory.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(s.Dir)
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// Kill stops the server at once, as a crash would.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// DB opens Database as User; closed at cleanup.
func (s *Server) DB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open(s.Driver, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (s *Server) waitReady(dsn string) error {
	db, err := sql.Open(s.Driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	err = poll.Err(60*time.Second, func() error {
		select {
		case <-s.done:
			return fmt.Errorf("server exited")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return db.PingContext(ctx)
	})
	if err != nil {
		return fmt.Errorf("%s did not become ready: %v\n%s", s.Driver, err, s.logs.String())
	}
	return nil
}

// started runs a constructor for a test: it fails the test on an error and
// closes the server at cleanup.
func started(t testing.TB, s *Server, err error) *Server {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// Postgres starts a PostgreSQL server with database Database owned by User
// (password authentication over TCP), closed when the test ends.
func Postgres(t testing.TB, opts ...Options) *Server {
	t.Helper()
	s, err := RunPostgres(opts...)
	return started(t, s, err)
}

// RunPostgres starts a PostgreSQL server as Postgres does, for callers that
// are not tests (the benchmarks). The caller closes it.
func RunPostgres(opts ...Options) (s *Server, err error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	dir, err := workDir("vltava-pg-")
	if err != nil {
		return nil, err
	}
	s = &Server{Dir: dir, Driver: "pgx"}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	data := filepath.Join(dir, "data")
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte(Password+"\n"), 0o644); err != nil {
		return nil, err
	}
	if err := run(filepath.Join(PostgresBin, "initdb"), "-D", data, "-U", User, "--pwfile", pw, "-E", "UTF8",
		"--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync", "--no-instructions"); err != nil {
		return nil, err
	}
	if s.Port, err = freeport.Next(); err != nil {
		return nil, err
	}
	args := []string{"-D", data, "-p", strconv.Itoa(s.Port), "-k", dir, "-h", "127.0.0.1",
		"-c", "max_connections=50", "-c", "shared_buffers=64MB"}
	if !o.Durable {
		args = append(args, "-F", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if err := s.start(filepath.Join(PostgresBin, "postgres"), args...); err != nil {
		return nil, err
	}
	admin := fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/postgres?sslmode=disable", User, Password, s.Port)
	if err := s.waitReady(admin); err != nil {
		return nil, err
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE " + Database); err != nil {
		return nil, fmt.Errorf("creating the database: %v", err)
	}
	s.DSN = fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", User, Password, s.Port, Database)
	s.JDBCURL = fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/%s", s.Port, Database)
	return s, nil
}

// MariaDB starts a MariaDB server with database Database and User allowed
// everything on it (password authentication over TCP), closed when the
// test ends.
func MariaDB(t testing.TB, opts ...Options) *Server {
	t.Helper()
	s, err := RunMariaDB(opts...)
	return started(t, s, err)
}

// RunMariaDB starts a MariaDB server as MariaDB does, for callers that are
// not tests. The caller closes it.
func RunMariaDB(opts ...Options) (s *Server, err error) {
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	dir, err := workDir("vltava-maria-")
	if err != nil {
		return nil, err
	}
	s = &Server{Dir: dir, Driver: "mysql"}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	data := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "mysqld.sock")
	user := "nobody"
	if os.Geteuid() != 0 {
		u, err := exec.Command("id", "-un").Output()
		if err != nil {
			return nil, err
		}
		user = string(bytes.TrimSpace(u))
	}
	if err := run(MariaInstall, "--no-defaults", "--datadir="+data, "--user="+user, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"); err != nil {
		return nil, err
	}
	if s.Port, err = freeport.Next(); err != nil {
		return nil, err
	}
	args := []string{"--no-defaults", "--datadir=" + data, "--port=" + strconv.Itoa(s.Port), "--bind-address=127.0.0.1",
		"--socket=" + sock, "--pid-file=" + filepath.Join(dir, "mysqld.pid"), "--skip-name-resolve",
		"--log-error=" + filepath.Join(dir, "error.log"), "--innodb-buffer-pool-size=64M", "--max-connections=50"}
	if !o.Durable {
		args = append(args, "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--innodb-doublewrite=0")
	}
	if err := s.start(MariaDBD, args...); err != nil {
		return nil, err
	}
	root := fmt.Sprintf("root@unix(%s)/", sock)
	if err := s.waitReady(root); err != nil {
		return nil, err
	}
	db, err := sql.Open("mysql", root)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE DATABASE " + Database,
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY '%s'", User, Password),
		fmt.Sprintf("GRANT ALL ON *.* TO '%s'@'%%'", User),
	} {
		if _, err := db.Exec(q); err != nil {
			logs, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("%s: %v\n%s", q, err, logs)
		}
	}
	s.DSN = fmt.Sprintf("%s:%s@tcp(127.0.0.1:%d)/%s?parseTime=true", User, Password, s.Port, Database)
	s.JDBCURL = fmt.Sprintf("jdbc:mariadb://127.0.0.1:%d/%s", s.Port, Database)
	return s, nil
}

// Quote quotes an identifier for the server's SQL dialect.
func Quote(s *Server, id string) string {
	if s.Driver == "mysql" {
		return "`" + id + "`"
	}
	return `"` + id + `"`
}
