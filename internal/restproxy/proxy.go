// Package restproxy is Vltava's REST Proxy: the HTTP API of Confluent's
// REST Proxy, v2 (produce with the embedded formats, consumer instances,
// topic and broker metadata) and v3 (clusters, brokers, topics, configs,
// partitions, consumer groups and lags, ACLs, produce with streaming).
//
// The proxy is a Kafka client of the cluster it fronts (franz-go kgo and
// kadm over the Kafka protocol), embedded in vltava server or standalone
// (vltava rest serve) against any Kafka-compatible cluster. It never takes a
// private path into a broker: with authentication.method=BASIC every
// request's Kafka connection authenticates with that request's credentials,
// so the broker's own authorizer decides what the REST caller may do.
//
// Resources are one file each: clusters.go, brokers.go, topics.go,
// configs.go, partitions.go, groups.go, acls.go, records.go (v3), v2_*.go
// (v2). Errors are Confluent's shapes and codes, in errors.go alone.
package restproxy

import (
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// Authentication methods (Confluent's authentication.method).
const (
	AuthNone  = "NONE"
	AuthBasic = "BASIC"
)

// Config configures a Proxy.
type Config struct {
	// Bootstrap are the Kafka cluster's bootstrap servers.
	Bootstrap []string
	// Listeners are the HTTP endpoints served.
	Listeners []config.HTTPListener
	// ListenersKey names the listeners' config key in start-up errors
	// (rest.listeners embedded, listeners standalone).
	ListenersKey string
	// Security is how the proxy connects to Kafka: TLS and, with
	// AuthNone, the SASL credentials of its one identity.
	Security *clientauth.Security
	// Authentication is AuthNone or AuthBasic. With AuthBasic every
	// request carries HTTP basic credentials, and its Kafka connection
	// authenticates with them over SASL (PassThroughMechanism).
	Authentication string
	// PassThroughMechanism is the SASL mechanism used with a request's
	// basic credentials: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	PassThroughMechanism string
	// ConsumerInstanceTimeout expires a v2 consumer instance not used for
	// that long (consumer.instance.timeout.ms).
	ConsumerInstanceTimeout time.Duration
	// ConsumerRequestTimeout is the default time a v2 records GET waits
	// for records (consumer.request.timeout.ms).
	ConsumerRequestTimeout time.Duration
	// ConsumerRequestMaxBytes is the default and the upper bound of a v2
	// records GET's max_bytes (consumer.request.max.bytes).
	ConsumerRequestMaxBytes int64
	// MaxRequestBytes bounds a request body, and each record of a v3
	// streaming produce; larger ones are refused with 413.
	MaxRequestBytes int64
	// SchemaRegistryURL is the schema registry the AVRO, JSONSCHEMA and
	// PROTOBUF formats look schemas up in; empty: those formats are refused.
	SchemaRegistryURL string
	// ID names this proxy instance in v2 consumer instance ids (Confluent's
	// id).
	ID string
	// ClientIdleTimeout closes a per-principal Kafka client unused for
	// that long; 0 means 10 minutes.
	ClientIdleTimeout time.Duration
	Logger            *slog.Logger
}

// Validate checks the settings against each other.
func (c *Config) Validate() error {
	if len(c.Bootstrap) == 0 {
		return fmt.Errorf("bootstrap.servers: no Kafka cluster to connect to")
	}
	switch c.Authentication {
	case AuthNone:
	case AuthBasic:
		switch c.PassThroughMechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return fmt.Errorf("the SASL mechanism used with basic-auth credentials must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, not %q", c.PassThroughMechanism)
		}
	default:
		return fmt.Errorf("authentication.method must be NONE or BASIC, not %q", c.Authentication)
	}
	if c.ConsumerInstanceTimeout <= 0 || c.ConsumerRequestTimeout <= 0 || c.ConsumerRequestMaxBytes <= 0 || c.MaxRequestBytes <= 0 {
		return fmt.Errorf("consumer.instance.timeout.ms, consumer.request.timeout.ms, consumer.request.max.bytes and the request size limit must be positive")
	}
	return nil
}

// Proxy is a running REST Proxy.
type Proxy struct {
	cfg       Config
	log       *slog.Logger
	http      *httpapi.Server
	clients   *clientPool
	consumers *consumerRegistry
	schemas   *schemaClient
	// mounted are the patterns mounted, in order (Routes).
	mounted []string
}

// Routes are the endpoints the REST Proxy serves, as net/http patterns
// ("POST /v3/clusters/{cluster_id}/topics"), in the order they are
// mounted: what docs/COMPATIBILITY.md lists.
func Routes() []string {
	p := &Proxy{http: httpapi.New(httpapi.Options{})}
	p.routes()
	return p.mounted
}

// New builds a Proxy; Start binds its listeners.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Security == nil {
		cfg.Security = clientauth.Plaintext
	}
	if cfg.ClientIdleTimeout <= 0 {
		cfg.ClientIdleTimeout = 10 * time.Minute
	}
	if cfg.ListenersKey == "" {
		cfg.ListenersKey = "listeners"
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Proxy{cfg: cfg, log: log}
	p.clients = newClientPool(&p.cfg, log)
	p.consumers = newConsumerRegistry(p)
	p.schemas = newSchemaClient(cfg.SchemaRegistryURL)
	var auth httpapi.Authenticator
	if cfg.Authentication == AuthBasic {
		auth = basicAuthenticator{}
	}
	p.http = httpapi.New(httpapi.Options{Service: "rest-proxy", Listeners: cfg.Listeners, Authenticator: auth,
		Logger: log})
	p.routes()
	return p, nil
}

// Start binds every listener; an endpoint that cannot be bound is an error
// naming the listeners' key.
func (p *Proxy) Start() error {
	if err := p.http.Start(); err != nil {
		p.clients.close()
		return fmt.Errorf("%s: %w", p.cfg.ListenersKey, err)
	}
	p.clients.start()
	p.consumers.start()
	return nil
}

// Addrs are the bound HTTP addresses.
func (p *Proxy) Addrs() []string {
	var out []string
	for _, a := range p.http.Addrs() {
		out = append(out, a.String())
	}
	return out
}

// Close stops the listeners, then the consumer instances and the Kafka
// clients.
func (p *Proxy) Close() error {
	err := p.http.Close()
	p.consumers.close()
	p.clients.close()
	return err
}

// handler is a resource's handler: it returns an error to answer in
// Confluent's shape, or nil having written the response.
type handler func(w http.ResponseWriter, r *http.Request) error

// v3 mounts a v3 handler (errors as application/json).
func (p *Proxy) v3(pattern string, h handler) {
	p.mounted = append(p.mounted, pattern)
	p.http.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, "application/json", err)
		}
	})
}

// v2 mounts a v2 handler (errors as application/vnd.kafka.v2+json).
func (p *Proxy) v2(pattern string, h handler) {
	p.mounted = append(p.mounted, pattern)
	p.http.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			writeError(w, contentTypeV2, err)
		}
	})
}

// routes mounts every resource.
func (p *Proxy) routes() {
	p.routesClusters()
	p.routesBrokers()
	p.routesTopics()
	p.routesConfigs()
	p.routesPartitions()
	p.routesGroups()
	p.routesACLs()
	p.routesRecords()
	p.routesV2Metadata()
	p.routesV2Produce()
	p.routesV2Consumers()
	p.mounted = append(p.mounted, "GET /{$}")
	p.http.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, "application/json", map[string]any{})
	})
	p.http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, "application/json", bareErr(http.StatusNotFound, "HTTP 404 Not Found"))
	})
}
