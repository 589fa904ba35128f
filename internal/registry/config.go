package registry

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// Config is a registry node's configuration.
type Config struct {
	Listeners []config.HTTPListener
	// Bootstrap are the cluster's seed brokers.
	Bootstrap []string
	Store     StoreConfig
	// CompatibilityLevel is schema.compatibility.level, the global level
	// while /config sets none.
	CompatibilityLevel string
	// MaxRequestBytes bounds request bodies.
	MaxRequestBytes int64
	// TLS and Authenticator are a standalone node's https endpoints
	// (ssl.*) and authentication (authentication.*), as read by
	// internal/httpapi; ServerOptions' win when set.
	TLS           func() (*tls.Config, error)
	Authenticator httpapi.Authenticator
	// GroupID is schema.registry.group.id: the consumer group the
	// registry nodes sharing a store elect their leader in (leader.go).
	GroupID string
}

// Standalone keys (Confluent Schema Registry's names) and their defaults.
var standaloneDefaults = map[string]string{
	"listeners":                           "http://127.0.0.1:8081",
	"kafkastore.bootstrap.servers":        "",
	"kafkastore.topic":                    "_schemas",
	"kafkastore.topic.replication.factor": "3",
	"kafkastore.timeout.ms":               "500",
	"kafkastore.init.timeout.ms":          "60000",
	"schema.compatibility.level":          "backward",
	"request.max.bytes":                   strconv.Itoa(16 << 20),
	"kafkastore.security.protocol":        "PLAINTEXT",
	"kafkastore.sasl.mechanism":           "GSSAPI",
	"kafkastore.sasl.jaas.config":         "",
	"schema.registry.group.id":            electionGroup,
}

// StandaloneKeys lists the keys `vltava registry serve` reads, sorted.
func StandaloneKeys() []string {
	keys := make([]string, 0, len(standaloneDefaults)+len(tlsconf.Keys))
	for k := range standaloneDefaults {
		keys = append(keys, k)
	}
	for _, k := range tlsconf.Keys {
		if k != "ssl.client.auth" && k != "ssl.principal.mapping.rules" {
			keys = append(keys, "kafkastore."+k)
		}
	}
	// The REST endpoints' own TLS and authentication, Confluent's
	// rest-utils names.
	keys = append(keys, httpapi.SSLKeys...)
	keys = append(keys, httpapi.AuthKeys...)
	slices.Sort(keys)
	return keys
}

// standaloneHTTPKeys are a standalone node's listeners, ssl.* and
// authentication.* (unprefixed, as in Confluent's
// schema-registry.properties).
var standaloneHTTPKeys = httpapi.Keys{Service: "schema-registry", DefaultListeners: "http://127.0.0.1:8081", DefaultRealm: "SchemaRegistry"}

// ParseStandalone reads a standalone registry's properties. A key it does
// not honour is refused by name rather than ignored.
func ParseStandalone(props map[string]string) (Config, error) {
	known := StandaloneKeys()
	for k := range props {
		if !slices.Contains(known, k) {
			return Config{}, fmt.Errorf("%s: not a schema registry setting Vltava honours (it reads %s)", k, strings.Join(known, ", "))
		}
	}
	get := func(k string) string {
		if v, ok := props[k]; ok {
			return strings.TrimSpace(v)
		}
		return standaloneDefaults[k]
	}
	var cfg Config
	hopts, err := standaloneHTTPKeys.Options(httpapi.MapLookup(props))
	if err != nil {
		return Config{}, err
	}
	cfg.Listeners, cfg.TLS, cfg.Authenticator = hopts.Listeners, hopts.TLS, hopts.Authenticator
	if len(cfg.Listeners) == 0 {
		return Config{}, fmt.Errorf("listeners: at least one endpoint is needed")
	}
	for _, s := range strings.Split(get("kafkastore.bootstrap.servers"), ",") {
		s = strings.TrimSpace(s)
		// Confluent accepts PLAINTEXT://host:port entries too.
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[i+3:]
		}
		if s != "" {
			cfg.Bootstrap = append(cfg.Bootstrap, s)
		}
	}
	if len(cfg.Bootstrap) == 0 {
		return Config{}, fmt.Errorf("kafkastore.bootstrap.servers: the cluster's brokers are needed")
	}
	ints := map[string]*int64{}
	var rf, timeout, initTimeout, maxBytes int64
	ints["kafkastore.topic.replication.factor"] = &rf
	ints["kafkastore.timeout.ms"] = &timeout
	ints["kafkastore.init.timeout.ms"] = &initTimeout
	ints["request.max.bytes"] = &maxBytes
	for k, p := range ints {
		n, err := strconv.ParseInt(get(k), 10, 64)
		if err != nil || n < 1 {
			return Config{}, fmt.Errorf("%s: %q is not a positive integer", k, get(k))
		}
		*p = n
	}
	level, ok := parseCompatibility(get("schema.compatibility.level"))
	if !ok {
		return Config{}, fmt.Errorf("schema.compatibility.level: %q is not a compatibility level", get("schema.compatibility.level"))
	}
	sec, err := clientauth.New(func(k string) (string, bool) {
		v, ok := props["kafkastore."+k]
		return v, ok
	}, "", "")
	if err != nil {
		return Config{}, fmt.Errorf("kafkastore security: %w", err)
	}
	cfg.Store = StoreConfig{
		Topic:             get("kafkastore.topic"),
		ReplicationFactor: int(rf),
		Timeout:           time.Duration(timeout) * time.Millisecond,
		InitTimeout:       time.Duration(initTimeout) * time.Millisecond,
		Client:            append([]kgo.Opt{kgo.SeedBrokers(cfg.Bootstrap...)}, sec.KgoOpts()...),
	}
	cfg.CompatibilityLevel = level
	cfg.MaxRequestBytes = maxBytes
	if cfg.GroupID = get("schema.registry.group.id"); cfg.GroupID == "" {
		return Config{}, fmt.Errorf("schema.registry.group.id: empty")
	}
	return cfg, nil
}
