package jdbc

import (
	"fmt"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// The pk.mode values.
const (
	pkNone        = "none"
	pkKafka       = "kafka"
	pkRecordKey   = "record_key"
	pkRecordValue = "record_value"
)

// The default column names of pk.mode=kafka.
var kafkaPKFields = []string{"__connect_topic", "__connect_partition", "__connect_offset"}

// sinkUnsupported are Confluent JDBC sink keys this sink does not
// implement; they are refused by name rather than ignored.
var sinkUnsupported = []string{"db.timezone", "table.types", "quote.sql.identifiers", "mssql.use.merge.holdlock",
	"trim.sensitive.log", "connection.provider"}

func sinkConfigDef() *connect.ConfigDef {
	return connKeys(connect.NewConfigDef()).
		Define(connect.ConfigKey{Name: "insert.mode", Type: connect.TypeString, Default: "insert", Importance: connect.High, Group: "Writes",
			Check: connect.OneOf(true, "insert", "upsert", "update"),
			Doc:   "The insertion mode to use: insert (standard INSERT), upsert (the database's upsert: ON CONFLICT … DO UPDATE or ON DUPLICATE KEY UPDATE) or update (UPDATE)."}).
		Define(connect.ConfigKey{Name: "batch.size", Type: connect.TypeInt, Default: int32(3000), Importance: connect.Medium, Group: "Writes",
			Check: connect.InRange(0, 1<<31-1), Doc: "Specifies how many records to attempt to batch together for insertion into the destination table, when possible."}).
		Define(connect.ConfigKey{Name: "delete.enabled", Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Group: "Writes",
			Doc: "Whether to treat null record values as deletes. Requires pk.mode to be record_key."}).
		Define(connect.ConfigKey{Name: "table.name.format", Type: connect.TypeString, Default: "${topic}", Importance: connect.Medium, Group: "Data Mapping",
			Doc: "A format string for the destination table name, which may contain '${topic}' as a placeholder for the originating topic name."}).
		Define(connect.ConfigKey{Name: "pk.mode", Type: connect.TypeString, Default: pkNone, Importance: connect.High, Group: "Data Mapping",
			Check: connect.OneOf(true, pkNone, pkKafka, pkRecordKey, pkRecordValue), Doc: "The primary key mode: none, kafka, record_key or record_value."}).
		Define(connect.ConfigKey{Name: "pk.fields", Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Data Mapping",
			Doc: "List of comma-separated primary key field names. The runtime interpretation of this config depends on the pk.mode."}).
		Define(connect.ConfigKey{Name: "fields.whitelist", Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Data Mapping",
			Doc: "List of comma-separated record value field names. If empty, all fields from the record value are utilized, otherwise used to filter to the desired fields."}).
		Define(connect.ConfigKey{Name: "auto.create", Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Group: "DDL Support",
			Doc: "Whether to automatically create the destination table based on record schema if it is found to be missing by issuing CREATE."}).
		Define(connect.ConfigKey{Name: "auto.evolve", Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Group: "DDL Support",
			Doc: "Whether to automatically add columns in the table schema when found to be missing relative to the record schema by issuing ALTER."}).
		Define(connect.ConfigKey{Name: "max.retries", Type: connect.TypeInt, Default: int32(10), Importance: connect.Medium, Group: "Retries",
			Check: connect.InRange(0, 1<<31-1), Doc: "The maximum number of times to retry on errors before failing the task."}).
		Define(connect.ConfigKey{Name: "retry.backoff.ms", Type: connect.TypeInt, Default: int32(3000), Importance: connect.Medium, Group: "Retries",
			Check: connect.InRange(0, 1<<31-1), Doc: "The time in milliseconds to wait following an error before a retry attempt is made."})
}

type sinkConfig struct {
	conn         *connConfig
	insertMode   string
	batchSize    int
	deleteOn     bool
	tableFormat  string
	pkMode       string
	pkFields     []string
	whitelist    map[string]bool
	autoCreate   bool
	autoEvolve   bool
	maxRetries   int
	retryBackoff time.Duration
}

func parseSinkConfig(props map[string]string) (*sinkConfig, error) {
	for _, k := range sinkUnsupported {
		if _, ok := props[k]; ok {
			return nil, fmt.Errorf("%s is not supported by this connector", k)
		}
	}
	p, err := sinkConfigDef().Parse(props)
	if err != nil {
		return nil, err
	}
	conn, err := parseConn(p)
	if err != nil {
		return nil, err
	}
	c := &sinkConfig{
		conn:         conn,
		insertMode:   strings.ToLower(p["insert.mode"].(string)),
		batchSize:    int(p["batch.size"].(int32)),
		deleteOn:     p["delete.enabled"].(bool),
		tableFormat:  p["table.name.format"].(string),
		pkMode:       strings.ToLower(p["pk.mode"].(string)),
		pkFields:     p["pk.fields"].([]string),
		autoCreate:   p["auto.create"].(bool),
		autoEvolve:   p["auto.evolve"].(bool),
		maxRetries:   int(p["max.retries"].(int32)),
		retryBackoff: time.Duration(p["retry.backoff.ms"].(int32)) * time.Millisecond,
	}
	if c.batchSize == 0 {
		c.batchSize = 1
	}
	if wl := p["fields.whitelist"].([]string); len(wl) > 0 {
		c.whitelist = map[string]bool{}
		for _, f := range wl {
			c.whitelist[f] = true
		}
	}
	if c.deleteOn && c.pkMode != pkRecordKey {
		return nil, fmt.Errorf("Primary key mode must be 'record_key' when delete support is enabled")
	}
	if c.insertMode != "insert" && c.pkMode == pkNone {
		return nil, fmt.Errorf("insert.mode=%s needs a primary key: set pk.mode", c.insertMode)
	}
	if c.pkMode == pkKafka {
		switch len(c.pkFields) {
		case 0:
			c.pkFields = kafkaPKFields
		case 3:
		default:
			return nil, fmt.Errorf("PK mode for table is KAFKA so there should either be no field names defined for defaults %v to be applicable, or exactly 3, defined fields are: %v", kafkaPKFields, c.pkFields)
		}
	}
	if !strings.Contains(c.tableFormat, "${topic}") && c.tableFormat == "" {
		return nil, fmt.Errorf("table.name.format must not be empty")
	}
	return c, nil
}

// tableName is table.name.format with the topic in place.
func (c *sinkConfig) tableName(topic string) string {
	return strings.ReplaceAll(c.tableFormat, "${topic}", topic)
}
