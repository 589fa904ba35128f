package config

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

const (
	longMax     = "9223372036854775807"
	intMax      = "2147483647"
	weekMs      = "604800000"
	dayMs       = "86400000"
	maxMsgBytes = "1048588" // 1 MiB + Kafka's 12-byte log overhead
)

// topicDefList is Kafka's LogConfig definition list (topic-level configs).
var topicDefList = []Def{
	def("cleanup.policy", List, "delete", "Retention policy for old segments: delete them, compact them by key, or both.", listOf("compact", "delete")),
	def("compression.type", String, "producer", "Final compression of the topic's data; producer keeps whatever codec the producer used.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	def("compression.gzip.level", Int, "-1", "Compression level used when compression.type is gzip (-1 is the codec default).", between(1, 9), orMinusOne()),
	def("compression.lz4.level", Int, "9", "Compression level used when compression.type is lz4.", between(1, 17)),
	def("compression.zstd.level", Int, "3", "Compression level used when compression.type is zstd.", between(-131072, 22)),
	def("delete.retention.ms", Long, dayMs, "How long delete tombstones are kept on compacted topics so consumers can observe them.", atLeast(0)),
	def("file.delete.delay.ms", Long, "60000", "Delay before a segment file removed from the log is deleted from disk.", atLeast(0)),
	def("flush.messages", Long, longMax, "Force an fsync after this many messages are appended (Long.MAX leaves it to the OS).", atLeast(1)),
	def("flush.ms", Long, longMax, "Force an fsync when this much time has passed since the last one.", atLeast(0)),
	def("follower.replication.throttled.replicas", List, "", "Replicas (partition:broker or *) whose follower-side replication is throttled.", custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", validateThrottledReplicas)),
	def("index.interval.bytes", Int, "4096", "How many bytes of records are appended between offset-index entries.", atLeast(0)),
	def("leader.replication.throttled.replicas", List, "", "Replicas (partition:broker or *) whose leader-side replication is throttled.", custom("[partitionId]:[brokerId],[partitionId]:[brokerId],... or *", validateThrottledReplicas)),
	def("local.retention.bytes", Long, "-2", "Bytes kept on local disk when tiered storage is enabled (-2 means use retention.bytes).", atLeast(-2)),
	def("local.retention.ms", Long, "-2", "Time data is kept on local disk when tiered storage is enabled (-2 means use retention.ms).", atLeast(-2)),
	def("max.compaction.lag.ms", Long, longMax, "Longest time a record may stay uncompacted in the log.", atLeast(1)),
	def("max.message.bytes", Int, maxMsgBytes, "Largest record batch the topic accepts, after compression.", atLeast(0)),
	def("message.downconversion.enable", Boolean, "true", "Whether Fetch v0-v3 (clients before Kafka 0.11) get records down-converted to message format v0/v1; false answers them UNSUPPORTED_VERSION (deprecated, as in Kafka 3.9)."),
	def("message.format.version", String, "3.0-IV1", "Deprecated and ignored: record format is always v2.", custom("A Kafka version such as 3.0-IV1", validateKafkaVersion)),
	def("message.timestamp.after.max.ms", Long, longMax, "How far in the future a CreateTime timestamp may be relative to the broker clock.", atLeast(0)),
	def("message.timestamp.before.max.ms", Long, longMax, "How far in the past a CreateTime timestamp may be relative to the broker clock.", atLeast(0)),
	def("message.timestamp.difference.max.ms", Long, longMax, "Deprecated: maximum skew between a record's timestamp and the broker clock.", atLeast(0)),
	def("message.timestamp.type", String, "CreateTime", "Whether record timestamps are the producer's CreateTime or the broker's LogAppendTime.", oneOf("CreateTime", "LogAppendTime")),
	def("min.cleanable.dirty.ratio", Double, "0.5", "Fraction of the log that must be uncompacted before the cleaner compacts it.", between(0, 1)),
	def("min.compaction.lag.ms", Long, "0", "Shortest time a record stays uncompacted in the log.", atLeast(0)),
	def("min.insync.replicas", Int, "1", "Fewest in-sync replicas that must acknowledge an acks=all write.", atLeast(1)),
	def("preallocate", Boolean, "false", "Whether to preallocate segment files on disk when rolling a new segment."),
	def("remote.log.copy.disable", Boolean, "false", "Stop copying segments to tiered storage while still reading from it."),
	def("remote.log.delete.on.disable", Boolean, "false", "Delete tiered data when tiered storage is disabled for the topic."),
	def("remote.storage.enable", Boolean, "false", "Enable tiered storage for the topic: rolled segments are copied to the remote store and local retention follows local.retention.*."),
	def("retention.bytes", Long, "-1", "Largest size a partition may grow to before old segments are discarded (-1: no limit)."),
	def("retention.ms", Long, weekMs, "Longest time a record is kept before old segments are discarded (-1: no limit).", atLeast(-1)),
	def("segment.bytes", Int, "1073741824", "Size at which a new log segment is rolled.", atLeast(14)),
	def("segment.index.bytes", Int, "10485760", "Size of the offset and time index files preallocated per segment.", atLeast(4)),
	def("segment.jitter.ms", Long, "0", "Maximum random jitter subtracted from segment.ms to avoid thundering rolls.", atLeast(0)),
	def("segment.ms", Long, weekMs, "Time after which a segment is rolled even if it is not full.", atLeast(1)),
	def("unclean.leader.election.enable", Boolean, "false", "Whether an out-of-sync replica may become leader as a last resort, at the risk of data loss."),
	def("vltava.preserve.offsets", Boolean, "false", "The topic is written by an offset-preserving mirror: a produced batch keeps its base offset, which must be at or past the log end offset (gaps are kept), instead of getting the next one; a batch starting below the log end offset is OFFSET_OUT_OF_RANGE.", vltavaOnly()),
}

func init() { topicDefList = append(topicDefList, schemaValidationTopicDefs...) }

// brokerSynonym is one broker config that supplies a topic config's default,
// with the factor that converts its unit to the topic config's unit.
type brokerSynonym struct {
	name   string
	factor int64 // 1, or 60_000 for minutes, 3_600_000 for hours
}

const (
	minuteMs = 60 * 1000
	hourMs   = 60 * minuteMs
)

// topicSynonyms mirrors ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS: for
// each topic config, the broker configs providing its default, in precedence
// order. Topic configs missing here have no broker-level default.
var topicSynonyms = map[string][]brokerSynonym{
	"segment.bytes":                       {{"log.segment.bytes", 1}},
	"segment.ms":                          {{"log.roll.ms", 1}, {"log.roll.hours", hourMs}},
	"segment.jitter.ms":                   {{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", hourMs}},
	"segment.index.bytes":                 {{"log.index.size.max.bytes", 1}},
	"flush.messages":                      {{"log.flush.interval.messages", 1}},
	"flush.ms":                            {{"log.flush.interval.ms", 1}, {"log.flush.scheduler.interval.ms", 1}},
	"retention.bytes":                     {{"log.retention.bytes", 1}},
	"retention.ms":                        {{"log.retention.ms", 1}, {"log.retention.minutes", minuteMs}, {"log.retention.hours", hourMs}},
	"max.message.bytes":                   {{"message.max.bytes", 1}},
	"index.interval.bytes":                {{"log.index.interval.bytes", 1}},
	"delete.retention.ms":                 {{"log.cleaner.delete.retention.ms", 1}},
	"min.compaction.lag.ms":               {{"log.cleaner.min.compaction.lag.ms", 1}},
	"max.compaction.lag.ms":               {{"log.cleaner.max.compaction.lag.ms", 1}},
	"file.delete.delay.ms":                {{"log.segment.delete.delay.ms", 1}},
	"min.cleanable.dirty.ratio":           {{"log.cleaner.min.cleanable.ratio", 1}},
	"cleanup.policy":                      {{"log.cleanup.policy", 1}},
	"unclean.leader.election.enable":      {{"unclean.leader.election.enable", 1}},
	"min.insync.replicas":                 {{"min.insync.replicas", 1}},
	"compression.type":                    {{"compression.type", 1}},
	"compression.gzip.level":              {{"compression.gzip.level", 1}},
	"compression.lz4.level":               {{"compression.lz4.level", 1}},
	"compression.zstd.level":              {{"compression.zstd.level", 1}},
	"preallocate":                         {{"log.preallocate", 1}},
	"message.format.version":              {{"log.message.format.version", 1}},
	"message.timestamp.type":              {{"log.message.timestamp.type", 1}},
	"message.timestamp.difference.max.ms": {{"log.message.timestamp.difference.max.ms", 1}},
	"message.timestamp.before.max.ms":     {{"log.message.timestamp.before.max.ms", 1}},
	"message.timestamp.after.max.ms":      {{"log.message.timestamp.after.max.ms", 1}},
	"message.downconversion.enable":       {{"log.message.downconversion.enable", 1}},
	"local.retention.ms":                  {{"log.local.retention.ms", 1}},
	"local.retention.bytes":               {{"log.local.retention.bytes", 1}},
}

// brokerSynonymGroups mirrors DynamicBrokerConfig.brokerConfigSynonyms: broker
// keys that are alternative spellings of one setting, highest precedence first.
// Setting any member dynamically removes the others from the lower layers.
var brokerSynonymGroups = [][]string{
	{"log.roll.ms", "log.roll.hours"},
	{"log.roll.jitter.ms", "log.roll.jitter.hours"},
	{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
}

// brokerSynonymsOf returns the broker synonyms of a broker key in precedence
// order, including the key itself (Kafka's brokerConfigSynonyms).
func brokerSynonymsOf(name string) []string {
	if name == "log.flush.interval.ms" {
		// log.flush.scheduler.interval.ms is the fallback default of
		// log.flush.interval.ms, but not the other way round.
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	}
	for _, g := range brokerSynonymGroups {
		if contains(g, name) {
			return g
		}
	}
	return []string{name}
}

var (
	topicDefs     = map[string]*Def{}
	topicDefNames []string
)

func init() {
	for i := range topicDefList {
		d := &topicDefList[i]
		r, name, typ := d.rule, d.Name, d.Type
		d.Validate = func(v string) error { return checkValue(name, typ, r, v, true) }
		topicDefs[d.Name] = d
		topicDefNames = append(topicDefNames, d.Name)
	}
	sort.Strings(topicDefNames)
}

// TopicDefs returns every topic-level config key Kafka defines, sorted by name.
func TopicDefs() []Def {
	out := make([]Def, 0, len(topicDefNames))
	for _, n := range topicDefNames {
		out = append(out, *topicDefs[n])
	}
	return out
}

// TopicDef looks up one topic config key.
func TopicDef(name string) (Def, bool) {
	d, ok := topicDefs[name]
	if !ok {
		return Def{}, false
	}
	return *d, true
}

// TopicServerDefault returns the broker config that provides the cluster-wide
// default for a topic config ("retention.ms" -> "log.retention.ms"), as listed
// in Kafka's topic config docs ("Server Default Property").
func TopicServerDefault(topicKey string) (string, bool) {
	s, ok := topicSynonyms[topicKey]
	if !ok {
		return "", false
	}
	return s[0].name, true
}

// validateThrottledReplicas accepts "*" or "partition:broker,..." as Kafka's
// ThrottledReplicaListValidator does.
func validateThrottledReplicas(v string) string {
	items := splitList(v)
	if len(items) == 1 && items[0] == "*" {
		return ""
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		_, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		_, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil {
			return "must be the wildcard (*) or a list of partitionId:brokerId pairs"
		}
	}
	return ""
}

var kafkaVersionRE = regexp.MustCompile(`^\d+\.\d+(\.\d+)?(-IV\d+)?$`)

func validateKafkaVersion(v string) string {
	if !kafkaVersionRE.MatchString(v) {
		return "must be a Kafka version such as 3.0-IV1"
	}
	return ""
}
