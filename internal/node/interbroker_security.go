package node

import (
	"fmt"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/security/clientauth"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// The connections a node makes itself use the security protocol of the
// listener they reach, as Kafka's: replica fetchers the inter-broker
// listener's (inter.broker.listener.name, or the listener named by
// security.inter.broker.protocol) with sasl.mechanism.inter.broker.protocol,
// the broker-to-controller channel and the quorum the controller
// listener's (controller.listener.names) with
// sasl.mechanism.controller.protocol. The client side's TLS and SASL
// credentials come from that listener's settings
// (listener.name.<l>.<mechanism>.sasl.jaas.config username and password,
// then listener.name.<l>.ssl.*, then the broker-wide keys).

// controllerListenerName is the listener the quorum port serves.
func controllerListenerName(cfg *config.Broker) string {
	if len(cfg.ControllerListenerNames) > 0 {
		return cfg.ControllerListenerNames[0]
	}
	return "CONTROLLER"
}

func protocolOf(cfg *config.Broker, listener string) string {
	if p := cfg.ListenerSecurityProtocolMap[listener]; p != "" {
		return p
	}
	return "PLAINTEXT"
}

// clientSecurity is the client side of listener's protocol, SASL with the
// mechanism named by mechanismKey.
func clientSecurity(cfg *config.Broker, listener, mechanismKey string) (*clientauth.Security, error) {
	proto := protocolOf(cfg, listener)
	mech := ""
	if proto == "SASL_PLAINTEXT" || proto == "SASL_SSL" {
		mech, _ = cfg.ListenerLookup(listener, "")(mechanismKey)
	}
	sec, err := clientauth.New(cfg.ListenerLookup(listener, mech), proto, mech)
	if err != nil {
		return nil, fmt.Errorf("connecting to listener %s (%s, %s): %w", listener, proto, mechanismKey, err)
	}
	return sec, nil
}

// interBrokerSecurity is how replica fetchers connect to leaders.
func interBrokerSecurity(cfg *config.Broker) (*clientauth.Security, error) {
	return clientSecurity(cfg, interBrokerListenerName(cfg), "sasl.mechanism.inter.broker.protocol")
}

// controllerSecurity is how the broker-to-controller channel connects.
func controllerSecurity(cfg *config.Broker) (*clientauth.Security, error) {
	return clientSecurity(cfg, controllerListenerName(cfg), "sasl.mechanism.controller.protocol")
}

// interBrokerListenerName is the listener other brokers' fetchers use:
// inter.broker.listener.name when this node advertises it, else the first
// advertised listener (replication.Manager picks leaders' endpoints by the
// same rule).
func interBrokerListenerName(cfg *config.Broker) string {
	for _, l := range cfg.AdvertisedListeners {
		if l.Name == cfg.InterBrokerListenerName {
			return l.Name
		}
	}
	if len(cfg.AdvertisedListeners) > 0 {
		return cfg.AdvertisedListeners[0].Name
	}
	return cfg.InterBrokerListenerName
}

// quorumTLS secures the quorum port when the controller listener is SSL or
// SASL_SSL: every node serves TLS on its raft port with the listener's key
// store (a broker-only node too: the raft leader dials its observers), and
// dials with its trust store (and key store, for ssl.client.auth=required).
func quorumTLS(cfg *config.Broker) (*quorum.QuorumTLS, error) {
	name := controllerListenerName(cfg)
	proto := protocolOf(cfg, name)
	if proto != "SSL" && proto != "SASL_SSL" {
		return nil, nil
	}
	sec, err := controllerSecurity(cfg)
	if err != nil {
		return nil, err
	}
	p, err := tlsconf.NewServer(serverTLSLookup(cfg, name, proto))
	if err != nil {
		return nil, fmt.Errorf("controller listener %s: %w", name, err)
	}
	return &quorum.QuorumTLS{Client: sec.TLSFor, Server: p.Config()}, nil
}
