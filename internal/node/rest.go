package node

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/restproxy"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// startRest starts the embedded REST Proxy (rest.listeners). It is a
// Kafka client of one of this node's own listeners, with no private path
// into the broker: with rest.authentication.method=NONE a PLAINTEXT
// listener (the broker authorizes it as User:ANONYMOUS); with BASIC a
// SASL_PLAINTEXT listener offering rest.client.sasl.mechanism, each
// request authenticating with its own credentials.
func (n *Node) startRest() error {
	if len(n.cfg.RestListeners) == 0 {
		return nil
	}
	want, mech := "PLAINTEXT", ""
	if n.cfg.RestAuthenticationMethod == restproxy.AuthBasic {
		want, mech = "SASL_PLAINTEXT", n.cfg.RestClientSASLMechanism
	}
	addr := ""
	for _, l := range n.cfg.Listeners {
		if l.SecurityProtocol != want || slices.Contains(n.cfg.ControllerListenerNames, l.Name) {
			continue
		}
		if mech != "" {
			enabled, _ := n.cfg.ListenerLookup(l.Name, "")("sasl.enabled.mechanisms")
			if !slices.Contains(strings.Split(strings.ReplaceAll(enabled, " ", ""), ","), mech) {
				continue
			}
		}
		if a, ok := n.server.Addrs()[l.Name]; ok {
			addr = a.String()
			break
		}
	}
	if addr == "" {
		return fmt.Errorf("rest.listeners: the REST Proxy (rest.authentication.method=%s) needs a %s listener%s to connect to; set rest.listeners= to run without it",
			n.cfg.RestAuthenticationMethod, want, map[bool]string{true: " offering " + mech, false: ""}[mech != ""])
	}
	p, err := restproxy.New(restproxy.Config{
		Bootstrap:               []string{addr},
		Listeners:               n.cfg.RestListeners,
		ListenersKey:            "rest.listeners",
		Security:                clientauth.Plaintext,
		Authentication:          n.cfg.RestAuthenticationMethod,
		PassThroughMechanism:    n.cfg.RestClientSASLMechanism,
		ConsumerInstanceTimeout: time.Duration(n.cfg.RestConsumerInstanceTimeoutMs) * time.Millisecond,
		ConsumerRequestTimeout:  time.Duration(n.cfg.RestConsumerRequestTimeoutMs) * time.Millisecond,
		ConsumerRequestMaxBytes: n.cfg.RestConsumerRequestMaxBytes,
		MaxRequestBytes:         n.cfg.RestMaxRequestBytes,
		SchemaRegistryURL:       n.restSchemaRegistryURL(),
		ID:                      fmt.Sprint(n.cfg.NodeID),
		Logger:                  n.log.With("component", "rest-proxy"),
	})
	if err != nil {
		return fmt.Errorf("rest.listeners: %w", err)
	}
	if err := p.Start(); err != nil {
		if _, set := n.cfg.Raw["rest.listeners"]; set {
			return err
		}
		// The default endpoint (127.0.0.1:8082) is taken, by another node
		// on this machine: as with admin.listeners, the node runs without
		// a REST Proxy and says so; an endpoint set explicitly stops it.
		n.log.Warn("REST Proxy not started: its default endpoint is in use; set rest.listeners to serve it elsewhere (or empty to turn it off)", "err", err)
		return nil
	}
	n.rest = p
	return nil
}

// restSchemaRegistryURL is rest.schema.registry.url, or, unless that key
// is set, the node's own registry when it runs: its bound address, which
// differs from the key's default when schema.registry.listeners moves it.
func (n *Node) restSchemaRegistryURL() string {
	if _, set := n.cfg.Raw["rest.schema.registry.url"]; !set && n.registry != nil {
		if u := n.registry.URL(); u != "" {
			return u
		}
	}
	return n.cfg.RestSchemaRegistryURL
}

// closeRest stops the embedded REST Proxy.
func (n *Node) closeRest() error {
	if n.rest == nil {
		return nil
	}
	return n.rest.Close()
}

// RestAddrs are the REST Proxy's bound addresses (none without one).
func (n *Node) RestAddrs() []string {
	if n.rest == nil {
		return nil
	}
	return n.rest.Addrs()
}
