package jdbc

import (
	"fmt"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// The source modes.
const (
	modeBulk                  = "bulk"
	modeIncrementing          = "incrementing"
	modeTimestamp             = "timestamp"
	modeTimestampIncrementing = "timestamp+incrementing"
)

// taskTablesKey carries a task's tables in its configuration.
const taskTablesKey = "tables"

// sourceUnsupported are Confluent JDBC source keys this source does not
// implement; they are refused by name rather than ignored.
var sourceUnsupported = []string{"table.poll.interval.ms", "schema.pattern", "catalog.pattern", "table.types",
	"numeric.precision.mapping", "db.timezone", "timestamp.initial", "incrementing.initial", "query.retry.attempts",
	"transaction.isolation.mode", "table.monitoring.startup.polling.limit.ms", "timestamp.granularity", "quote.sql.identifiers"}

func sourceConfigDef() *connect.ConfigDef {
	return connKeys(connect.NewConfigDef()).
		Define(connect.ConfigKey{Name: "mode", Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Mode",
			Check: connect.OneOf(false, modeBulk, modeIncrementing, modeTimestamp, modeTimestampIncrementing),
			Doc:   "The mode for updating a table each time it is polled: bulk, incrementing, timestamp or timestamp+incrementing."}).
		Define(connect.ConfigKey{Name: "incrementing.column.name", Type: connect.TypeString, Default: "", Importance: connect.Medium, Group: "Mode",
			Doc: "The name of the strictly incrementing column to use to detect new rows."}).
		Define(connect.ConfigKey{Name: "timestamp.column.name", Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Mode",
			Doc: "Comma separated list of one or more timestamp columns to detect new or modified rows using the COALESCE SQL function."}).
		Define(connect.ConfigKey{Name: "validate.non.null", Type: connect.TypeBoolean, Default: true, Importance: connect.Low, Group: "Mode",
			Doc: "By default, the JDBC connector will validate that all incrementing and timestamp tables have NOT NULL set for the columns being used as their ID/timestamp."}).
		Define(connect.ConfigKey{Name: "query", Type: connect.TypeString, Default: "", Importance: connect.Medium, Group: "Mode",
			Doc: "If specified, the query to perform to select new or updated rows. Incremental modes add their WHERE clause to it."}).
		Define(connect.ConfigKey{Name: "query.suffix", Type: connect.TypeString, Default: "", Importance: connect.Low, Group: "Mode",
			Doc: "Suffix to append at the end of the generated query."}).
		Define(connect.ConfigKey{Name: "table.whitelist", Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Database",
			Doc: "List of tables to include in copying. If specified, table.blacklist may not be set."}).
		Define(connect.ConfigKey{Name: "table.blacklist", Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Database",
			Doc: "List of tables to exclude from copying. If specified, table.whitelist may not be set."}).
		Define(connect.ConfigKey{Name: "topic.prefix", Type: connect.TypeString, Required: true, Importance: connect.High, Group: "Connector",
			Doc: "Prefix to prepend to table names to generate the name of the Kafka topic to publish data to, or in the case of a custom query, the full name of the topic to publish to."}).
		Define(connect.ConfigKey{Name: "poll.interval.ms", Type: connect.TypeInt, Default: int32(5000), Importance: connect.High, Group: "Connector",
			Check: connect.InRange(1, 1<<31-1), Doc: "Frequency in ms to poll for new data in each table."}).
		Define(connect.ConfigKey{Name: "batch.max.rows", Type: connect.TypeInt, Default: int32(100), Importance: connect.Low, Group: "Connector",
			Check: connect.InRange(1, 1<<31-1), Doc: "Maximum number of rows to include in a single batch when polling for new data."}).
		Define(connect.ConfigKey{Name: "timestamp.delay.interval.ms", Type: connect.TypeLong, Default: int64(0), Importance: connect.High, Group: "Connector",
			Check: connect.InRange(0, 1<<62), Doc: "How long to wait after a row with certain timestamp appears before we include it in the result."}).
		Define(connect.ConfigKey{Name: "numeric.mapping", Type: connect.TypeString, Default: "none", Importance: connect.Low, Group: "Database",
			Check: connect.OneOf(false, "none"), Doc: "Map NUMERIC values by precision and optionally scale to integral or decimal types; only none (Decimal) is supported."})
}

type sourceConfig struct {
	conn            *connConfig
	mode            string
	incColumn       string
	tsColumns       []string
	validateNonNull bool
	query           string
	querySuffix     string
	whitelist       []string
	blacklist       []string
	topicPrefix     string
	pollInterval    time.Duration
	batchMaxRows    int
	tsDelay         time.Duration
	tables          []string // a task's tables
}

func parseSourceConfig(props map[string]string) (*sourceConfig, error) {
	for _, k := range sourceUnsupported {
		if _, ok := props[k]; ok {
			return nil, fmt.Errorf("%s is not supported by this connector", k)
		}
	}
	p, err := sourceConfigDef().Parse(props)
	if err != nil {
		return nil, err
	}
	conn, err := parseConn(p)
	if err != nil {
		return nil, err
	}
	c := &sourceConfig{
		conn: conn, mode: p["mode"].(string),
		incColumn:       strings.TrimSpace(p["incrementing.column.name"].(string)),
		tsColumns:       p["timestamp.column.name"].([]string),
		validateNonNull: p["validate.non.null"].(bool),
		query:           strings.TrimSpace(p["query"].(string)),
		querySuffix:     p["query.suffix"].(string),
		whitelist:       p["table.whitelist"].([]string),
		blacklist:       p["table.blacklist"].([]string),
		topicPrefix:     p["topic.prefix"].(string),
		pollInterval:    time.Duration(p["poll.interval.ms"].(int32)) * time.Millisecond,
		batchMaxRows:    int(p["batch.max.rows"].(int32)),
		tsDelay:         time.Duration(p["timestamp.delay.interval.ms"].(int64)) * time.Millisecond,
	}
	if len(c.whitelist) > 0 && len(c.blacklist) > 0 {
		return nil, fmt.Errorf("table.whitelist and table.blacklist are exclusive.")
	}
	if c.query != "" && (len(c.whitelist) > 0 || len(c.blacklist) > 0) {
		return nil, fmt.Errorf("Do not specify table filtering (table.whitelist or table.blacklist) when using a query")
	}
	needInc := c.mode == modeIncrementing || c.mode == modeTimestampIncrementing
	needTs := c.mode == modeTimestamp || c.mode == modeTimestampIncrementing
	if needInc && c.incColumn == "" {
		return nil, fmt.Errorf("Mode %s needs incrementing.column.name", c.mode)
	}
	if needTs && len(c.tsColumns) == 0 {
		return nil, fmt.Errorf("Mode %s needs timestamp.column.name", c.mode)
	}
	if t, ok := props[taskTablesKey]; ok && t != "" {
		c.tables = strings.Split(t, ",")
	}
	return c, nil
}
