package connect

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
	"github.com/vltava/vltava/internal/testing/sqlserver"
)

// Three distributed workers (the default sessioned, incremental
// cooperative protocol) share the tasks of two JDBC sinks into
// PostgreSQL, one in upsert mode and one in insert mode, reading a topic of
// three partitions. After the worker running one of the upsert sink's
// tasks is killed with SIGKILL, its tasks move to the two others once the
// session timeout has noticed the death and scheduled.rebalance.max.delay.ms
// has passed; then the upsert table holds every record exactly once and the
// insert table every record at least once (counted).
func TestDistributedKillOneWorker(t *testing.T) {
	t.Parallel()
	const (
		delay   = 4 * time.Second
		session = 6 * time.Second
		total   = 300
	)
	db := sqlserver.Postgres(t)
	b := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(b.client(t)).CreateTopic(ctx, 3, 1, nil, "dist-in"); err != nil {
		t.Fatal(err)
	}
	var ws []*worker
	for i := 0; i < 3; i++ {
		port := freeport.Port(t)
		props := workerProps(b, port,
			"group.id=connect-cluster", "config.storage.topic=connect-configs", "offset.storage.topic=connect-offsets",
			"status.storage.topic=connect-status", "config.storage.replication.factor=1", "offset.storage.replication.factor=1",
			"status.storage.replication.factor=1", fmt.Sprintf("scheduled.rebalance.max.delay.ms=%d", delay.Milliseconds()),
			fmt.Sprintf("session.timeout.ms=%d", session.Milliseconds()), "heartbeat.interval.ms=1000")
		ws = append(ws, startWorker(t, "distributed", port, props))
	}
	pcl := b.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceRows := func(from, to int) {
		for i := from; i < to; i++ {
			v := fmt.Sprintf(`{"schema":{"type":"struct","name":"rec","optional":false,"fields":[{"type":"int32","optional":false,"field":"id"},`+
				`{"type":"string","optional":false,"field":"v"}]},"payload":{"id":%d,"v":"rec-%d"}}`, i, i)
			if err := pcl.ProduceSync(ctx, &kgo.Record{Topic: "dist-in", Partition: int32(i % 3), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produceRows(0, total/2)
	sink := func(mode, pk string) map[string]any {
		cfg := map[string]string{"connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector", "topics": "dist-in", "tasks.max": "3",
			"connection.url": db.JDBCURL, "connection.user": sqlserver.User, "connection.password": sqlserver.Password,
			"table.name.format": "dist_" + mode, "insert.mode": mode, "pk.mode": pk, "auto.create": "true",
			"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "true"}
		if pk == "record_value" {
			cfg["pk.fields"] = "id"
		}
		return map[string]any{"name": mode + "-sink", "config": cfg}
	}
	// Created through any worker (a follower forwards to the leader),
	// retried while the group is forming (409).
	n := 0
	for _, c := range []map[string]any{sink("upsert", "record_value"), sink("insert", "none")} {
		poll.Until(t, 60*time.Second, "the connector to be created", func() error {
			w := ws[n%3]
			n++
			code, body, err := call(w.url, "POST", "/connectors", c)
			if err != nil {
				return err
			}
			if code != 201 {
				return fmt.Errorf("%d %s", code, body)
			}
			return nil
		})
	}
	waitRunning(t, ws[0].url, "insert-sink", 3)
	s := waitRunning(t, ws[0].url, "upsert-sink", 3)
	owners := map[string]bool{}
	for _, tk := range s.Tasks {
		owners[tk.WorkerID] = true
	}
	if len(owners) < 2 {
		t.Fatalf("tasks not spread over the workers: %+v", s)
	}
	// Kill the worker running the upsert sink's task 0.
	victim := -1
	for i, w := range ws {
		if "http://"+s.Tasks[0].WorkerID == w.url {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("task 0's worker %s not found", s.Tasks[0].WorkerID)
	}
	ws[victim].kill()
	alive := ws[(victim+1)%3]
	killed := time.Now()
	poll.Until(t, 60*time.Second, "the killed worker's tasks to move", func() error {
		for _, name := range []string{"upsert-sink", "insert-sink"} {
			st, err := status(alive.url, name)
			if err != nil {
				return err
			}
			if st.Connector.State != "RUNNING" || len(st.Tasks) != 3 || "http://"+st.Connector.WorkerID == ws[victim].url {
				return fmt.Errorf("%+v", st)
			}
			for _, tk := range st.Tasks {
				if tk.State != "RUNNING" || "http://"+tk.WorkerID == ws[victim].url {
					return fmt.Errorf("%+v", st)
				}
			}
		}
		return nil
	})
	moved := time.Since(killed)
	t.Logf("tasks moved %v after the kill", moved)
	// Held back for the delay once the death is noticed, then moved.
	if moved < delay || moved > session+delay+15*time.Second {
		t.Fatalf("tasks moved %v after the kill; want between %v and %v", moved, delay, session+delay+15*time.Second)
	}
	produceRows(total/2, total)
	sql := db.DB(t)
	poll.Until(t, 90*time.Second, "every record in both tables", func() error {
		for _, table := range []string{"dist_upsert", "dist_insert"} {
			var rows, ids int
			if err := sql.QueryRow(`SELECT COUNT(*), COUNT(DISTINCT id) FROM `+table).Scan(&rows, &ids); err != nil {
				return err
			}
			if ids != total || (table == "dist_upsert" && rows != total) {
				return fmt.Errorf("%s: %d rows, %d ids", table, rows, ids)
			}
		}
		return nil
	})
	var inserted int
	if err := sql.QueryRow(`SELECT COUNT(*) FROM dist_insert`).Scan(&inserted); err != nil {
		t.Fatal(err)
	}
	t.Logf("insert mode: %d rows for %d records (%d written twice)", inserted, total, inserted-total)
}
