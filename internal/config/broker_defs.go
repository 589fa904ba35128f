package config

import (
	"sort"
	"strings"
)

// VltavaDefaults lists the broker defaults where Vltava deliberately differs
// from Apache Kafka, with Kafka's own default, so a single binary starts with
// no configuration at all (the same values as Kafka's quickstart
// server.properties).
var VltavaDefaults = map[string]string{
	"process.roles": "(empty, required)",
	"node.id":       "-1 (required)",
	"listeners":     "PLAINTEXT://:9092",
	"log.dirs":      "null (falls back to log.dir=/tmp/kafka-logs)",
	// A fixed 100 KiB SO_RCVBUF stops Linux from autotuning the buffer:
	// measured side by side, it cost 16% of single-producer 1 KiB produce
	// throughput and a third more broker CPU per record (docs/PERFORMANCE.md).
	"socket.send.buffer.bytes":    "102400",
	"socket.receive.buffer.bytes": "102400",
}

// singleNodeDefaults are the defaults a node that is a single-voter quorum
// of itself (no controller.quorum.voters) uses when the key is not set:
// Kafka's defaults assume at least three brokers, which one node can never
// satisfy. An explicit setting always wins, and a cluster of several nodes
// keeps Kafka's defaults, so __consumer_offsets is never silently cut to one
// replica there.
var singleNodeDefaults = map[string]string{
	"offsets.topic.replication.factor":                         "1",
	"transaction.state.log.replication.factor":                 "1",
	"transaction.state.log.min.isr":                            "1",
	"rlmm.config.remote.log.metadata.topic.replication.factor": "1",
	"schema.registry.listeners":                                "http://127.0.0.1:8081",
}

// defaultProtocolMap is Kafka's default listener.security.protocol.map: every
// security protocol is also a listener name mapping to itself.
const defaultProtocolMap = "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT"

var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// brokerDefList is the broker (KafkaConfig) definition list. Vltava's
// zero-config defaults are marked "Vltava default".
var brokerDefList = []Def{
	// Node identity and KRaft.
	def("process.roles", List, "broker,controller", "Roles this node plays in KRaft mode (Vltava default: both, a single-node cluster).", listOf("broker", "controller"), nonEmpty()),
	def("node.id", Int, "1", "Id of this node in the cluster, shared by its broker and controller roles (Vltava default 1).", atLeast(0)),
	def("broker.id", Int, "-1", "Legacy name for node.id; if set it must equal node.id."),
	def("broker.rack", String, noDefault, "Rack of this broker, used for rack-aware replica placement and fetch-from-follower."),
	def("controller.listener.names", String, noDefault, "Comma-separated listener names used by the controller role."),
	def("controller.quorum.voters", List, "", "Static controller quorum as id@host:port entries (every voter bootstraps with this list). Empty, with controller.quorum.bootstrap.servers empty too, means a single-node quorum of this node; with it set, the quorum is dynamic.", custom("id@host:port,...", validateVoters)),
	def("controller.quorum.bootstrap.servers", List, "", "Controller endpoints (host:port) through which a node finds the leader of a dynamic quorum (KIP-853), whose voters change with AddRaftVoter/RemoveRaftVoter (vltava cluster add-controller/remove-controller). Such a node must be formatted first (vltava storage format: --standalone, --initial-controllers or --no-initial-controllers for controllers); it never forms a quorum of its own. If controller.quorum.voters is also set, these must be its voters' endpoints and the quorum is static."),
	def("controller.quorum.election.timeout.ms", Int, "1000", "Time without a leader before a controller starts an election."),
	def("controller.quorum.fetch.timeout.ms", Int, "2000", "Time without a successful fetch from the leader before a voter becomes a candidate."),
	def("controller.quorum.election.backoff.max.ms", Int, "1000", "Upper bound of the exponential backoff between elections."),
	def("controller.quorum.append.linger.ms", Int, "25", "How long the quorum leader waits to batch metadata writes before flushing."),
	def("controller.quorum.request.timeout.ms", Int, "2000", "Timeout of requests between quorum members."),
	def("controller.quorum.retry.backoff.ms", Int, "20", "Backoff before retrying a failed quorum request."),
	def("initial.broker.registration.timeout.ms", Int, "60000", "How long a starting broker waits to register with the controller."),
	def("broker.heartbeat.interval.ms", Int, "2000", "Interval between broker heartbeats to the controller."),
	def("broker.session.timeout.ms", Int, "9000", "Time without heartbeats after which the controller fences a broker."),
	def("metadata.log.dir", String, noDefault, "Directory of the cluster metadata log; defaults to the first of log.dirs."),
	def("metadata.log.segment.bytes", Int, "1073741824", "Segment size of the metadata log.", atLeast(12)),
	def("metadata.log.segment.ms", Long, weekMs, "Time after which a metadata log segment is rolled."),
	def("metadata.max.retention.bytes", Long, "104857600", "Size of metadata log and snapshots kept before old ones are deleted."),
	def("metadata.max.retention.ms", Long, weekMs, "Age of metadata log segments and snapshots before they are deleted."),
	def("metadata.max.idle.interval.ms", Int, "500", "Interval at which the active controller appends a no-op record to advance the metadata log.", atLeast(0)),
	def("metadata.log.max.record.bytes.between.snapshots", Long, "20971520", "Bytes of new metadata records after which a snapshot is written.", atLeast(1)),
	def("metadata.log.max.snapshot.interval.ms", Long, "3600000", "Longest time between metadata snapshots when there are new records (0 disables).", atLeast(0)),
	def("eligible.leader.replicas.enable", Boolean, "false", "Enable eligible leader replicas (KIP-966)."),
	def("sasl.mechanism.controller.protocol", String, "GSSAPI", "SASL mechanism used to talk to controllers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI, logged in with the controller listener's <mechanism>.sasl.jaas.config."),

	// Network.
	def("listeners", String, "PLAINTEXT://127.0.0.1:9092", "Comma-separated NAME://host:port endpoints to listen on (Vltava default: loopback only).", custom("NAME://host:port,...", validateListenerList)),
	def("advertised.listeners", String, noDefault, "Endpoints published to clients in metadata; defaults to the non-controller listeners.", custom("NAME://host:port,...", validateListenerList)),
	def("listener.security.protocol.map", String, defaultProtocolMap, "Maps listener names to security protocols as NAME:PROTOCOL pairs.", custom("NAME:PROTOCOL,...", validateProtocolMap)),
	def("inter.broker.listener.name", String, noDefault, "Listener used for broker-to-broker traffic; defaults to the one named after security.inter.broker.protocol."),
	def("security.inter.broker.protocol", String, "PLAINTEXT", "Security protocol for broker-to-broker traffic (mutually exclusive with inter.broker.listener.name).", oneOf(securityProtocols...)),
	def("early.start.listeners", String, noDefault, "Listeners that serve requests before the authorizer has loaded the ACLs (defaults to controller.listener.names); only super users are authorized there until then."),
	def("socket.send.buffer.bytes", Int, "-1", "SO_SNDBUF of server sockets (-1: OS default, which Linux autotunes; Vltava default, see docs/PERFORMANCE.md)."),
	def("socket.receive.buffer.bytes", Int, "-1", "SO_RCVBUF of server sockets (-1: OS default, which Linux autotunes; Vltava default, see docs/PERFORMANCE.md)."),
	def("socket.request.max.bytes", Int, "104857600", "Largest request the broker will read from a socket.", atLeast(1)),
	def("socket.listen.backlog.size", Int, "50", "Maximum pending connections in the accept queue.", atLeast(1)),
	def("socket.connection.setup.timeout.ms", Long, "10000", "Initial timeout for establishing outbound connections."),
	def("socket.connection.setup.timeout.max.ms", Long, "30000", "Upper bound of the exponential outbound connection timeout."),
	def("max.connections", Int, intMax, "Maximum connections accepted by the broker at any time, across its listeners (the inter-broker listener excepted); its listener-prefixed form limits one listener as well.", atLeast(0)),
	def("max.connections.per.ip", Int, intMax, "Maximum connections accepted from a single IP address.", atLeast(0)),
	def("max.connections.per.ip.overrides", String, "", "Per-IP or hostname overrides of max.connections.per.ip, as host:count pairs.", custom("host:count,...", validateConnectionOverrides)),
	def("max.connection.creation.rate", Int, intMax, "Maximum new connections accepted per second.", atLeast(0)),
	// Client quotas (internal/security/quota).
	def("quota.window.num", Int, "11", "Number of samples kept to measure client quota rates.", atLeast(1)),
	def("quota.window.size.seconds", Int, "1", "Length of each client quota sample, in seconds.", atLeast(1)),
	def("controller.quota.window.num", Int, "11", "Number of samples of the controller mutation quota.", atLeast(1)),
	def("controller.quota.window.size.seconds", Int, "1", "Length of each controller mutation quota sample, in seconds.", atLeast(1)),
	def("client.quota.callback.class", Class, noDefault, "ClientQuotaCallback plugin deciding client quotas."),
	def("replication.quota.window.num", Int, "11", "Number of samples kept to measure replication throttle rates.", atLeast(1)),
	def("replication.quota.window.size.seconds", Int, "1", "Length of each replication throttle sample, in seconds.", atLeast(1)),
	def("alter.log.dirs.replication.quota.window.num", Int, "11", "Number of samples kept to measure the log dir move rate.", atLeast(1)),
	def("alter.log.dirs.replication.quota.window.size.seconds", Int, "1", "Length of each log dir move rate sample, in seconds.", atLeast(1)),
	def("connections.max.idle.ms", Long, "600000", "Idle time after which the broker closes a connection."),
	def("connection.failed.authentication.delay.ms", Int, "100", "Delay before closing a connection that failed authentication.", atLeast(0)),
	def("connections.max.reauth.ms", Long, "0", "Longest session lifetime before a SASL client must re-authenticate (0: never)."),
	def("queued.max.requests", Int, "500", "Requests queued per broker before network threads stop reading.", atLeast(1)),
	def("queued.max.request.bytes", Long, "-1", "Bytes of queued requests before network threads stop reading (-1: no limit)."),
	def("num.network.threads", Int, "3", "Threads receiving requests and sending responses.", atLeast(1)),
	def("num.io.threads", Int, "8", "Threads processing requests, including disk I/O.", atLeast(1)),
	def("background.threads", Int, "10", "Threads for background tasks such as deleting segments.", atLeast(1)),
	def("request.timeout.ms", Int, "30000", "Timeout of requests the broker sends to other nodes."),
	def("max.request.partition.size.limit", Int, "2000", "Maximum partitions a single request may name for some APIs.", atLeast(1)),

	// Security (a subset; listener-prefixed forms listener.name.<l>.<key> are also accepted).
	def("authorizer.class.name", String, "", "Authorizer implementation: org.apache.kafka.metadata.authorizer.StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer, the same ACL semantics), ACLs kept in the metadata log; empty disables authorization.", custom("StandardAuthorizer class name, or empty", validateAuthorizerClass)),
	def("super.users", String, noDefault, "Principals allowed every operation, separated by semicolons (User:admin;User:CN=broker,O=acme).", custom("Type:Name;Type:Name...", validateSuperUsers)),
	def("allow.everyone.if.no.acl.found", Boolean, "false", "Allow an operation on a resource no ACL matches (StandardAuthorizer)."),
	def("delegation.token.secret.key", Password, noDefault, "Secret that signs delegation tokens (HMAC-SHA512 of the token id), the same on every node; without it delegation tokens are disabled (DELEGATION_TOKEN_AUTH_DISABLED)."),
	def("delegation.token.master.key", Password, noDefault, "Deprecated name of delegation.token.secret.key, used when that is not set."),
	def("delegation.token.max.lifetime.ms", Long, "604800000", "Longest life of a delegation token: it cannot be renewed beyond this after its creation.", atLeast(1)),
	def("delegation.token.expiry.time.ms", Long, "86400000", "How long a delegation token lives unless renewed, and the longest renewal.", atLeast(1)),
	def("delegation.token.expiry.check.interval.ms", Long, "3600000", "Interval at which the active controller removes expired delegation tokens.", atLeast(1)),
	def("sasl.enabled.mechanisms", List, "GSSAPI", "SASL mechanisms enabled on the broker."),
	def("sasl.mechanism.inter.broker.protocol", String, "GSSAPI", "SASL mechanism used for broker-to-broker traffic: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI, logged in with the inter-broker listener's <mechanism>.sasl.jaas.config."),
	def("sasl.jaas.config", Password, noDefault, "JAAS login context configuration for SASL connections."),
	def("ssl.keystore.type", String, "JKS", "File format of the key store."),
	def("ssl.keystore.location", String, noDefault, "Path of the key store file."),
	def("ssl.keystore.password", Password, noDefault, "Password of the key store."),
	def("ssl.key.password", Password, noDefault, "Password of the private key in the key store."),
	def("ssl.keystore.key", Password, noDefault, "PEM private key, instead of a key store file."),
	def("ssl.keystore.certificate.chain", Password, noDefault, "PEM certificate chain, instead of a key store file."),
	def("ssl.truststore.type", String, "JKS", "File format of the trust store."),
	def("ssl.truststore.location", String, noDefault, "Path of the trust store file."),
	def("ssl.truststore.password", Password, noDefault, "Password of the trust store."),
	def("ssl.truststore.certificates", Password, noDefault, "PEM trusted certificates, instead of a trust store file."),
	def("ssl.client.auth", String, "none", "Whether TLS clients must, may or need not present a certificate.", oneOf("required", "requested", "none")),
	def("ssl.protocol", String, "TLSv1.3", "TLS protocol used to create the SSL context."),
	def("ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", "TLS protocol versions enabled for connections."),
	def("ssl.cipher.suites", List, "", "Enabled cipher suites; empty means all supported."),
	def("ssl.endpoint.identification.algorithm", String, "https", "Server host name verification algorithm; empty disables it."),
	def("ssl.allow.dn.changes", Boolean, "false", "Whether a dynamic update of a listener's key store may bring a certificate with another subject distinguished name (KIP-978); refused with INVALID_CONFIG otherwise."),
	def("ssl.allow.san.changes", Boolean, "false", "Whether a dynamic update of a listener's key store may bring a certificate with other subject alternative names (KIP-978); refused with INVALID_CONFIG otherwise."),
	def("ssl.principal.mapping.rules", String, "DEFAULT", "Rules mapping a TLS client certificate's distinguished name to a principal name (RULE:pattern/replacement/[LU], DEFAULT)."),

	// Log defaults and log manager.
	def("log.dir", String, noDefault, "Single log directory, used when log.dirs is not set."),
	def("log.dirs", String, "./data", "Comma-separated directories holding partition data (Vltava default ./data)."),
	def("num.partitions", Int, "1", "Partitions of auto-created topics and of CreateTopics requests that leave it unset.", atLeast(1)),
	def("default.replication.factor", Int, "1", "Replication factor of auto-created topics and of CreateTopics requests that leave it unset."),
	def("auto.create.topics.enable", Boolean, "true", "Create a topic when a client requests metadata for a topic that does not exist."),
	def("delete.topic.enable", Boolean, "true", "Allow DeleteTopics; when false deletions are rejected."),
	def("num.recovery.threads.per.data.dir", Int, "1", "Threads per data directory for log recovery at start-up and flushing at shutdown.", atLeast(1)),
	def("num.replica.alter.log.dirs.threads", Int, noDefault, "Replica moves between log directories (AlterReplicaLogDirs) that copy at once; more wait (defaults to the number of directories).", atLeast(1)),
	def("replica.alter.log.dirs.io.max.bytes.per.second", Long, "9223372036854775807", "Throttle of the copy that moves a replica between log directories, in bytes per second over all moves.", atLeast(1)),
	def("log.segment.bytes", Int, "1073741824", "Size at which a new log segment is rolled.", atLeast(14)),
	def("log.roll.ms", Long, noDefault, "Time after which a segment is rolled; overrides log.roll.hours."),
	def("log.roll.hours", Int, "168", "Time in hours after which a segment is rolled.", atLeast(1)),
	def("log.roll.jitter.ms", Long, noDefault, "Maximum jitter subtracted from the roll time; overrides log.roll.jitter.hours."),
	def("log.roll.jitter.hours", Int, "0", "Maximum jitter in hours subtracted from the roll time.", atLeast(0)),
	def("log.retention.ms", Long, noDefault, "Time to keep a segment before deleting it (-1: forever); overrides minutes and hours."),
	def("log.retention.minutes", Int, noDefault, "Time in minutes to keep a segment; overrides log.retention.hours."),
	def("log.retention.hours", Int, "168", "Time in hours to keep a segment before deleting it."),
	def("log.retention.bytes", Long, "-1", "Largest size of a partition before old segments are deleted (-1: no limit)."),
	def("log.retention.check.interval.ms", Long, "300000", "How often the log cleaner checks segments for deletion.", atLeast(1)),
	def("log.cleanup.policy", List, "delete", "Default retention policy of topics: delete, compact, or both.", listOf("compact", "delete")),
	def("log.index.size.max.bytes", Int, "10485760", "Size of the offset index preallocated per segment.", atLeast(4)),
	def("log.index.interval.bytes", Int, "4096", "Bytes of records between offset index entries.", atLeast(0)),
	def("log.flush.interval.messages", Long, longMax, "Messages appended to a partition before it is fsynced.", atLeast(1)),
	def("log.flush.interval.ms", Long, noDefault, "Time a message may stay unflushed; defaults to log.flush.scheduler.interval.ms."),
	def("log.flush.scheduler.interval.ms", Long, longMax, "How often the flusher checks whether any log needs an fsync."),
	def("log.flush.offset.checkpoint.interval.ms", Int, "60000", "How often the recovery-point checkpoint is written.", atLeast(0)),
	def("log.flush.start.offset.checkpoint.interval.ms", Int, "60000", "How often the log-start-offset checkpoint is written.", atLeast(0)),
	def("log.segment.delete.delay.ms", Long, "60000", "Delay before a removed segment file is deleted from disk.", atLeast(0)),
	def("log.preallocate", Boolean, "false", "Preallocate segment files when rolling a new segment."),
	def("log.message.format.version", String, "3.0-IV1", "Deprecated and ignored: record format is always v2.", custom("A Kafka version such as 3.0-IV1", validateKafkaVersion)),
	def("log.message.timestamp.type", String, "CreateTime", "Default timestamp type of topics: CreateTime or LogAppendTime.", oneOf("CreateTime", "LogAppendTime")),
	def("log.message.timestamp.difference.max.ms", Long, longMax, "Deprecated: maximum skew between a record's timestamp and the broker clock.", atLeast(0)),
	def("log.message.timestamp.before.max.ms", Long, longMax, "How far in the past a CreateTime timestamp may be.", atLeast(0)),
	def("log.message.timestamp.after.max.ms", Long, longMax, "How far in the future a CreateTime timestamp may be.", atLeast(0)),
	def("log.message.downconversion.enable", Boolean, "true", "Deprecated: allow down-conversion of records for old consumers."),
	def("log.dir.failure.timeout.ms", Long, "30000", "Time a failed log directory may remain unreported before the broker shuts down.", atLeast(1)),
	def("log.local.retention.ms", Long, "-2", "Local retention time when tiered storage is enabled (-2: use retention.ms).", atLeast(-2)),
	def("log.local.retention.bytes", Long, "-2", "Local retention size when tiered storage is enabled (-2: use retention.bytes).", atLeast(-2)),
	def("log.initial.task.delay.ms", Long, "30000", "Delay before the log manager's periodic tasks first run.", atLeast(0)),
	def("message.max.bytes", Int, maxMsgBytes, "Largest record batch the broker accepts, after compression.", atLeast(0)),
	def("min.insync.replicas", Int, "1", "Fewest in-sync replicas that must acknowledge an acks=all write.", atLeast(1)),
	def("compression.type", String, "producer", "Default final compression of topics; producer keeps the producer's codec.", oneOf("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
	def("compression.gzip.level", Int, "-1", "Default gzip compression level.", between(1, 9), orMinusOne()),
	def("compression.lz4.level", Int, "9", "Default lz4 compression level.", between(1, 17)),
	def("compression.zstd.level", Int, "3", "Default zstd compression level.", between(-131072, 22)),
	def("unclean.leader.election.enable", Boolean, "false", "Allow out-of-sync replicas to become leader as a last resort."),
	def("create.topic.policy.class.name", Class, noDefault, "CreateTopicPolicy plugin validating topic creation."),
	def("alter.config.policy.class.name", Class, noDefault, "AlterConfigPolicy plugin validating config changes."),
	// Tiered storage (KIP-405; internal/tiered).
	def("remote.log.storage.system.enable", Boolean, "false", "Enable tiered storage on the broker: topics with remote.storage.enable copy rolled segments to the remote store."),
	def("remote.log.storage.manager.class.name", Class, noDefault, "The remote storage manager; Vltava has an S3 one built in, configured under rsm.config."),
	def("remote.log.metadata.manager.class.name", Class, "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager", "The remote log metadata manager: remote segment metadata in the __remote_log_metadata topic."),
	def("remote.log.storage.manager.impl.prefix", String, "rsm.config.", "Prefix of the remote storage manager's settings."),
	def("remote.log.metadata.manager.impl.prefix", String, "rlmm.config.", "Prefix of the remote log metadata manager's settings."),
	def("remote.log.manager.task.interval.ms", Long, "30000", "Interval of the remote log manager's copy and expiry tasks.", atLeast(1)),
	def("remote.log.manager.thread.pool.size", Int, "2", "Threads copying and expiring remote segments.", atLeast(1)),
	def("remote.log.manager.copy.max.bytes.per.second", Long, "9223372036854775807", "Bytes per second the remote log manager may copy to the remote store (KIP-956); a copy waits while the rate over the quota windows is above it.", atLeast(1)),
	def("remote.log.manager.copy.quota.window.num", Int, "11", "Windows over which the copy rate is measured.", atLeast(1)),
	def("remote.log.manager.copy.quota.window.size.seconds", Int, "1", "Length of one copy quota window.", atLeast(1)),
	def("remote.log.manager.fetch.max.bytes.per.second", Long, "9223372036854775807", "Bytes per second consumers may read from the remote store (KIP-956); while the rate over the quota windows is above it, fetches from the remote tier are answered with no records.", atLeast(1)),
	def("remote.log.manager.fetch.quota.window.num", Int, "11", "Windows over which the remote fetch rate is measured.", atLeast(1)),
	def("remote.log.manager.fetch.quota.window.size.seconds", Int, "1", "Length of one remote fetch quota window.", atLeast(1)),
	def("remote.fetch.max.wait.ms", Int, "500", "Longest a fetch served from the remote tier waits for it.", atLeast(1)),
	def("remote.log.storage.manager.class.path", String, noDefault, "Class path of the remote storage manager's plugin."),
	def("remote.log.metadata.manager.class.path", String, noDefault, "Class path of the remote log metadata manager's plugin."),
	def("remote.log.metadata.manager.listener.name", String, noDefault, "Listener the remote log metadata manager connects to."),
	def("remote.log.metadata.custom.metadata.max.bytes", Int, "128", "Largest custom metadata a remote storage plugin may attach to a segment.", atLeast(0)),
	def("remote.log.index.file.cache.total.size.bytes", Long, "1073741824", "Local space for index files fetched from the remote tier.", atLeast(1)),
	def("remote.log.manager.copier.thread.pool.size", Int, "10", "Threads copying segments to the remote tier.", atLeast(1)),
	def("remote.log.manager.expiration.thread.pool.size", Int, "10", "Threads deleting expired remote segments.", atLeast(1)),
	def("remote.log.manager.follower.thread.pool.size", Int, "2", "Threads reading the highest uploaded offset for follower partitions.", atLeast(1)),
	def("remote.log.manager.task.retry.backoff.ms", Long, "500", "First wait before a failed remote log manager task is retried."),
	def("remote.log.manager.task.retry.backoff.max.ms", Long, "30000", "Longest wait between retries of a failed remote log manager task."),
	def("remote.log.manager.task.retry.jitter", Double, "0.2", "Random jitter of the retry backoff (0 to 0.5)."),
	def("remote.log.reader.threads", Int, "10", "Threads serving reads from the remote tier.", atLeast(1)),
	def("remote.log.reader.max.pending.tasks", Int, "100", "Remote reads queued at most before fetches get an error.", atLeast(1)),
	def("remote.list.offsets.request.timeout.ms", Long, "30000", "Longest a ListOffsets served from the remote tier waits for it.", atLeast(1)),
	def("rlmm.config.remote.log.metadata.topic.num.partitions", Int, "50", "Partitions of __remote_log_metadata.", atLeast(1)),
	def("rlmm.config.remote.log.metadata.topic.replication.factor", Short, "3", "Replication factor of __remote_log_metadata.", atLeast(1)),
	def("rlmm.config.remote.log.metadata.topic.retention.ms", Long, "-1", "Retention of __remote_log_metadata (-1: forever).", atLeast(-1)),

	// Log cleaner.
	def("log.cleaner.enable", Boolean, "true", "Run the log cleaner, needed for compacted topics."),
	def("log.cleaner.threads", Int, "1", "Background threads compacting logs.", atLeast(0)),
	def("log.cleaner.io.max.bytes.per.second", Double, "1.7976931348623157E308", "I/O throttle of the log cleaner."),
	def("log.cleaner.dedupe.buffer.size", Long, "134217728", "Memory for the cleaner's key deduplication map across all threads."),
	def("log.cleaner.io.buffer.size", Int, "524288", "Memory for the cleaner's read and write buffers across all threads.", atLeast(0)),
	def("log.cleaner.io.buffer.load.factor", Double, "0.9", "Load factor of the cleaner's deduplication map.", between(0, 1)),
	def("log.cleaner.backoff.ms", Long, "15000", "Sleep between cleaner passes when there is nothing to clean.", atLeast(0)),
	def("log.cleaner.min.cleanable.ratio", Double, "0.5", "Default dirty ratio above which a log is compacted.", between(0, 1)),
	def("log.cleaner.delete.retention.ms", Long, dayMs, "Default time tombstones are kept on compacted topics.", atLeast(0)),
	def("log.cleaner.min.compaction.lag.ms", Long, "0", "Default minimum time a record stays uncompacted.", atLeast(0)),
	def("log.cleaner.max.compaction.lag.ms", Long, longMax, "Default maximum time a record may stay uncompacted.", atLeast(1)),

	// Replication and fetch.
	def("replica.lag.time.max.ms", Long, "30000", "Time a follower may lag before it is removed from the ISR."),
	def("replica.socket.timeout.ms", Int, "30000", "Socket timeout of follower fetch requests."),
	def("replica.socket.receive.buffer.bytes", Int, "65536", "SO_RCVBUF of follower fetch connections."),
	def("replica.fetch.max.bytes", Int, "1048576", "Bytes per partition a follower tries to fetch.", atLeast(0)),
	def("replica.fetch.wait.max.ms", Int, "500", "Longest a follower fetch waits on the leader for data."),
	def("replica.fetch.min.bytes", Int, "1", "Least data a follower fetch waits for."),
	def("replica.fetch.backoff.ms", Int, "1000", "Sleep after a follower fetch error.", atLeast(0)),
	def("replica.fetch.response.max.bytes", Int, "10485760", "Largest response a follower fetch expects.", atLeast(0)),
	def("num.replica.fetchers", Int, "1", "Fetcher threads per source broker."),
	def("replica.high.watermark.checkpoint.interval.ms", Long, "5000", "How often high watermarks are checkpointed to disk."),
	def("leader.replication.throttled.rate", Long, longMax, "Bytes per second a leader sends to throttled followers of the replicas in leader.replication.throttled.replicas (per broker; applied at run time).", atLeast(0)),
	def("follower.replication.throttled.rate", Long, longMax, "Bytes per second a follower fetches for the replicas in follower.replication.throttled.replicas (per broker; applied at run time).", atLeast(0)),
	def("replica.selector.class", String, noDefault, "ReplicaSelector choosing the replica a consumer fetches from (KIP-392)."),
	def("fetch.max.bytes", Int, "57671680", "Largest total response of a consumer fetch.", atLeast(1024)),
	def("max.incremental.fetch.session.cache.slots", Int, "1000", "Incremental fetch sessions cached by the broker (KIP-227).", atLeast(0)),
	def("fetch.purgatory.purge.interval.requests", Int, "1000", "Completed-request count that triggers a fetch purgatory purge."),
	def("producer.purgatory.purge.interval.requests", Int, "1000", "Completed-request count that triggers a produce purgatory purge."),
	def("delete.records.purgatory.purge.interval.requests", Int, "1", "Completed-request count that triggers a delete-records purgatory purge."),
	def("auto.leader.rebalance.enable", Boolean, "true", "Periodically move leadership back to preferred replicas."),
	def("leader.imbalance.per.broker.percentage", Int, "10", "Leader imbalance per broker that triggers a rebalance."),
	def("leader.imbalance.check.interval.seconds", Long, "300", "How often leader imbalance is checked.", atLeast(1)),
	def("controller.socket.timeout.ms", Int, "30000", "Socket timeout of controller-to-broker channels."),
	def("inter.broker.protocol.version", String, "4.0-IV0", "Ignored in KRaft mode; the metadata version is managed by the controller.", custom("A Kafka version such as 3.0-IV1", validateKafkaVersion)),

	// Group coordinator and offsets.
	def("group.min.session.timeout.ms", Int, "6000", "Shortest session timeout a classic group member may request."),
	def("group.max.session.timeout.ms", Int, "1800000", "Longest session timeout a classic group member may request."),
	def("group.initial.rebalance.delay.ms", Int, "3000", "Wait for more members to join an empty classic group before the first rebalance."),
	def("group.max.size", Int, intMax, "Most members a classic group may have.", atLeast(1)),
	def("group.coordinator.rebalance.protocols", List, "classic,consumer", "Rebalance protocols the group coordinator accepts.", listOf("classic", "consumer", "share")),
	def("group.consumer.session.timeout.ms", Int, "45000", "Session timeout of consumer-protocol group members (KIP-848).", atLeast(1)),
	def("group.consumer.min.session.timeout.ms", Int, "45000", "Shortest session timeout of consumer-protocol members.", atLeast(1)),
	def("group.consumer.max.session.timeout.ms", Int, "60000", "Longest session timeout of consumer-protocol members.", atLeast(1)),
	def("group.consumer.heartbeat.interval.ms", Int, "5000", "Heartbeat interval of consumer-protocol members.", atLeast(1)),
	def("group.consumer.min.heartbeat.interval.ms", Int, "5000", "Shortest heartbeat interval of consumer-protocol members.", atLeast(1)),
	def("group.consumer.max.heartbeat.interval.ms", Int, "15000", "Longest heartbeat interval of consumer-protocol members.", atLeast(1)),
	def("group.consumer.max.size", Int, intMax, "Most members a consumer-protocol group may have.", atLeast(1)),
	def("group.consumer.migration.policy", String, "bidirectional", "Online migration of a live group between the classic and consumer protocols (KIP-848): disabled, upgrade, downgrade or bidirectional.", oneOfFold("disabled", "upgrade", "downgrade", "bidirectional")),
	def("group.consumer.assignors", List, "uniform,range", "Server-side assignors of consumer-protocol groups (KIP-848), the first being the default.", listOf("uniform", "range"), nonEmpty()),
	def("offset.metadata.max.bytes", Int, "4096", "Largest metadata string allowed in an offset commit."),
	def("offsets.load.buffer.size", Int, "5242880", "Batch size when loading offsets into the cache.", atLeast(1)),
	def("offsets.retention.minutes", Int, "10080", "Time committed offsets of an empty group are kept.", atLeast(1)),
	def("offsets.retention.check.interval.ms", Long, "600000", "How often stale offsets are checked.", atLeast(1)),
	def("offsets.topic.num.partitions", Int, "50", "Partitions of __consumer_offsets; do not change after deployment.", atLeast(1)),
	def("offsets.topic.segment.bytes", Int, "104857600", "Segment size of __consumer_offsets.", atLeast(1)),
	def("offsets.topic.replication.factor", Short, "3", "Replication factor of __consumer_offsets; until that many brokers are registered, group coordination answers COORDINATOR_NOT_AVAILABLE (a single-node quorum defaults to 1).", atLeast(1)),
	def("offsets.topic.compression.codec", Int, "0", "Compression codec id for offset commits to __consumer_offsets (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).", between(0, 4)),
	def("offsets.commit.timeout.ms", Int, "5000", "Time an offset commit waits for replication before timing out.", atLeast(1)),

	// Transactions and idempotence.
	def("transaction.state.log.num.partitions", Int, "50", "Partitions of __transaction_state.", atLeast(1)),
	def("transaction.state.log.replication.factor", Short, "3", "Replication factor of __transaction_state.", atLeast(1)),
	def("transaction.state.log.min.isr", Int, "2", "min.insync.replicas of __transaction_state.", atLeast(1)),
	def("transaction.state.log.segment.bytes", Int, "104857600", "Segment size of __transaction_state.", atLeast(1)),
	def("transaction.state.log.load.buffer.size", Int, "5242880", "Batch size when loading transaction state.", atLeast(1)),
	def("transaction.max.timeout.ms", Int, "900000", "Longest transaction timeout a producer may request.", atLeast(1)),
	def("transactional.id.expiration.ms", Int, weekMs, "Idle time after which a transactional id is expired.", atLeast(1)),
	def("transaction.abort.timed.out.transaction.cleanup.interval.ms", Int, "10000", "How often timed-out transactions are rolled back.", atLeast(1)),
	def("transaction.remove.expired.transaction.cleanup.interval.ms", Int, "3600000", "How often expired transactional ids are removed.", atLeast(1)),
	def("transaction.partition.verification.enable", Boolean, "true", "Verify a partition was added to a transaction before writing to it (KIP-890)."),
	def("add.partitions.to.txn.retry.backoff.ms", Int, "20", "Pause before a partition leader asks the transaction coordinator again to add a partition it refused with CONCURRENT_TRANSACTIONS (the previous transaction completing; transaction.version 2).", atLeast(1)),
	def("add.partitions.to.txn.retry.backoff.max.ms", Int, "100", "How long a partition leader keeps asking the transaction coordinator to add a partition before answering the produce with the error (0: no retry; bounded by request.timeout.ms).", atLeast(0)),
	def("producer.id.expiration.ms", Int, dayMs, "Idle time after which a producer id's state is dropped by partition leaders.", atLeast(1)),
	def("producer.id.expiration.check.interval.ms", Int, "600000", "How often expired producer ids are removed.", atLeast(1)),

	// SASL mechanisms OAUTHBEARER and GSSAPI (internal/security/oauthbearer, internal/security/gssapi).
	def("sasl.server.callback.handler.class", Class, noDefault, "SASL server callback handler; for OAUTHBEARER, org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler selects KIP-768 JWT validation against a JWKS (unset: unsecured JWTs, for development).",
		oneOf("org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
			"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
			"org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler")),
	def("sasl.oauthbearer.jwks.endpoint.url", String, noDefault, "URL (http, https or file) of the identity provider's JWKS, whose keys verify OAUTHBEARER tokens."),
	def("sasl.oauthbearer.jwks.endpoint.refresh.ms", Long, "3600000", "Interval between fetches of the JWKS.", atLeast(0)),
	def("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", Long, "100", "First wait before retrying a failed JWKS fetch; waits double.", atLeast(0)),
	def("sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", Long, "10000", "Total wait after which a failing JWKS fetch gives up until the next refresh.", atLeast(0)),
	def("sasl.oauthbearer.clock.skew.seconds", Int, "30", "Clock difference allowed when checking a token's exp, nbf and iat.", atLeast(0)),
	def("sasl.oauthbearer.expected.audience", List, noDefault, "Audiences (aud) of which an OAUTHBEARER token must name one; unset: tokens must carry no aud."),
	def("sasl.oauthbearer.expected.issuer", String, noDefault, "Issuer (iss) an OAUTHBEARER token must name; unset: any."),
	def("sasl.oauthbearer.scope.claim.name", String, "scope", "Claim holding an OAUTHBEARER token's scope."),
	def("sasl.oauthbearer.sub.claim.name", String, "sub", "Claim holding an OAUTHBEARER token's principal."),
	def("sasl.kerberos.service.name", String, noDefault, "Kerberos service name of the broker: the first component of its principal."),
	def("sasl.kerberos.principal.to.local.rules", List, "DEFAULT", "Rules mapping Kerberos principals to short names (RULE:[n:string](regexp)s/pattern/replacement/g/L/U, DEFAULT), the first that applies wins."),
	def("sasl.kerberos.kinit.cmd", String, "/usr/bin/kinit", "Kerberos kinit command path."),
	def("sasl.kerberos.ticket.renew.window.factor", Double, "0.8", "Fraction of a ticket's lifetime after which the login thread renews it."),
	def("sasl.kerberos.ticket.renew.jitter", Double, "0.05", "Random jitter added to the renewal time."),
	def("sasl.kerberos.min.time.before.relogin", Long, "60000", "Login thread sleep time between refresh attempts."),
}

// dynamicBrokerKeys mirrors DynamicBrokerConfig.AllDynamicConfigs: the broker
// keys AlterConfigs may change. Log-default keys (the first broker synonym of
// each topic config) are added in init.
var dynamicBrokerKeys = map[string]bool{
	// LogCleaner.ReconfigurableConfigs
	"log.cleaner.threads": true, "log.cleaner.dedupe.buffer.size": true, "log.cleaner.io.buffer.load.factor": true,
	"log.cleaner.io.buffer.size": true, "message.max.bytes": true, "log.cleaner.io.max.bytes.per.second": true,
	"log.cleaner.backoff.ms": true,
	// DynamicThreadPool.ReconfigurableConfigs
	"num.io.threads": true, "num.replica.fetchers": true, "num.recovery.threads.per.data.dir": true, "background.threads": true,
	// SocketServer.ReconfigurableConfigs and cluster-level listener configs
	"max.connections.per.ip": true, "max.connections.per.ip.overrides": true, "max.connections": true,
	"max.connection.creation.rate": true, "num.network.threads": true,
	// DynamicConfig.Broker (replication quotas)
	"leader.replication.throttled.rate": true, "follower.replication.throttled.rate": true,
	// DynamicProducerStateManagerConfig
	"producer.id.expiration.ms": true, "transaction.partition.verification.enable": true,
	// Quota configs (QuotaConfig.brokerQuotaConfigs)
	"replica.alter.log.dirs.io.max.bytes.per.second": true,
	// DynamicRemoteLogConfig (KIP-956's rates)
	"remote.log.manager.copy.max.bytes.per.second": true, "remote.log.manager.fetch.max.bytes.per.second": true,
}

// perBrokerOnlyKeys may be altered for a specific broker but not as a
// cluster-wide default (DynamicBrokerConfig.PerBrokerConfigs).
var perBrokerOnlyKeys = map[string]bool{
	"listeners": true, "advertised.listeners": true, "listener.security.protocol.map": true,
	"ssl.protocol": true, "ssl.cipher.suites": true, "ssl.enabled.protocols": true, "ssl.keystore.type": true,
	"ssl.keystore.location": true, "ssl.keystore.password": true, "ssl.key.password": true, "ssl.truststore.type": true,
	"ssl.truststore.location": true, "ssl.truststore.password": true, "ssl.endpoint.identification.algorithm": true,
	"ssl.client.auth": true, "sasl.mechanism.inter.broker.protocol": true, "sasl.jaas.config": true, "sasl.enabled.mechanisms": true,
	"ssl.keystore.key": true, "ssl.keystore.certificate.chain": true, "ssl.truststore.certificates": true,
}

// listenerOnlyKeys (SslConfigs.RECONFIGURABLE_CONFIGS) may only be altered with
// a listener prefix, listener.name.<listener>.<key>.
var listenerOnlyKeys = map[string]bool{
	"ssl.keystore.type": true, "ssl.keystore.location": true, "ssl.keystore.password": true, "ssl.key.password": true,
	"ssl.truststore.type": true, "ssl.truststore.location": true, "ssl.truststore.password": true,
	"ssl.keystore.certificate.chain": true, "ssl.keystore.key": true, "ssl.truststore.certificates": true,
}

var (
	brokerDefs     = map[string]*Def{}
	brokerDefNames []string
)

func init() {
	for k := range perBrokerOnlyKeys {
		dynamicBrokerKeys[k] = true
	}
	for topic, syns := range topicSynonyms {
		if topic != "message.format.version" { // DynamicLogConfig.NonReconfigrableLogConfigs
			dynamicBrokerKeys[syns[0].name] = true
		}
	}
	brokerDefList = append(brokerDefList, observabilityDefs...)
	brokerDefList = append(brokerDefList, restDefs...)
	brokerDefList = append(brokerDefList, connectDefs...)
	brokerDefList = append(brokerDefList, schemaRegistryDefs...)
	brokerDefList = append(brokerDefList, consoleDefs...)
	for i := range brokerDefList {
		d := &brokerDefList[i]
		if _, dup := brokerDefs[d.Name]; dup {
			panic("config: duplicate broker key " + d.Name)
		}
		d.ReadOnly = !dynamicBrokerKeys[d.Name]
		brokerDefs[d.Name] = d
		brokerDefNames = append(brokerDefNames, d.Name)
	}
	for topic, syns := range topicSynonyms {
		for _, s := range syns {
			d, ok := brokerDefs[s.name]
			if !ok {
				panic("config: topic synonym " + s.name + " is not a broker key")
			}
			d.TopicSynonym = topic
		}
	}
	sort.Strings(brokerDefNames)
}

// BrokerDefs returns every broker config key Vltava knows, sorted by name.
func BrokerDefs() []Def {
	out := make([]Def, 0, len(brokerDefNames))
	for _, n := range brokerDefNames {
		out = append(out, *brokerDefs[n])
	}
	return out
}

// BrokerDef looks up one broker config key. Listener-prefixed keys
// (listener.name.<l>.<key>) resolve to the definition of <key>.
func BrokerDef(name string) (Def, bool) {
	d := lookupBrokerDef(name)
	if d == nil {
		return Def{}, false
	}
	return *d, true
}

func lookupBrokerDef(name string) *Def {
	if d, ok := brokerDefs[name]; ok {
		return d
	}
	if base, ok := listenerBase(name); ok {
		return brokerDefs[base]
	}
	return nil
}

// listenerBase splits listener.name.<listener>.<key> into <key>. For SASL
// mechanism overrides (listener.name.<l>.<mechanism>.sasl.jaas.config) the
// base is the trailing known key, as in DynamicBrokerConfig.
func listenerBase(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "listener.name.")
	if !ok {
		return "", false
	}
	_, base, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if _, known := brokerDefs[base]; known {
		return base, true
	}
	if _, after, ok := strings.Cut(base, "."); ok {
		if _, known := brokerDefs[after]; known {
			return after, true
		}
	}
	return "", false
}
