package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Broker is the typed, validated broker configuration. It is built once by
// ParseBroker/LoadBroker and is read-only afterwards, so it may be shared
// between goroutines without locking. Dynamic (AlterConfigs) values are not
// folded in here: they are passed alongside to ResolveTopic and the Describe
// functions, which apply Kafka's layering.
type Broker struct {
	// KRaft identity.
	NodeID                  int32    `config:"node.id,broker.id"`
	ProcessRoles            []string `config:"process.roles"` // "broker", "controller"
	BrokerRack              string   `config:"broker.rack"`   // "" if unset
	ControllerListenerNames []string `config:"controller.listener.names"`
	ControllerQuorumVoters  string   // raw config value
	Voters                  []Voter  `config:"controller.quorum.voters"`

	// Network.
	Listeners                   []Listener `config:"listeners,listener.security.protocol.map"`
	AdvertisedListeners         []Listener `config:"advertised.listeners"` // explicit, or the non-controller Listeners
	ListenerSecurityProtocolMap map[string]string
	InterBrokerListenerName     string `config:"inter.broker.listener.name,security.inter.broker.protocol"`
	SocketSendBufferBytes       int32  `config:"socket.send.buffer.bytes"`
	SocketReceiveBufferBytes    int32  `config:"socket.receive.buffer.bytes"`
	SocketRequestMaxBytes       int32  `config:"socket.request.max.bytes"`
	ConnectionsMaxIdleMs        int64  `config:"connections.max.idle.ms"`
	// ConnectionFailedAuthenticationDelayMs delays the answer to a failed
	// SASL authentication (KIP-306).
	ConnectionFailedAuthenticationDelayMs int32 `config:"connection.failed.authentication.delay.ms"`
	MaxConnections                        int32
	MaxConnectionsPerIP                   int32
	MaxConnectionCreationRate             int32
	// MaxConnectionsPerIPOverrides maps an IP address or host name to its
	// own limit. The four connection quotas above are the static values;
	// ConnectionQuotas gives the ones in effect with the dynamic configs.
	MaxConnectionsPerIPOverrides map[string]int32
	QueuedMaxRequests            int32 `config:"queued.max.requests"`
	NumNetworkThreads            int32 `config:"num.network.threads"`
	NumIOThreads                 int32 `config:"num.io.threads"`
	BackgroundThreads            int32 `config:"background.threads"`
	RequestTimeoutMs             int32 `config:"request.timeout.ms"`
	// Tiered storage (internal/tiered). RemoteStorageConfig holds the
	// rsm.config.* keys with the prefix removed.
	RemoteLogStorageSystemEnable     bool   `config:"remote.log.storage.system.enable"`
	RemoteLogStorageManagerClassName string `config:"remote.log.storage.manager.class.name"`
	RemoteLogManagerTaskIntervalMs   int64  `config:"remote.log.manager.task.interval.ms"`
	RemoteFetchMaxWaitMs             int32  `config:"remote.fetch.max.wait.ms"`
	// KIP-956's copy and fetch quotas of the remote log manager.
	RemoteCopyMaxBytesPerSecond      int64 `config:"remote.log.manager.copy.max.bytes.per.second"`
	RemoteCopyQuotaWindowNum         int32 `config:"remote.log.manager.copy.quota.window.num"`
	RemoteCopyQuotaWindowSeconds     int32 `config:"remote.log.manager.copy.quota.window.size.seconds"`
	RemoteFetchMaxBytesPerSecond     int64 `config:"remote.log.manager.fetch.max.bytes.per.second"`
	RemoteFetchQuotaWindowNum        int32 `config:"remote.log.manager.fetch.quota.window.num"`
	RemoteFetchQuotaWindowSeconds    int32 `config:"remote.log.manager.fetch.quota.window.size.seconds"`
	RemoteLogMetadataTopicPartitions int32 `config:"rlmm.config.remote.log.metadata.topic.num.partitions"`
	RemoteLogMetadataTopicRF         int16 `config:"rlmm.config.remote.log.metadata.topic.replication.factor"`
	RemoteLogMetadataTopicRetention  int64 `config:"rlmm.config.remote.log.metadata.topic.retention.ms"`
	RemoteStorageConfig              map[string]string
	// Client quota windows (internal/security/quota).
	QuotaWindowNum                   int32 `config:"quota.window.num"`
	QuotaWindowSizeSeconds           int32 `config:"quota.window.size.seconds"`
	ControllerQuotaWindowNum         int32 `config:"controller.quota.window.num"`
	ControllerQuotaWindowSizeSeconds int32 `config:"controller.quota.window.size.seconds"`

	// Storage and log defaults.
	LogDirs                                 []string `config:"log.dirs,log.dir"`
	MetadataLogDir                          string   `config:"metadata.log.dir"` // explicit, or LogDirs[0]
	NumRecoveryThreadsPerDataDir            int32    `config:"num.recovery.threads.per.data.dir"`
	NumReplicaAlterLogDirsThreads           int32    `config:"num.replica.alter.log.dirs.threads"` // 0: one per log dir
	ReplicaAlterLogDirsIOMaxBytesPerSecond  int64    `config:"replica.alter.log.dirs.io.max.bytes.per.second"`
	NumPartitions                           int32    `config:"num.partitions"`
	DefaultReplicationFactor                int16    `config:"default.replication.factor"`
	AutoCreateTopicsEnable                  bool     `config:"auto.create.topics.enable"`
	DeleteTopicEnable                       bool     `config:"delete.topic.enable"`
	MessageMaxBytes                         int32    `config:"message.max.bytes"`
	LogSegmentBytes                         int32    `config:"log.segment.bytes"`
	LogRollMs                               int64    // log.roll.ms, else log.roll.hours
	LogRollJitterMs                         int64    // log.roll.jitter.ms, else log.roll.jitter.hours
	LogRetentionMs                          int64    // log.retention.ms > .minutes > .hours; -1 = forever
	LogRetentionBytes                       int64    `config:"log.retention.bytes"`
	LogRetentionCheckIntervalMs             int64    `config:"log.retention.check.interval.ms"`
	LogCleanupPolicy                        []string `config:"log.cleanup.policy"`
	LogIndexIntervalBytes                   int32    `config:"log.index.interval.bytes"`
	LogIndexSizeMaxBytes                    int32    `config:"log.index.size.max.bytes"`
	LogFlushIntervalMessages                int64    `config:"log.flush.interval.messages"`
	LogFlushIntervalMs                      int64    // log.flush.interval.ms, else log.flush.scheduler.interval.ms
	LogFlushSchedulerIntervalMs             int64    `config:"log.flush.scheduler.interval.ms"`
	LogFlushOffsetCheckpointIntervalMs      int32    `config:"log.flush.offset.checkpoint.interval.ms"`
	LogFlushStartOffsetCheckpointIntervalMs int32    `config:"log.flush.start.offset.checkpoint.interval.ms"`
	LogSegmentDeleteDelayMs                 int64    `config:"log.segment.delete.delay.ms"`
	LogPreallocate                          bool     `config:"log.preallocate"`
	LogMessageTimestampType                 string   `config:"log.message.timestamp.type"`
	LogMessageTimestampBeforeMaxMs          int64
	LogMessageTimestampAfterMaxMs           int64
	CompressionType                         string `config:"compression.type"`
	MinInsyncReplicas                       int32  `config:"min.insync.replicas"`
	UncleanLeaderElectionEnable             bool   `config:"unclean.leader.election.enable"`

	// Log cleaner.
	LogCleanerEnable              bool    `config:"log.cleaner.enable"`
	LogCleanerThreads             int32   `config:"log.cleaner.threads"`
	LogCleanerBackoffMs           int64   `config:"log.cleaner.backoff.ms"`
	LogCleanerDedupeBufferSize    int64   `config:"log.cleaner.dedupe.buffer.size"`
	LogCleanerMinCleanableRatio   float64 `config:"log.cleaner.min.cleanable.ratio"`
	LogCleanerDeleteRetentionMs   int64   `config:"log.cleaner.delete.retention.ms"`
	LogCleanerMinCompactionLagMs  int64   `config:"log.cleaner.min.compaction.lag.ms"`
	LogCleanerMaxCompactionLagMs  int64   `config:"log.cleaner.max.compaction.lag.ms"`
	LogCleanerIOMaxBytesPerSecond float64 `config:"log.cleaner.io.max.bytes.per.second"`
	LogCleanerIOBufferLoadFactor  float64 `config:"log.cleaner.io.buffer.load.factor"`

	// Replication and fetch.
	ReplicaLagTimeMaxMs                      int64 `config:"replica.lag.time.max.ms"`
	ReplicaFetchMaxBytes                     int32 `config:"replica.fetch.max.bytes"`
	ReplicaFetchResponseMaxBytes             int32 `config:"replica.fetch.response.max.bytes"`
	ReplicaFetchWaitMaxMs                    int32 `config:"replica.fetch.wait.max.ms"`
	ReplicaFetchMinBytes                     int32 `config:"replica.fetch.min.bytes"`
	ReplicaFetchBackoffMs                    int32 `config:"replica.fetch.backoff.ms"`
	ReplicaSocketTimeoutMs                   int32 `config:"replica.socket.timeout.ms"`
	ReplicaSocketReceiveBufferBytes          int32 `config:"replica.socket.receive.buffer.bytes"`
	ReplicaHighWatermarkCheckpointIntervalMs int64 `config:"replica.high.watermark.checkpoint.interval.ms"`
	NumReplicaFetchers                       int32 `config:"num.replica.fetchers"`
	// leader.replication.throttled.rate and follower.replication.throttled.rate
	// apply at run time, with the dynamic broker configs layered over the
	// static ones: ReplicationThrottledRates.
	FetchMaxBytes                             int32 `config:"fetch.max.bytes"`
	FetchPurgatoryPurgeIntervalRequests       int32 `config:"fetch.purgatory.purge.interval.requests"`
	ProducerPurgatoryPurgeIntervalRequests    int32 `config:"producer.purgatory.purge.interval.requests"`
	DeleteRecordsPurgatoryPurgeIntervalReqs   int32 `config:"delete.records.purgatory.purge.interval.requests"`
	MaxIncrementalFetchSessionCacheSlots      int32 `config:"max.incremental.fetch.session.cache.slots"`
	AutoLeaderRebalanceEnable                 bool  `config:"auto.leader.rebalance.enable"`
	LeaderImbalanceCheckIntervalSeconds       int64 `config:"leader.imbalance.check.interval.seconds"`
	LeaderImbalancePerBrokerPercentage        int32 `config:"leader.imbalance.per.broker.percentage"`
	BrokerHeartbeatIntervalMs                 int32 `config:"broker.heartbeat.interval.ms"`
	BrokerSessionTimeoutMs                    int32 `config:"broker.session.timeout.ms"`
	InitialBrokerRegistrationTimeoutMs        int32 `config:"initial.broker.registration.timeout.ms"`
	MetadataMaxRetentionBytes                 int64 `config:"metadata.max.retention.bytes"`
	MetadataMaxRetentionMs                    int64 `config:"metadata.max.retention.ms"`
	MetadataLogSegmentBytes                   int32 `config:"metadata.log.segment.bytes"`
	MetadataLogSegmentMs                      int64 `config:"metadata.log.segment.ms"`
	MetadataLogMaxRecordBytesBetweenSnapshots int64 `config:"metadata.log.max.record.bytes.between.snapshots"`
	MetadataLogMaxSnapshotIntervalMs          int64 `config:"metadata.log.max.snapshot.interval.ms"`

	// Groups and offsets.
	GroupInitialRebalanceDelayMs    int32    `config:"group.initial.rebalance.delay.ms"`
	GroupMinSessionTimeoutMs        int32    `config:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeoutMs        int32    `config:"group.max.session.timeout.ms"`
	GroupMaxSize                    int32    `config:"group.max.size"`
	GroupCoordinatorProtocols       []string `config:"group.coordinator.rebalance.protocols"`
	GroupConsumerSessionTimeoutMs   int32    `config:"group.consumer.session.timeout.ms"`
	GroupConsumerHeartbeatMs        int32    `config:"group.consumer.heartbeat.interval.ms"`
	GroupConsumerMaxSize            int32    `config:"group.consumer.max.size"`
	GroupConsumerAssignors          []string `config:"group.consumer.assignors"`
	OffsetMetadataMaxBytes          int32    `config:"offset.metadata.max.bytes"`
	OffsetsRetentionMinutes         int32    `config:"offsets.retention.minutes"`
	OffsetsRetentionCheckIntervalMs int64    `config:"offsets.retention.check.interval.ms"`
	OffsetsTopicNumPartitions       int32    `config:"offsets.topic.num.partitions"`
	OffsetsTopicReplicationFactor   int16    `config:"offsets.topic.replication.factor"`
	OffsetsTopicSegmentBytes        int32    `config:"offsets.topic.segment.bytes"`
	OffsetsCommitTimeoutMs          int32    `config:"offsets.commit.timeout.ms"`
	OffsetsLoadBufferSize           int32    `config:"offsets.load.buffer.size"`
	OffsetsTopicCompressionCodec    int8     `config:"offsets.topic.compression.codec"`

	// Transactions and idempotence.
	TransactionStateLogNumPartitions          int32 `config:"transaction.state.log.num.partitions"`
	TransactionStateLogReplicationFactor      int16 `config:"transaction.state.log.replication.factor"`
	TransactionStateLogMinISR                 int32 `config:"transaction.state.log.min.isr"`
	TransactionStateLogSegmentBytes           int32 `config:"transaction.state.log.segment.bytes"`
	TransactionStateLogLoadBufferSize         int32 `config:"transaction.state.log.load.buffer.size"`
	TransactionMaxTimeoutMs                   int32 `config:"transaction.max.timeout.ms"`
	TransactionalIDExpirationMs               int32 `config:"transactional.id.expiration.ms"`
	TransactionAbortTimedOutCleanupIntervalMs int32 `config:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	TransactionRemoveExpiredCleanupIntervalMs int32 `config:"transaction.remove.expired.transaction.cleanup.interval.ms"`
	TransactionPartitionVerificationEnable    bool  `config:"transaction.partition.verification.enable"`
	AddPartitionsToTxnRetryBackoffMs          int32 `config:"add.partitions.to.txn.retry.backoff.ms"`
	AddPartitionsToTxnRetryBackoffMaxMs       int32 `config:"add.partitions.to.txn.retry.backoff.max.ms"`
	ProducerIDExpirationMs                    int32 `config:"producer.id.expiration.ms"`
	ProducerIDExpirationCheckIntervalMs       int32 `config:"producer.id.expiration.check.interval.ms"`

	// Authorization (authorizer.go).
	AuthorizerClassName       string   `config:"authorizer.class.name"`
	SuperUsers                []string `config:"super.users"`
	AllowEveryoneIfNoACLFound bool     `config:"allow.everyone.if.no.acl.found"`
	EarlyStartListeners       []string `config:"early.start.listeners"`

	// Delegation tokens (KIP-48); the master key is the deprecated name of
	// the secret key.
	DelegationTokenSecretKey             string `config:"delegation.token.secret.key"`
	DelegationTokenMasterKey             string `config:"delegation.token.master.key"`
	DelegationTokenMaxLifetimeMs         int64  `config:"delegation.token.max.lifetime.ms"`
	DelegationTokenExpiryTimeMs          int64  `config:"delegation.token.expiry.time.ms"`
	DelegationTokenExpiryCheckIntervalMs int64  `config:"delegation.token.expiry.check.interval.ms"`
	// Observability (Vltava's own keys, observability.go).
	AdminListeners                     []HTTPListener `config:"admin.listeners"`
	AdminPprofEnable                   bool           `config:"admin.pprof.enable"`
	MetricsEnable                      bool           `config:"metrics.enable"`
	MetricsPartitionLevel              string         `config:"metrics.partition.level"` // partition, topic or broker
	MetricsConsumerLagSampleIntervalMs int64          `config:"metrics.consumer.lag.sample.interval.ms"`
	LogFormat                          string         `config:"log.format"` // text or json
	LogRequestSampleRate               float64        `config:"log.request.sample.rate"`
	TelemetryEnable                    bool           `config:"telemetry.enable"`
	TelemetrySubscriptionMetrics       []string       `config:"telemetry.subscription.metrics"`
	TelemetrySubscriptionIntervalMs    int32          `config:"telemetry.subscription.interval.ms"`
	TelemetryMaxBytes                  int32          `config:"telemetry.max.bytes"`
	// REST Proxy (Vltava's own keys, rest.go).
	RestListeners                 []HTTPListener `config:"rest.listeners"`
	RestAuthenticationMethod      string         `config:"rest.authentication.method"`
	RestClientSASLMechanism       string         `config:"rest.client.sasl.mechanism"`
	RestConsumerInstanceTimeoutMs int64          `config:"rest.consumer.instance.timeout.ms"`
	RestConsumerRequestTimeoutMs  int64          `config:"rest.consumer.request.timeout.ms"`
	RestConsumerRequestMaxBytes   int64          `config:"rest.consumer.request.max.bytes"`
	RestMaxRequestBytes           int64          `config:"rest.max.request.bytes"`
	RestSchemaRegistryURL         string         `config:"rest.schema.registry.url"`
	// The embedded Connect worker (connect.go): ConnectWorker holds the
	// connect.* keys with the prefix removed.
	ConnectEnable bool `config:"connect.enable"`
	ConnectWorker map[string]string

	// Schema registry (schema_registry.go).
	SchemaRegistryListeners          []HTTPListener `config:"schema.registry.listeners"`
	SchemaRegistryTopic              string         `config:"schema.registry.kafkastore.topic"`
	SchemaRegistryReplicationFactor  int            `config:"schema.registry.kafkastore.topic.replication.factor"`
	SchemaRegistryCompatibilityLevel string         `config:"schema.registry.schema.compatibility.level"`
	SchemaRegistryRequestMaxBytes    int64          `config:"schema.registry.request.max.bytes"`
	SchemaRegistryGroupID            string         `config:"schema.registry.group.id"`
	SchemaRegistryURL                string         `config:"confluent.schema.registry.url"`

	// Web console (console.go).
	ConsoleListeners []HTTPListener `config:"console.listeners"`
	ConsoleReadOnly  bool           `config:"console.read.only"`

	// Raw holds every key explicitly set (file, then overrides), exactly as
	// given; it is the STATIC_BROKER_CONFIG layer for DescribeConfigs.
	Raw map[string]string

	// defaults overrides Kafka's defaults for this node: singleNodeDefaults
	// on a single-voter quorum, otherwise empty. DescribeConfigs reports
	// them as DEFAULT_CONFIG.
	defaults map[string]string
}

// SingleVoterQuorum reports whether this node forms a metadata quorum of
// itself alone by configuration: a controller with neither
// controller.quorum.voters nor controller.quorum.bootstrap.servers (the
// zero-config node). A dynamic quorum's node is not, even when formatted
// --standalone: voters join it later, so its internal topics keep Kafka's
// replication factors.
func (b *Broker) SingleVoterQuorum() bool {
	return len(b.Voters) == 0 && strings.TrimSpace(b.Raw["controller.quorum.bootstrap.servers"]) == "" &&
		contains(b.ProcessRoles, "controller")
}

// defaultOf returns the default of a broker key on this node.
func (b *Broker) defaultOf(d *Def) (string, bool) {
	if v, ok := b.defaults[d.Name]; ok {
		return v, true
	}
	return d.Default, d.HasDefault
}

// LoadBroker reads a Java .properties file (path may be "" for none), applies
// "key=value" overrides on top (as kafka-server-start's --override does), and
// parses the result with ParseBroker.
func LoadBroker(path string, overrides []string) (*Broker, []string, error) {
	props := map[string]string{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("reading config file: %w", err)
		}
		props, err = ParseProperties(string(data))
		if err != nil {
			return nil, nil, fmt.Errorf("parsing %s: %w", path, err)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("invalid override %q: expected key=value", o)
		}
		props[k] = v
	}
	return ParseBroker(props)
}

// ParseBroker validates props and builds the typed config. Unknown keys are
// returned as warnings (Kafka logs them and carries on); invalid values are
// errors naming the key and the allowed values, joined with errors.Join.
func ParseBroker(props map[string]string) (*Broker, []string, error) {
	var warnings []string
	var errs []error
	for _, k := range sortedNames(props) {
		d := lookupBrokerDef(k)
		if d == nil && isConnectWorkerKey(k) {
			continue // the embedded worker validates its keys when it starts
		}
		if d == nil && props[k] != "" {
			if why := unknownRefusal(k); why != "" {
				errs = append(errs, &Error{Code: kerr.InvalidConfig, Message: fmt.Sprintf("%s: %s; it is not accepted", k, why)})
				continue
			}
		}
		if d == nil && strings.HasPrefix(k, "rsm.config.") {
			// The remote storage's own settings: the S3 store checks them
			// (refusing an unknown one) when tiered storage is on.
			if !parseBool(props["remote.log.storage.system.enable"]) {
				warnings = append(warnings, fmt.Sprintf("The configuration '%s' is a remote storage setting, read only with remote.log.storage.system.enable=true; it has no effect.", k))
			}
			continue
		}
		if d == nil {
			w := fmt.Sprintf("The configuration '%s' was supplied but isn't a known config.", k)
			if s, ok := TopicServerDefault(k); ok {
				w += fmt.Sprintf(" (%s is a topic config; its broker-wide default is %s)", k, s)
			}
			warnings = append(warnings, w)
			continue
		}
		if err := d.Validate(props[k]); err != nil {
			var ve *ValueError
			if errors.As(err, &ve) {
				ve.Name = k // keep the listener prefix in the message
			}
			errs = append(errs, err)
		}
	}
	errs = append(errs, checkBrokerSupport(props)...)
	if len(errs) > 0 {
		return nil, warnings, errors.Join(errs...)
	}
	raw := make(map[string]string, len(props))
	for k, v := range props {
		raw[k] = v
	}
	b := &Broker{Raw: raw, defaults: map[string]string{}}
	if err := b.fill(); err != nil {
		return nil, warnings, err
	}
	return b, warnings, nil
}

// get returns the effective raw value of a broker key from props, falling back
// to its default; ok is false for a null default.
func get(props map[string]string, name string) (string, bool) {
	if v, ok := props[name]; ok {
		return strings.TrimSpace(v), true
	}
	d := brokerDefs[name]
	if d == nil {
		panic("config: unknown broker key " + name)
	}
	return d.Default, d.HasDefault
}

func mustGet(props map[string]string, name string) string { v, _ := get(props, name); return v }

// fill sets the typed fields from Raw and checks cross-key constraints.
func (b *Broker) fill() error {
	p := b.Raw
	b.Voters, _ = ParseVoters(strings.TrimSpace(p["controller.quorum.voters"])) // validated already
	b.ProcessRoles = splitList(mustGet(p, "process.roles"))
	if b.SingleVoterQuorum() {
		for k, v := range singleNodeDefaults {
			b.defaults[k] = v
		}
	}
	str := func(n string) string {
		if _, set := p[n]; !set {
			if v, ok := b.defaults[n]; ok {
				return v
			}
		}
		v, _ := get(p, n)
		return v
	}
	i64 := func(n string) int64 { return parseInt(str(n)) }
	i32 := func(n string) int32 { return int32(i64(n)) }
	i16 := func(n string) int16 { return int16(i64(n)) }
	boolean := func(n string) bool { return parseBool(str(n)) }
	list := func(n string) []string { return splitList(str(n)) }
	topicDefault := func(topicKey string) int64 { return parseInt(brokerTopicDefault(p, topicKey)) }

	b.NodeID = i32("node.id")
	b.ProcessRoles = list("process.roles")
	b.BrokerRack = str("broker.rack")
	b.ControllerListenerNames = upperAll(list("controller.listener.names"))
	b.ControllerQuorumVoters = str("controller.quorum.voters")
	b.Voters, _ = ParseVoters(b.ControllerQuorumVoters) // validated already

	b.SocketSendBufferBytes = i32("socket.send.buffer.bytes")
	b.SocketReceiveBufferBytes = i32("socket.receive.buffer.bytes")
	b.SocketRequestMaxBytes = i32("socket.request.max.bytes")
	b.ConnectionsMaxIdleMs = i64("connections.max.idle.ms")
	b.ConnectionFailedAuthenticationDelayMs = i32("connection.failed.authentication.delay.ms")
	b.MaxConnections = i32("max.connections")
	b.MaxConnectionsPerIP = i32("max.connections.per.ip")
	b.MaxConnectionCreationRate = i32("max.connection.creation.rate")
	if b.MaxConnectionCreationRate == 0 {
		return b.invalid("max.connection.creation.rate", "0 would hold back every connection but the inter-broker ones; set at least 1")
	}
	b.MaxConnectionsPerIPOverrides = parseConnectionOverrides(str("max.connections.per.ip.overrides"))
	if b.MaxConnectionsPerIP == 0 && len(b.MaxConnectionsPerIPOverrides) == 0 {
		// KafkaConfig: "max.connections.per.ip can be set to zero only
		// if max.connections.per.ip.overrides property is set".
		return b.invalid("max.connections.per.ip", "can be 0 only if max.connections.per.ip.overrides is set")
	}
	b.QueuedMaxRequests = i32("queued.max.requests")
	b.NumNetworkThreads = i32("num.network.threads")
	b.NumIOThreads = i32("num.io.threads")
	b.BackgroundThreads = i32("background.threads")
	b.RequestTimeoutMs = i32("request.timeout.ms")
	b.QuotaWindowNum = i32("quota.window.num")
	b.QuotaWindowSizeSeconds = i32("quota.window.size.seconds")
	b.ControllerQuotaWindowNum = i32("controller.quota.window.num")
	b.ControllerQuotaWindowSizeSeconds = i32("controller.quota.window.size.seconds")

	b.NumRecoveryThreadsPerDataDir = i32("num.recovery.threads.per.data.dir")
	b.NumReplicaAlterLogDirsThreads = i32("num.replica.alter.log.dirs.threads")
	b.ReplicaAlterLogDirsIOMaxBytesPerSecond = i64("replica.alter.log.dirs.io.max.bytes.per.second")
	b.NumPartitions = i32("num.partitions")
	b.DefaultReplicationFactor = i16("default.replication.factor")
	b.RemoteLogStorageSystemEnable = boolean("remote.log.storage.system.enable")
	b.RemoteLogStorageManagerClassName = str("remote.log.storage.manager.class.name")
	b.RemoteLogManagerTaskIntervalMs = i64("remote.log.manager.task.interval.ms")
	b.RemoteFetchMaxWaitMs = i32("remote.fetch.max.wait.ms")
	b.RemoteCopyQuotaWindowNum = i32("remote.log.manager.copy.quota.window.num")
	b.RemoteCopyQuotaWindowSeconds = i32("remote.log.manager.copy.quota.window.size.seconds")
	b.RemoteFetchQuotaWindowNum = i32("remote.log.manager.fetch.quota.window.num")
	b.RemoteFetchQuotaWindowSeconds = i32("remote.log.manager.fetch.quota.window.size.seconds")
	b.RemoteLogMetadataTopicPartitions = i32("rlmm.config.remote.log.metadata.topic.num.partitions")
	b.RemoteLogMetadataTopicRF = i16("rlmm.config.remote.log.metadata.topic.replication.factor")
	b.RemoteLogMetadataTopicRetention = i64("rlmm.config.remote.log.metadata.topic.retention.ms")
	b.RemoteStorageConfig = map[string]string{}
	for k, v := range p {
		if rest, ok := strings.CutPrefix(k, "rsm.config."); ok {
			b.RemoteStorageConfig[rest] = v
		}
	}
	b.AutoCreateTopicsEnable = boolean("auto.create.topics.enable")
	b.DeleteTopicEnable = boolean("delete.topic.enable")
	b.MessageMaxBytes = i32("message.max.bytes")
	b.LogSegmentBytes = i32("log.segment.bytes")
	b.LogRollMs = topicDefault("segment.ms")
	b.LogRollJitterMs = topicDefault("segment.jitter.ms")
	b.LogRetentionMs = topicDefault("retention.ms")
	b.LogRetentionBytes = i64("log.retention.bytes")
	b.LogRetentionCheckIntervalMs = i64("log.retention.check.interval.ms")
	b.LogCleanupPolicy = list("log.cleanup.policy")
	b.LogIndexIntervalBytes = i32("log.index.interval.bytes")
	b.LogIndexSizeMaxBytes = i32("log.index.size.max.bytes")
	b.LogFlushIntervalMessages = i64("log.flush.interval.messages")
	b.LogFlushIntervalMs = topicDefault("flush.ms")
	b.LogFlushSchedulerIntervalMs = i64("log.flush.scheduler.interval.ms")
	b.LogFlushOffsetCheckpointIntervalMs = i32("log.flush.offset.checkpoint.interval.ms")
	b.LogFlushStartOffsetCheckpointIntervalMs = i32("log.flush.start.offset.checkpoint.interval.ms")
	b.LogSegmentDeleteDelayMs = i64("log.segment.delete.delay.ms")
	b.LogPreallocate = boolean("log.preallocate")
	b.LogMessageTimestampType = str("log.message.timestamp.type")
	b.LogMessageTimestampBeforeMaxMs = topicDefault("message.timestamp.before.max.ms")
	b.LogMessageTimestampAfterMaxMs = topicDefault("message.timestamp.after.max.ms")
	b.CompressionType = str("compression.type")
	b.MinInsyncReplicas = i32("min.insync.replicas")
	b.UncleanLeaderElectionEnable = boolean("unclean.leader.election.enable")

	b.LogCleanerEnable = boolean("log.cleaner.enable")
	b.LogCleanerThreads = i32("log.cleaner.threads")
	b.LogCleanerBackoffMs = i64("log.cleaner.backoff.ms")
	b.LogCleanerDedupeBufferSize = i64("log.cleaner.dedupe.buffer.size")
	b.LogCleanerMinCleanableRatio = parseFloat(str("log.cleaner.min.cleanable.ratio"))
	b.LogCleanerDeleteRetentionMs = i64("log.cleaner.delete.retention.ms")
	b.LogCleanerMinCompactionLagMs = i64("log.cleaner.min.compaction.lag.ms")
	b.LogCleanerMaxCompactionLagMs = i64("log.cleaner.max.compaction.lag.ms")
	b.LogCleanerIOMaxBytesPerSecond = parseFloat(str("log.cleaner.io.max.bytes.per.second"))
	b.LogCleanerIOBufferLoadFactor = parseFloat(str("log.cleaner.io.buffer.load.factor"))

	b.ReplicaLagTimeMaxMs = i64("replica.lag.time.max.ms")
	b.ReplicaFetchMaxBytes = i32("replica.fetch.max.bytes")
	b.ReplicaFetchResponseMaxBytes = i32("replica.fetch.response.max.bytes")
	b.ReplicaFetchWaitMaxMs = i32("replica.fetch.wait.max.ms")
	b.ReplicaFetchMinBytes = i32("replica.fetch.min.bytes")
	b.ReplicaFetchBackoffMs = i32("replica.fetch.backoff.ms")
	b.ReplicaSocketTimeoutMs = i32("replica.socket.timeout.ms")
	b.ReplicaSocketReceiveBufferBytes = i32("replica.socket.receive.buffer.bytes")
	b.ReplicaHighWatermarkCheckpointIntervalMs = i64("replica.high.watermark.checkpoint.interval.ms")
	b.NumReplicaFetchers = i32("num.replica.fetchers")
	b.FetchMaxBytes = i32("fetch.max.bytes")
	b.FetchPurgatoryPurgeIntervalRequests = i32("fetch.purgatory.purge.interval.requests")
	b.ProducerPurgatoryPurgeIntervalRequests = i32("producer.purgatory.purge.interval.requests")
	b.DeleteRecordsPurgatoryPurgeIntervalReqs = i32("delete.records.purgatory.purge.interval.requests")
	b.MaxIncrementalFetchSessionCacheSlots = i32("max.incremental.fetch.session.cache.slots")
	b.AutoLeaderRebalanceEnable = boolean("auto.leader.rebalance.enable")
	b.LeaderImbalanceCheckIntervalSeconds = i64("leader.imbalance.check.interval.seconds")
	b.LeaderImbalancePerBrokerPercentage = i32("leader.imbalance.per.broker.percentage")
	b.BrokerHeartbeatIntervalMs = i32("broker.heartbeat.interval.ms")
	b.BrokerSessionTimeoutMs = i32("broker.session.timeout.ms")
	b.InitialBrokerRegistrationTimeoutMs = i32("initial.broker.registration.timeout.ms")
	b.MetadataMaxRetentionBytes = i64("metadata.max.retention.bytes")
	b.MetadataMaxRetentionMs = i64("metadata.max.retention.ms")
	b.MetadataLogSegmentBytes = i32("metadata.log.segment.bytes")
	b.MetadataLogSegmentMs = i64("metadata.log.segment.ms")
	b.MetadataLogMaxRecordBytesBetweenSnapshots = i64("metadata.log.max.record.bytes.between.snapshots")
	b.MetadataLogMaxSnapshotIntervalMs = i64("metadata.log.max.snapshot.interval.ms")

	b.GroupInitialRebalanceDelayMs = i32("group.initial.rebalance.delay.ms")
	b.GroupMinSessionTimeoutMs = i32("group.min.session.timeout.ms")
	b.GroupMaxSessionTimeoutMs = i32("group.max.session.timeout.ms")
	b.GroupMaxSize = i32("group.max.size")
	b.GroupCoordinatorProtocols = list("group.coordinator.rebalance.protocols")
	b.GroupConsumerSessionTimeoutMs = i32("group.consumer.session.timeout.ms")
	b.GroupConsumerHeartbeatMs = i32("group.consumer.heartbeat.interval.ms")
	b.GroupConsumerMaxSize = i32("group.consumer.max.size")
	b.GroupConsumerAssignors = list("group.consumer.assignors")
	b.OffsetMetadataMaxBytes = i32("offset.metadata.max.bytes")
	b.OffsetsRetentionMinutes = i32("offsets.retention.minutes")
	b.OffsetsRetentionCheckIntervalMs = i64("offsets.retention.check.interval.ms")
	b.OffsetsTopicNumPartitions = i32("offsets.topic.num.partitions")
	b.OffsetsTopicReplicationFactor = i16("offsets.topic.replication.factor")
	b.OffsetsTopicSegmentBytes = i32("offsets.topic.segment.bytes")
	b.OffsetsCommitTimeoutMs = i32("offsets.commit.timeout.ms")
	b.OffsetsLoadBufferSize = i32("offsets.load.buffer.size")
	b.OffsetsTopicCompressionCodec = int8(i64("offsets.topic.compression.codec"))

	b.TransactionStateLogNumPartitions = i32("transaction.state.log.num.partitions")
	b.TransactionStateLogReplicationFactor = i16("transaction.state.log.replication.factor")
	b.TransactionStateLogMinISR = i32("transaction.state.log.min.isr")
	b.TransactionStateLogSegmentBytes = i32("transaction.state.log.segment.bytes")
	b.TransactionStateLogLoadBufferSize = i32("transaction.state.log.load.buffer.size")
	b.TransactionMaxTimeoutMs = i32("transaction.max.timeout.ms")
	b.TransactionalIDExpirationMs = i32("transactional.id.expiration.ms")
	b.TransactionAbortTimedOutCleanupIntervalMs = i32("transaction.abort.timed.out.transaction.cleanup.interval.ms")
	b.TransactionRemoveExpiredCleanupIntervalMs = i32("transaction.remove.expired.transaction.cleanup.interval.ms")
	b.TransactionPartitionVerificationEnable = boolean("transaction.partition.verification.enable")
	b.AddPartitionsToTxnRetryBackoffMs = i32("add.partitions.to.txn.retry.backoff.ms")
	b.AddPartitionsToTxnRetryBackoffMaxMs = i32("add.partitions.to.txn.retry.backoff.max.ms")
	b.ProducerIDExpirationMs = i32("producer.id.expiration.ms")
	b.ProducerIDExpirationCheckIntervalMs = i32("producer.id.expiration.check.interval.ms")
	b.fillSchemaRegistry(str)
	if err := b.fillObservability(str); err != nil {
		return err
	}
	b.fillRest(str)
	b.fillConsole(str)
	if err := b.fillConnect(str); err != nil {
		return err
	}

	// log.dirs wins over log.dir; Vltava's ./data default applies only when
	// neither is set.
	if _, set := p["log.dirs"]; !set {
		if dir, set := p["log.dir"]; set {
			b.LogDirs = splitList(dir)
		}
	}
	if b.LogDirs == nil {
		b.LogDirs = list("log.dirs")
	}
	if len(b.LogDirs) == 0 {
		return b.invalid("log.dirs", "must name at least one directory")
	}
	b.MetadataLogDir = str("metadata.log.dir")
	if b.MetadataLogDir == "" {
		b.MetadataLogDir = b.LogDirs[0]
	}
	if err := b.fillNetwork(); err != nil {
		return err
	}
	return b.fillAuthorizer()
}

// fillNetwork resolves listeners, the protocol map and the KRaft roles, with
// the cross-key checks of KafkaConfig.validateValues.
func (b *Broker) fillNetwork() error {
	p := b.Raw
	str := func(n string) string { v, _ := get(p, n); return v }

	seenRole := map[string]bool{}
	for _, r := range b.ProcessRoles {
		if seenRole[r] {
			return b.invalid("process.roles", "must not repeat a role")
		}
		seenRole[r] = true
	}
	if id, set := p["broker.id"]; set && int32(parseInt(id)) != b.NodeID {
		return b.invalid("broker.id", fmt.Sprintf("must equal node.id (%d) when both are set", b.NodeID))
	}

	protoMap, _ := parseProtocolMap(str("listener.security.protocol.map"))
	b.ListenerSecurityProtocolMap = protoMap
	resolve := func(key string, ls []Listener) error {
		for i := range ls {
			proto, ok := protoMap[ls[i].Name]
			if !ok {
				return b.invalid(key, fmt.Sprintf("no security protocol defined for listener %s in listener.security.protocol.map", ls[i].Name))
			}
			ls[i].SecurityProtocol = proto
		}
		return nil
	}
	b.Listeners, _ = parseListenerList(str("listeners"))
	if err := resolve("listeners", b.Listeners); err != nil {
		return err
	}
	names := map[string]bool{}
	for _, l := range b.Listeners {
		names[l.Name] = true
	}

	isController, isBroker := seenRole["controller"], seenRole["broker"]
	for _, c := range b.ControllerListenerNames {
		if isController && !names[c] {
			return b.invalid("controller.listener.names", fmt.Sprintf("listener %s is not defined in listeners", c))
		}
	}

	if adv, set := p["advertised.listeners"]; set {
		b.AdvertisedListeners, _ = parseListenerList(adv)
		if err := resolve("advertised.listeners", b.AdvertisedListeners); err != nil {
			return err
		}
	} else {
		for _, l := range b.Listeners {
			if !contains(b.ControllerListenerNames, l.Name) {
				b.AdvertisedListeners = append(b.AdvertisedListeners, l)
			}
		}
	}
	for _, l := range b.AdvertisedListeners {
		if l.Host == "0.0.0.0" {
			return b.invalid("advertised.listeners", "cannot use the nonroutable meta-address 0.0.0.0; set a routable address (advertised.listeners defaults to listeners)")
		}
	}

	_, nameSet := p["inter.broker.listener.name"]
	_, protoSet := p["security.inter.broker.protocol"]
	if nameSet && protoSet {
		return b.invalid("inter.broker.listener.name", "only one of inter.broker.listener.name and security.inter.broker.protocol may be set")
	}
	b.InterBrokerListenerName = strings.ToUpper(str("inter.broker.listener.name"))
	if !nameSet {
		// Kafka: the inter-broker listener is the one named after the
		// protocol (security.inter.broker.protocol=SASL_SSL names the
		// listener SASL_SSL).
		b.InterBrokerListenerName = str("security.inter.broker.protocol")
	}
	if contains(b.ControllerListenerNames, b.InterBrokerListenerName) {
		return b.invalid("inter.broker.listener.name", "must not be a controller listener")
	}
	if isBroker && (nameSet || len(b.Voters) > 0) {
		// In a multi-node cluster other brokers must be able to reach this one.
		found := false
		var valid []string
		for _, l := range b.AdvertisedListeners {
			valid = append(valid, l.Name)
			found = found || l.Name == b.InterBrokerListenerName
		}
		if !found {
			return b.invalid("inter.broker.listener.name", fmt.Sprintf("listener %s must be defined in advertised.listeners (defined: %s)", b.InterBrokerListenerName, strings.Join(valid, ", ")))
		}
	}

	if isController && len(b.Voters) > 0 {
		found := false
		for _, v := range b.Voters {
			found = found || v.ID == b.NodeID
		}
		if !found {
			return b.invalid("controller.quorum.voters", fmt.Sprintf("must include this node (node.id=%d) when process.roles contains controller", b.NodeID))
		}
	}
	if !isController && len(b.Voters) == 0 && str("controller.quorum.bootstrap.servers") == "" {
		return b.invalid("controller.quorum.voters", "a broker-only node needs controller.quorum.voters or controller.quorum.bootstrap.servers to find the controllers")
	}
	return nil
}

func (b *Broker) invalid(key, reason string) error {
	v, _ := get(b.Raw, key)
	return &ValueError{Name: key, Value: v, Reason: reason}
}

func upperAll(xs []string) []string {
	for i := range xs {
		xs[i] = strings.ToUpper(xs[i])
	}
	return xs
}

// Value returns the effective static value of a broker key and where it came
// from: STATIC_BROKER_CONFIG if set in the file or overrides, otherwise
// DEFAULT_CONFIG with Kafka's (or Vltava's) default, "" for a null default.
// ok is false for keys Vltava does not know.
func (b *Broker) Value(name string) (value string, source Source, ok bool) {
	d := lookupBrokerDef(name)
	if d == nil {
		return "", SourceUnknown, false
	}
	if v, set := b.Raw[name]; set {
		return strings.TrimSpace(v), SourceStaticBrokerConfig, true
	}
	v, _ := b.defaultOf(d)
	return v, SourceDefaultConfig, true
}

// String renders the effective static config, one "key=value" line per known
// key in name order, like Kafka's "KafkaConfig values:" start-up log. Null
// values print as null and sensitive values as [hidden].
func (b *Broker) String() string {
	var sb strings.Builder
	names := append([]string(nil), brokerDefNames...)
	for k := range b.Raw {
		if _, base := brokerDefs[k]; !base && lookupBrokerDef(k) != nil {
			names = append(names, k) // listener-prefixed overrides
		}
	}
	sortStrings(names)
	for _, n := range names {
		d := lookupBrokerDef(n)
		v, src, _ := b.Value(n)
		switch {
		case d.Sensitive && (src == SourceStaticBrokerConfig || d.HasDefault):
			v = "[hidden]"
		case src == SourceDefaultConfig && !d.HasDefault:
			v = "null"
		}
		sb.WriteString(n)
		sb.WriteByte('=')
		sb.WriteString(v)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// brokerTopicDefault returns the broker-level default of a topic config from
// a merged broker property map, in the topic config's unit and printed form:
// the first synonym that is set wins, else the first synonym with a default
// (KafkaConfig.logRollTimeMillis, logRetentionTimeMillis, logFlushIntervalMs).
func brokerTopicDefault(props map[string]string, topicKey string) string {
	td := topicDefs[topicKey]
	syns, ok := topicSynonyms[topicKey]
	if !ok {
		return td.Default
	}
	convert := func(s brokerSynonym, v string) string {
		if s.factor == 1 {
			v = canonical(td.Type, v)
		} else {
			v = strconv.FormatInt(parseInt(v)*s.factor, 10)
		}
		if topicKey == "retention.ms" && parseInt(v) < 0 {
			v = "-1" // any negative retention means "forever"
		}
		return v
	}
	for _, s := range syns {
		if v, set := props[s.name]; set {
			return convert(s, v)
		}
	}
	for _, s := range syns {
		if d := brokerDefs[s.name]; d.HasDefault {
			return convert(s, d.Default)
		}
	}
	return td.Default
}
