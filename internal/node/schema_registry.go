package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vltava/vltava/internal/httpapi"
	"github.com/vltava/vltava/internal/registry"
)

// registryHTTPKeys are the embedded registry's HTTP keys:
// schema.registry.listeners, schema.registry.ssl.*,
// schema.registry.authentication.*.
var registryHTTPKeys = httpapi.Keys{Service: "schema-registry", Prefix: "schema.registry.", DefaultRealm: "SchemaRegistry"}

// listenSchemaRegistry binds the embedded schema registry's listeners
// (schema.registry.listeners) while the node starts, before the REST
// Proxy, which is given its address; until openSchemaRegistry it answers
// 503.
func (n *Node) listenSchemaRegistry() error {
	if len(n.cfg.SchemaRegistryListeners) == 0 || n.brokerAPIs == nil {
		return nil
	}
	seed := n.ownListener()
	sec, err := interBrokerSecurity(n.cfg)
	if err != nil {
		return err
	}
	cfg := registry.Config{
		Listeners: n.cfg.SchemaRegistryListeners,
		Bootstrap: []string{seed},
		Store: registry.StoreConfig{
			Topic:             n.cfg.SchemaRegistryTopic,
			ReplicationFactor: n.cfg.SchemaRegistryReplicationFactor,
			InitTimeout:       time.Minute,
			Client:            append([]kgo.Opt{kgo.SeedBrokers(seed), kgo.ClientID("vltava-schema-registry")}, sec.KgoOpts()...),
		},
		CompatibilityLevel: n.cfg.SchemaRegistryCompatibilityLevel,
		MaxRequestBytes:    n.cfg.SchemaRegistryRequestMaxBytes,
		GroupID:            n.cfg.SchemaRegistryGroupID,
	}
	// TLS of https endpoints (schema.registry.ssl.*) and authentication
	// (schema.registry.authentication.*), as every HTTP service reads them.
	hopts, err := registryHTTPKeys.Options(n.cfg.HTTPServiceSetting)
	if err != nil {
		return err
	}
	s, err := registry.Listen(cfg, registry.ServerOptions{TLS: hopts.TLS, Authenticator: hopts.Authenticator,
		Logger: n.log.With("component", "schema-registry")})
	if err != nil {
		var le *registry.ListenError
		if _, set := n.cfg.Raw["schema.registry.listeners"]; !set && errors.As(err, &le) {
			// The single-node default endpoint (127.0.0.1:8081) is taken:
			// the node runs without its registry rather than not at all,
			// and says so. An explicit setting that cannot bind stops
			// start-up.
			n.log.Warn("schema registry not started: its default endpoint is in use; set schema.registry.listeners to serve it elsewhere", "err", err)
			return nil
		}
		return fmt.Errorf("schema.registry.listeners: %w", err)
	}
	n.registry = s
	return nil
}

// openSchemaRegistry opens the embedded registry's store once the broker
// serves clients: the registry is a Kafka client of this node's own
// listener, as a standalone registry is of its cluster, and the broker's
// schema validation looks ids up in it.
func (n *Node) openSchemaRegistry() error {
	if n.registry == nil {
		return nil
	}
	if err := n.registry.Open(context.Background()); err != nil {
		return fmt.Errorf("schema.registry.listeners: %w", err)
	}
	n.brokerAPIs.SetSchemaRegistry(n.registry.Service().State())
	return nil
}

// closeSchemaRegistry stops the embedded registry, before the listeners
// its client uses.
func (n *Node) closeSchemaRegistry() error {
	if n.registry == nil {
		return nil
	}
	return n.registry.Close()
}
