// Command connect measures Vltava's Connect data path against its ceilings,
// side by side in one run, on one Vltava node and a real PostgreSQL
// (internal/testing/sqlserver, fsync and synchronous commits on):
//
//   - jdbc sink: a standalone worker (`vltava connect standalone`) runs
//     Confluent's JDBC sink (insert mode, auto.create, batch.size and the
//     consumer's max.poll.records both -batch) over a topic preloaded with
//     -records JsonConverter records (schemas.enable=true envelope, a
//     100-byte payload), timed from the POST of the connector until
//     SELECT count(*) reaches -records.
//   - go loop COPY: the ceiling for it, a plain Go loop reading the same
//     topic with franz-go and writing the same rows through pgx, one binary
//     COPY per -batch records in a transaction each, as the sink writes
//     them into PostgreSQL in insert mode; timed the same way.
//   - go loop INSERT: the same loop with one multi-row INSERT per -batch
//     records instead, as the sink writes upserts and MySQL/MariaDB rows.
//   - filestream: FileStreamSourceConnector reading a file of -records
//     lines into a topic and FileStreamSinkConnector writing that topic to
//     a file, timed from the POST of the connectors until the output is as
//     long as the input, against the machine's sequential write limit
//     (bench/limits, run first on the same file system).
//
// The four alternate run by run (sink, loop COPY, loop INSERT, filestream,
// sink, …). It
// prints a Markdown report (and writes it to -out if set).
//
//	go run ./bench/connect                  # 3 runs of 1,000,000 records
//	go run ./bench/connect -smoke           # a few thousand records, once
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the count(*) probe
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/sqlserver"
)

var (
	records = flag.Int("records", 1_000_000, "records per run")
	runs    = flag.Int("runs", 3, "runs of each path")
	batch   = flag.Int("batch", 3000, "rows per INSERT: the sink's batch.size (Confluent's default) and max.poll.records, and the loop's batch")
	smoke   = flag.Bool("smoke", false, "a few thousand records, once: checks the benchmark works")
	out     = flag.String("out", "", "also write the report to this file")
)

const (
	topic      = "events"
	payloadLen = 100
	// commitEvery is the worker's offset.flush.interval.ms: the FileStream
	// sink flushes its file at each commit, so it bounds how late the last
	// line is seen.
	commitEvery = 250
)

func main() {
	flag.Parse()
	if *smoke {
		*records, *runs = 3_000, 1
	}
	// An interrupted run still stops PostgreSQL, the node and the worker.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		onExit.run()
		os.Exit(1)
	}()
	err := run()
	onExit.run()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/connect:", err)
		os.Exit(1)
	}
}

// onExit holds what must be stopped however the run ends, last first.
var onExit cleanups

type cleanups struct {
	mu  sync.Mutex // guards fns
	fns []func()
}

func (c *cleanups) add(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fns = append(c.fns, f)
}

// run runs and forgets the functions; a second call runs none.
func (c *cleanups) run() {
	c.mu.Lock()
	fns := c.fns
	c.fns = nil
	c.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// bench holds what every run shares.
type bench struct {
	dir    string
	broker string // Kafka address
	worker string // Connect REST URL
	pg     *sqlserver.Server
	db     *sql.DB
	input  string // the FileStream source's file
	inLen  int64
	procs  []*process // the broker and the worker
}

func run() error {
	// Names without "vltava": someone else's pkill of vltava processes on
	// a shared machine must not take this run's node down (as
	// test/cluster's harness).
	dir, err := os.MkdirTemp("", "connbench-")
	if err != nil {
		return err
	}
	onExit.add(func() { os.RemoveAll(dir) })
	b := &bench{dir: dir}
	bin := os.Getenv("VLTAVA_BIN")
	if bin == "" {
		bin = filepath.Join(dir, "vcnode")
		build := exec.Command("go", "build", "-o", bin, "./cmd/vltava")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building vltava: %w", err)
		}
	}
	if err := b.writeInput(); err != nil {
		return err
	}
	limits, seqWrite, err := b.limits()
	if err != nil {
		return err
	}

	b.pg, err = sqlserver.RunPostgres(sqlserver.Options{Durable: true})
	if err != nil {
		return err
	}
	onExit.add(b.pg.Close)
	if b.db, err = sql.Open("pgx", b.pg.DSN); err != nil {
		return err
	}
	defer b.db.Close()

	if b.broker, err = freeAddr(); err != nil {
		return err
	}
	brokerLog := filepath.Join(dir, "broker.log")
	srv, err := start(bin, brokerLog, "server", "--override", "listeners=PLAINTEXT://"+b.broker,
		"--override", "log.dirs="+filepath.Join(dir, "data"), "--override", "admin.listeners=",
		"--override", "rest.listeners=", "--override", "schema.registry.listeners=", "--override", "console.listeners=",
		"--log-level", "info")
	if err != nil {
		return err
	}
	onExit.add(func() { stop(srv) })
	b.procs = append(b.procs, srv)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.broker), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(100_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := poll.Err(60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}); err != nil {
		return fmt.Errorf("the broker did not answer: %w\n%s", err, tail(brokerLog))
	}
	preload, err := b.preload(cl)
	if err != nil {
		return err
	}

	port, err := freeport.Next()
	if err != nil {
		return err
	}
	b.worker = fmt.Sprintf("http://127.0.0.1:%d", port)
	props := filepath.Join(dir, "worker.properties")
	if err := os.WriteFile(props, []byte(strings.Join([]string{
		"bootstrap.servers=" + b.broker,
		fmt.Sprintf("listeners=%s", b.worker),
		"key.converter=org.apache.kafka.connect.json.JsonConverter",
		"value.converter=org.apache.kafka.connect.json.JsonConverter",
		"value.converter.schemas.enable=true",
		fmt.Sprintf("offset.flush.interval.ms=%d", commitEvery),
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
	}, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	workerLog := filepath.Join(dir, "worker.log")
	wk, err := start(bin, workerLog, "connect", "standalone", props)
	if err != nil {
		return err
	}
	onExit.add(func() { stop(wk) })
	b.procs = append(b.procs, wk)
	if err := poll.Err(60*time.Second, func() error {
		_, _, err := call("GET", b.worker+"/", nil)
		return err
	}); err != nil {
		return fmt.Errorf("the worker's REST API did not answer: %w\n%s", err, tail(workerLog))
	}

	// A failed run shows what the two processes logged.
	logs := func(err error) error {
		return fmt.Errorf("%w\nbroker log:\n%s\nworker log:\n%s", err, tail(brokerLog), tail(workerLog))
	}
	var sink, loop, loopInsert, ratio, fs []float64
	for i := 1; i <= *runs; i++ {
		r, err := b.runSink(i)
		if err != nil {
			return logs(fmt.Errorf("jdbc sink run %d: %w", i, err))
		}
		sink = append(sink, r)
		fmt.Fprintf(os.Stderr, "run %d jdbc sink        %9.0f rows/s\n", i, r)
		if r, err = b.runLoop(i, true); err != nil {
			return logs(fmt.Errorf("go loop COPY run %d: %w", i, err))
		}
		loop = append(loop, r)
		ratio = append(ratio, sink[len(sink)-1]/r)
		fmt.Fprintf(os.Stderr, "run %d go loop COPY     %9.0f rows/s\n", i, r)
		if r, err = b.runLoop(i, false); err != nil {
			return logs(fmt.Errorf("go loop INSERT run %d: %w", i, err))
		}
		loopInsert = append(loopInsert, r)
		fmt.Fprintf(os.Stderr, "run %d go loop INSERT   %9.0f rows/s\n", i, r)
		if r, err = b.runFileStream(i); err != nil {
			return logs(fmt.Errorf("filestream run %d: %w", i, err))
		}
		fs = append(fs, r)
		fmt.Fprintf(os.Stderr, "run %d filestream  %9.1f MB/s\n", i, r)
	}

	var rep strings.Builder
	fmt.Fprintf(&rep, "## Connect: JDBC sink into PostgreSQL and FileStream source → topic → sink (%d records per run, %d runs)\n\n", *records, *runs)
	fmt.Fprintf(&rep, "Machine limits (bench/limits on the benchmark's file system):\n\n```\n%s```\n\n", limits)
	fmt.Fprintf(&rep, "Preload: %d records of %d bytes (a %d-byte JSON payload in JsonConverter's schema envelope) in %.1f s.\n\n",
		*records, len(envelope(0)), payloadLen, preload.Seconds())
	fmt.Fprintf(&rep, "| path | median (min–max) |\n| --- | --- |\n")
	fmt.Fprintf(&rep, "| JDBC sink, insert, batch.size=%d (rows/s) | %.0f (%.0f–%.0f) |\n", *batch, median(sink), slices.Min(sink), slices.Max(sink))
	fmt.Fprintf(&rep, "| Go loop, franz-go + pgx, %d rows per COPY (rows/s) | %.0f (%.0f–%.0f) |\n", *batch, median(loop), slices.Min(loop), slices.Max(loop))
	fmt.Fprintf(&rep, "| sink/loop COPY, paired run by run | %.2f (%.2f–%.2f) |\n", median(ratio), slices.Min(ratio), slices.Max(ratio))
	fmt.Fprintf(&rep, "| Go loop, franz-go + pgx, %d rows per INSERT (rows/s) | %.0f (%.0f–%.0f) |\n", *batch, median(loopInsert), slices.Min(loopInsert), slices.Max(loopInsert))
	fmt.Fprintf(&rep, "| FileStream source → topic → sink (MB/s of %d-byte lines) | %.1f (%.1f–%.1f) |\n", payloadLen+1, median(fs), slices.Min(fs), slices.Max(fs))
	fmt.Fprintf(&rep, "| sequential write limit (MB/s) | %.0f |\n", seqWrite)
	fmt.Fprintf(&rep, "| FileStream / sequential write | %.3f |\n", median(fs)/seqWrite)
	fmt.Print(rep.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(rep.String()), 0o644)
	}
	return nil
}

// payload is record i's JSON value, padded to payloadLen bytes.
func payload(i int) []byte {
	p := fmt.Sprintf(`{"id":%d,"ts":%d,"user":"user-%d","action":"checkout","amount":%d.25,"note":"`,
		i, 1796256000000+int64(i), i%100_000, i%1000)
	return []byte(p + strings.Repeat("x", payloadLen-len(p)-2) + `"}`)
}

// schema is JsonConverter's schema for payload, as a Kafka Connect
// producer with schemas.enable=true writes it.
const schema = `{"type":"struct","name":"bench.Event","optional":false,"fields":[` +
	`{"field":"id","type":"int64","optional":false},{"field":"ts","type":"int64","optional":false},` +
	`{"field":"user","type":"string","optional":false},{"field":"action","type":"string","optional":false},` +
	`{"field":"amount","type":"double","optional":false},{"field":"note","type":"string","optional":false}]}`

func envelope(i int) []byte {
	return []byte(`{"schema":` + schema + `,"payload":` + string(payload(i)) + `}`)
}

// event is payload decoded; the loop inserts its fields.
type event struct {
	ID     int64   `json:"id"`
	TS     int64   `json:"ts"`
	User   string  `json:"user"`
	Action string  `json:"action"`
	Amount float64 `json:"amount"`
	Note   string  `json:"note"`
}

// writeInput writes the FileStream source's file: the payloads, one a line.
func (b *bench) writeInput() error {
	b.input = filepath.Join(b.dir, "input.txt")
	var buf bytes.Buffer
	for i := 0; i < *records; i++ {
		buf.Write(payload(i))
		buf.WriteByte('\n')
	}
	b.inLen = int64(buf.Len())
	return os.WriteFile(b.input, buf.Bytes(), 0o644)
}

// limits runs bench/limits on the benchmark's directory and returns its
// output and the sequential write rate.
func (b *bench) limits() (string, float64, error) {
	size := max(b.inLen, 64<<20)
	run := func(asJSON bool) ([]byte, error) {
		args := []string{"run", "./bench/limits", "-dir", b.dir, "-bytes", strconv.FormatInt(size, 10)}
		if asJSON {
			args = append(args, "-json")
		}
		cmd := exec.Command("go", args...)
		cmd.Stderr = os.Stderr
		return cmd.Output()
	}
	j, err := run(true)
	if err != nil {
		return "", 0, fmt.Errorf("bench/limits: %w", err)
	}
	var res []struct {
		Name   string  `json:"name"`
		MBps   float64 `json:"mb_per_s"`
		Detail string  `json:"detail"`
	}
	if err := json.Unmarshal(j, &res); err != nil {
		return "", 0, fmt.Errorf("bench/limits: %w", err)
	}
	var text strings.Builder
	seq := 0.0
	for _, r := range res {
		if strings.HasPrefix(r.Name, "partition dirs") {
			continue // a rate of directories, not of bytes
		}
		fmt.Fprintf(&text, "%-34s %9.0f MB/s  %s\n", r.Name, r.MBps, r.Detail)
		if r.Name == "sequential write" {
			seq = r.MBps
		}
	}
	if seq == 0 {
		return "", 0, fmt.Errorf("bench/limits printed no sequential write")
	}
	return text.String(), seq, nil
}

// preload creates the topic (one partition, so one task and one loop
// consumer read it alike) and produces the records.
func (b *bench) preload(cl *kgo.Client) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		return 0, err
	}
	start := time.Now()
	errc := make(chan error, 1)
	for i := 0; i < *records; i++ {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: envelope(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	select {
	case err := <-errc:
		return 0, err
	default:
	}
	return time.Since(start), nil
}

// waitCount polls SELECT count(*) until the table holds want rows (a
// missing table counts as empty) and returns the time since start.
func (b *bench) waitCount(table string, want int, start time.Time, failed func() error) (time.Duration, error) {
	deadline := time.Now().Add(30*time.Minute + time.Duration(want/1000)*time.Second)
	for {
		var n int
		err := b.db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n)
		if err == nil && n == want {
			return time.Since(start), nil
		}
		if err == nil && n > want {
			return 0, fmt.Errorf("%s: %d rows, want %d", table, n, want)
		}
		if ferr := failed(); ferr != nil {
			return 0, ferr
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: %d rows (%v) at the deadline, want %d", table, n, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// runSink runs the JDBC sink over the topic into a new table.
func (b *bench) runSink(i int) (float64, error) {
	name, table := fmt.Sprintf("jdbc-%d", i), fmt.Sprintf("sink_%d", i)
	cfg := map[string]string{
		"connector.class":     "io.confluent.connect.jdbc.JdbcSinkConnector",
		"tasks.max":           "1",
		"topics":              topic,
		"connection.url":      b.pg.JDBCURL,
		"connection.user":     sqlserver.User,
		"connection.password": sqlserver.Password,
		"insert.mode":         "insert",
		"auto.create":         "true",
		"table.name.format":   table,
		"batch.size":          strconv.Itoa(*batch),
		// A Put holds at most one poll: Kafka's default of 500 records
		// would cap every INSERT at 500 rows whatever batch.size says.
		"consumer.override.max.poll.records": strconv.Itoa(*batch),
	}
	start := time.Now()
	if err := b.create(name, cfg); err != nil {
		return 0, err
	}
	d, err := b.waitCount(table, *records, start, func() error { return b.failed(name) })
	if err != nil {
		return 0, err
	}
	if err := b.remove(name); err != nil {
		return 0, err
	}
	if _, err := b.db.Exec(`DROP TABLE ` + table); err != nil {
		return 0, err
	}
	return float64(*records) / d.Seconds(), nil
}

// runLoop is the ceiling: franz-go into pgx, batch rows per COPY or per
// INSERT statement.
func (b *bench) runLoop(i int, copy bool) (float64, error) {
	table := fmt.Sprintf("loop_%d", i)
	if _, err := b.db.Exec(`CREATE TABLE ` + table + ` (id BIGINT NOT NULL, ts BIGINT NOT NULL, "user" TEXT NOT NULL,` +
		` action TEXT NOT NULL, amount DOUBLE PRECISION NOT NULL, note TEXT NOT NULL)`); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	errc := make(chan error, 1)
	go func() { errc <- b.loop(ctx, table, copy) }()
	returned := false
	d, err := b.waitCount(table, *records, start, func() error {
		if returned {
			return nil
		}
		select {
		case err := <-errc:
			returned = true
			return err
		default:
			return nil
		}
	})
	if err != nil {
		return 0, err
	}
	if !returned {
		if err := <-errc; err != nil {
			return 0, err
		}
	}
	if _, err := b.db.Exec(`DROP TABLE ` + table); err != nil {
		return 0, err
	}
	return float64(*records) / d.Seconds(), nil
}

func (b *bench) loop(ctx context.Context, table string, copy bool) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.broker), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	conn, err := pgx.Connect(ctx, b.pg.DSN)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	const cols = 6
	head := `INSERT INTO ` + table + ` (id,ts,"user",action,amount,note) VALUES `
	var stmt strings.Builder
	args := make([]any, 0, *batch*cols)
	var rows [][]any
	for done := 0; done < *records; {
		fs := cl.PollRecords(ctx, *batch)
		if err := fs.Err0(); err != nil {
			return err
		}
		stmt.Reset()
		stmt.WriteString(head)
		args = args[:0]
		rows = rows[:0]
		n := 0
		var decodeErr error
		fs.EachRecord(func(r *kgo.Record) {
			var v struct {
				Payload event `json:"payload"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil {
				decodeErr = err
				return
			}
			e := v.Payload
			if copy {
				rows = append(rows, []any{e.ID, e.TS, e.User, e.Action, e.Amount, e.Note})
			} else {
				if n > 0 {
					stmt.WriteByte(',')
				}
				p := n * cols
				fmt.Fprintf(&stmt, "($%d,$%d,$%d,$%d,$%d,$%d)", p+1, p+2, p+3, p+4, p+5, p+6)
				args = append(args, e.ID, e.TS, e.User, e.Action, e.Amount, e.Note)
			}
			n++
		})
		if decodeErr != nil {
			return decodeErr
		}
		if n == 0 {
			continue
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		if copy {
			_, err = tx.CopyFrom(ctx, pgx.Identifier{table}, []string{"id", "ts", "user", "action", "amount", "note"}, pgx.CopyFromRows(rows))
		} else {
			_, err = tx.Exec(ctx, stmt.String(), args...)
		}
		if err != nil {
			tx.Rollback(ctx)
			return err
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		done += n
	}
	return nil
}

// runFileStream runs the FileStream source into a new topic and the
// FileStream sink from it into a new file.
func (b *bench) runFileStream(i int) (float64, error) {
	src, snk := fmt.Sprintf("fs-source-%d", i), fmt.Sprintf("fs-sink-%d", i)
	fsTopic := fmt.Sprintf("lines-%d", i)
	output := filepath.Join(b.dir, fmt.Sprintf("output-%d.txt", i))
	str := "org.apache.kafka.connect.storage.StringConverter"
	start := time.Now()
	if err := b.create(src, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
		"file": b.input, "topic": fsTopic, "key.converter": str, "value.converter": str}); err != nil {
		return 0, err
	}
	if err := b.create(snk, map[string]string{"connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
		"file": output, "topics": fsTopic, "key.converter": str, "value.converter": str}); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(30*time.Minute + time.Duration(*records/1000)*time.Second)
	for {
		fi, err := os.Stat(output)
		if err == nil && fi.Size() >= b.inLen {
			break
		}
		for _, n := range []string{src, snk} {
			if err := b.failed(n); err != nil {
				return 0, err
			}
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s: not %d bytes at the deadline (%v)", output, b.inLen, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	d := time.Since(start)
	for _, n := range []string{src, snk} {
		if err := b.remove(n); err != nil {
			return 0, err
		}
	}
	got, err := os.ReadFile(output)
	if err != nil {
		return 0, err
	}
	want, err := os.ReadFile(b.input)
	if err != nil {
		return 0, err
	}
	if !bytes.Equal(got, want) {
		return 0, fmt.Errorf("%s (%d bytes) is not the input (%d bytes)", output, len(got), len(want))
	}
	os.Remove(output)
	return float64(b.inLen) / 1e6 / d.Seconds(), nil
}

// create POSTs a connector.
func (b *bench) create(name string, cfg map[string]string) error {
	code, body, err := call("POST", b.worker+"/connectors", map[string]any{"name": name, "config": cfg})
	if err != nil {
		return err
	}
	if code != http.StatusCreated {
		return fmt.Errorf("POST /connectors %s: %d %s", name, code, body)
	}
	return nil
}

// remove DELETEs a connector.
func (b *bench) remove(name string) error {
	code, body, err := call("DELETE", b.worker+"/connectors/"+name, nil)
	if err != nil {
		return err
	}
	if code != http.StatusNoContent && code != http.StatusOK {
		return fmt.Errorf("DELETE /connectors/%s: %d %s", name, code, body)
	}
	return nil
}

// failed reports a FAILED connector or task with its trace, or a dead
// broker or worker.
func (b *bench) failed(name string) error {
	for _, p := range b.procs {
		if err := p.alive(); err != nil {
			return err
		}
	}
	code, body, err := call("GET", b.worker+"/connectors/"+name+"/status", nil)
	if err != nil || code != http.StatusOK {
		return nil // not there yet: the poll goes on until its deadline
	}
	var st struct {
		Connector struct {
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"connector"`
		Tasks []struct {
			State string `json:"state"`
			Trace string `json:"trace"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil
	}
	if st.Connector.State == "FAILED" {
		return fmt.Errorf("%s FAILED: %s", name, st.Connector.Trace)
	}
	for _, t := range st.Tasks {
		if t.State == "FAILED" {
			return fmt.Errorf("%s task FAILED: %s", name, t.Trace)
		}
	}
	return nil
}

func call(method, url string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		j, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// process is a started binary; exited is closed once it has exited.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// start runs the binary with its output in the file logPath.
func start(bin, logPath string, args ...string) (*process, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own descriptor
	p := &process{cmd: exec.Command(bin, args...), exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	return p, nil
}

// alive reports an error once the process has exited.
func (p *process) alive() error {
	select {
	case <-p.exited:
		return fmt.Errorf("%s exited: %v", p.cmd.Args[1], p.err)
	default:
		return nil
	}
}

func stop(p *process) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// tail is the end of a log file.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	s := string(b)
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
}

func freeAddr() (string, error) {
	p, err := freeport.Next()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
