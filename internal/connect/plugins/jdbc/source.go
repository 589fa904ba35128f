package jdbc

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vltava/vltava/connect"
)

// The source's class names.
const (
	SourceClass       = "io.confluent.connect.jdbc.JdbcSourceConnector"
	SourceVltavaClass = "io.vltava.connect.jdbc.JdbcSourceConnector"
)

// SourceConnector copies tables (or one query) into topics named
// topic.prefix + table. Tables are shared among the tasks, so with
// tasks.max at least the number of tables each task polls one table.
type SourceConnector struct {
	props  map[string]string
	cfg    *sourceConfig
	tables []string
}

// Version implements connect.Connector.
func (c *SourceConnector) Version() string { return version }

// Config implements connect.Connector.
func (c *SourceConnector) Config() *connect.ConfigDef { return sourceConfigDef() }

// Initialize implements connect.Connector.
func (c *SourceConnector) Initialize(connect.ConnectorContext) {}

// Validate implements connect.Validator.
func (c *SourceConnector) Validate(props map[string]string) []connect.ConfigValue {
	if _, err := parseSourceConfig(props); err != nil {
		return []connect.ConfigValue{{Name: "mode", Value: props["mode"], Errors: []string{err.Error()}, Visible: true}}
	}
	return nil
}

// Start implements connect.Connector: it lists the tables to copy (unless
// a query is given), connecting with connection.attempts.
func (c *SourceConnector) Start(props map[string]string) error {
	cfg, err := parseSourceConfig(props)
	if err != nil {
		return err
	}
	c.props, c.cfg = props, cfg
	if cfg.query != "" {
		return nil
	}
	ctx := context.Background()
	db, err := cfg.conn.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	all, err := cfg.conn.target.dialect.tables(ctx, db)
	if err != nil {
		return fmt.Errorf("listing tables: %w", err)
	}
	c.tables = filterTables(all, cfg.whitelist, cfg.blacklist)
	return nil
}

func filterTables(all, white, black []string) []string {
	in := func(l []string, t string) bool {
		for _, x := range l {
			if strings.EqualFold(x, t) {
				return true
			}
		}
		return false
	}
	var out []string
	for _, t := range all {
		if (len(white) == 0 || in(white, t)) && !in(black, t) {
			out = append(out, t)
		}
	}
	return out
}

// TaskConfigs implements connect.Connector: the tables are dealt round
// robin to at most maxTasks tasks; a query runs in one task.
func (c *SourceConnector) TaskConfigs(maxTasks int) ([]map[string]string, error) {
	if c.cfg.query != "" {
		return []map[string]string{c.props}, nil
	}
	if len(c.tables) == 0 {
		slog.Warn("jdbc: no tables found to copy; no tasks will run")
		return nil, nil
	}
	n := min(maxTasks, len(c.tables))
	groups := make([][]string, n)
	for i, t := range c.tables {
		groups[i%n] = append(groups[i%n], t)
	}
	out := make([]map[string]string, n)
	for i, g := range groups {
		p := make(map[string]string, len(c.props)+1)
		for k, v := range c.props {
			p[k] = v
		}
		p[taskTablesKey] = strings.Join(g, ",")
		out[i] = p
	}
	return out, nil
}

// Stop implements connect.Connector.
func (c *SourceConnector) Stop() error { return nil }

// NewTask implements connect.SourceConnector.
func (c *SourceConnector) NewTask() connect.SourceTask { return &SourceTask{} }

// SourceTask polls its tables, each poll.interval.ms apart, reading at most
// batch.max.rows rows per Poll from an open result set. Poll runs on one
// goroutine and owns every field but stop.
type SourceTask struct {
	cfg      *sourceConfig
	ctx      connect.SourceTaskContext
	db       *sql.DB
	queriers []*querier

	stopOnce sync.Once
	stop     chan struct{}
}

// Version implements connect.SourceTask.
func (t *SourceTask) Version() string { return version }

// Initialize implements connect.SourceTask.
func (t *SourceTask) Initialize(ctx connect.SourceTaskContext) { t.ctx = ctx }

// Start implements connect.SourceTask: it connects and reads each table's
// committed offset.
func (t *SourceTask) Start(props map[string]string) error {
	cfg, err := parseSourceConfig(props)
	if err != nil {
		return err
	}
	t.cfg = cfg
	t.stop = make(chan struct{})
	if cfg.query == "" && len(cfg.tables) == 0 {
		return fmt.Errorf("Invalid configuration: each JdbcSourceTask must have at least one table assigned to it")
	}
	db, err := cfg.conn.open(context.Background())
	if err != nil {
		return err
	}
	t.db = db
	names := cfg.tables
	if cfg.query != "" {
		names = []string{""}
	}
	for _, name := range names {
		q := &querier{cfg: cfg, d: cfg.conn.target.dialect, table: name, inc: -1}
		if name == "" {
			q.partition = map[string]any{"query": "query"}
			q.topic = cfg.topicPrefix
		} else {
			q.partition = map[string]any{"table": name}
			q.topic = cfg.topicPrefix + name
		}
		stored, err := t.ctx.OffsetStorageReader().Offset(q.partition)
		if err != nil {
			return fmt.Errorf("reading the offset of %v: %w", q.partition, err)
		}
		if err := q.restore(stored); err != nil {
			return err
		}
		if name != "" && cfg.validateNonNull && cfg.mode != modeBulk {
			if err := q.validateNonNull(context.Background(), db); err != nil {
				return err
			}
		}
		t.queriers = append(t.queriers, q)
	}
	return nil
}

// Poll implements connect.SourceTask.
func (t *SourceTask) Poll(ctx context.Context) ([]connect.SourceRecord, error) {
	sort.SliceStable(t.queriers, func(i, j int) bool { return t.queriers[i].next.Before(t.queriers[j].next) })
	q := t.queriers[0]
	if wait := time.Until(q.next); wait > 0 && q.rows == nil {
		timer := time.NewTimer(min(wait, time.Second))
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-t.stop:
		case <-timer.C:
		}
		return nil, nil
	}
	recs, err := q.poll(ctx, t.db)
	if err != nil {
		q.close()
		q.next = time.Now().Add(t.cfg.pollInterval)
		return nil, fmt.Errorf("Failed to run query for table %s: %w", q.name(), err)
	}
	return recs, nil
}

// Commit implements connect.SourceTask.
func (t *SourceTask) Commit() error { return nil }

// Stop implements connect.SourceTask. The worker calls it from another
// goroutine to end a waiting Poll; the database is closed there too, which
// makes a running query fail rather than hang.
func (t *SourceTask) Stop() error {
	t.stopOnce.Do(func() {
		if t.stop != nil {
			close(t.stop)
		}
	})
	if t.db != nil {
		return t.db.Close()
	}
	return nil
}
