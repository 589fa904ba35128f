package connect

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/sqlserver"
)

// readmeConnectHeading starts the README section whose shell block
// TestReadmeCSVToMySQL runs.
const readmeConnectHeading = "## Kafka Connect: the CSV → MySQL example in four commands"

// readmeBlock returns the non-comment lines of the first ```sh block
// after heading in the repository's README.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), heading)
	if !ok {
		t.Fatalf("README.md has no %q section", heading)
	}
	_, rest, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatalf("README.md %q has no ```sh block", heading)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatal("README.md: unterminated code block")
	}
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// copyTree copies the regular files under src to dst, replacing old with
// new in each.
func copyTree(t *testing.T, src, dst string, r *strings.Replacer) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), []byte(r.Replace(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeCSVToMySQL runs the README's four Connect commands as a reader
// would, from a scratch copy of examples/csv-to-mysql, against a MariaDB
// the test starts. The substitutions keep it from colliding with anything
// on the machine: the built binary for `go run ./cmd/vltava`, free ports
// for the broker, the Connect REST API (VLTAVA_CONNECT_URL for the client
// commands) and MariaDB's 3306, and the admin and REST Proxy listeners
// off. The last command, the query, is repeated until the table holds
// every row of ecommerce_data.csv; then its count and sum(orders) match
// the file's.
func TestReadmeCSVToMySQL(t *testing.T) {
	t.Parallel()
	cmds := readmeBlock(t, readmeConnectHeading)
	if len(cmds) != 4 {
		t.Fatalf("the README block has %d commands, want 4: %q", len(cmds), cmds)
	}
	const (
		goRun  = "go run ./cmd/vltava"
		enable = "--override connect.enable=true"
		dbPort = "3306"
	)
	if !strings.HasPrefix(cmds[0], goRun+" server "+enable) || !strings.HasSuffix(cmds[0], "&") {
		t.Fatalf("the README's first command no longer starts the node with connect.enable in the background: %q", cmds[0])
	}
	if !strings.Contains(cmds[3], "-P "+dbPort) {
		t.Fatalf("the README's query no longer names port %s: %q", dbPort, cmds[3])
	}
	db := sqlserver.MariaDB(t)
	if _, err := db.DB(t).Exec("CREATE DATABASE shop"); err != nil {
		t.Fatal(err)
	}
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mysqlPort := strconv.Itoa(db.Port)
	copyTree(t, filepath.Join("..", "..", "examples", "csv-to-mysql"), filepath.Join(dir, "examples", "csv-to-mysql"),
		strings.NewReplacer("127.0.0.1:"+dbPort+"/", "127.0.0.1:"+mysqlPort+"/"))
	connectURL := fmt.Sprintf("http://127.0.0.1:%d", freeport.Port(t))
	r := strings.NewReplacer(
		goRun, bin,
		enable, enable+" --override listeners=PLAINTEXT://"+freeport.Addr(t)+" --override connect.listeners="+connectURL+
			" --override admin.listeners= --override rest.listeners= --override schema.registry.listeners= --override console.listeners=",
		"-P "+dbPort, "-P "+mysqlPort,
	)
	env := append(os.Environ(), "VLTAVA_CONNECT_URL="+connectURL)
	shell := func(ctx context.Context, line string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "bash", "-c", r.Replace(line))
		cmd.Dir, cmd.Env = dir, env
		return cmd
	}

	// 1. The node, in the background as the README has it; exec so that
	// killing the process ends the node.
	node := shell(context.Background(), "exec "+strings.TrimSuffix(cmds[0], "&"))
	out := &output{}
	node.Stdout, node.Stderr = out, out
	node.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = node.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = node.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = node.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("node output:\n%s", out.String())
		}
	})
	// A reader waits for the node to be up; the test polls its REST API.
	poll.Until(t, startTimeout, "the embedded Connect worker's REST API", func() error {
		select {
		case <-exited:
			t.Fatalf("the node exited:\n%s", out.String())
		default:
		}
		_, _, err := call(connectURL, "GET", "/connectors", nil)
		return err
	})

	// 2, 3. The source and the sink.
	for _, c := range cmds[1:3] {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		b, err := shell(ctx, c).CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, b)
		}
		t.Logf("%s:\n%s", c, b)
	}

	// What the file holds.
	rows, sum := 0, 0
	f, err := os.Open(filepath.Join("..", "..", "examples", "csv-to-mysql", "ecommerce_data.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		n, err := strconv.Atoi(fields[3])
		if err != nil {
			t.Fatalf("ecommerce_data.csv: %q: %v", sc.Text(), err)
		}
		rows, sum = rows+1, sum+n
	}
	if rows == 0 {
		t.Fatal("ecommerce_data.csv has no rows")
	}

	// 4. The query, until it shows every row.
	want := fmt.Sprintf("%d\t%d", rows, sum)
	var last string
	poll.Until(t, 2*time.Minute, "the query to show "+want, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		b, err := shell(ctx, cmds[3]).CombinedOutput()
		last = string(b)
		if err != nil {
			return fmt.Errorf("%v: %s", err, b)
		}
		if !strings.Contains(last, want) {
			return fmt.Errorf("output %q", last)
		}
		return nil
	})
	t.Logf("%s:\n%s", cmds[3], last)

	// The table is the brief's, with typed columns from the transforms.
	var cols []string
	res, err := db.DB(t).Query(`SELECT CONCAT(COLUMN_NAME, ' ', DATA_TYPE) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'orders' ORDER BY ORDINAL_POSITION`)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	for res.Next() {
		var c string
		if err := res.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	if got, want := strings.Join(cols, ", "), "date date, product_id int, city_id int, orders int"; got != want {
		t.Errorf("orders columns %q, want %q", got, want)
	}
	// cleanup.policy=NONE: the file stays where it was.
	if _, err := os.Stat(filepath.Join(dir, "examples", "csv-to-mysql", "ecommerce_data.csv")); err != nil {
		t.Errorf("ecommerce_data.csv: %v", err)
	}
}

// The embedded worker's settings are checked as a worker file's are: an
// unknown connect.* key stops the node, naming the key.
func TestEmbeddedWorkerRefusesUnknownKey(t *testing.T) {
	t.Parallel()
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "server", "--override", "listeners=PLAINTEXT://"+freeport.Addr(t),
		"--override", "log.dirs="+t.TempDir(), "--override", "admin.listeners=", "--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
		"--override", "connect.enable=true", "--override", fmt.Sprintf("connect.listeners=http://127.0.0.1:%d", freeport.Port(t)),
		"--override", "connect.no.such.key=1").CombinedOutput()
	if err == nil {
		t.Fatalf("the node started with connect.no.such.key:\n%s", out)
	}
	if !strings.Contains(string(out), "unknown worker config no.such.key") {
		t.Fatalf("the refusal does not name the key:\n%s", out)
	}
}
