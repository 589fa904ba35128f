package config

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Status says what Vltava does with a config key. Every broker and topic key
// has one: the exceptions are listed in keyStatus and topicKeyStatus with
// their reasons, every other key is Honoured and TestEveryKeyHasATruthfulStatus
// requires a reader of it outside this package. docs/CONFIGURATION.md prints
// the status, and start-up, CreateTopics and AlterConfigs enforce it, so no
// key is accepted and then ignored.
type Status int8

const (
	// StatusUnset is the status of a name that is not a config key.
	StatusUnset Status = iota
	// Honoured: the value takes effect as in Kafka.
	Honoured
	// DefaultOnly: only the default is accepted; any other value stops
	// start-up (broker keys) or fails the request with INVALID_CONFIG (topic
	// keys, dynamic broker configs), naming the key and the reason.
	DefaultOnly
	// KafkaIgnores: Apache Kafka itself accepts the key and ignores it (a
	// deprecated setting), so accepting it unchanged is Kafka's behaviour.
	KafkaIgnores
)

// String is the wording of the docs' "Support" column.
func (s Status) String() string {
	switch s {
	case Honoured:
		return "honoured"
	case DefaultOnly:
		return "default only"
	case KafkaIgnores:
		return "ignored, as by Kafka"
	}
	return "unclassified"
}

// Support is a key's status with the reason for anything but Honoured.
type Support struct {
	Status Status
	// Reason says why a value other than the default is refused, or why
	// Kafka ignores the key; it follows the key name in error messages.
	Reason string
	// Dynamic is true when Vltava applies a change made at run time with
	// AlterConfigs (broker keys only). Kafka-dynamic keys without it are
	// refused dynamically rather than stored and never read.
	Dynamic bool
}

// Reasons shared by several keys.
const (
	whyTLS         = "this TLS setting is not supported (Java's JSSE-specific settings have no Go equivalent)"
	whySASL        = "this SASL setting is not supported"
	whyAuthorizer  = "only the StandardAuthorizer's keys (authorizer.class.name, super.users, allow.everyone.if.no.acl.found) are supported"
	whyPlugin      = "Java plugin classes cannot be loaded; Vltava has no plugin interface"
	whyThreads     = "Vltava has no fixed thread pools: every connection has its own goroutines and background work runs on goroutines of its own"
	whyTiered      = "tiered storage is not supported"
	whyPurgatory   = "Vltava has no purgatory to purge: parked requests are woken by the events they wait for"
	whyMetadataLog = "the metadata quorum (hashicorp/raft) manages its own log segments and snapshots"
	whyQuorum      = "the metadata quorum (hashicorp/raft) takes its timing from controller.quorum.election.timeout.ms"
	whyCleanerBufs = "the log cleaner sizes its read/write buffers itself; log.cleaner.dedupe.buffer.size bounds its memory"
	whyOutbound    = "outbound connection set-up is bounded by replica.socket.timeout.ms (follower fetchers) and each caller's own timeout"
)

// Reasons of the replication quota windows.
const (
	whyReplicationWindow = "the replication throttles measure their rates over Kafka's default window, 11 samples of 1 s"
	whyMoveWindow        = "log dir moves are paced on a timeline of their own (replica.alter.log.dirs.io.max.bytes.per.second), not measured over sampled windows"
)

func defaultOnly(why string) Support { return Support{Status: DefaultOnly, Reason: why} }

// keyStatus lists the broker keys (by their un-prefixed names) that are not
// simply honoured, and the honoured ones Vltava applies at run time.
var keyStatus = map[string]Support{
	// KRaft and quorum.
	"controller.quorum.fetch.timeout.ms":              defaultOnly(whyQuorum),
	"controller.quorum.election.backoff.max.ms":       defaultOnly(whyQuorum),
	"controller.quorum.append.linger.ms":              defaultOnly(whyQuorum),
	"controller.quorum.request.timeout.ms":            defaultOnly(whyQuorum),
	"controller.quorum.retry.backoff.ms":              defaultOnly(whyQuorum),
	"metadata.log.segment.bytes":                      defaultOnly(whyMetadataLog),
	"metadata.log.segment.ms":                         defaultOnly(whyMetadataLog),
	"metadata.max.retention.bytes":                    defaultOnly(whyMetadataLog),
	"metadata.max.retention.ms":                       defaultOnly(whyMetadataLog),
	"metadata.max.idle.interval.ms":                   defaultOnly("the active controller does not append no-op records; raft heartbeats keep followers current"),
	"metadata.log.max.record.bytes.between.snapshots": defaultOnly(whyMetadataLog),
	"metadata.log.max.snapshot.interval.ms":           defaultOnly(whyMetadataLog),
	"eligible.leader.replicas.enable":                 defaultOnly("eligible leader replicas (KIP-966) are not supported"),

	// Network.
	"socket.listen.backlog.size":             defaultOnly("the accept backlog is the operating system's (Go's net package sets it from somaxconn)"),
	"socket.connection.setup.timeout.ms":     defaultOnly(whyOutbound),
	"socket.connection.setup.timeout.max.ms": defaultOnly(whyOutbound),
	"queued.max.requests":                    defaultOnly("each connection reads at most one request ahead of the one being handled; there is no shared request queue"),
	"queued.max.request.bytes":               defaultOnly("each connection reads at most one request ahead of the one being handled; there is no shared request queue"),
	"num.network.threads":                    defaultOnly(whyThreads),
	"num.io.threads":                         defaultOnly(whyThreads),
	"background.threads":                     defaultOnly(whyThreads),
	"max.request.partition.size.limit":       defaultOnly("no request is limited in the partitions it may name"),

	// Security.
	// The ssl.* key and trust stores are reloaded when changed per listener
	// (listener.name.<l>.ssl.keystore.location and the like), as Kafka's
	// SslConfigs.RECONFIGURABLE_CONFIGS.
	"ssl.keystore.type":              {Status: Honoured, Dynamic: true},
	"ssl.keystore.location":          {Status: Honoured, Dynamic: true},
	"ssl.keystore.password":          {Status: Honoured, Dynamic: true},
	"ssl.key.password":               {Status: Honoured, Dynamic: true},
	"ssl.keystore.key":               {Status: Honoured, Dynamic: true},
	"ssl.keystore.certificate.chain": {Status: Honoured, Dynamic: true},
	"ssl.truststore.type":            {Status: Honoured, Dynamic: true},
	"ssl.truststore.location":        {Status: Honoured, Dynamic: true},
	"ssl.truststore.password":        {Status: Honoured, Dynamic: true},
	"ssl.truststore.certificates":    {Status: Honoured, Dynamic: true},

	// Log manager.
	"num.recovery.threads.per.data.dir":                        defaultOnly("logs are recovered 2×GOMAXPROCS at a time, whatever the number of log directories"),
	"log.flush.start.offset.checkpoint.interval.ms":            defaultOnly("the log-start-offset checkpoint is written with the recovery-point checkpoint, every log.flush.offset.checkpoint.interval.ms"),
	"log.message.format.version":                               {Status: KafkaIgnores, Reason: "deprecated; since Kafka 3.0 the record format is always v2"},
	"log.dir.failure.timeout.ms":                               defaultOnly("a failed log dir is reported in an immediate heartbeat, retried with every heartbeat; the broker does not shut down when the report is late"),
	"log.initial.task.delay.ms":                                defaultOnly("the log manager's periodic tasks first run one interval after start-up"),
	"create.topic.policy.class.name":                           defaultOnly(whyPlugin),
	"client.quota.callback.class":                              defaultOnly(whyPlugin),
	"alter.config.policy.class.name":                           defaultOnly(whyPlugin),
	"remote.log.storage.system.enable":                         {Status: Honoured},
	"remote.log.storage.manager.class.name":                    {Status: Honoured},
	"remote.log.metadata.manager.class.name":                   defaultOnly("remote segment metadata is kept in __remote_log_metadata by the built-in manager"),
	"remote.log.storage.manager.impl.prefix":                   defaultOnly("the remote storage settings are read under rsm.config."),
	"remote.log.metadata.manager.impl.prefix":                  defaultOnly("the metadata manager's settings are read under rlmm.config."),
	"remote.log.manager.task.interval.ms":                      {Status: Honoured},
	"remote.log.manager.thread.pool.size":                      defaultOnly("copies and expiries run on one goroutine per node, one partition at a time"),
	"remote.fetch.max.wait.ms":                                 {Status: Honoured},
	"remote.log.storage.manager.class.path":                    defaultOnly(whyPlugin),
	"remote.log.metadata.manager.class.path":                   defaultOnly(whyPlugin),
	"remote.log.metadata.manager.listener.name":                defaultOnly("the built-in metadata manager reads and writes __remote_log_metadata as a client of the node itself; no listener is chosen"),
	"remote.log.metadata.custom.metadata.max.bytes":            defaultOnly("the built-in S3 store attaches no custom metadata to segments"),
	"remote.log.index.file.cache.total.size.bytes":             defaultOnly("indexes fetched from the remote tier are kept in memory (offset indexes) or fetched per read (time and transaction indexes); only chunks are cached on disk, bounded by rsm.config.fetch.chunk.cache.size"),
	"remote.log.manager.copier.thread.pool.size":               defaultOnly("copies run on one goroutine per node, one partition at a time"),
	"remote.log.manager.expiration.thread.pool.size":           defaultOnly("expiries run on one goroutine per node, one partition at a time"),
	"remote.log.manager.follower.thread.pool.size":             defaultOnly("followers learn what the remote tier holds from __remote_log_metadata, with no task of their own"),
	"remote.log.manager.task.retry.backoff.ms":                 defaultOnly("a failed copy or expiry is retried at the next remote.log.manager.task.interval.ms"),
	"remote.log.manager.task.retry.backoff.max.ms":             defaultOnly("a failed copy or expiry is retried at the next remote.log.manager.task.interval.ms"),
	"remote.log.manager.task.retry.jitter":                     defaultOnly("a failed copy or expiry is retried at the next remote.log.manager.task.interval.ms"),
	"remote.log.reader.threads":                                defaultOnly("remote reads run on the fetching connection's goroutine, not on a reader pool"),
	"remote.log.reader.max.pending.tasks":                      defaultOnly("remote reads run on the fetching connection's goroutine, not on a queued reader pool"),
	"remote.list.offsets.request.timeout.ms":                   defaultOnly("a ListOffsets that reads the remote tier waits for it at most remote.fetch.max.wait.ms"),
	"remote.log.manager.copy.max.bytes.per.second":             {Status: Honoured, Dynamic: true},
	"remote.log.manager.copy.quota.window.num":                 {Status: Honoured},
	"remote.log.manager.copy.quota.window.size.seconds":        {Status: Honoured},
	"remote.log.manager.fetch.max.bytes.per.second":            {Status: Honoured, Dynamic: true},
	"remote.log.manager.fetch.quota.window.num":                {Status: Honoured},
	"remote.log.manager.fetch.quota.window.size.seconds":       {Status: Honoured},
	"rlmm.config.remote.log.metadata.topic.num.partitions":     {Status: Honoured},
	"rlmm.config.remote.log.metadata.topic.replication.factor": {Status: Honoured},
	"rlmm.config.remote.log.metadata.topic.retention.ms":       {Status: Honoured},

	// Quota windows: the replication throttles (internal/replication)
	// keep Kafka's default, log dir moves have none; the client quotas'
	// windows are honoured.
	"replication.quota.window.num":                         defaultOnly(whyReplicationWindow),
	"replication.quota.window.size.seconds":                defaultOnly(whyReplicationWindow),
	"alter.log.dirs.replication.quota.window.num":          defaultOnly(whyMoveWindow),
	"alter.log.dirs.replication.quota.window.size.seconds": defaultOnly(whyMoveWindow),

	// Log cleaner.
	"log.cleaner.io.buffer.size": defaultOnly(whyCleanerBufs),

	// Replication.
	"replica.high.watermark.checkpoint.interval.ms":    defaultOnly("high watermarks are checkpointed with the recovery points, every log.flush.offset.checkpoint.interval.ms"),
	"replica.selector.class":                           defaultOnly(whyPlugin + " (fetch from follower, KIP-392, is not supported yet)"),
	"fetch.purgatory.purge.interval.requests":          defaultOnly(whyPurgatory),
	"producer.purgatory.purge.interval.requests":       defaultOnly(whyPurgatory),
	"delete.records.purgatory.purge.interval.requests": defaultOnly(whyPurgatory),
	"controller.socket.timeout.ms":                     defaultOnly("the broker-to-controller channel keeps its own timeouts"),
	"inter.broker.protocol.version":                    {Status: KafkaIgnores, Reason: "ignored in KRaft mode, where the controller manages metadata.version"},

	"max.connections":                     {Status: Honoured, Dynamic: true},
	"max.connections.per.ip":              {Status: Honoured, Dynamic: true},
	"max.connections.per.ip.overrides":    {Status: Honoured, Dynamic: true},
	"max.connection.creation.rate":        {Status: Honoured, Dynamic: true},
	"leader.replication.throttled.rate":   {Status: Honoured, Dynamic: true},
	"follower.replication.throttled.rate": {Status: Honoured, Dynamic: true},

	// Groups.

	// Transactions.
	"transaction.partition.verification.enable": {Status: Honoured, Dynamic: true},

	// SASL mechanisms OAUTHBEARER and GSSAPI: the sasl.oauthbearer.* and
	// sasl.kerberos.* keys above are honoured (read by
	// internal/security/oauthbearer and gssapi), except the broker's own
	// Kerberos login.
	"sasl.kerberos.kinit.cmd":                  defaultOnly(whyNoKerberosLogin),
	"sasl.kerberos.ticket.renew.window.factor": defaultOnly(whyNoKerberosLogin),
	"sasl.kerberos.ticket.renew.jitter":        defaultOnly(whyNoKerberosLogin),
	"sasl.kerberos.min.time.before.relogin":    defaultOnly(whyNoKerberosLogin),
}

// whyNoKerberosLogin: the broker accepts GSSAPI with the keys of its keytab
// and holds no ticket of its own to renew.
const whyNoKerberosLogin = "the broker accepts GSSAPI with its keytab alone and never logs in to the KDC, so it has no ticket to renew"

// topicKeyStatus classifies the topic keys that are not honoured; every
// other topic key is.
var topicKeyStatus = map[string]Support{
	"local.retention.bytes":                 {Status: Honoured},
	"local.retention.ms":                    {Status: Honoured},
	"remote.log.copy.disable":               {Status: Honoured},
	"remote.log.delete.on.disable":          {Status: Honoured},
	"remote.storage.enable":                 {Status: Honoured},
	"message.format.version":                {Status: KafkaIgnores, Reason: "deprecated; since Kafka 3.0 the record format is always v2"},
	"preallocate":                           defaultOnly("segment files are not preallocated"),
	"confluent.key.subject.name.strategy":   defaultOnly(whySubjectNaming),
	"confluent.value.subject.name.strategy": defaultOnly(whySubjectNaming),
}

// methodReaders names the *Broker methods that resolve keys at run time
// (with the dynamic layers) rather than through a field; the status test
// counts a key as read when its method is called outside this package.
var methodReaders = map[string][]string{
	"ReplicationThrottledRates": {"leader.replication.throttled.rate", "follower.replication.throttled.rate"},
	"RemoteLogQuotaRates":       {"remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second"},
	"ConnectionQuotas":          {"max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "max.connection.creation.rate"},
}

// unknownRefusal says why a key Vltava does not define is refused rather
// than logged and skipped like other unknown keys: security and plugin
// settings Kafka would act on (principal.builder.class, the ssl.*/sasl.*
// family, authorizer and quota callbacks, metric reporters) must not be
// silently dropped. "" for any other unknown key.
func unknownRefusal(name string) string {
	if _, ok := strings.CutPrefix(name, "admin."); ok {
		// admin.ssl.provider, admin.authentication.method's cousins:
		// the admin listener's keys are all defined (httpServiceDefs).
		return "not a setting of the admin listener (docs/CONFIGURATION.md lists them)"
	}
	if _, ok := strings.CutPrefix(name, "schema.registry."); ok {
		// The embedded registry's keys are all defined
		// (schemaRegistryDefs, with httpServiceDefs' ssl.* and
		// authentication.*).
		return "not a setting of the embedded schema registry (docs/CONFIGURATION.md lists them)"
	}
	if _, ok := strings.CutPrefix(name, "console."); ok {
		// The same for the web console's keys.
		return "not a setting of the web console (docs/CONFIGURATION.md lists them)"
	}
	base := name
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if _, after, ok := strings.Cut(rest, "."); ok {
			base = after
			// listener.name.<l>.<mechanism>.sasl.jaas.config and the like.
			if i := strings.Index(base, ".sasl."); i >= 0 {
				base = base[i+1:]
			}
		}
	}
	switch {
	case strings.HasPrefix(base, "ssl."):
		return whyTLS
	case strings.HasPrefix(base, "sasl.") || strings.HasPrefix(base, "delegation.token."):
		return whySASL
	case strings.HasPrefix(base, "authorizer."):
		return whyAuthorizer
	case strings.HasSuffix(base, ".class") || strings.HasSuffix(base, ".class.name") || strings.HasSuffix(base, ".classes") ||
		base == "metric.reporters" || base == "kafka.metrics.reporters" || base == "security.providers":
		return whyPlugin
	}
	return ""
}

// BrokerSupport returns what Vltava does with a broker key; listener-prefixed
// keys (listener.name.<l>.<key>) take their base key's status. A broker key
// that provides a topic config's default shares that topic key's status.
func BrokerSupport(name string) Support {
	d := lookupBrokerDef(name)
	if d == nil {
		return Support{}
	}
	if s, ok := keyStatus[d.Name]; ok {
		return s
	}
	if d.TopicSynonym != "" {
		s := TopicSupport(d.TopicSynonym)
		// The partition manager resolves topic configs against the
		// dynamic broker configs, so log defaults apply at run time.
		s.Dynamic = s.Status == Honoured
		return s
	}
	return Support{Status: Honoured}
}

// TopicSupport returns what Vltava does with a topic key.
func TopicSupport(name string) Support {
	if _, ok := topicDefs[name]; !ok {
		return Support{}
	}
	if s, ok := topicKeyStatus[name]; ok {
		return s
	}
	return Support{Status: Honoured}
}

// isDefault reports whether raw is the key's default value (or, for a null
// default, empty). Values are compared in Kafka's printed form, so " 8" and
// "8", or "1.7976931348623157E308" and "1.7976931348623157e308", agree.
func isDefault(d *Def, raw string) bool {
	v := strings.TrimSpace(raw)
	if !d.HasDefault {
		return v == ""
	}
	if d.Type == List {
		return strings.Join(splitList(v), ",") == strings.Join(splitList(d.Default), ",")
	}
	if d.Type == Boolean {
		return parseBool(v) == parseBool(d.Default)
	}
	return canonical(d.Type, v) == canonical(d.Type, d.Default)
}

// refusal is the error for a key set to a value Vltava cannot honour.
func refusal(key string, s Support) string {
	return fmt.Sprintf("%s: %s; only its default is accepted", key, s.Reason)
}

// whyPerListener refuses listener-prefixed forms of keys Vltava applies
// broker-wide only (Kafka reads e.g. listener.name.<l>.max.connection.creation.rate
// per listener).
const whyPerListener = "per-listener overrides (listener.name.<listener>.<key>) are not supported; set the broker-wide key"

// perListenerKey reports whether a key is read per listener
// (listener.name.<l>.<key>, and for sasl.jaas.config
// listener.name.<l>.<mechanism>.sasl.jaas.config): the TLS and SASL
// settings and connections.max.reauth.ms, as Kafka's ChannelBuilders read
// them, and max.connections, as its ListenerConnectionQuota does (KIP-402;
// Broker.ConnectionQuotas).
func perListenerKey(base string) bool {
	return strings.HasPrefix(base, "ssl.") || strings.HasPrefix(base, "sasl.") || base == "connections.max.reauth.ms" || base == "max.connections"
}

// checkBrokerSupport refuses, at start-up, every DefaultOnly broker key set to
// anything but its default, and listener-prefixed forms of honoured keys.
func checkBrokerSupport(props map[string]string) []error {
	var errs []error
	for _, k := range sortedNames(props) {
		if msg := unsupportedBrokerValue(k, props[k]); msg != "" {
			errs = append(errs, &Error{Code: kerr.InvalidConfig, Message: msg})
		}
	}
	return errs
}

// unsupportedBrokerValue returns why key=value cannot be honoured, or "".
func unsupportedBrokerValue(key, value string) string {
	d := lookupBrokerDef(key)
	if d == nil {
		return ""
	}
	s := BrokerSupport(key)
	if base, prefixed := listenerBase(key); prefixed && s.Status == Honoured && !perListenerKey(base) {
		return fmt.Sprintf("%s: %s", key, whyPerListener)
	}
	if s.Status == DefaultOnly && !isDefault(d, value) {
		return refusal(key, s)
	}
	return ""
}

// checkTopicSupport refuses topic overrides Vltava cannot honour, with the
// INVALID_CONFIG Kafka returns for a config it rejects.
func checkTopicSupport(overrides map[string]string) error {
	for _, k := range sortedNames(overrides) {
		d := topicDefs[k]
		if s := TopicSupport(k); d != nil && s.Status == DefaultOnly && !isDefault(d, overrides[k]) {
			return &Error{Code: kerr.InvalidConfig, Message: refusal(k, s)}
		}
	}
	return nil
}

// checkDynamicSupport refuses dynamic broker config changes Vltava would
// store but not apply: DefaultOnly keys set to another value, and keys
// Kafka can change at run time but Vltava reads only at start-up.
func checkDynamicSupport(changes map[string]string) error {
	var notApplied []string
	for _, k := range sortedNames(changes) {
		if msg := unsupportedBrokerValue(k, changes[k]); msg != "" {
			return &Error{Code: kerr.InvalidConfig, Message: msg}
		}
		if lookupBrokerDef(k) == nil {
			continue
		}
		s := BrokerSupport(k)
		if s.Status == Honoured && !s.Dynamic {
			notApplied = append(notApplied, k)
		}
	}
	if len(notApplied) > 0 {
		return &Error{Code: kerr.InvalidConfig, Message: "Vltava reads these configs only at start-up; set them in server.properties and restart: " + setString(notApplied)}
	}
	return nil
}
