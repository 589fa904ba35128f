package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/connect"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/sqlserver"
)

type sinkCtx struct{ timeout time.Duration }

func (c *sinkCtx) Configs() map[string]string                         { return nil }
func (c *sinkCtx) Offset(map[connect.TopicPartition]int64)            {}
func (c *sinkCtx) Timeout(d time.Duration)                            { c.timeout = d }
func (c *sinkCtx) Assignment() []connect.TopicPartition               { return nil }
func (c *sinkCtx) Pause(...connect.TopicPartition)                    {}
func (c *sinkCtx) Resume(...connect.TopicPartition)                   {}
func (c *sinkCtx) RequestCommit()                                     {}
func (c *sinkCtx) ErrantRecordReporter() connect.ErrantRecordReporter { return nil }
func (o offsetStore) Offset(p map[string]any) (map[string]any, error) { return o[fmt.Sprint(p)], nil }
func (c srcCtx) Configs() map[string]string                           { return nil }
func (c srcCtx) OffsetStorageReader() connect.OffsetStorageReader     { return c.o }
func (c srcCtx) TransactionContext() connect.TransactionContext       { return nil }
func (o offsetStore) commit(recs []connect.SourceRecord) {
	for _, r := range recs {
		o[fmt.Sprint(r.SourcePartition)] = r.SourceOffset
	}
}

type offsetStore map[string]map[string]any
type srcCtx struct{ o offsetStore }

var orderSchema = &connect.Schema{Type: connect.StructT, Name: "order", Fields: []connect.Field{
	{Name: "date", Index: 0, Schema: &connect.Schema{Type: connect.String}},
	{Name: "product_id", Index: 1, Schema: &connect.Schema{Type: connect.Int64}},
	{Name: "city_id", Index: 2, Schema: &connect.Schema{Type: connect.Int32, Optional: true}},
	{Name: "orders", Index: 3, Schema: &connect.Schema{Type: connect.Int32}},
}}

var keySchema = &connect.Schema{Type: connect.StructT, Name: "key", Fields: []connect.Field{
	{Name: "product_id", Index: 0, Schema: &connect.Schema{Type: connect.Int64}},
}}

func order(topic string, off int64, product int64, orders int32) connect.SinkRecord {
	v := connect.NewStruct(orderSchema)
	_ = v.Put("date", "2024-01-02")
	_ = v.Put("product_id", product)
	_ = v.Put("city_id", int32(product%5))
	_ = v.Put("orders", orders)
	k := connect.NewStruct(keySchema)
	_ = k.Put("product_id", product)
	p := int32(0)
	return connect.SinkRecord{Record: connect.Record{Topic: topic, Partition: &p, KeySchema: keySchema, Key: k, ValueSchema: orderSchema, Value: v}, KafkaOffset: off}
}

func startSink(t *testing.T, props map[string]string) *SinkTask {
	t.Helper()
	c := &SinkConnector{}
	if err := c.Start(props); err != nil {
		t.Fatal(err)
	}
	cfgs, _ := c.TaskConfigs(1)
	task := c.NewTask().(*SinkTask)
	task.Initialize(&sinkCtx{})
	if err := task.Start(cfgs[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = task.Stop() })
	return task
}

func count(t *testing.T, db *sql.DB, q string) int64 {
	t.Helper()
	var n sql.NullInt64
	if err := db.QueryRow(q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n.Int64
}

func base(s *sqlserver.Server) map[string]string {
	return map[string]string{"connection.url": s.JDBCURL, "connection.user": sqlserver.User, "connection.password": sqlserver.Password,
		"topics": "orders", "connection.attempts": "1"}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// sinkSuite runs the sink's behaviours against one server.
func sinkSuite(t *testing.T, s *sqlserver.Server) {
	db := s.DB(t)
	q := func(id string) string { return sqlserver.Quote(s, id) }

	t.Run("insert with auto.create", func(t *testing.T) {
		task := startSink(t, with(base(s), "auto.create", "true", "table.name.format", "ins_${topic}", "batch.size", "7"))
		var recs []connect.SinkRecord
		for i := int64(0); i < 100; i++ {
			recs = append(recs, order("orders", i, i, int32(i%9)))
		}
		if err := task.Put(recs[:60]); err != nil {
			t.Fatal(err)
		}
		if err := task.Put(recs[60:]); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("ins_orders")); n != 100 {
			t.Fatalf("%d rows", n)
		}
		want := int64(0)
		for i := 0; i < 100; i++ {
			want += int64(i % 9)
		}
		if got := count(t, db, "SELECT SUM("+q("orders")+") FROM "+q("ins_orders")); got != want {
			t.Fatalf("sum %d, want %d", got, want)
		}
	})

	t.Run("insert of every plain type and a timestamp; decimals and dates", func(t *testing.T) {
		// On PostgreSQL the first table is written by binary COPY, the
		// second (decimal and date columns) by INSERT; both read back the
		// values written.
		plain := &connect.Schema{Type: connect.StructT, Name: "plain", Fields: []connect.Field{
			{Name: "i8", Index: 0, Schema: &connect.Schema{Type: connect.Int8}},
			{Name: "i16", Index: 1, Schema: &connect.Schema{Type: connect.Int16}},
			{Name: "f32", Index: 2, Schema: &connect.Schema{Type: connect.Float32}},
			{Name: "f64", Index: 3, Schema: &connect.Schema{Type: connect.Float64}},
			{Name: "ok", Index: 4, Schema: &connect.Schema{Type: connect.Boolean}},
			{Name: "raw", Index: 5, Schema: &connect.Schema{Type: connect.Bytes, Optional: true}},
			{Name: "at", Index: 6, Schema: &connect.Schema{Type: connect.Int64, Name: connect.TimestampName}},
			{Name: "s", Index: 7, Schema: &connect.Schema{Type: connect.String, Optional: true}},
		}}
		logical := &connect.Schema{Type: connect.StructT, Name: "logical", Fields: []connect.Field{
			{Name: "price", Index: 0, Schema: &connect.Schema{Type: connect.Bytes, Name: connect.DecimalName, Parameters: map[string]string{"scale": "2"}}},
			{Name: "day", Index: 1, Schema: &connect.Schema{Type: connect.Int32, Name: connect.DateName}},
		}}
		at := time.Date(2024, 3, 4, 5, 6, 7, 8_000_000, time.UTC)
		var recs []connect.SinkRecord
		for i := 0; i < 50; i++ {
			v := connect.NewStruct(plain)
			_ = v.Put("i8", int8(i))
			_ = v.Put("i16", int16(i*100))
			_ = v.Put("f32", float32(i)+0.5)
			_ = v.Put("f64", float64(i)+0.25)
			_ = v.Put("ok", i%2 == 0)
			if i%3 != 0 {
				_ = v.Put("raw", []byte{byte(i), 0, 0xff})
				_ = v.Put("s", fmt.Sprintf("row %d", i))
			}
			_ = v.Put("at", at.Add(time.Duration(i)*time.Second))
			recs = append(recs, connect.SinkRecord{Record: connect.Record{Topic: "plain", ValueSchema: plain, Value: v}, KafkaOffset: int64(i)})
			l := connect.NewStruct(logical)
			_ = l.Put("price", connect.Decimal{Unscaled: big.NewInt(int64(i)*100 + 25), Scale: 2})
			_ = l.Put("day", time.Date(2024, 1, 1+i, 0, 0, 0, 0, time.UTC))
			recs = append(recs, connect.SinkRecord{Record: connect.Record{Topic: "logical", ValueSchema: logical, Value: l}, KafkaOffset: int64(i)})
		}
		task := startSink(t, with(base(s), "auto.create", "true", "table.name.format", "types_${topic}", "topics", "plain,logical"))
		if err := task.Put(recs); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("types_plain")); n != 50 {
			t.Fatalf("%d plain rows", n)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("types_logical")); n != 50 {
			t.Fatalf("%d logical rows", n)
		}
		var (
			i8, i16    int64
			f32, f64   float64
			ok         bool
			raw        []byte
			gotAt      time.Time
			str        sql.NullString
			price, day string
		)
		if err := db.QueryRow("SELECT "+q("i8")+","+q("i16")+","+q("f32")+","+q("f64")+","+q("ok")+","+q("raw")+","+q("at")+","+q("s")+
			" FROM "+q("types_plain")+" WHERE "+q("i8")+" = 7").Scan(&i8, &i16, &f32, &f64, &ok, &raw, &gotAt, &str); err != nil {
			t.Fatal(err)
		}
		if i8 != 7 || i16 != 700 || f32 != 7.5 || f64 != 7.25 || ok || string(raw) != string([]byte{7, 0, 0xff}) ||
			!gotAt.Equal(at.Add(7*time.Second)) || str.String != "row 7" {
			t.Fatalf("row 7 read back as %v %v %v %v %v %v %v %v", i8, i16, f32, f64, ok, raw, gotAt, str)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("types_plain")+" WHERE "+q("raw")+" IS NULL AND "+q("s")+" IS NULL"); n != 17 {
			t.Fatalf("%d rows with null raw and s, want 17", n)
		}
		if err := db.QueryRow("SELECT CAST("+q("price")+" AS CHAR(20)), CAST("+q("day")+" AS CHAR(10)) FROM "+q("types_logical")+" WHERE "+q("price")+" = 7.25").Scan(&price, &day); err != nil {
			t.Fatal(err)
		}
		if strings.TrimSpace(price) != "7.25" || day != "2024-01-08" {
			t.Fatalf("logical row read back as %q %q", price, day)
		}
	})

	t.Run("upsert on record_key leaves no duplicates on replay", func(t *testing.T) {
		task := startSink(t, with(base(s), "auto.create", "true", "table.name.format", "up_${topic}", "insert.mode", "upsert", "pk.mode", "record_key"))
		var recs []connect.SinkRecord
		for i := int64(0); i < 50; i++ {
			recs = append(recs, order("orders", i, i, 1))
		}
		// The same key twice in one batch, then the whole topic replayed.
		recs = append(recs, order("orders", 50, 7, 99))
		for round := 0; round < 2; round++ {
			if err := task.Put(recs); err != nil {
				t.Fatal(err)
			}
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("up_orders")); n != 50 {
			t.Fatalf("%d rows after replay", n)
		}
		if n := count(t, db, "SELECT "+q("orders")+" FROM "+q("up_orders")+" WHERE "+q("product_id")+" = 7"); n != 99 {
			t.Fatalf("product 7 has orders=%d, want the later 99", n)
		}
	})

	t.Run("delete.enabled turns tombstones into deletes", func(t *testing.T) {
		task := startSink(t, with(base(s), "auto.create", "true", "table.name.format", "del_${topic}", "insert.mode", "upsert",
			"pk.mode", "record_key", "delete.enabled", "true"))
		recs := []connect.SinkRecord{order("orders", 0, 1, 1), order("orders", 1, 2, 1)}
		tomb := order("orders", 2, 1, 0)
		tomb.Value, tomb.ValueSchema = nil, nil
		recs = append(recs, tomb, order("orders", 3, 3, 1))
		if err := task.Put(recs); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("del_orders")); n != 2 {
			t.Fatalf("%d rows, want 2", n)
		}
		// Without delete.enabled a tombstone fails with Confluent's message.
		plain := startSink(t, with(base(s), "table.name.format", "del_${topic}"))
		if err := plain.Put([]connect.SinkRecord{tomb}); err == nil || !strings.Contains(err.Error(), "delete.enabled=false") {
			t.Fatalf("tombstone without delete.enabled: %v", err)
		}
	})

	t.Run("auto.evolve adds an optional column; update mode", func(t *testing.T) {
		task := startSink(t, with(base(s), "auto.create", "true", "auto.evolve", "true", "table.name.format", "evo_${topic}",
			"insert.mode", "upsert", "pk.mode", "record_value", "pk.fields", "product_id"))
		if err := task.Put([]connect.SinkRecord{order("orders", 0, 1, 5)}); err != nil {
			t.Fatal(err)
		}
		wider := &connect.Schema{Type: connect.StructT, Name: "order", Fields: append(append([]connect.Field{}, orderSchema.Fields...),
			connect.Field{Name: "note", Index: 4, Schema: &connect.Schema{Type: connect.String, Optional: true}})}
		v := connect.NewStruct(wider)
		_ = v.Put("date", "d")
		_ = v.Put("product_id", int64(2))
		_ = v.Put("orders", int32(3))
		_ = v.Put("note", "new column")
		if err := task.Put([]connect.SinkRecord{{Record: connect.Record{Topic: "orders", ValueSchema: wider, Value: v}, KafkaOffset: 1}}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT COUNT(*) FROM "+q("evo_orders")+" WHERE "+q("note")+" = 'new column'"); n != 1 {
			t.Fatalf("evolved rows %d", n)
		}
		upd := startSink(t, with(base(s), "table.name.format", "evo_${topic}", "insert.mode", "update", "pk.mode", "record_value", "pk.fields", "product_id"))
		if err := upd.Put([]connect.SinkRecord{order("orders", 2, 1, 42)}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT "+q("orders")+" FROM "+q("evo_orders")+" WHERE "+q("product_id")+" = 1"); n != 42 {
			t.Fatalf("updated orders %d", n)
		}
		// auto.evolve off: a missing column is an error naming it.
		strict := startSink(t, with(base(s), "table.name.format", "ins_${topic}"))
		err := strict.Put([]connect.SinkRecord{{Record: connect.Record{Topic: "orders", ValueSchema: wider, Value: v}}})
		if err == nil || !strings.Contains(err.Error(), "missing fields (note)") {
			t.Fatalf("missing column without auto.evolve: %v", err)
		}
	})

	t.Run("pk.mode=kafka and a missing table", func(t *testing.T) {
		task := startSink(t, with(base(s), "auto.create", "true", "table.name.format", "kafka_${topic}", "pk.mode", "kafka"))
		if err := task.Put([]connect.SinkRecord{order("orders", 10, 1, 1), order("orders", 11, 1, 1)}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, db, "SELECT MAX("+q("__connect_offset")+") FROM "+q("kafka_orders")); n != 11 {
			t.Fatalf("max offset %d", n)
		}
		missing := startSink(t, with(base(s), "table.name.format", "nope_${topic}"))
		if err := missing.Put([]connect.SinkRecord{order("orders", 0, 1, 1)}); err == nil || !strings.Contains(err.Error(), "auto-creation is disabled") {
			t.Fatalf("missing table: %v", err)
		}
		bad := startSink(t, base(s))
		err := bad.Put([]connect.SinkRecord{{Record: connect.Record{Topic: "orders", Value: map[string]any{"a": 1}}}})
		if err == nil || !strings.Contains(err.Error(), "non-null Struct value") {
			t.Fatalf("schemaless record: %v", err)
		}
	})
}

func sourceSuite(t *testing.T, s *sqlserver.Server) {
	db := s.DB(t)
	q := func(id string) string { return sqlserver.Quote(s, id) }
	idType := "SERIAL PRIMARY KEY"
	tsType := "TIMESTAMP"
	if s.Driver == "mysql" {
		idType = "INT AUTO_INCREMENT PRIMARY KEY"
		tsType = "DATETIME(3)"
	}
	for _, ddl := range []string{
		"CREATE TABLE " + q("src") + " (" + q("id") + " " + idType + ", " + q("name") + " VARCHAR(40), " + q("price") + " DECIMAL(10,2), " +
			q("updated") + " " + tsType + " NOT NULL)",
	} {
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
	}
	insert := func(from, to int) {
		for i := from; i < to; i++ {
			ph := "?, ?, ?"
			if s.Driver == "pgx" {
				ph = "$1, $2, $3"
			}
			if _, err := db.Exec("INSERT INTO "+q("src")+" ("+q("name")+","+q("price")+","+q("updated")+") VALUES ("+ph+")",
				fmt.Sprintf("row%d", i), fmt.Sprintf("%d.25", i), time.Date(2024, 1, 1, 0, 0, i, 0, time.UTC)); err != nil {
				t.Fatal(err)
			}
		}
	}
	insert(0, 25)
	props := with(base(s), "mode", "incrementing", "incrementing.column.name", "id", "topic.prefix", "db-", "poll.interval.ms", "50",
		"batch.max.rows", "10", "table.whitelist", "src")
	store := offsetStore{}
	start := func(props map[string]string) *SourceTask {
		c := &SourceConnector{}
		if err := c.Start(props); err != nil {
			t.Fatal(err)
		}
		cfgs, _ := c.TaskConfigs(3)
		if len(cfgs) != 1 || cfgs[0]["tables"] != "src" {
			t.Fatalf("task configs %v", cfgs)
		}
		task := c.NewTask().(*SourceTask)
		task.Initialize(srcCtx{store})
		if err := task.Start(cfgs[0]); err != nil {
			t.Fatal(err)
		}
		return task
	}
	drain := func(task *SourceTask, want int) []connect.SourceRecord {
		var all []connect.SourceRecord
		deadline := time.Now().Add(30 * time.Second)
		for len(all) < want && time.Now().Before(deadline) {
			recs, err := task.Poll(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) > 10 {
				t.Fatalf("batch of %d over batch.max.rows", len(recs))
			}
			all = append(all, recs...)
		}
		if len(all) != want {
			t.Fatalf("%d records, want %d", len(all), want)
		}
		return all
	}
	task := start(props)
	recs := drain(task, 25)
	r := recs[24]
	v := r.Value.(*connect.Struct)
	if r.Topic != "db-src" || r.ValueSchema.Name != "src" || r.SourceOffset["incrementing"] != int64(25) || r.SourcePartition["table"] != "src" {
		t.Fatalf("record %v %v %v", r.Topic, r.SourcePartition, r.SourceOffset)
	}
	if n, _ := v.Get("name"); n != "row24" {
		t.Fatalf("name %v", n)
	}
	if p, _ := v.Get("price"); p.(connect.Decimal).String() != "24.25" {
		t.Fatalf("price %v", p)
	}
	if u, _ := v.Get("updated"); !u.(time.Time).Equal(time.Date(2024, 1, 1, 0, 0, 24, 0, time.UTC)) {
		t.Fatalf("updated %v", u)
	}
	store.commit(recs[:20]) // the last five were not committed when the task stops
	_ = task.Stop()
	insert(25, 30)
	task = start(props)
	recs = drain(task, 10)
	if id, _ := recs[0].Value.(*connect.Struct).Get("id"); fmt.Sprint(id) != "21" {
		t.Fatalf("restart resumed at id %v, want 21", id)
	}
	store.commit(recs)
	if more, err := task.Poll(context.Background()); err != nil || len(more) != 0 {
		t.Fatalf("re-read %d rows after the end (%v)", len(more), err)
	}
	_ = task.Stop()

	// timestamp+incrementing and bulk over the same table.
	ts := with(props, "mode", "timestamp+incrementing", "timestamp.column.name", "updated", "topic.prefix", "ts-")
	store = offsetStore{}
	task = start(ts)
	recs = drain(task, 30)
	if off := recs[29].SourceOffset; off["incrementing"] != int64(30) || off["timestamp"] != time.Date(2024, 1, 1, 0, 0, 29, 0, time.UTC).UnixMilli() {
		t.Fatalf("offset %v", off)
	}
	_ = task.Stop()
	bulk := with(props, "mode", "bulk", "topic.prefix", "bulk-")
	task = start(bulk)
	drain(task, 30)
	_ = task.Stop()

	// A query (the WHERE of mode=timestamp appended to it) in one task,
	// into the topic topic.prefix; a restart resumes after the stored
	// timestamp.
	query := with(base(s), "mode", "timestamp", "timestamp.column.name", "updated", "topic.prefix", "q-src", "poll.interval.ms", "50",
		"batch.max.rows", "10", "query", "SELECT "+q("id")+", "+q("name")+", "+q("updated")+" FROM "+q("src"))
	store = offsetStore{}
	startQuery := func() *SourceTask {
		c := &SourceConnector{}
		if err := c.Start(query); err != nil {
			t.Fatal(err)
		}
		cfgs, _ := c.TaskConfigs(3)
		if len(cfgs) != 1 {
			t.Fatalf("query task configs %v", cfgs)
		}
		task := c.NewTask().(*SourceTask)
		task.Initialize(srcCtx{store})
		if err := task.Start(cfgs[0]); err != nil {
			t.Fatal(err)
		}
		return task
	}
	task = startQuery()
	recs = drain(task, 30)
	last := recs[29]
	if _, err := last.Value.(*connect.Struct).Get("price"); err == nil || last.Topic != "q-src" || last.SourcePartition["query"] != "query" ||
		last.SourceOffset["timestamp"] != time.Date(2024, 1, 1, 0, 0, 29, 0, time.UTC).UnixMilli() {
		t.Fatalf("query record %v %v %v %v", last.Topic, last.SourcePartition, last.SourceOffset, last.Value)
	}
	store.commit(recs[:12])
	_ = task.Stop()
	task = startQuery()
	recs = drain(task, 18)
	if u, _ := recs[0].Value.(*connect.Struct).Get("updated"); !u.(time.Time).Equal(time.Date(2024, 1, 1, 0, 0, 12, 0, time.UTC)) {
		t.Fatalf("timestamp restart resumed at %v, want 00:00:12", u)
	}
	_ = task.Stop()

	// validate.non.null refuses a nullable incrementing column.
	c := &SourceConnector{}
	if err := c.Start(with(props, "incrementing.column.name", "name")); err != nil {
		t.Fatal(err)
	}
	cfgs, _ := c.TaskConfigs(1)
	nt := c.NewTask().(*SourceTask)
	nt.Initialize(srcCtx{offsetStore{}})
	if err := nt.Start(cfgs[0]); err == nil || !strings.Contains(err.Error(), "nullable") {
		t.Fatalf("nullable incrementing column: %v", err)
	}
	_ = nt.Stop()
}

func TestPostgres(t *testing.T) {
	t.Parallel()
	s := sqlserver.Postgres(t)
	t.Run("sink", func(t *testing.T) { sinkSuite(t, s) })
	t.Run("source", func(t *testing.T) { sourceSuite(t, s) })
}

func TestMariaDB(t *testing.T) {
	t.Parallel()
	s := sqlserver.MariaDB(t)
	t.Run("sink", func(t *testing.T) { sinkSuite(t, s) })
	t.Run("source", func(t *testing.T) { sourceSuite(t, s) })
}

// An unreachable database fails the task (after connection.attempts), and
// a write failure is retried max.retries times.
func TestUnreachableDatabase(t *testing.T) {
	port := freeport.Port(t) // nothing listens there
	props := map[string]string{"connection.url": fmt.Sprintf("jdbc:postgresql://127.0.0.1:%d/db", port), "connection.attempts": "2",
		"connection.backoff.ms": "10", "topics": "t", "mode": "bulk", "topic.prefix": "x"}
	task := startSink(t, props)
	err := task.Put([]connect.SinkRecord{order("t", 0, 1, 1)})
	if err == nil || !strings.Contains(err.Error(), "after 2 attempts") || connect.IsRetriable(err) {
		t.Fatalf("sink: %v", err)
	}
	if err := (&SourceConnector{}).Start(props); err == nil || !strings.Contains(err.Error(), "after 2 attempts") {
		t.Fatalf("source: %v", err)
	}
}

func TestWriteFailuresAreRetriedThenFatal(t *testing.T) {
	s := sqlserver.Postgres(t)
	task := startSink(t, with(base(s), "auto.create", "true", "max.retries", "1", "retry.backoff.ms", "5"))
	if err := task.Put([]connect.SinkRecord{order("orders", 0, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	err := task.Put([]connect.SinkRecord{order("orders", 1, 2, 1)})
	if !connect.IsRetriable(err) || task.ctx.(*sinkCtx).timeout != 5*time.Millisecond {
		t.Fatalf("first failure: %v", err)
	}
	err = task.Put([]connect.SinkRecord{order("orders", 1, 2, 1)})
	if err == nil || connect.IsRetriable(err) {
		t.Fatalf("after max.retries: %v", err)
	}
}

func TestURLs(t *testing.T) {
	cases := []struct{ url, driver, dsn string }{
		{"jdbc:postgresql://db.example:5433/shop?currentSchema=s1", "pgx", "postgres://u:p@db.example:5433/shop?search_path=s1&sslmode=prefer"},
		{"jdbc:postgresql://db.example/shop", "pgx", "postgres://u:p@db.example:5432/shop?sslmode=prefer"},
		{"jdbc:mysql://db.example:3307/shop?serverTimezone=UTC", "mysql", "u:p@tcp(db.example:3307)/shop?interpolateParams=true&parseTime=true"},
		{"jdbc:mariadb://db.example/shop", "mysql", "u:p@tcp(db.example:3306)/shop?interpolateParams=true&parseTime=true"},
	}
	for _, tc := range cases {
		tg, err := parseURL(tc.url, "u", "p")
		if err != nil {
			t.Fatal(err)
		}
		if tg.dialect.driver() != tc.driver || tg.dsn != tc.dsn {
			t.Fatalf("%s: %s %s", tc.url, tg.dialect.driver(), tg.dsn)
		}
	}
	for _, bad := range []string{"postgresql://x/y", "jdbc:sqlserver://x", "jdbc:mysql://x/y?serverTimezone=Europe/Prague", "jdbc:postgresql://x/y?prepareThreshold=0"} {
		if _, err := parseURL(bad, "", ""); err == nil {
			t.Fatalf("%s accepted", bad)
		}
	}
}
