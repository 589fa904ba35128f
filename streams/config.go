package streams

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Processing guarantees (processing.guarantee).
const (
	AtLeastOnce   = "at_least_once"
	ExactlyOnceV2 = "exactly_once_v2"
)

// Config is the effective configuration of an App, under Kafka Streams'
// names. Build it with ParseConfig from key/value properties; every key
// it accepts is honoured, and a key it does not implement is refused.
type Config struct {
	// ApplicationID (application.id) names the consumer group, the
	// transactional IDs and the prefix of internal topics. Required.
	ApplicationID string
	// BootstrapServers (bootstrap.servers) are the seed brokers.
	BootstrapServers []string
	// ProcessingGuarantee (processing.guarantee): at_least_once (default)
	// or exactly_once_v2.
	ProcessingGuarantee string
	// NumStreamThreads (num.stream.threads, default 1).
	NumStreamThreads int
	// NumStandbyReplicas (num.standby.replicas, default 0): standby tasks
	// per task, each on another instance, keeping a copy of the task's
	// logged stores from their changelogs so that a task moving there
	// restores only what the standby had not read yet.
	NumStandbyReplicas int
	// CommitInterval (commit.interval.ms): 30 s, or 100 ms under
	// exactly_once_v2.
	CommitInterval time.Duration
	// StateDir (state.dir, default <temp dir>/kafka-streams).
	StateDir string
	// DeserializationHandler (default.deserialization.exception.handler):
	// LogAndFailExceptionHandler (default) or
	// LogAndContinueExceptionHandler.
	DeserializationHandler DeserializationHandler
	// TimestampExtractor (default.timestamp.extractor): the event time of
	// records read from user topics, unless a source sets its own with
	// WithTimestampExtractor. Default FailOnInvalidTimestamp. The property
	// takes the name of one of Kafka Streams' built-in extractors; a Go
	// program may set any function here after ParseConfig.
	TimestampExtractor TimestampExtractor
	// ApplicationServer (application.server): this instance's host:port
	// for interactive queries, shared with the group so QueryMetadataForKey
	// can name the instance holding a key.
	ApplicationServer string
	// ReplicationFactor (replication.factor) of created internal topics;
	// -1 (default) uses the broker's default.
	ReplicationFactor int16
	// ClientID (client.id) prefixes the clients' IDs.
	ClientID string
}

// ParseConfig reads Kafka Streams properties. A key outside the
// implemented set, or a value not implemented (a record cache, topology optimization, max.task.idle.ms other than -1), is
// an error naming the key.
func ParseConfig(props map[string]string) (Config, error) {
	c := Config{ProcessingGuarantee: AtLeastOnce, TimestampExtractor: FailOnInvalidTimestamp, NumStreamThreads: 1, ReplicationFactor: -1,
		StateDir: filepath.Join(os.TempDir(), "kafka-streams")}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	commitSet := false
	for _, k := range keys {
		v := strings.TrimSpace(props[k])
		bad := func(why string) error { return fmt.Errorf("streams config %s=%q: %s", k, v, why) }
		switch k {
		case "application.id":
			c.ApplicationID = v
		case "bootstrap.servers":
			for _, s := range strings.Split(v, ",") {
				if s = strings.TrimSpace(s); s != "" {
					c.BootstrapServers = append(c.BootstrapServers, s)
				}
			}
		case "processing.guarantee":
			switch v {
			case AtLeastOnce, ExactlyOnceV2:
				c.ProcessingGuarantee = v
			case "exactly_once", "exactly_once_beta":
				return c, bad("removed in Kafka Streams 4.0; use exactly_once_v2")
			default:
				return c, bad("want at_least_once or exactly_once_v2")
			}
		case "num.stream.threads":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return c, bad("want an integer >= 1")
			}
			c.NumStreamThreads = n
		case "commit.interval.ms":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return c, bad("want an integer >= 0")
			}
			c.CommitInterval = time.Duration(n) * time.Millisecond
			commitSet = true
		case "state.dir":
			c.StateDir = v
		case "default.deserialization.exception.handler":
			switch strings.TrimPrefix(v, "org.apache.kafka.streams.errors.") {
			case "LogAndFailExceptionHandler":
				c.DeserializationHandler = DeserializationFail
			case "LogAndContinueExceptionHandler":
				c.DeserializationHandler = DeserializationContinue
			default:
				return c, bad("want LogAndFailExceptionHandler or LogAndContinueExceptionHandler")
			}
		case "default.timestamp.extractor":
			x, ok := extractorNames[strings.TrimPrefix(v, "org.apache.kafka.streams.processor.")]
			if !ok {
				return c, bad("want FailOnInvalidTimestamp, LogAndSkipOnInvalidTimestamp, UsePartitionTimeOnInvalidTimestamp or WallclockTimestampExtractor")
			}
			c.TimestampExtractor = x
		case "application.server":
			c.ApplicationServer = v
		case "replication.factor":
			n, err := strconv.Atoi(v)
			if err != nil || n == 0 || n < -1 || n > 32767 {
				return c, bad("want -1 or a positive integer")
			}
			c.ReplicationFactor = int16(n)
		case "client.id":
			c.ClientID = v
		case "num.standby.replicas":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c, bad("want an integer >= 0")
			}
			c.NumStandbyReplicas = n
		case "statestore.cache.max.bytes", "cache.max.bytes.buffering":
			if v != "0" {
				return c, bad("the record cache is not implemented (every update is forwarded, as with a cache of 0); only 0 is accepted")
			}
		case "max.task.idle.ms":
			// -1 is what a task does: it processes the records it has,
			// ordered by timestamp, without waiting for a partition that
			// has none buffered. Kafka's default 0 (and any wait) waits
			// for such a partition's fetch, which is not implemented.
			if v != "-1" {
				return c, bad("waiting for partitions without buffered records is not implemented; only -1 is accepted")
			}
		case "topology.optimization":
			if v != "none" {
				return c, bad("topology optimization is not implemented; only none is accepted")
			}
		default:
			return c, fmt.Errorf("streams config %q: unknown or not implemented", k)
		}
	}
	if !commitSet {
		c.CommitInterval = 30 * time.Second
		if c.ProcessingGuarantee == ExactlyOnceV2 {
			c.CommitInterval = 100 * time.Millisecond
		}
	}
	if c.ApplicationID == "" {
		return c, fmt.Errorf("streams config application.id: required")
	}
	return c, nil
}

// String prints the effective configuration, one key per line.
func (c Config) String() string {
	handler := "LogAndFailExceptionHandler"
	if c.DeserializationHandler == DeserializationContinue {
		handler = "LogAndContinueExceptionHandler"
	}
	return fmt.Sprintf("application.id=%s\nbootstrap.servers=%s\nprocessing.guarantee=%s\nnum.stream.threads=%d\nnum.standby.replicas=%d\ncommit.interval.ms=%d\nstate.dir=%s\ndefault.deserialization.exception.handler=%s\napplication.server=%s\nreplication.factor=%d\nclient.id=%s\n",
		c.ApplicationID, strings.Join(c.BootstrapServers, ","), c.ProcessingGuarantee, c.NumStreamThreads, c.NumStandbyReplicas,
		c.CommitInterval.Milliseconds(), c.StateDir, handler, c.ApplicationServer, c.ReplicationFactor, c.ClientID)
}
