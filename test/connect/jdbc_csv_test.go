package connect

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/sqlserver"
)

// ecommerceCSV is the brief's ecommerce_data.csv: date,product_id,city_id,
// orders with n rows, product ids unique.
func ecommerceCSV(n int) (string, int) {
	var b strings.Builder
	b.WriteString("date,product_id,city_id,orders\n")
	sum := 0
	for i := 1; i <= n; i++ {
		orders := (i * 7) % 23
		sum += orders
		fmt.Fprintf(&b, "2024-%02d-%02d,%d,%d,%d\n", i%12+1, i%28+1, 1000+i, i%17, orders)
	}
	return b.String(), sum
}

// spoolDirs makes the spool-dir connector's three directories.
func spoolDirs(t *testing.T) (in, finished, errs string) {
	root := t.TempDir()
	in, finished, errs = filepath.Join(root, "input"), filepath.Join(root, "finished"), filepath.Join(root, "error")
	for _, d := range []string{in, finished, errs} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return
}

func jsonWorker(b *broker, port int, dir string) string {
	return strings.Join([]string{
		"bootstrap.servers=" + b.addr,
		fmt.Sprintf("listeners=http://127.0.0.1:%d", port),
		"key.converter=org.apache.kafka.connect.json.JsonConverter",
		"value.converter=org.apache.kafka.connect.json.JsonConverter",
		"offset.flush.interval.ms=500",
		"offset.storage.file.filename=" + filepath.Join(dir, "offsets"),
	}, "\n") + "\n"
}

// The brief's example, done by Connect: a spool-dir source reads
// ecommerce_data.csv (header row, schema generation) into a topic and the
// JDBC sink writes the brief's table orders(date, product_id, city_id,
// orders) in MariaDB. Every row arrives, and count and sum(orders) match.
func TestCSVToMariaDB(t *testing.T) {
	t.Parallel()
	const rows = 3000
	db := sqlserver.MariaDB(t)
	b := startBroker(t)
	sql := db.DB(t)
	if _, err := sql.Exec("CREATE TABLE orders (date DATE, product_id INT, city_id INT, orders INT)"); err != nil {
		t.Fatal(err)
	}
	in, finished, errs := spoolDirs(t)
	data, sum := ecommerceCSV(rows)
	dir := t.TempDir()
	writeFile(t, in, "ecommerce_data.csv", data)
	src := writeFile(t, dir, "csv.properties", fmt.Sprintf(`name=csv-source
connector.class=com.github.jcustenborder.kafka.connect.spooldir.SpoolDirCsvSourceConnector
topic=orders
input.path=%s
finished.path=%s
error.path=%s
input.file.pattern=ecommerce_data.csv
csv.first.row.as.header=true
schema.generation.enabled=true
batch.size=500
`, in, finished, errs))
	sink := writeFile(t, dir, "jdbc.properties", fmt.Sprintf(`name=mysql-sink
connector.class=io.confluent.connect.jdbc.JdbcSinkConnector
topics=orders
connection.url=%s
connection.user=%s
connection.password=%s
insert.mode=insert
batch.size=1000
`, strings.Replace(db.JDBCURL, "jdbc:mariadb:", "jdbc:mysql:", 1), sqlserver.User, sqlserver.Password))
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, jsonWorker(b, port, dir), src, sink)
	waitRunning(t, w.url, "csv-source", 1)
	waitRunning(t, w.url, "mysql-sink", 1)
	poll.Until(t, 120*time.Second, "every CSV row in MariaDB", func() error {
		var n int
		if err := sql.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
			return err
		}
		if n != rows {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	})
	var gotSum int
	if err := sql.QueryRow("SELECT SUM(orders) FROM orders").Scan(&gotSum); err != nil || gotSum != sum {
		t.Fatalf("sum(orders) = %d (%v), want %d", gotSum, err, sum)
	}
	// Every row, field by field.
	res, err := sql.Query("SELECT DATE_FORMAT(date, '%Y-%m-%d'), product_id, city_id, orders FROM orders")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for res.Next() {
		var d string
		var p, c, o int
		if err := res.Scan(&d, &p, &c, &o); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s,%d,%d,%d", d, p, c, o))
	}
	want := strings.Split(strings.TrimSpace(data), "\n")[1:]
	if err := sameSet(got, want); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(finished, "ecommerce_data.csv")); err != nil {
		t.Fatalf("the CSV was not moved to finished.path: %v", err)
	}
}

// The same flow into PostgreSQL with insert.mode=upsert and
// pk.mode=record_key (the key is the product_id column): a second sink
// replaying the whole topic leaves no duplicate rows.
func TestCSVToPostgresUpsertReplay(t *testing.T) {
	t.Parallel()
	const rows = 2000
	db := sqlserver.Postgres(t)
	b := startBroker(t)
	in, finished, errs := spoolDirs(t)
	data, sum := ecommerceCSV(rows)
	dir := t.TempDir()
	writeFile(t, in, "ecommerce_data.csv", data)
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, jsonWorker(b, port, dir))
	mustCall(t, w.url, "POST", "/connectors", map[string]any{"name": "csv-source", "config": map[string]string{
		"connector.class": "SpoolDirCsvSourceConnector", "topic": "orders", "input.path": in, "finished.path": finished,
		"error.path": errs, "input.file.pattern": `.*\.csv`, "csv.first.row.as.header": "true",
		"schema.generation.enabled": "true", "schema.generation.key.fields": "product_id"}}, 201, nil)
	sinkConfig := func() map[string]string {
		return map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "orders",
			"connection.url": db.JDBCURL, "connection.user": sqlserver.User, "connection.password": sqlserver.Password,
			"insert.mode": "upsert", "pk.mode": "record_key", "auto.create": "true", "batch.size": "500"}
	}
	mustCall(t, w.url, "POST", "/connectors", map[string]any{"name": "pg-sink", "config": sinkConfig()}, 201, nil)
	sql := db.DB(t)
	check := func(what string) {
		poll.Until(t, 120*time.Second, what, func() error {
			var n, s int
			if err := sql.QueryRow(`SELECT COUNT(*), COALESCE(SUM(orders::int), 0) FROM orders`).Scan(&n, &s); err != nil {
				return err
			}
			if n != rows || s != sum {
				return fmt.Errorf("%d rows, sum %d; want %d, %d", n, s, rows, sum)
			}
			return nil
		})
	}
	check("every row upserted once")
	waitRunning(t, w.url, "pg-sink", 1)
	// Replay: a second sink (a new consumer group) reads the topic from the
	// start into the same table.
	mustCall(t, w.url, "POST", "/connectors", map[string]any{"name": "pg-sink-replay", "config": sinkConfig()}, 201, nil)
	waitRunning(t, w.url, "pg-sink-replay", 1)
	poll.Until(t, 120*time.Second, "the replay to reach the end of the topic", func() error {
		var off struct {
			Offsets []struct {
				Offset map[string]any `json:"offset"`
			} `json:"offsets"`
		}
		mustCall(t, w.url, "GET", "/connectors/pg-sink-replay/offsets", nil, 200, &off)
		total := 0.0
		for _, o := range off.Offsets {
			n, _ := o.Offset["kafka_offset"].(float64)
			total += n
		}
		if int(total) != rows {
			return fmt.Errorf("replayed %v of %d", total, rows)
		}
		return nil
	})
	check("no duplicates after the replay")
	var dups int
	if err := sql.QueryRow(`SELECT COUNT(*) FROM (SELECT product_id FROM orders GROUP BY product_id HAVING COUNT(*) > 1) d`).Scan(&dups); err != nil || dups != 0 {
		t.Fatalf("%d duplicated keys (%v)", dups, err)
	}
}

// The JDBC source in incrementing mode: rows appear in Kafka as JSON
// envelopes; after a restart the source resumes from its stored offset, so
// nothing is read twice.
func TestJDBCSourceIncrementingResumes(t *testing.T) {
	t.Parallel()
	db := sqlserver.Postgres(t)
	b := startBroker(t)
	sql := db.DB(t)
	if _, err := sql.Exec(`CREATE TABLE events (id SERIAL PRIMARY KEY, kind TEXT NOT NULL, amount NUMERIC(10,2))`); err != nil {
		t.Fatal(err)
	}
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := sql.Exec(`INSERT INTO events (kind, amount) VALUES ($1, $2)`, "k"+strconv.Itoa(i), fmt.Sprintf("%d.50", i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(0, 120)
	dir := t.TempDir()
	src := writeFile(t, dir, "jdbc-source.properties", fmt.Sprintf(`name=pg-source
connector.class=io.confluent.connect.jdbc.JdbcSourceConnector
connection.url=%s
connection.user=%s
connection.password=%s
mode=incrementing
incrementing.column.name=id
table.whitelist=events
topic.prefix=pg-
poll.interval.ms=200
batch.max.rows=50
tasks.max=2
`, db.JDBCURL, sqlserver.User, sqlserver.Password))
	port := freeport.Port(t)
	props := jsonWorker(b, port, dir)
	w := startWorker(t, "standalone", port, props, src)
	waitRunning(t, w.url, "pg-source", 1)
	vals := topicValues(t, b, "pg-events", 120)
	if len(vals) != 120 {
		t.Fatalf("%d records", len(vals))
	}
	if !strings.Contains(vals[5], `"name":"events"`) || !strings.Contains(vals[5], `"kind":"k5"`) {
		t.Fatalf("record %s", vals[5])
	}
	poll.Until(t, 30*time.Second, "the source offset to be stored", func() error {
		var off struct {
			Offsets []struct {
				Partition map[string]any `json:"partition"`
				Offset    map[string]any `json:"offset"`
			} `json:"offsets"`
		}
		mustCall(t, w.url, "GET", "/connectors/pg-source/offsets", nil, 200, &off)
		if len(off.Offsets) != 1 || off.Offsets[0].Offset["incrementing"] != float64(120) || off.Offsets[0].Partition["table"] != "events" {
			return fmt.Errorf("%+v", off)
		}
		return nil
	})
	w.stop()
	insert(120, 150)
	w = startWorker(t, "standalone", port, props, src)
	waitRunning(t, w.url, "pg-source", 1)
	vals = topicValues(t, b, "pg-events", 150)
	if len(vals) != 150 {
		t.Fatalf("%d records after the restart, want 150", len(vals))
	}
	// Give a re-read the chance to show: the topic stays at 150.
	poll.True(t, 30*time.Second, "the source to poll again", func() bool {
		var s connStatus
		s, _ = status(w.url, "pg-source")
		return s.Connector.State == "RUNNING"
	})
	ids := map[string]int{}
	for _, v := range topicValues(t, b, "pg-events", 151) {
		i := strings.Index(v, `"id":`)
		j := strings.IndexAny(v[i+5:], ",}")
		ids[v[i+5:i+5+j]]++
	}
	if len(ids) != 150 {
		keys := make([]string, 0, len(ids))
		for k := range ids {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("%d distinct ids: %v", len(ids), keys)
	}
	for id, n := range ids {
		if n != 1 {
			t.Fatalf("id %s read %d times", id, n)
		}
	}
}

// An unreachable database fails the sink's task and the source connector,
// each with a trace in /status; the worker keeps serving.
func TestJDBCUnreachableDatabaseFails(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	produce(t, b, "lost", `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false},"payload":{"id":1}}`)
	dead := fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/none", freeport.Port(t))
	port := freeport.Port(t)
	w := startWorker(t, "standalone", port, jsonWorker(b, port, t.TempDir()))
	mustCall(t, w.url, "POST", "/connectors", map[string]any{"name": "dead-sink", "config": map[string]string{
		"connector.class": "JdbcSinkConnector", "topics": "lost", "connection.url": dead, "connection.attempts": "1", "auto.create": "true"}}, 201, nil)
	mustCall(t, w.url, "POST", "/connectors", map[string]any{"name": "dead-source", "config": map[string]string{
		"connector.class": "JdbcSourceConnector", "connection.url": dead, "connection.attempts": "1", "mode": "bulk", "topic.prefix": "x-"}}, 201, nil)
	poll.Until(t, 60*time.Second, "the sink task FAILED with a trace", func() error {
		s, err := status(w.url, "dead-sink")
		if err != nil {
			return err
		}
		if len(s.Tasks) != 1 || s.Tasks[0].State != "FAILED" || !strings.Contains(s.Tasks[0].Trace, "Failed to create connection") {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
	poll.Until(t, 60*time.Second, "the source connector FAILED with a trace", func() error {
		s, err := status(w.url, "dead-source")
		if err != nil {
			return err
		}
		if s.Connector.State != "FAILED" || !strings.Contains(s.Connector.Trace, "Failed to create connection") {
			return fmt.Errorf("%+v", s)
		}
		return nil
	})
	mustCall(t, w.url, "GET", "/connectors", nil, 200, nil)
}
