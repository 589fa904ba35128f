package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// Observability keys are Vltava's own: Kafka exposes metrics through JMX and
// configures logging through log4j, neither of which a Go binary has. They
// are marked vltavaOnly so docs/CONFIGURATION.md says so.
var observabilityDefs = []Def{
	def("admin.listeners", List, "http://127.0.0.1:9644", "Endpoints of the admin HTTP listener, as http://host:port entries: /metrics (Prometheus text and OpenMetrics), /v1/health, /v1/consumer-lag and, with admin.pprof.enable, /debug/pprof (port 9644 is Redpanda's admin port). Empty: no admin listener. If the default endpoint is already in use (another node on the machine), the node starts without it and logs a warning; an endpoint set explicitly that cannot be bound stops start-up.", custom("http://host:port,...", validateHTTPListeners), vltavaOnly()),
	def("admin.pprof.enable", Boolean, "false", "Serve Go's profiler at /debug/pprof on the admin listener.", vltavaOnly()),
	def("metrics.partition.level", String, "partition", "Detail of the per-topic and per-partition metric series: partition (both), topic (per-topic series only) or broker (neither; for brokers hosting many thousands of partitions).", oneOf("partition", "topic", "broker"), vltavaOnly()),
	def("metrics.consumer.lag.sample.interval.ms", Long, "30000", "How often the consumer-lag evaluator samples every group's committed offsets for its status rules (OK, WARN, ERR, STOP, STALL over the last 10 samples, as Burrow's).", atLeast(1), vltavaOnly()),
	def("log.format", String, "text", "Format of the server's log lines on standard error: text (key=value) or json (one object per line).", oneOf("text", "json"), vltavaOnly()),
	def("telemetry.enable", Boolean, "false", "Receive client metrics (KIP-714): advertise GetTelemetrySubscriptions and PushTelemetry, and re-export what clients push on /metrics (docs/METRICS.md). Off: the APIs are not advertised, as a Kafka broker without a telemetry receiver. Needs admin.listeners.", vltavaOnly()),
	def("telemetry.subscription.metrics", List, "org.apache.kafka.", "The client metrics subscription (Kafka's CLIENT_METRICS metrics): name prefixes of the metrics clients are asked to push; * for all.", vltavaOnly()),
	def("telemetry.subscription.interval.ms", Int, "60000", "The subscription's push interval (Kafka's CLIENT_METRICS interval.ms); a client's series are dropped after three intervals without a push.", between(100, 3600000), vltavaOnly()),
	def("telemetry.max.bytes", Int, "1048576", "Largest client metrics payload a PushTelemetry may carry (KIP-714); larger ones are TELEMETRY_TOO_LARGE.", atLeast(1)),
	def("log.request.sample.rate", Double, "0", "Fraction of requests logged at debug level with their API, version, client, size and time (0 logs none, 1 every one).", between(0, 1), vltavaOnly()),
}

// vltavaOnly marks a key Apache Kafka does not have.
func vltavaOnly() option { return func(d *Def) { d.VltavaOnly = true } }

// HTTPListener is one entry of a <service>.listeners key.
type HTTPListener struct {
	Scheme string // "http"; "https" once TLS settings exist
	Host   string
	Port   int
}

// Addr is host:port.
func (l HTTPListener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// ParseHTTPListeners parses a comma-separated list of http://host:port
// endpoints. https is refused until TLS settings for the HTTP services
// exist, so a listener is never served in plain text when TLS was asked for.
func ParseHTTPListeners(v string) ([]HTTPListener, error) {
	var out []HTTPListener
	for _, item := range splitList(v) {
		u, err := url.Parse(item)
		if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%q is not a scheme://host:port endpoint", item)
		}
		if !strings.EqualFold(u.Scheme, "http") {
			return nil, fmt.Errorf("%q: only http is supported (TLS for the HTTP listeners is not supported yet)", item)
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q has no valid port", item)
		}
		out = append(out, HTTPListener{Scheme: "http", Host: u.Hostname(), Port: port})
	}
	return out, nil
}

func validateHTTPListeners(v string) string {
	if _, err := ParseHTTPListeners(v); err != nil {
		return err.Error()
	}
	return ""
}

// fillObservability sets the observability fields from the parsed keys.
// Client metrics are re-exported on the admin listener only, so
// telemetry.enable without one would receive them and show them nowhere.
func (b *Broker) fillObservability(str func(string) string) error {
	b.AdminListeners, _ = ParseHTTPListeners(str("admin.listeners")) // validated already
	b.AdminPprofEnable = parseBool(str("admin.pprof.enable"))
	b.MetricsPartitionLevel = str("metrics.partition.level")
	b.MetricsConsumerLagSampleIntervalMs = parseInt(str("metrics.consumer.lag.sample.interval.ms"))
	b.LogFormat = str("log.format")
	b.LogRequestSampleRate, _ = strconv.ParseFloat(strings.TrimSpace(str("log.request.sample.rate")), 64)
	b.TelemetryEnable = parseBool(str("telemetry.enable"))
	b.TelemetrySubscriptionMetrics = splitList(str("telemetry.subscription.metrics"))
	b.TelemetrySubscriptionIntervalMs = int32(parseInt(str("telemetry.subscription.interval.ms")))
	b.TelemetryMaxBytes = int32(parseInt(str("telemetry.max.bytes")))
	if b.TelemetryEnable && len(b.AdminListeners) == 0 {
		return b.invalid("telemetry.enable", "client metrics are exported on the admin listener: set admin.listeners too")
	}
	return nil
}
