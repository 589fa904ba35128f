// Package spooldir is the CSV spool-directory source connector, with the
// configuration keys of the spool-dir connector users already have
// (com.github.jcustenborder.kafka.connect.spooldir.SpoolDirCsvSourceConnector,
// accepted as its class name). It watches input.path for files matching
// input.file.pattern, reads each as CSV into schema'd records (a header row
// names the fields; with schema.generation.enabled every field is an
// optional STRING, as the original generates), keeps a per-file offset so a
// restarted task resumes mid-file, and moves each finished file to
// finished.path (or a failed one to error.path).
package spooldir

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
)

// The connector's keys.
const (
	keyInputPath       = "input.path"
	keyFinishedPath    = "finished.path"
	keyErrorPath       = "error.path"
	keyFilePattern     = "input.file.pattern"
	keyTopic           = "topic"
	keyFirstRowHeader  = "csv.first.row.as.header"
	keySchemaGen       = "schema.generation.enabled"
	keyGenKeyFields    = "schema.generation.key.fields"
	keyGenKeyName      = "schema.generation.key.name"
	keyGenValueName    = "schema.generation.value.name"
	keyKeySchema       = "key.schema"
	keyValueSchema     = "value.schema"
	keySeparator       = "csv.separator.char"
	keyHaltOnError     = "halt.on.error"
	keyCleanupPolicy   = "cleanup.policy"
	keyBatchSize       = "batch.size"
	keyFileMinAge      = "file.minimum.age.ms"
	keyEmptyPollWaitMs = "empty.poll.wait.ms"
)

// unsupported are keys of the original connector this one does not
// implement: they are refused by name rather than ignored.
var unsupported = []string{
	"csv.skip.lines", "csv.quote.char", "csv.escape.char", "csv.strict.quotes", "csv.ignore.leading.whitespace",
	"csv.ignore.quotations", "csv.keep.carriage.return", "csv.null.field.indicator", "csv.verify.reader",
	"csv.case.sensitive.field.names", "csv.rfc.4180.parser.enabled", "csv.file.charset",
	"timestamp.mode", "timestamp.field", "parser.timestamp.date.formats", "parser.timestamp.timezone",
	"processing.file.extension", "task.partitioner", "task.count", "task.index", "files.sort.attributes",
	"input.path.walk.recursively", "cleanup.policy.maintain.relative.path", "empty.poll.wait.ms.max",
}

func configDef() *connect.ConfigDef {
	dir := func(name, doc string) connect.ConfigKey {
		return connect.ConfigKey{Name: name, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "File System", Doc: doc}
	}
	return connect.NewConfigDef().
		Define(connect.ConfigKey{Name: keyTopic, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "General",
			Doc: "The Kafka topic to write the data to."}).
		Define(dir(keyInputPath, "The directory to read files that will be processed. This directory must exist and be writable by the user running Kafka Connect.")).
		Define(dir(keyFinishedPath, "The directory to place files that have been successfully processed. This directory must exist and be writable by the user running Kafka Connect.")).
		Define(dir(keyErrorPath, "The directory to place files in which have error(s). This directory must exist and be writable by the user running Kafka Connect.")).
		Define(connect.ConfigKey{Name: keyFilePattern, Type: connect.TypeString, Required: true, Importance: connect.High, Group: "File System",
			Doc: "Regular expression to check input file names against. This expression must match the entire filename."}).
		Define(connect.ConfigKey{Name: keyFirstRowHeader, Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Group: "CSV Parsing",
			Doc: "Flag to indicate if the fist row of data contains the header of the file. If true the position of the columns will be determined by the first row to the CSV."}).
		Define(connect.ConfigKey{Name: keySeparator, Type: connect.TypeString, Default: "44", Importance: connect.Low, Group: "CSV Parsing",
			Doc: "The character that separates each field in the form of an integer. Typically in a CSV this is a ,(44) character. A TSV would use a tab(9) character."}).
		Define(connect.ConfigKey{Name: keySchemaGen, Type: connect.TypeBoolean, Default: false, Importance: connect.Medium, Group: "Schema Generation",
			Doc: "Flag to determine if schemas should be dynamically generated. If set to true, key.schema and value.schema can be omitted, but schema.generation.key.name and schema.generation.value.name must be set."}).
		Define(connect.ConfigKey{Name: keyGenKeyFields, Type: connect.TypeList, Default: []string{}, Importance: connect.Medium, Group: "Schema Generation",
			Doc: "The field(s) to use to build a key schema. This is only used during schema generation."}).
		Define(connect.ConfigKey{Name: keyGenKeyName, Type: connect.TypeString, Default: "com.github.jcustenborder.kafka.connect.model.Key", Importance: connect.Medium, Group: "Schema Generation",
			Doc: "The name of the generated key schema."}).
		Define(connect.ConfigKey{Name: keyGenValueName, Type: connect.TypeString, Default: "com.github.jcustenborder.kafka.connect.model.Value", Importance: connect.Medium, Group: "Schema Generation",
			Doc: "The name of the generated value schema."}).
		Define(connect.ConfigKey{Name: keyKeySchema, Type: connect.TypeString, Default: "", Importance: connect.High, Group: "Schema",
			Doc: "The schema for the key written to Kafka."}).
		Define(connect.ConfigKey{Name: keyValueSchema, Type: connect.TypeString, Default: "", Importance: connect.High, Group: "Schema",
			Doc: "The schema for the value written to Kafka."}).
		Define(connect.ConfigKey{Name: keyHaltOnError, Type: connect.TypeBoolean, Default: true, Importance: connect.High, Group: "General",
			Doc: "Should the task halt when it encounters an error or continue to the next file."}).
		Define(connect.ConfigKey{Name: keyCleanupPolicy, Type: connect.TypeString, Default: "MOVE", Importance: connect.Medium, Group: "File System",
			Check: connect.OneOf(false, "MOVE", "DELETE", "NONE"),
			Doc:   "Determines how the connector should cleanup the files that have been successfully processed. NONE leaves the files in place, DELETE removes the file from the filesystem, MOVE moves the file to the finished.path."}).
		Define(connect.ConfigKey{Name: keyBatchSize, Type: connect.TypeInt, Default: int32(1000), Importance: connect.Low, Group: "General",
			Check: connect.InRange(1, 1<<31-1), Doc: "The number of records that should be returned with each batch."}).
		Define(connect.ConfigKey{Name: keyFileMinAge, Type: connect.TypeLong, Default: int64(0), Importance: connect.Low, Group: "File System",
			Check: connect.InRange(0, 1<<62), Doc: "The amount of time in milliseconds after the file was last written to before the file can be processed."}).
		Define(connect.ConfigKey{Name: keyEmptyPollWaitMs, Type: connect.TypeLong, Default: int64(500), Importance: connect.Low, Group: "General",
			Check: connect.InRange(1, 1<<62), Doc: "The amount of time to wait if a poll returns an empty list of records."})
}

// config is a parsed configuration.
type config struct {
	topic                           string
	inputPath, finishedPath, errDir string
	pattern                         *regexp.Regexp
	firstRowHeader                  bool
	separator                       rune
	schemaGen                       bool
	genKeyFields                    []string
	genKeyName, genValueName        string
	keySchema, valueSchema          *connect.Schema
	haltOnError                     bool
	cleanup                         string
	batchSize                       int
	minAge                          time.Duration
	emptyWait                       time.Duration
}

func parseConfig(props map[string]string) (*config, error) {
	for _, k := range unsupported {
		if _, ok := props[k]; ok {
			return nil, fmt.Errorf("%s is not supported by this connector", k)
		}
	}
	p, err := configDef().Parse(props)
	if err != nil {
		return nil, err
	}
	c := &config{
		topic:          p[keyTopic].(string),
		inputPath:      p[keyInputPath].(string),
		finishedPath:   p[keyFinishedPath].(string),
		errDir:         p[keyErrorPath].(string),
		firstRowHeader: p[keyFirstRowHeader].(bool),
		schemaGen:      p[keySchemaGen].(bool),
		genKeyFields:   p[keyGenKeyFields].([]string),
		genKeyName:     p[keyGenKeyName].(string),
		genValueName:   p[keyGenValueName].(string),
		haltOnError:    p[keyHaltOnError].(bool),
		cleanup:        p[keyCleanupPolicy].(string),
		batchSize:      int(p[keyBatchSize].(int32)),
		minAge:         time.Duration(p[keyFileMinAge].(int64)) * time.Millisecond,
		emptyWait:      time.Duration(p[keyEmptyPollWaitMs].(int64)) * time.Millisecond,
	}
	if c.pattern, err = regexp.Compile("^(?:" + p[keyFilePattern].(string) + ")$"); err != nil {
		return nil, fmt.Errorf("Invalid value %s for configuration %s: %v", p[keyFilePattern], keyFilePattern, err)
	}
	sep := p[keySeparator].(string)
	if n, err := strconv.Atoi(sep); err == nil {
		c.separator = rune(n)
	} else if r := []rune(sep); len(r) == 1 {
		c.separator = r[0]
	} else {
		return nil, fmt.Errorf("Invalid value %s for configuration %s: a character code such as 44", sep, keySeparator)
	}
	if c.separator == '"' || c.separator == '\r' || c.separator == '\n' || c.separator <= 0 {
		return nil, fmt.Errorf("Invalid value %s for configuration %s", sep, keySeparator)
	}
	for _, k := range []string{keyInputPath, keyFinishedPath, keyErrorPath} {
		if k == keyFinishedPath && c.cleanup != "MOVE" {
			continue
		}
		if fi, err := os.Stat(p[k].(string)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("Invalid value %s for configuration %s: Directory does not exist or is not a directory", p[k], k)
		}
	}
	if s := strings.TrimSpace(p[keyKeySchema].(string)); s != "" {
		if c.keySchema, err = parseSchemaJSON(s); err != nil {
			return nil, fmt.Errorf("Invalid value for configuration %s: %v", keyKeySchema, err)
		}
	}
	if s := strings.TrimSpace(p[keyValueSchema].(string)); s != "" {
		if c.valueSchema, err = parseSchemaJSON(s); err != nil {
			return nil, fmt.Errorf("Invalid value for configuration %s: %v", keyValueSchema, err)
		}
	}
	if c.valueSchema == nil && !c.schemaGen {
		return nil, fmt.Errorf("%s must be set when %s is false", keyValueSchema, keySchemaGen)
	}
	if c.valueSchema == nil && !c.firstRowHeader {
		return nil, fmt.Errorf("schema generation needs the field names: set %s=true or give %s", keyFirstRowHeader, keyValueSchema)
	}
	return c, nil
}
