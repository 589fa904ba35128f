package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func mustParseBroker(t *testing.T, props map[string]string) *Broker {
	t.Helper()
	b, _, err := ParseBroker(props)
	if err != nil {
		t.Fatalf("ParseBroker(%v): %v", props, err)
	}
	return b
}

func TestZeroConfigDefaults(t *testing.T) {
	b, warnings, err := ParseBroker(nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("ParseBroker(nil) = %v, %v", warnings, err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"node.id", b.NodeID, int32(1)},
		{"process.roles", b.ProcessRoles, []string{"broker", "controller"}},
		{"listeners", b.Listeners, []Listener{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092, SecurityProtocol: "PLAINTEXT"}}},
		{"advertised.listeners", b.AdvertisedListeners, b.Listeners},
		{"inter.broker.listener.name", b.InterBrokerListenerName, "PLAINTEXT"},
		{"log.dirs", b.LogDirs, []string{"./data"}},
		{"metadata.log.dir", b.MetadataLogDir, "./data"},
		{"voters", len(b.Voters), 0},
		{"auto.create.topics.enable", b.AutoCreateTopicsEnable, true},
		{"num.partitions", b.NumPartitions, int32(1)},
		// The single-voter quorum rule (singleNodeDefaults).
		{"offsets.topic.replication.factor", b.OffsetsTopicReplicationFactor, int16(1)},
		{"transaction.state.log.replication.factor", b.TransactionStateLogReplicationFactor, int16(1)},
		{"transaction.state.log.min.isr", b.TransactionStateLogMinISR, int32(1)},
		// Kafka's own defaults.
		{"log.segment.bytes", b.LogSegmentBytes, int32(1 << 30)},
		{"log.roll", b.LogRollMs, int64(168 * hourMs)},
		{"log.retention", b.LogRetentionMs, int64(168 * hourMs)},
		{"log.retention.bytes", b.LogRetentionBytes, int64(-1)},
		{"log.flush.interval.ms falls back to scheduler interval", b.LogFlushIntervalMs, int64(1<<63 - 1)},
		{"message.max.bytes", b.MessageMaxBytes, int32(1048588)},
		{"replica.fetch.max.bytes", b.ReplicaFetchMaxBytes, int32(1048576)},
		{"fetch.max.bytes", b.FetchMaxBytes, int32(57671680)},
		{"max.incremental.fetch.session.cache.slots", b.MaxIncrementalFetchSessionCacheSlots, int32(1000)},
		{"group.initial.rebalance.delay.ms", b.GroupInitialRebalanceDelayMs, int32(3000)},
		{"group.max.session.timeout.ms", b.GroupMaxSessionTimeoutMs, int32(1800000)},
		{"offsets.topic.num.partitions", b.OffsetsTopicNumPartitions, int32(50)},
		{"offsets.retention.minutes", b.OffsetsRetentionMinutes, int32(10080)},
		{"producer.id.expiration.ms", b.ProducerIDExpirationMs, int32(86400000)},
		{"compression.type", b.CompressionType, "producer"},
		{"log.cleanup.policy", b.LogCleanupPolicy, []string{"delete"}},
		{"log.message.timestamp.type", b.LogMessageTimestampType, "CreateTime"},
		{"connections.max.idle.ms", b.ConnectionsMaxIdleMs, int64(600000)},
		{"socket.request.max.bytes", b.SocketRequestMaxBytes, int32(104857600)},
		{"log.cleaner.min.cleanable.ratio", b.LogCleanerMinCleanableRatio, 0.5},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

// TestOffsetsTopicReplicationFactor: Kafka's default of 3 holds everywhere
// except on a node that is a single-voter quorum of itself by
// configuration (no voters, no bootstrap servers) with the key unset, which
// uses 1; DescribeConfigs reports the value in effect.
func TestOffsetsTopicReplicationFactor(t *testing.T) {
	tests := []struct {
		name      string
		props     map[string]string
		want      int16
		wantValue string
		wantSrc   Source
	}{
		{"single node, unset", nil, 1, "1", SourceDefaultConfig},
		{"single node, set", map[string]string{"offsets.topic.replication.factor": "3"}, 3, "3", SourceStaticBrokerConfig},
		{"cluster, unset", map[string]string{"controller.quorum.voters": "1@h1:9093,2@h2:9093,3@h3:9093"}, 3, "3", SourceDefaultConfig},
		{"dynamic quorum, unset", map[string]string{"controller.quorum.bootstrap.servers": "h1:9093,h2:9093"}, 3, "3", SourceDefaultConfig},
		{"cluster of one voter, unset", map[string]string{"controller.quorum.voters": "1@h1:9093"}, 3, "3", SourceDefaultConfig},
		{"broker-only node, unset", map[string]string{"process.roles": "broker", "node.id": "4", "controller.quorum.voters": "1@h1:9093"}, 3, "3", SourceDefaultConfig},
		{"cluster, set", map[string]string{"controller.quorum.voters": "1@h1:9093,2@h2:9093", "offsets.topic.replication.factor": "2"}, 2, "2", SourceStaticBrokerConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParseBroker(t, tt.props)
			if b.OffsetsTopicReplicationFactor != tt.want {
				t.Errorf("OffsetsTopicReplicationFactor = %d, want %d", b.OffsetsTopicReplicationFactor, tt.want)
			}
			if v, src, _ := b.Value("offsets.topic.replication.factor"); v != tt.wantValue || src != tt.wantSrc {
				t.Errorf("Value = %q %v, want %q %v", v, src, tt.wantValue, tt.wantSrc)
			}
			e := findEntry(t, DescribeBroker(b, nil, nil), "offsets.topic.replication.factor")
			if e.Value != tt.wantValue || e.Source != tt.wantSrc {
				t.Errorf("DescribeBroker entry = %q %v, want %q %v", e.Value, e.Source, tt.wantValue, tt.wantSrc)
			}
		})
	}
}

func TestTimePrecedence(t *testing.T) {
	tests := []struct {
		name          string
		props         map[string]string
		wantRetention int64
		wantRoll      int64
	}{
		{"hours only", map[string]string{"log.retention.hours": "1", "log.roll.hours": "2"}, hourMs, 2 * hourMs},
		{"minutes beat hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "5"}, 5 * minuteMs, 168 * hourMs},
		{"ms beats minutes and hours", map[string]string{"log.retention.hours": "1", "log.retention.minutes": "5", "log.retention.ms": "1234"}, 1234, 168 * hourMs},
		{"roll ms beats roll hours", map[string]string{"log.roll.hours": "2", "log.roll.ms": "999"}, 168 * hourMs, 999},
		{"negative retention means forever", map[string]string{"log.retention.ms": "-5"}, -1, 168 * hourMs},
		{"negative hours means forever", map[string]string{"log.retention.hours": "-1"}, -1, 168 * hourMs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParseBroker(t, tt.props)
			if b.LogRetentionMs != tt.wantRetention || b.LogRollMs != tt.wantRoll {
				t.Errorf("retention=%d roll=%d, want %d %d", b.LogRetentionMs, b.LogRollMs, tt.wantRetention, tt.wantRoll)
			}
		})
	}
	b := mustParseBroker(t, map[string]string{"log.flush.scheduler.interval.ms": "3000"})
	if b.LogFlushIntervalMs != 3000 {
		t.Errorf("log.flush.interval.ms fallback = %d, want 3000", b.LogFlushIntervalMs)
	}
}

func TestListeners(t *testing.T) {
	tests := []struct {
		name      string
		props     map[string]string
		wantL     []string // String() of each listener and protocol
		wantAdv   []string
		wantInter string
	}{
		{
			name:      "multiple listeners with custom names",
			props:     map[string]string{"listeners": "internal://:9092, EXTERNAL://[::1]:9094", "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT", "inter.broker.listener.name": "internal"},
			wantL:     []string{"INTERNAL://:9092/PLAINTEXT", "EXTERNAL://[::1]:9094/PLAINTEXT"},
			wantAdv:   []string{"INTERNAL://:9092/PLAINTEXT", "EXTERNAL://[::1]:9094/PLAINTEXT"},
			wantInter: "INTERNAL",
		},
		{
			name:      "controller listener is not advertised",
			props:     map[string]string{"listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093", "controller.listener.names": "CONTROLLER", "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"},
			wantL:     []string{"PLAINTEXT://localhost:9092/PLAINTEXT", "CONTROLLER://localhost:9093/PLAINTEXT"},
			wantAdv:   []string{"PLAINTEXT://localhost:9092/PLAINTEXT"},
			wantInter: "PLAINTEXT",
		},
		{
			name:      "explicit advertised listeners and inter-broker protocol",
			props:     map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9093", "advertised.listeners": "PLAINTEXT://broker1.example.com:9093", "security.inter.broker.protocol": "PLAINTEXT"},
			wantL:     []string{"PLAINTEXT://0.0.0.0:9093/PLAINTEXT"},
			wantAdv:   []string{"PLAINTEXT://broker1.example.com:9093/PLAINTEXT"},
			wantInter: "PLAINTEXT",
		},
	}
	render := func(ls []Listener) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.String()+"/"+l.SecurityProtocol)
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParseBroker(t, tt.props)
			if got := render(b.Listeners); !reflect.DeepEqual(got, tt.wantL) {
				t.Errorf("listeners = %v, want %v", got, tt.wantL)
			}
			if got := render(b.AdvertisedListeners); !reflect.DeepEqual(got, tt.wantAdv) {
				t.Errorf("advertised = %v, want %v", got, tt.wantAdv)
			}
			if b.InterBrokerListenerName != tt.wantInter {
				t.Errorf("inter-broker listener = %q, want %q", b.InterBrokerListenerName, tt.wantInter)
			}
		})
	}
}

func TestInvalidBrokerConfigs(t *testing.T) {
	tests := []struct {
		name    string
		props   map[string]string
		wantMsg string
	}{
		{"not a number", map[string]string{"log.segment.bytes": "abc"}, `invalid value "abc" for log.segment.bytes: must be an integer >= 14`},
		{"below minimum", map[string]string{"log.segment.bytes": "13"}, `invalid value "13" for log.segment.bytes: must be an integer >= 14`},
		{"int overflow", map[string]string{"num.partitions": "3000000000"}, `invalid value "3000000000" for num.partitions: must be an integer >= 1`},
		{"boolean", map[string]string{"auto.create.topics.enable": "yes"}, `invalid value "yes" for auto.create.topics.enable: must be true or false`},
		{"enum", map[string]string{"compression.type": "brotli"}, `invalid value "brotli" for compression.type: must be one of [uncompressed, zstd, lz4, snappy, gzip, producer]`},
		{"list enum", map[string]string{"log.cleanup.policy": "delete,archive"}, `invalid value "delete,archive" for log.cleanup.policy: must be a comma-separated list of [compact, delete]`},
		{"double range", map[string]string{"log.cleaner.min.cleanable.ratio": "1.5"}, `invalid value "1.5" for log.cleaner.min.cleanable.ratio: must be a number in [0.0, 1.0]`},
		{"unknown role", map[string]string{"process.roles": "broker,zookeeper"}, `invalid value "broker,zookeeper" for process.roles: must be a comma-separated list of [broker, controller]`},
		{"empty roles", map[string]string{"process.roles": ""}, `invalid value "" for process.roles: must not be empty`},
		{"bad listener", map[string]string{"listeners": "localhost:9092"}, `invalid value "localhost:9092" for listeners: "localhost:9092" is not a valid endpoint; expected NAME://host:port`},
		{"duplicate listener names", map[string]string{"listeners": "PLAINTEXT://:9092,plaintext://:9093"}, "PLAINTEXT appears more than once"},
		{"unmapped listener", map[string]string{"listeners": "CLIENT://:9092", "inter.broker.listener.name": "CLIENT"}, "no security protocol defined for listener CLIENT"},
		{"bad protocol in map", map[string]string{"listener.security.protocol.map": "A:TLS"}, `unknown security protocol "TLS"`},
		{"advertised 0.0.0.0", map[string]string{"listeners": "PLAINTEXT://0.0.0.0:9092"}, "nonroutable meta-address 0.0.0.0"},
		{"broker.id mismatch", map[string]string{"broker.id": "7"}, "must equal node.id (1)"},
		{"both inter-broker settings", map[string]string{"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"}, "only one of inter.broker.listener.name and security.inter.broker.protocol"},
		{"controller listener missing", map[string]string{"controller.listener.names": "CONTROLLER"}, "listener CONTROLLER is not defined in listeners"},
		{"node not among voters", map[string]string{"controller.quorum.voters": "2@h:9093"}, "must include this node (node.id=1)"},
		{"bad voter", map[string]string{"controller.quorum.voters": "h:9093"}, `"h:9093" is not a valid voter`},
		{"broker-only needs quorum", map[string]string{"process.roles": "broker"}, "needs controller.quorum.voters"},
		{"inter-broker protocol without its listener", map[string]string{"security.inter.broker.protocol": "SSL", "controller.quorum.voters": "1@h:9093"}, "listener SSL must be defined in advertised.listeners"},
		{"per-ip 0 without overrides", map[string]string{"max.connections.per.ip": "0"}, "can be 0 only if max.connections.per.ip.overrides is set"},
		{"bad per-ip overrides", map[string]string{"max.connections.per.ip.overrides": "host1:x"}, "host:count pairs"},
		{"refused key", map[string]string{"num.io.threads": "16"}, "num.io.threads: Vltava has no fixed thread pools"},
		{"per-listener override of an honoured key", map[string]string{"listener.name.plaintext.max.connection.creation.rate": "10"}, "listener.name.plaintext.max.connection.creation.rate: per-listener overrides"},
		{"negative per-listener max.connections", map[string]string{"listener.name.plaintext.max.connections": "-1"}, `invalid value "-1" for listener.name.plaintext.max.connections: must be an integer >= 0`},
		{"principal builder", map[string]string{"principal.builder.class": "org.example.Builder"}, "principal.builder.class: Java plugin classes cannot be loaded"},
		{"unknown ssl key", map[string]string{"ssl.engine.factory.class": "x"}, "ssl.engine.factory.class: this TLS setting is not supported"},
		{"unknown sasl key", map[string]string{"listener.name.external.sasl.login.class": "x"}, "this SASL setting is not supported"},
		{"super user without a type", map[string]string{"super.users": "User:admin;admin"}, `principal "admin" is not of the form Type:Name`},
		{"other authorizer class", map[string]string{"authorizer.class.name": "org.example.OpaAuthorizer"}, "authorizer.class.name"},
		{"other authorizer's key", map[string]string{"authorizer.opa.url": "http://x"}, "authorizer.opa.url: only the StandardAuthorizer's keys"},
		{"early start listener not a listener", map[string]string{"early.start.listeners": "INTERNAL"}, "listener INTERNAL is not defined in listeners"},
		{"unknown SASL callback handler", map[string]string{"listener.name.external.oauthbearer.sasl.server.callback.handler.class": "com.example.Handler"}, "sasl.server.callback.handler.class"},
		{"creation rate 0", map[string]string{"max.connection.creation.rate": "0"}, "set at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseBroker(tt.props)
			if err == nil {
				t.Fatalf("ParseBroker(%v) succeeded, want error containing %q", tt.props, tt.wantMsg)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if !errors.Is(err, kerr.InvalidConfig) {
				t.Errorf("error %v does not wrap kerr.InvalidConfig", err)
			}
		})
	}
}

func TestConnectionOverrides(t *testing.T) {
	b := mustParseBroker(t, map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:5, broker-2.example.com:100,[::1]:7"})
	want := map[string]int32{"10.0.0.1": 5, "broker-2.example.com": 100, "[::1]": 7}
	if !reflect.DeepEqual(b.MaxConnectionsPerIPOverrides, want) {
		t.Errorf("overrides = %v, want %v", b.MaxConnectionsPerIPOverrides, want)
	}
}

func TestUnknownKeysAreWarnings(t *testing.T) {
	b, warnings, err := ParseBroker(map[string]string{
		"no.such.key":  "1",
		"retention.ms": "5",
		"listener.name.plaintext.ssl.keystore.type":     "JKS",
		"listener.name.sasl_ssl.plain.sasl.jaas.config": "",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"The configuration 'no.such.key' was supplied but isn't a known config.",
		"The configuration 'retention.ms' was supplied but isn't a known config. (retention.ms is a topic config; its broker-wide default is log.retention.ms)",
	}
	if !reflect.DeepEqual(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}
	if _, src, ok := b.Value("no.such.key"); ok || src != SourceUnknown {
		t.Errorf("Value of unknown key: ok=%v src=%v", ok, src)
	}
}

func TestValueSources(t *testing.T) {
	b := mustParseBroker(t, map[string]string{"max.connections": " 4 "})
	tests := []struct {
		key     string
		want    string
		wantSrc Source
	}{
		{"max.connections", "4", SourceStaticBrokerConfig},
		{"num.network.threads", "3", SourceDefaultConfig},
		{"log.retention.ms", "", SourceDefaultConfig},
		{"node.id", "1", SourceDefaultConfig},
	}
	for _, tt := range tests {
		v, src, ok := b.Value(tt.key)
		if !ok || v != tt.want || src != tt.wantSrc {
			t.Errorf("Value(%s) = %q, %v, %v; want %q, %v", tt.key, v, src, ok, tt.want, tt.wantSrc)
		}
	}
}

func TestStringHidesSensitiveValues(t *testing.T) {
	// TLS keys are refused at start-up until TLS lands, so the secrets are
	// put in the static layer directly.
	b := mustParseBroker(t, nil)
	b.Raw["ssl.keystore.password"] = "hunter2"
	b.Raw["listener.name.plaintext.ssl.key.password"] = "s3cret"
	b.Raw["ssl.keystore.location"] = "/etc/ks.jks"
	s := b.String()
	for _, secret := range []string{"hunter2", "s3cret"} {
		if strings.Contains(s, secret) {
			t.Errorf("String() leaks %q", secret)
		}
	}
	for _, line := range []string{
		"ssl.keystore.password=[hidden]\n",
		"listener.name.plaintext.ssl.key.password=[hidden]\n",
		"ssl.truststore.password=null\n",
		"ssl.keystore.location=/etc/ks.jks\n",
		"log.retention.ms=null\n",
		"log.retention.hours=168\n",
		"node.id=1\n",
	} {
		if !strings.Contains(s, line) {
			t.Errorf("String() lacks %q", line)
		}
	}
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := 1; i < len(lines); i++ {
		prev, _, _ := strings.Cut(lines[i-1], "=")
		cur, _, _ := strings.Cut(lines[i], "=")
		if prev > cur {
			t.Fatalf("String() not sorted: %q before %q", lines[i-1], lines[i])
		}
	}
}

func TestLoadBroker(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.properties")
	file := "# Vltava\nnode.id=3\nprocess.roles=broker,controller\ncontroller.quorum.voters=3@localhost:9093\n" +
		"listeners=PLAINTEXT://localhost:9092,\\\n   CONTROLLER://localhost:9093\n" +
		"controller.listener.names=CONTROLLER\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n" +
		"log.dirs=/var/a, /var/b\nnum.partitions=3\n"
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	b, warnings, err := LoadBroker(path, []string{"num.partitions=6", "log.retention.hours=24", "unknown.x=1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want one for unknown.x", warnings)
	}
	if b.NodeID != 3 || b.NumPartitions != 6 || b.LogRetentionMs != 24*hourMs || len(b.Listeners) != 2 || len(b.Voters) != 1 {
		t.Errorf("got node=%d partitions=%d retention=%d listeners=%v voters=%v", b.NodeID, b.NumPartitions, b.LogRetentionMs, b.Listeners, b.Voters)
	}
	if !reflect.DeepEqual(b.LogDirs, []string{"/var/a", "/var/b"}) {
		t.Errorf("log dirs = %q", b.LogDirs)
	}
	if _, _, err := LoadBroker(path, []string{"num.partitions"}); err == nil {
		t.Error("override without '=' accepted")
	}
	if _, _, err := LoadBroker(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("missing file accepted")
	}
}

func TestLogDirFallback(t *testing.T) {
	b := mustParseBroker(t, map[string]string{"log.dir": "/tmp/x"})
	if !reflect.DeepEqual(b.LogDirs, []string{"/tmp/x"}) {
		t.Errorf("log.dir only: LogDirs = %q", b.LogDirs)
	}
	b = mustParseBroker(t, map[string]string{"log.dir": "/tmp/x", "log.dirs": "/tmp/y"})
	if !reflect.DeepEqual(b.LogDirs, []string{"/tmp/y"}) {
		t.Errorf("log.dirs beats log.dir: LogDirs = %q", b.LogDirs)
	}
}

func TestBrokerDefsAreConsistent(t *testing.T) {
	defs := BrokerDefs()
	for i, d := range defs {
		if i > 0 && defs[i-1].Name >= d.Name {
			t.Errorf("BrokerDefs not sorted at %s", d.Name)
		}
		if d.Doc == "" {
			t.Errorf("%s has no doc", d.Name)
		}
		if d.HasDefault {
			if err := d.Validate(d.Default); err != nil {
				t.Errorf("default of %s is invalid: %v", d.Name, err)
			}
		}
	}
	for _, d := range TopicDefs() {
		if err := d.Validate(d.Default); err != nil {
			t.Errorf("default of topic %s is invalid: %v", d.Name, err)
		}
	}
	for _, k := range []struct {
		name     string
		readOnly bool
		topic    string
	}{
		{"log.retention.ms", false, "retention.ms"},
		{"log.retention.hours", true, "retention.ms"},
		{"log.roll.hours", true, "segment.ms"},
		{"message.max.bytes", false, "max.message.bytes"},
		{"num.io.threads", false, ""},
		{"log.cleaner.threads", false, ""},
		{"log.message.format.version", true, "message.format.version"},
		{"node.id", true, ""},
		{"listeners", false, ""},
	} {
		d, ok := BrokerDef(k.name)
		if !ok || d.ReadOnly != k.readOnly || d.TopicSynonym != k.topic {
			t.Errorf("%s: ok=%v readOnly=%v topic=%q, want readOnly=%v topic=%q", k.name, ok, d.ReadOnly, d.TopicSynonym, k.readOnly, k.topic)
		}
	}
}
