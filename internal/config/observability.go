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
var observabilityDefs = append([]Def{
	def("admin.listeners", List, "http://127.0.0.1:9644", "Endpoints of the admin HTTP listener, as http://host:port entries: /metrics (Prometheus text and OpenMetrics), /v1/health, /v1/consumer-lag and, with admin.pprof.enable, /debug/pprof (port 9644 is Redpanda's admin port). Empty: no admin listener. If the default endpoint is already in use (another node on the machine), the node starts without it and logs a warning; an endpoint set explicitly that cannot be bound stops start-up.", custom("http://host:port,...", validateHTTPListeners), vltavaOnly()),
	def("admin.pprof.enable", Boolean, "false", "Serve Go's profiler at /debug/pprof on the admin listener.", vltavaOnly()),
	def("metrics.enable", Boolean, "true", "Keep the broker's Prometheus metrics. false: the request, produce and fetch paths skip their counters (docs/PERFORMANCE.md measures what they cost) and the admin listener does not serve /metrics (it keeps /v1/health and /v1/consumer-lag).", vltavaOnly()),
	def("metrics.partition.level", String, "partition", "Detail of the per-topic and per-partition metric series: partition (both), topic (per-topic series only) or broker (neither; for brokers hosting many thousands of partitions).", oneOf("partition", "topic", "broker"), vltavaOnly()),
	def("metrics.consumer.lag.sample.interval.ms", Long, "30000", "How often the consumer-lag evaluator samples every group's committed offsets for its status rules (OK, WARN, ERR, STOP, STALL over the last 10 samples, as Burrow's).", atLeast(1), vltavaOnly()),
	def("log.format", String, "text", "Format of the server's log lines on standard error: text (key=value) or json (one object per line).", oneOf("text", "json"), vltavaOnly()),
	def("telemetry.enable", Boolean, "false", "Receive client metrics (KIP-714): advertise GetTelemetrySubscriptions and PushTelemetry, and re-export what clients push on /metrics (docs/METRICS.md). Off: the APIs are not advertised, as a Kafka broker without a telemetry receiver. Needs admin.listeners.", vltavaOnly()),
	def("telemetry.subscription.metrics", List, "org.apache.kafka.", "The client metrics subscription (Kafka's CLIENT_METRICS metrics): name prefixes of the metrics clients are asked to push; * for all.", vltavaOnly()),
	def("telemetry.subscription.interval.ms", Int, "60000", "The subscription's push interval (Kafka's CLIENT_METRICS interval.ms); a client's series are dropped after three intervals without a push.", between(100, 3600000), vltavaOnly()),
	def("telemetry.max.bytes", Int, "1048576", "Largest client metrics payload a PushTelemetry may carry (KIP-714); larger ones are TELEMETRY_TOO_LARGE.", atLeast(1)),
	def("log.request.sample.rate", Double, "0", "Fraction of requests logged at debug level with their API, version, client, size and time (0 logs none, 1 every one).", between(0, 1), vltavaOnly()),
}, httpServiceDefs("admin.", "the admin listener", "vltava-admin")...)

// httpServiceKeys are the keys of the HTTP services' TLS and authentication
// (httpServiceDefs), read through Broker.HTTPServiceSetting.
var httpServiceKeys []string

// httpServiceDefs are the TLS and authentication keys of an HTTP service
// (internal/httpapi.Keys) whose keys start with prefix: the ssl.* of its
// https listeners and Confluent's authentication.* keys.
func httpServiceDefs(prefix, what, realm string) []Def {
	for_ := " of " + what + "'s https endpoints"
	defs := []Def{
		def(prefix+"ssl.keystore.type", String, "JKS", "File format of the key store"+for_+" (JKS, PKCS12, PEM).", vltavaOnly()),
		def(prefix+"ssl.keystore.location", String, noDefault, "Path of the key store"+for_+".", vltavaOnly()),
		def(prefix+"ssl.keystore.password", Password, noDefault, "Password of the key store"+for_+".", vltavaOnly()),
		def(prefix+"ssl.key.password", Password, noDefault, "Password of the private key in the key store"+for_+".", vltavaOnly()),
		def(prefix+"ssl.keystore.key", Password, noDefault, "PEM private key"+for_+", instead of a key store file.", vltavaOnly()),
		def(prefix+"ssl.keystore.certificate.chain", Password, noDefault, "PEM certificate chain"+for_+", instead of a key store file.", vltavaOnly()),
		def(prefix+"ssl.truststore.type", String, "JKS", "File format of the trust store that verifies client certificates"+for_+".", vltavaOnly()),
		def(prefix+"ssl.truststore.location", String, noDefault, "Path of the trust store that verifies client certificates"+for_+".", vltavaOnly()),
		def(prefix+"ssl.truststore.password", Password, noDefault, "Password of the trust store"+for_+".", vltavaOnly()),
		def(prefix+"ssl.truststore.certificates", Password, noDefault, "PEM trusted certificates"+for_+", instead of a trust store file.", vltavaOnly()),
		def(prefix+"ssl.client.authentication", String, noDefault, "Whether clients"+for_+" must (REQUIRED), may (REQUESTED) or need not (NONE, the default) present a certificate (Confluent's key); a verified certificate's subject, mapped by "+prefix+"ssl.principal.mapping.rules, is the request's principal when "+prefix+"authentication.method is NONE.", oneOfFold("NONE", "REQUESTED", "REQUIRED"), vltavaOnly()),
		def(prefix+"ssl.client.auth", String, noDefault, "The older form of "+prefix+"ssl.client.authentication: true/false (Confluent's) or required/requested/none (Kafka's); the two must agree if both are set.", oneOfFold("true", "false", "required", "requested", "none"), vltavaOnly()),
		def(prefix+"ssl.protocol", String, "TLSv1.3", "Highest TLS version"+for_+" (as ssl.protocol).", vltavaOnly()),
		def(prefix+"ssl.enabled.protocols", List, "TLSv1.2,TLSv1.3", "TLS versions enabled"+for_+".", vltavaOnly()),
		def(prefix+"ssl.cipher.suites", List, "", "Cipher suites enabled"+for_+"; empty means all Go supports.", vltavaOnly()),
		def(prefix+"ssl.principal.mapping.rules", String, "DEFAULT", "Rules mapping a client certificate's distinguished name to the principal"+for_+" (as ssl.principal.mapping.rules).", vltavaOnly()),
		def(prefix+"authentication.method", String, "NONE", "Authentication of "+what+"'s requests (Confluent's key): NONE, or BASIC (HTTP Basic against "+prefix+"authentication.users.file; a request without valid credentials is 401).", oneOfFold("NONE", "BASIC"), vltavaOnly()),
		def(prefix+"authentication.realm", String, realm, "The HTTP Basic realm of "+what+".", vltavaOnly()),
		def(prefix+"authentication.roles", List, "*", "Roles (from the users file) a user needs one of to be served by "+what+" (403 otherwise); * lets every authenticated user in.", vltavaOnly()),
		def(prefix+"authentication.users.file", String, noDefault, "The users of BASIC authentication for "+what+": a password properties file as Jetty's PropertyUserStore reads it (the file Confluent's JAAS PropertyFileLoginModule names), one 'user: password[,role...]' a line, the password plain or MD5:<hex>; re-read when it changes.", vltavaOnly()),
		def(prefix+"authentication.skip.paths", List, "", "Paths of "+what+" served without authentication (e.g. /v1/health for probes).", vltavaOnly()),
	}
	for _, d := range defs {
		httpServiceKeys = append(httpServiceKeys, d.Name)
	}
	methodReaders["HTTPServiceSetting"] = httpServiceKeys
	return defs
}

// HTTPServiceSetting is an HTTP service's TLS or authentication key as set
// (ok false when unset: internal/httpapi applies the defaults).
func (b *Broker) HTTPServiceSetting(key string) (string, bool) {
	v, ok := b.Raw[key]
	return v, ok
}

// vltavaOnly marks a key Apache Kafka does not have.
func vltavaOnly() option { return func(d *Def) { d.VltavaOnly = true } }

// HTTPListener is one entry of a <service>.listeners key.
type HTTPListener struct {
	Scheme string // "http" or "https"
	Host   string
	Port   int
}

// Addr is host:port.
func (l HTTPListener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(l.Port)) }

// ParseHTTPListeners parses a comma-separated list of http://host:port and
// https://host:port endpoints (an https one is served with the service's
// ssl.* settings, internal/httpapi).
func ParseHTTPListeners(v string) ([]HTTPListener, error) {
	var out []HTTPListener
	for _, item := range splitList(v) {
		u, err := url.Parse(item)
		if err != nil || u.Host == "" || u.Path != "" || u.RawQuery != "" {
			return nil, fmt.Errorf("%q is not a scheme://host:port endpoint", item)
		}
		scheme := strings.ToLower(u.Scheme)
		if scheme != "http" && scheme != "https" {
			return nil, fmt.Errorf("%q: the scheme must be http or https", item)
		}
		port, err := strconv.Atoi(u.Port())
		if err != nil || port < 0 || port > 65535 {
			return nil, fmt.Errorf("%q has no valid port", item)
		}
		out = append(out, HTTPListener{Scheme: scheme, Host: u.Hostname(), Port: port})
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
	b.MetricsEnable = parseBool(str("metrics.enable"))
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
	if b.TelemetryEnable && !b.MetricsEnable {
		return b.invalid("telemetry.enable", "client metrics are exported on /metrics, which metrics.enable=false turns off")
	}
	return nil
}
