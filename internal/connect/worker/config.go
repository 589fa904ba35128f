// Package worker is the Connect runtime's worker: the worker configuration
// (Kafka Connect's WorkerConfig names), the lifecycle of connector and task
// instances with their states, the source and sink task loops on franz-go,
// the converter, transformation and predicate chains built from connector
// configs, error handling with retries, tolerance, logging and the dead
// letter queue, and the offset stores (a file for standalone mode, a topic
// for distributed mode). The herder (internal/connect/herder) decides what
// runs; the worker runs it.
package worker

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/connect"
	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// Mode is how the worker keeps its state.
type Mode int

// The modes.
const (
	Standalone Mode = iota
	Distributed
)

// Worker config keys, as Kafka Connect's WorkerConfig and DistributedConfig.
const (
	KeyBootstrap              = "bootstrap.servers"
	KeyGroupID                = "group.id"
	KeyKeyConverter           = "key.converter"
	KeyValueConverter         = "value.converter"
	KeyHeaderConverter        = "header.converter"
	KeyOffsetFlushInterval    = "offset.flush.interval.ms"
	KeyOffsetFlushTimeout     = "offset.flush.timeout.ms"
	KeyListeners              = "listeners"
	KeyAdvertisedHost         = "rest.advertised.host.name"
	KeyAdvertisedPort         = "rest.advertised.port"
	KeyAdvertisedListener     = "rest.advertised.listener"
	KeyPluginPath             = "plugin.path"
	KeyOffsetFile             = "offset.storage.file.filename"
	KeyConfigTopic            = "config.storage.topic"
	KeyOffsetTopic            = "offset.storage.topic"
	KeyStatusTopic            = "status.storage.topic"
	KeyConfigRF               = "config.storage.replication.factor"
	KeyOffsetRF               = "offset.storage.replication.factor"
	KeyStatusRF               = "status.storage.replication.factor"
	KeyOffsetPartitions       = "offset.storage.partitions"
	KeyStatusPartitions       = "status.storage.partitions"
	KeyScheduledRebalance     = "scheduled.rebalance.max.delay.ms"
	KeyConnectProtocol        = "connect.protocol"
	KeySessionTimeout         = "session.timeout.ms"
	KeyHeartbeatInterval      = "heartbeat.interval.ms"
	KeyRebalanceTimeout       = "rebalance.timeout.ms"
	KeyOverridePolicy         = "connector.client.config.override.policy"
	KeyTopicTracking          = "topic.tracking.enable"
	KeyTopicTrackingReset     = "topic.tracking.allow.reset"
	KeyTaskShutdownTimeout    = "task.shutdown.graceful.timeout.ms"
	KeyExactlyOnceSource      = "exactly.once.source.support"
	KeyAutoRestart            = "vltava.task.auto.restart"
	KeyAutoRestartBackoff     = "vltava.task.auto.restart.backoff.max.ms"
	KeyClientID               = "client.id"
	KeyWorkerSyncTimeout      = "worker.sync.timeout.ms"
	KeyWorkerUnsyncBackoff    = "worker.unsync.backoff.ms"
	KeyRequestTimeout         = "request.timeout.ms"
	KeyInterWorkerKeyGen      = "inter.worker.key.generation.algorithm"
	KeyInterWorkerKeyTTL      = "inter.worker.key.ttl.ms"
	KeyInterWorkerSigAlg      = "inter.worker.signature.algorithm"
	KeyInterWorkerVerifyAlgos = "inter.worker.verification.algorithms"
)

// Config is a parsed worker configuration.
type Config struct {
	Mode  Mode
	Props map[string]string // every key as given

	Bootstrap           []string
	GroupID             string
	KeyConverter        string
	ValueConverter      string
	HeaderConverter     string
	OffsetFlushInterval time.Duration
	OffsetFlushTimeout  time.Duration
	Listeners           []config.HTTPListener
	AdvertisedHost      string
	AdvertisedPort      int
	OffsetFile          string
	ConfigTopic         string
	OffsetTopic         string
	StatusTopic         string
	ConfigRF            int16
	OffsetRF            int16
	StatusRF            int16
	OffsetPartitions    int32
	StatusPartitions    int32
	ScheduledRebalance  time.Duration
	Protocol            string // eager, compatible, sessioned
	SessionTimeout      time.Duration
	HeartbeatInterval   time.Duration
	RebalanceTimeout    time.Duration
	OverridePolicy      string // None, Principal, All
	TopicTracking       bool
	TopicTrackingReset  bool
	TaskShutdownTimeout time.Duration
	ExactlyOnceSource   string // disabled, preparing, enabled
	AutoRestart         bool
	AutoRestartBackoff  time.Duration
	ClientID            string
	Security            *clientauth.Security

	producerProps map[string]string // producer.* with the prefix removed
	consumerProps map[string]string // consumer.* with the prefix removed
}

// WorkerDef is the worker's configuration definition; every key it does not
// define is refused unless it is a converter's (key.converter.* ...), a
// client's (producer.*, consumer.*, admin.*: see clientprops.go) or a
// security setting.
var WorkerDef = func() *connect.ConfigDef {
	d := connect.NewConfigDef()
	str := func(name, def, doc string) {
		d.Define(connect.ConfigKey{Name: name, Type: connect.TypeString, Default: def, Doc: doc})
	}
	long := func(name string, def int64, doc string) {
		d.Define(connect.ConfigKey{Name: name, Type: connect.TypeLong, Default: def, Doc: doc, Check: connect.InRange(0, 1<<62)})
	}
	integer := func(name string, def int32, doc string) {
		d.Define(connect.ConfigKey{Name: name, Type: connect.TypeInt, Default: def, Doc: doc})
	}
	boolean := func(name string, def bool, doc string) {
		d.Define(connect.ConfigKey{Name: name, Type: connect.TypeBoolean, Default: def, Doc: doc})
	}
	str(KeyBootstrap, "localhost:9092", "Kafka brokers to bootstrap from.")
	str(KeyGroupID, "", "The Connect cluster's group (distributed mode; required there).")
	str(KeyKeyConverter, "org.apache.kafka.connect.json.JsonConverter", "Converter of record keys.")
	str(KeyValueConverter, "org.apache.kafka.connect.json.JsonConverter", "Converter of record values.")
	str(KeyHeaderConverter, "org.apache.kafka.connect.storage.SimpleHeaderConverter", "Converter of record headers.")
	long(KeyOffsetFlushInterval, 60000, "Interval between source offset flushes and sink offset commits.")
	long(KeyOffsetFlushTimeout, 5000, "How long an offset flush may take before it is cancelled.")
	str(KeyListeners, "http://127.0.0.1:8083", "REST API listeners (http://host:port,...).")
	str(KeyAdvertisedHost, "", "Host name given to other workers.")
	integer(KeyAdvertisedPort, 0, "Port given to other workers (0: the first listener's).")
	str(KeyAdvertisedListener, "", "Protocol given to other workers (http).")
	str(KeyPluginPath, "", "Accepted for compatibility: every plugin is built into the binary.")
	str(KeyOffsetFile, "", "Standalone mode: the file source offsets are kept in.")
	str(KeyConfigTopic, "", "Distributed mode: the topic of connector configs.")
	str(KeyOffsetTopic, "", "Distributed mode: the topic of source offsets.")
	str(KeyStatusTopic, "", "Distributed mode: the topic of connector and task statuses.")
	d.Define(connect.ConfigKey{Name: KeyConfigRF, Type: connect.TypeShort, Default: int16(3), Doc: "Replication factor of the config topic (-1: the broker default)."})
	d.Define(connect.ConfigKey{Name: KeyOffsetRF, Type: connect.TypeShort, Default: int16(3), Doc: "Replication factor of the offset topic (-1: the broker default)."})
	d.Define(connect.ConfigKey{Name: KeyStatusRF, Type: connect.TypeShort, Default: int16(3), Doc: "Replication factor of the status topic (-1: the broker default)."})
	integer(KeyOffsetPartitions, 25, "Partitions of the offset topic (-1: the broker default).")
	integer(KeyStatusPartitions, 5, "Partitions of the status topic (-1: the broker default).")
	long(KeyScheduledRebalance, 300000, "How long the leader waits for a departed worker before reassigning its work (incremental cooperative protocol).")
	d.Define(connect.ConfigKey{Name: KeyConnectProtocol, Type: connect.TypeString, Default: "sessioned", Doc: "eager, compatible or sessioned.", Check: connect.OneOf(true, "eager", "compatible", "sessioned")})
	integer(KeySessionTimeout, 10000, "Group session timeout.")
	integer(KeyHeartbeatInterval, 3000, "Group heartbeat interval.")
	integer(KeyRebalanceTimeout, 60000, "Group rebalance timeout.")
	d.Define(connect.ConfigKey{Name: KeyOverridePolicy, Type: connect.TypeString, Default: "All", Doc: "Which producer.override.*/consumer.override.*/admin.override.* keys connectors may set: None, Principal or All.", Check: connect.OneOf(false, "None", "Principal", "All", "org.apache.kafka.connect.connector.policy.NoneConnectorClientConfigOverridePolicy", "org.apache.kafka.connect.connector.policy.PrincipalConnectorClientConfigOverridePolicy", "org.apache.kafka.connect.connector.policy.AllConnectorClientConfigOverridePolicy")})
	boolean(KeyTopicTracking, true, "Track the topics each connector uses (KIP-558).")
	boolean(KeyTopicTrackingReset, true, "Allow resetting the tracked topics.")
	long(KeyTaskShutdownTimeout, 5000, "How long a task may take to stop.")
	d.Define(connect.ConfigKey{Name: KeyExactlyOnceSource, Type: connect.TypeString, Default: "disabled", Doc: "KIP-618 exactly-once source support: disabled, preparing or enabled.", Check: connect.OneOf(true, "disabled", "preparing", "enabled")})
	boolean(KeyAutoRestart, false, "Restart failed tasks automatically, with exponential backoff.")
	long(KeyAutoRestartBackoff, 60000, "The longest wait between automatic restarts of a failed task.")
	str(KeyClientID, "", "Client id prefix of the worker's Kafka clients.")
	long(KeyWorkerSyncTimeout, 3000, "How long a worker waits to catch up with the config topic before leaving the group.")
	long(KeyWorkerUnsyncBackoff, 300000, "How long a worker out of sync waits before rejoining.")
	integer(KeyRequestTimeout, 40000, "Timeout of the worker's Kafka requests.")
	str(KeyInterWorkerKeyGen, "HmacSHA256", "Accepted (sessioned protocol): requests between workers are forwarded by the leader's REST URL.")
	long(KeyInterWorkerKeyTTL, 3600000, "Accepted (sessioned protocol).")
	str(KeyInterWorkerSigAlg, "HmacSHA256", "Accepted (sessioned protocol).")
	str(KeyInterWorkerVerifyAlgos, "HmacSHA256", "Accepted (sessioned protocol).")
	return d
}()

// ignoredWorkerKeys are Kafka worker keys accepted without effect, each
// with the reason (listed in docs/CONNECT.md).
var ignoredWorkerKeys = map[string]string{
	"metrics.sample.window.ms":     "Connect's JMX metrics are not exported",
	"metrics.num.samples":          "Connect's JMX metrics are not exported",
	"metrics.recording.level":      "Connect's JMX metrics are not exported",
	"metric.reporters":             "Connect's JMX metrics are not exported",
	"auto.include.jmx.reporter":    "Connect's JMX metrics are not exported",
	"config.providers":             "",
	"rest.extension.classes":       "",
	"client.dns.lookup":            "franz-go resolves every address",
	"plugin.discovery":             "plugins are built in",
	"response.http.headers.config": "",
	"access.control.allow.origin":  "",
	"access.control.allow.methods": "",
	"admin.listeners":              "",
	"retry.backoff.ms":             "franz-go backs off itself",
	"reconnect.backoff.ms":         "franz-go backs off itself",
	"reconnect.backoff.max.ms":     "franz-go backs off itself",
	"connections.max.idle.ms":      "franz-go manages idle connections",
	"send.buffer.bytes":            "",
	"receive.buffer.bytes":         "",
	"metadata.max.age.ms":          "",
}

// emptyOnly are ignored keys that are refused with a value other than empty
// (they would change behaviour).
var emptyOnly = map[string]bool{"config.providers": true, "rest.extension.classes": true, "response.http.headers.config": true, "admin.listeners": true, "access.control.allow.origin": true, "access.control.allow.methods": true}

// isSecurityKey is a client security setting: security.protocol, ssl.*,
// sasl.*.
func isSecurityKey(k string) bool {
	return k == "security.protocol" || strings.HasPrefix(k, "ssl.") || strings.HasPrefix(k, "sasl.")
}

// ParseConfig parses worker properties for a mode. An unknown key, a key
// that is not supported, or an invalid value is an error naming the key.
func ParseConfig(props map[string]string, mode Mode) (*Config, error) {
	c := &Config{Mode: mode, Props: props, producerProps: map[string]string{}, consumerProps: map[string]string{}}
	security, adminSecurity := map[string]string{}, map[string]string{}
	var unknown []string
	for k, v := range props {
		switch {
		case isDefined(k):
		case strings.HasPrefix(k, "key.converter.") || strings.HasPrefix(k, "value.converter.") || strings.HasPrefix(k, "header.converter."):
		case strings.HasPrefix(k, "producer."):
			c.producerProps[strings.TrimPrefix(k, "producer.")] = v
		case strings.HasPrefix(k, "consumer."):
			c.consumerProps[strings.TrimPrefix(k, "consumer.")] = v
		case strings.HasPrefix(k, "admin.") && isSecurityKey(strings.TrimPrefix(k, "admin.")):
			adminSecurity[strings.TrimPrefix(k, "admin.")] = v
		case strings.HasPrefix(k, "admin."):
			if err := checkAdminProp(strings.TrimPrefix(k, "admin.")); err != nil {
				return nil, fmt.Errorf("worker config %s: %w", k, err)
			}
		case isSecurityKey(k):
			security[k] = v
		default:
			if _, ok := ignoredWorkerKeys[k]; ok {
				if emptyOnly[k] && strings.TrimSpace(v) != "" {
					return nil, fmt.Errorf("worker config %s is not supported", k)
				}
				continue
			}
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("unknown worker config %s", strings.Join(unknown, ", "))
	}
	parsed, err := WorkerDef.Parse(props)
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	s := func(k string) string { return strings.TrimSpace(parsed[k].(string)) }
	ms := func(k string) time.Duration { return time.Duration(parsed[k].(int64)) * time.Millisecond }
	for _, b := range strings.Split(s(KeyBootstrap), ",") {
		if b = strings.TrimSpace(b); b != "" {
			c.Bootstrap = append(c.Bootstrap, b)
		}
	}
	if len(c.Bootstrap) == 0 {
		return nil, fmt.Errorf("worker config %s is empty", KeyBootstrap)
	}
	c.GroupID = s(KeyGroupID)
	c.KeyConverter, c.ValueConverter, c.HeaderConverter = s(KeyKeyConverter), s(KeyValueConverter), s(KeyHeaderConverter)
	c.OffsetFlushInterval, c.OffsetFlushTimeout = ms(KeyOffsetFlushInterval), ms(KeyOffsetFlushTimeout)
	if c.OffsetFlushInterval <= 0 {
		return nil, fmt.Errorf("worker config %s must be positive", KeyOffsetFlushInterval)
	}
	c.Listeners, err = config.ParseHTTPListeners(s(KeyListeners))
	if err != nil {
		return nil, fmt.Errorf("worker config %s: %w", KeyListeners, err)
	}
	if len(c.Listeners) == 0 {
		return nil, fmt.Errorf("worker config %s is empty", KeyListeners)
	}
	for _, l := range c.Listeners {
		// The worker has no listeners.https.ssl.* keys yet: an https
		// endpoint is refused here rather than failing at start.
		if l.Scheme != "http" {
			return nil, fmt.Errorf("worker config %s: %s://%s:%d: only http endpoints are supported", KeyListeners, l.Scheme, l.Host, l.Port)
		}
	}
	if l := s(KeyAdvertisedListener); l != "" && !strings.EqualFold(l, "http") {
		return nil, fmt.Errorf("worker config %s=%s: only http is supported", KeyAdvertisedListener, l)
	}
	c.AdvertisedHost = s(KeyAdvertisedHost)
	c.AdvertisedPort = int(parsed[KeyAdvertisedPort].(int32))
	c.OffsetFile = s(KeyOffsetFile)
	c.ConfigTopic, c.OffsetTopic, c.StatusTopic = s(KeyConfigTopic), s(KeyOffsetTopic), s(KeyStatusTopic)
	c.ConfigRF, c.OffsetRF, c.StatusRF = parsed[KeyConfigRF].(int16), parsed[KeyOffsetRF].(int16), parsed[KeyStatusRF].(int16)
	c.OffsetPartitions, c.StatusPartitions = parsed[KeyOffsetPartitions].(int32), parsed[KeyStatusPartitions].(int32)
	c.ScheduledRebalance = ms(KeyScheduledRebalance)
	c.Protocol = strings.ToLower(s(KeyConnectProtocol))
	c.SessionTimeout = time.Duration(parsed[KeySessionTimeout].(int32)) * time.Millisecond
	c.HeartbeatInterval = time.Duration(parsed[KeyHeartbeatInterval].(int32)) * time.Millisecond
	c.RebalanceTimeout = time.Duration(parsed[KeyRebalanceTimeout].(int32)) * time.Millisecond
	c.OverridePolicy = s(KeyOverridePolicy)
	if i := strings.LastIndexByte(c.OverridePolicy, '.'); i >= 0 {
		c.OverridePolicy = strings.TrimSuffix(c.OverridePolicy[i+1:], "ConnectorClientConfigOverridePolicy")
	}
	c.TopicTracking, c.TopicTrackingReset = parsed[KeyTopicTracking].(bool), parsed[KeyTopicTrackingReset].(bool)
	c.TaskShutdownTimeout = ms(KeyTaskShutdownTimeout)
	c.ExactlyOnceSource = strings.ToLower(s(KeyExactlyOnceSource))
	c.AutoRestart = parsed[KeyAutoRestart].(bool)
	c.AutoRestartBackoff = ms(KeyAutoRestartBackoff)
	c.ClientID = s(KeyClientID)
	c.Security, err = clientauth.New(func(k string) (string, bool) { v, ok := security[k]; return v, ok }, "", "")
	if err != nil {
		return nil, fmt.Errorf("worker config: %w", err)
	}
	// Kafka's worker does not pass its security settings on to the
	// producers, consumers and admin clients of tasks, so secured worker
	// files repeat them as producer.*, consumer.* and admin.*. Every client
	// of this worker uses the worker's: a repeated setting is accepted when
	// it is the same.
	for prefix, m := range map[string]map[string]string{"producer.": c.producerProps, "consumer.": c.consumerProps, "admin.": adminSecurity} {
		for k, v := range m {
			if !isSecurityKey(k) {
				continue
			}
			if top, ok := security[k]; !ok || strings.TrimSpace(top) != strings.TrimSpace(v) {
				return nil, fmt.Errorf("worker config %s%s differs from %s: every client of the worker uses the worker's security settings", prefix, k, k)
			}
			delete(m, k)
		}
	}
	if _, err := producerOpts(c.producerProps); err != nil {
		return nil, fmt.Errorf("worker config producer.%w", err)
	}
	if _, err := consumerOpts(c.consumerProps); err != nil {
		return nil, fmt.Errorf("worker config consumer.%w", err)
	}
	switch mode {
	case Standalone:
		if c.OffsetFile == "" {
			return nil, fmt.Errorf("worker config %s is required in standalone mode", KeyOffsetFile)
		}
		if c.ExactlyOnceSource != "disabled" {
			return nil, fmt.Errorf("worker config %s is for distributed mode only (as in Kafka)", KeyExactlyOnceSource)
		}
	case Distributed:
		for _, k := range []string{KeyGroupID, KeyConfigTopic, KeyOffsetTopic, KeyStatusTopic} {
			if s(k) == "" {
				return nil, fmt.Errorf("Missing required configuration \"%s\" which has no default value.", k)
			}
		}
	}
	return c, nil
}

func isDefined(k string) bool { _, ok := WorkerDef.Key(k); return ok }

// ExactlyOnce reports whether source tasks run in transactions
// (exactly.once.source.support=enabled, KIP-618).
func (c *Config) ExactlyOnce() bool { return c.ExactlyOnceSource == "enabled" }

// Fencing reports whether the worker fences the transactional ids of a
// source connector's previous generation of tasks before committing a new
// one, and reads the config and offsets topics with read_committed: both
// "preparing" (the rolling-upgrade step) and "enabled".
func (c *Config) Fencing() bool {
	return c.ExactlyOnceSource == "preparing" || c.ExactlyOnceSource == "enabled"
}

// TransactionalID is the transactional id of a source task under
// exactly-once support, Kafka Connect's "<group.id>-<connector>-<task>".
func (c *Config) TransactionalID(connector string, task int) string {
	return fmt.Sprintf("%s-%s-%d", c.GroupID, connector, task)
}

// WorkerID is the worker's id in statuses and the group: its advertised
// host:port.
func (c *Config) WorkerID() string {
	host, port := c.AdvertisedHost, c.AdvertisedPort
	if host == "" {
		host = c.Listeners[0].Host
		if host == "" || host == "0.0.0.0" || host == "::" {
			host = "localhost"
		}
	}
	if port == 0 {
		port = c.Listeners[0].Port
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// URL is the worker's advertised REST URL.
func (c *Config) URL() string { return "http://" + c.WorkerID() + "/" }

// ConverterProps returns the worker's props under prefix ("key.converter.")
// with the prefix removed.
func (c *Config) ConverterProps(prefix string) map[string]string {
	return SubProps(c.Props, prefix)
}

// SubProps returns the props under prefix, with the prefix removed.
func SubProps(props map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range props {
		if rest, ok := strings.CutPrefix(k, prefix); ok {
			out[rest] = v
		}
	}
	return out
}
