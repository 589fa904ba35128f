package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a config error carrying the Kafka error code a request handler
// should return; Error() is the message to send to the client as-is.
type Error struct {
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string { return e.Message }

// Unwrap returns the Kafka error code, so errors.Is(err, kerr.InvalidConfig) works.
func (e *Error) Unwrap() error { return e.Code }

// Topic is a topic's effective log configuration (Kafka's LogConfig). It is a
// plain value; callers copy it freely.
type Topic struct {
	CleanupPolicyCompact        bool    `config:"cleanup.policy"`
	CleanupPolicyDelete         bool    `config:"cleanup.policy"`
	CompressionType             string  `config:"compression.type"` // uncompressed, zstd, lz4, snappy, gzip or producer
	CompressionGzipLevel        int32   `config:"compression.gzip.level"`
	CompressionLz4Level         int32   `config:"compression.lz4.level"`
	CompressionZstdLevel        int32   `config:"compression.zstd.level"`
	DeleteRetentionMs           int64   `config:"delete.retention.ms"`
	FileDeleteDelayMs           int64   `config:"file.delete.delay.ms"`
	FlushMessages               int64   `config:"flush.messages"`
	FlushMs                     int64   `config:"flush.ms"`
	IndexIntervalBytes          int32   `config:"index.interval.bytes"`
	MaxCompactionLagMs          int64   `config:"max.compaction.lag.ms"`
	MaxMessageBytes             int32   `config:"max.message.bytes"`
	MessageDownconversionEnable bool    `config:"message.downconversion.enable"`                                       // Fetch v0-v3 may down-convert (Kafka 3.9's rule)
	MessageTimestampType        string  `config:"message.timestamp.type"`                                              // CreateTime or LogAppendTime
	MessageTimestampBeforeMaxMs int64   `config:"message.timestamp.before.max.ms,message.timestamp.difference.max.ms"` // falls back to message.timestamp.difference.max.ms (KIP-937)
	MessageTimestampAfterMaxMs  int64   `config:"message.timestamp.after.max.ms,message.timestamp.difference.max.ms"`  // likewise
	MinCleanableDirtyRatio      float64 `config:"min.cleanable.dirty.ratio"`
	MinCompactionLagMs          int64   `config:"min.compaction.lag.ms"`
	MinInsyncReplicas           int32   `config:"min.insync.replicas"`
	Preallocate                 bool    `config:"preallocate"`
	RetentionBytes              int64   `config:"retention.bytes"` // -1: unlimited
	RetentionMs                 int64   `config:"retention.ms"`    // -1: forever
	SegmentBytes                int64   `config:"segment.bytes"`   // an int in Kafka
	SegmentIndexBytes           int32   `config:"segment.index.bytes"`
	SegmentJitterMs             int64   `config:"segment.jitter.ms"`
	SegmentMs                   int64   `config:"segment.ms"`
	UncleanLeaderElectionEnable bool    `config:"unclean.leader.election.enable"`
	RemoteStorageEnable         bool    `config:"remote.storage.enable"`
	RemoteLogCopyDisable        bool    `config:"remote.log.copy.disable"`
	RemoteLogDeleteOnDisable    bool    `config:"remote.log.delete.on.disable"`
	LocalRetentionMs            int64   `config:"local.retention.ms"`
	LocalRetentionBytes         int64   `config:"local.retention.bytes"`
	// LeaderThrottledReplicas and FollowerThrottledReplicas are
	// leader.replication.throttled.replicas and
	// follower.replication.throttled.replicas.
	LeaderThrottledReplicas   ThrottledReplicas `config:"leader.replication.throttled.replicas"`
	FollowerThrottledReplicas ThrottledReplicas `config:"follower.replication.throttled.replicas"`

	// KeySchemaValidation and ValueSchemaValidation are the broker-side
	// schema checks (either name of each enables it).
	KeySchemaValidation   bool `config:"confluent.key.schema.validation,vltava.key.schema.validation"`
	ValueSchemaValidation bool `config:"confluent.value.schema.validation,vltava.value.schema.validation"`

	// PreserveOffsets (vltava.preserve.offsets) marks the target topic of
	// an offset-preserving mirror: produced batches keep their offsets.
	PreserveOffsets bool `config:"vltava.preserve.offsets"`

	// Overridden lists the topic-level keys set on the topic itself.
	Overridden []string
}

// ThrottledReplicas is a parsed *.replication.throttled.replicas list:
// partitionId:brokerId pairs, or "*" for every replica of the topic.
type ThrottledReplicas struct {
	All   bool
	pairs map[[2]int32]bool // {partition, broker}
}

// Has reports whether the replica of partition on broker is listed, which
// is how Kafka's QuotaConfigHandler decides a broker throttles a partition.
func (t ThrottledReplicas) Has(partition, broker int32) bool {
	return t.All || t.pairs[[2]int32{partition, broker}]
}

// parseThrottledReplicas reads a list already validated by
// validateThrottledReplicas.
func parseThrottledReplicas(v string) ThrottledReplicas {
	items := splitList(v)
	if len(items) == 1 && items[0] == "*" {
		return ThrottledReplicas{All: true}
	}
	var t ThrottledReplicas
	for _, it := range items {
		p, b, _ := strings.Cut(it, ":")
		if t.pairs == nil {
			t.pairs = map[[2]int32]bool{}
		}
		t.pairs[[2]int32{int32(parseInt(p)), int32(parseInt(b))}] = true
	}
	return t
}

// ValidateTopicConfigs checks topic-level overrides as CreateTopics and
// AlterConfigs do: unknown names and bad values are errors wrapping
// kerr.InvalidConfig with Kafka's messages.
func ValidateTopicConfigs(overrides map[string]string) error {
	for _, k := range sortedNames(overrides) {
		d, ok := topicDefs[k]
		if !ok {
			return &Error{Code: kerr.InvalidConfig, Message: "Unknown topic config name: " + k}
		}
		if err := d.Validate(overrides[k]); err != nil {
			return err
		}
	}
	if v, ok := overrides["remote.storage.enable"]; ok && parseBool(v) {
		// Kafka rejects this unless remote.log.storage.system.enable is set
		// (ValidateTopicConfigsFor).
		return &Error{Code: kerr.InvalidConfig, Message: "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."}
	}
	if err := checkTopicSupport(overrides); err != nil {
		return err
	}
	values := map[string]string{}
	for _, k := range []string{"min.compaction.lag.ms", "max.compaction.lag.ms"} {
		values[k] = topicDefs[k].Default
		if v, ok := overrides[k]; ok {
			values[k] = v
		}
	}
	return checkCompactionLag(values)
}

// checkCompactionLag is LogConfig's cross-check of the compaction lag bounds.
func checkCompactionLag(values map[string]string) error {
	minLag, maxLag := parseInt(values["min.compaction.lag.ms"]), parseInt(values["max.compaction.lag.ms"])
	if minLag > maxLag {
		return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf(
			"conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", minLag, maxLag)}
	}
	return nil
}

// ValidateTopicConfigsFor is ValidateTopicConfigs on a broker: with
// remote.log.storage.system.enable, topics may set remote.storage.enable
// (not on compacted topics, as Kafka), and local.retention.* may not exceed
// the topic's retention.*.
func ValidateTopicConfigsFor(b *Broker, overrides map[string]string) error {
	v, ok := overrides["remote.storage.enable"]
	if !ok || !parseBool(v) || b == nil || !b.RemoteLogStorageSystemEnable {
		return ValidateTopicConfigs(overrides)
	}
	if err := topicDefs["remote.storage.enable"].Validate(v); err != nil {
		return err
	}
	rest := make(map[string]string, len(overrides))
	for k, v := range overrides {
		if k != "remote.storage.enable" {
			rest[k] = v
		}
	}
	if err := ValidateTopicConfigs(rest); err != nil {
		return err
	}
	values := topicValues(b, nil, nil, overrides)
	if strings.Contains(values["cleanup.policy"], "compact") {
		return &Error{Code: kerr.InvalidConfig, Message: "Remote log storage is unsupported for the compacted topics"}
	}
	for _, k := range []string{"ms", "bytes"} {
		local, total := parseInt(values["local.retention."+k]), parseInt(values["retention."+k])
		if local != -2 && total != -1 && (local == -1 || local > total) {
			return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("Invalid value %d for configuration local.retention.%s: Value must not be more than retention.%s property value (%d)", local, k, k, total)}
		}
		// With copying stopped (KIP-950) nothing more reaches the remote
		// tier, so the local log is kept by the total retention.
		if parseBool(values["remote.log.copy.disable"]) && local != -2 && local != total {
			return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("With remote.log.copy.disable=true, local.retention.%s (%d) must be -2 or equal retention.%s (%d): no more segments are copied to remote storage", k, local, k, total)}
		}
	}
	return nil
}

// ValidateTopicChange checks a change of a topic's overrides from old to
// next for what the new set alone cannot show (KIP-950): tiering is turned
// off only with remote.log.delete.on.disable=true, which deletes the remote
// data; keeping it readable is remote.log.copy.disable=true.
func ValidateTopicChange(old, next map[string]string) error {
	if parseBool(old["remote.storage.enable"]) && !parseBool(next["remote.storage.enable"]) && !parseBool(next["remote.log.delete.on.disable"]) {
		return &Error{Code: kerr.InvalidConfig, Message: "Turning remote.storage.enable off needs remote.log.delete.on.disable=true, which deletes the topic's remote data; to keep reading it and stop copying, set remote.storage.enable=true and remote.log.copy.disable=true instead"}
	}
	return nil
}

// TopicValidator is ValidateTopicConfigsFor bound to a broker, for the
// controller's topic rules.
func TopicValidator(b *Broker) func(map[string]string) error {
	return func(overrides map[string]string) error { return ValidateTopicConfigsFor(b, overrides) }
}

// ResolveTopic computes a topic's effective config with Kafka's precedence:
// topic override > dynamic cluster-default broker config (e.g. log.retention.ms
// set with AlterConfigs on the default broker resource) > static broker config
// > default. Within the broker layers, log.retention.ms beats .minutes beats
// .hours (and likewise for log.roll.*), after a dynamic value has displaced
// all its synonyms from the static layer as DynamicBrokerConfig does.
func ResolveTopic(b *Broker, dynamicBroker map[string]string, overrides map[string]string) (Topic, error) {
	if err := ValidateTopicConfigsFor(b, overrides); err != nil {
		return Topic{}, err
	}
	values := topicValues(b, nil, dynamicBroker, overrides)
	if err := checkCompactionLag(values); err != nil {
		return Topic{}, err
	}
	i64 := func(k string) int64 { return parseInt(values[k]) }
	i32 := func(k string) int32 { return int32(parseInt(values[k])) }
	t := Topic{
		CompressionType:             values["compression.type"],
		CompressionGzipLevel:        i32("compression.gzip.level"),
		CompressionLz4Level:         i32("compression.lz4.level"),
		CompressionZstdLevel:        i32("compression.zstd.level"),
		DeleteRetentionMs:           i64("delete.retention.ms"),
		FileDeleteDelayMs:           i64("file.delete.delay.ms"),
		FlushMessages:               i64("flush.messages"),
		FlushMs:                     i64("flush.ms"),
		IndexIntervalBytes:          i32("index.interval.bytes"),
		MaxCompactionLagMs:          i64("max.compaction.lag.ms"),
		MaxMessageBytes:             i32("max.message.bytes"),
		MessageDownconversionEnable: parseBool(values["message.downconversion.enable"]),
		MessageTimestampType:        values["message.timestamp.type"],
		MessageTimestampBeforeMaxMs: i64("message.timestamp.before.max.ms"),
		MessageTimestampAfterMaxMs:  i64("message.timestamp.after.max.ms"),
		MinCleanableDirtyRatio:      parseFloat(values["min.cleanable.dirty.ratio"]),
		MinCompactionLagMs:          i64("min.compaction.lag.ms"),
		MinInsyncReplicas:           i32("min.insync.replicas"),
		Preallocate:                 parseBool(values["preallocate"]),
		RetentionBytes:              i64("retention.bytes"),
		RetentionMs:                 i64("retention.ms"),
		SegmentBytes:                i64("segment.bytes"),
		SegmentIndexBytes:           i32("segment.index.bytes"),
		SegmentJitterMs:             i64("segment.jitter.ms"),
		SegmentMs:                   i64("segment.ms"),
		UncleanLeaderElectionEnable: parseBool(values["unclean.leader.election.enable"]),
		RemoteStorageEnable:         parseBool(values["remote.storage.enable"]),
		RemoteLogCopyDisable:        parseBool(values["remote.log.copy.disable"]),
		RemoteLogDeleteOnDisable:    parseBool(values["remote.log.delete.on.disable"]),
		LocalRetentionMs:            i64("local.retention.ms"),
		LocalRetentionBytes:         i64("local.retention.bytes"),
		LeaderThrottledReplicas:     parseThrottledReplicas(values["leader.replication.throttled.replicas"]),
		FollowerThrottledReplicas:   parseThrottledReplicas(values["follower.replication.throttled.replicas"]),
		KeySchemaValidation:         parseBool(values["confluent.key.schema.validation"]) || parseBool(values["vltava.key.schema.validation"]),
		ValueSchemaValidation:       parseBool(values["confluent.value.schema.validation"]) || parseBool(values["vltava.value.schema.validation"]),
		PreserveOffsets:             parseBool(values["vltava.preserve.offsets"]),
		Overridden:                  sortedNames(overrides),
	}
	for _, p := range splitList(values["cleanup.policy"]) {
		t.CleanupPolicyCompact = t.CleanupPolicyCompact || p == "compact"
		t.CleanupPolicyDelete = t.CleanupPolicyDelete || p == "delete"
	}
	// KIP-937: the deprecated difference bound still applies to whichever of
	// before/after was left at its (unbounded) default.
	diff := i64("message.timestamp.difference.max.ms")
	if values["message.timestamp.before.max.ms"] == longMax {
		t.MessageTimestampBeforeMaxMs = diff
	}
	if values["message.timestamp.after.max.ms"] == longMax {
		t.MessageTimestampAfterMaxMs = diff
	}
	return t, nil
}

// topicValues returns every topic key's effective value as Kafka prints it.
func topicValues(b *Broker, perBroker, dynamicDefault, overrides map[string]string) map[string]string {
	merged := mergeLayers(b.Raw, dynamicDefault, perBroker)
	out := make(map[string]string, len(topicDefs))
	for name, d := range topicDefs {
		if v, ok := overrides[name]; ok {
			out[name] = canonical(d.Type, v)
		} else {
			out[name] = brokerTopicDefault(merged, name)
		}
	}
	return out
}

// mergeLayers applies dynamic broker config layers over the static props the
// way DynamicBrokerConfig.overrideProps does: a key set in a higher layer
// first removes all of its synonyms from the layers below (so a dynamic
// log.retention.hours beats a static log.retention.ms).
func mergeLayers(static map[string]string, layers ...map[string]string) map[string]string {
	out := make(map[string]string, len(static))
	for k, v := range static {
		out[k] = v
	}
	for _, layer := range layers {
		for k := range layer {
			for _, s := range brokerSynonymsOf(k) {
				delete(out, s)
			}
		}
		for k, v := range layer {
			out[k] = v
		}
	}
	return out
}

// ValidateBrokerDynamic checks changes to one broker's dynamic config
// (AlterConfigs on resource BROKER with a broker id).
func ValidateBrokerDynamic(changes map[string]string) error {
	return validateBrokerDynamic(changes, true)
}

// ValidateBrokerDynamicDefault checks changes to the cluster-wide dynamic
// default (AlterConfigs on resource BROKER with an empty name), which
// additionally rejects per-broker-only keys such as listeners.
func ValidateBrokerDynamicDefault(changes map[string]string) error {
	return validateBrokerDynamic(changes, false)
}

// dynamicThreadKeys must stay at least 1 when changed dynamically
// (DynamicThreadPool.validateReconfiguration).
var dynamicThreadKeys = map[string]bool{
	"num.io.threads": true, "num.replica.fetchers": true, "num.recovery.threads.per.data.dir": true,
	"background.threads": true, "num.network.threads": true,
}

func validateBrokerDynamic(changes map[string]string, perBroker bool) error {
	var readOnly, listenerOnly, perBrokerOnly []string
	for _, k := range sortedNames(changes) {
		d := lookupBrokerDef(k)
		if d == nil {
			if why := unknownRefusal(k); why != "" && changes[k] != "" {
				return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("%s: %s; it is not accepted", k, why)}
			}
			// Like Kafka, other unknown keys (plugin configs) are stored
			// and ignored.
			continue
		}
		base, prefixed := listenerBase(k)
		switch {
		case !prefixed && d.ReadOnly:
			readOnly = append(readOnly, k)
		case !prefixed && listenerOnlyKeys[k]:
			listenerOnly = append(listenerOnly, k)
		case !perBroker && (perBrokerOnlyKeys[k] || (prefixed && base != "max.connections" && base != "max.connection.creation.rate" && base != "num.network.threads")):
			perBrokerOnly = append(perBrokerOnly, k)
		}
	}
	if len(readOnly) > 0 {
		return &Error{Code: kerr.InvalidConfig, Message: "Cannot update these configs dynamically: " + setString(readOnly)}
	}
	if len(listenerOnly) > 0 {
		return &Error{Code: kerr.InvalidConfig, Message: "These security configs can be dynamically updated only per-listener using the listener prefix: " + setString(listenerOnly)}
	}
	if len(perBrokerOnly) > 0 {
		return &Error{Code: kerr.InvalidConfig, Message: "Cannot update these configs at default cluster level, broker id must be specified: " + setString(perBrokerOnly)}
	}
	for _, k := range sortedNames(changes) {
		d := lookupBrokerDef(k)
		if d == nil {
			continue
		}
		v := changes[k]
		if err := checkValue(k, d.Type, d.rule, v, true); err != nil {
			return err
		}
		base, prefixed := listenerBase(k)
		if (dynamicThreadKeys[k] || dynamicThreadKeys[base]) && parseInt(v) < 1 {
			return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("Dynamic thread count update validation failed for %s=%s, value should be at least 1", k, v)}
		}
		if (k == "max.connection.creation.rate" || base == "max.connection.creation.rate") && v != "" && parseInt(v) == 0 {
			// Refused at start too (ParseBroker): the server would read 0
			// as no limit at all.
			return &Error{Code: kerr.InvalidConfig, Message: k + ": 0 would hold back every connection but the inter-broker ones; set at least 1"}
		}
		if prefixed && base == "max.connections" && v != "" && parseInt(v) < 1 {
			// ListenerConnectionQuota.validateReconfiguration: a
			// listener's limit changed at run time must be at least 1
			// (at start-up Kafka takes 0, which holds back every new
			// connection of the listener, and so does Vltava).
			return &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("%s: Invalid max.connections %s; set at least 1", k, strings.TrimSpace(v))}
		}
	}
	if lp, ok := changes["listener.security.protocol.map"]; ok {
		if _, err := parseProtocolMap(lp); err != nil {
			return &Error{Code: kerr.InvalidConfig, Message: err.Error()}
		}
	}
	return checkDynamicSupport(changes)
}

// setString prints names the way Scala prints a Set, as Kafka's messages do.
func setString(names []string) string { return "Set(" + strings.Join(names, ", ") + ")" }

// IsInvalidConfig reports whether err carries Kafka's INVALID_CONFIG code.
func IsInvalidConfig(err error) bool { return errors.Is(err, kerr.InvalidConfig) }
