package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/delegation"
	"github.com/vltava/vltava/internal/security/mechanisms"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/security/sasl/scram"
	"github.com/vltava/vltava/internal/security/tlsconf"
	"github.com/vltava/vltava/internal/server"
)

// listenerSecurity is the TLS and SASL of one listener, built at start-up
// from its security protocol and its (listener-prefixed) settings.
type listenerSecurity struct {
	tls  *tlsconf.Provider
	sasl *server.SASLConfig
}

// buildListenerSecurity builds every listener's TLS and SASL before
// anything is opened, so a listener that cannot be served as configured
// (no key store, an unknown mechanism, a bad JAAS entry) stops start-up
// with the listener and the reason.
func buildListenerSecurity(cfg *config.Broker, store scram.CredentialStore) (map[string]listenerSecurity, error) {
	out := map[string]listenerSecurity{}
	var errs []error
	for _, l := range cfg.Listeners {
		sec, err := securityOf(cfg, l.Name, l.SecurityProtocol, store)
		if err != nil {
			errs = append(errs, fmt.Errorf("listener %s (%s): %w", l.Name, l.SecurityProtocol, err))
			continue
		}
		out[l.Name] = sec
	}
	return out, errors.Join(errs...)
}

func securityOf(cfg *config.Broker, listener, protocol string, store scram.CredentialStore, layers ...map[string]string) (listenerSecurity, error) {
	var sec listenerSecurity
	lookup := cfg.ListenerLookup(listener, "", layers...)
	if protocol == "SSL" || protocol == "SASL_SSL" {
		p, err := tlsconf.NewServer(serverTLSLookup(cfg, listener, protocol, layers...))
		if err != nil {
			return sec, err
		}
		sec.tls = p
	}
	if protocol == "SASL_PLAINTEXT" || protocol == "SASL_SSL" {
		sc := &server.SASLConfig{
			FailedAuthenticationDelay: time.Duration(cfg.ConnectionFailedAuthenticationDelayMs) * time.Millisecond,
		}
		reauth := func(lookup func(string) (string, bool)) (time.Duration, error) {
			v, _ := lookup("connections.max.reauth.ms")
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 {
				return 0, fmt.Errorf("connections.max.reauth.ms %q is not a non-negative number", v)
			}
			return time.Duration(ms) * time.Millisecond, nil
		}
		var err error
		if sc.MaxReauth, err = reauth(lookup); err != nil {
			return sec, err
		}
		enabled, _ := lookup("sasl.enabled.mechanisms")
		var names []string
		for _, m := range strings.Split(enabled, ",") {
			if m = strings.TrimSpace(m); m != "" {
				names = append(names, m)
			}
		}
		if len(names) == 0 {
			return sec, errors.New("sasl.enabled.mechanisms is empty")
		}
		for _, name := range names {
			mechLookup := cfg.ListenerLookup(listener, name, layers...)
			m, err := mechanisms.Build(name, mechanisms.Lookup(mechLookup), mechanisms.Deps{Scram: store})
			if err != nil {
				return sec, fmt.Errorf("sasl.enabled.mechanisms: %s: %w", name, err)
			}
			sc.Mechanisms = append(sc.Mechanisms, m)
			// KIP-368: the session lifetime may be set per mechanism.
			if d, err := reauth(mechLookup); err != nil {
				return sec, err
			} else if d != sc.MaxReauth {
				if sc.MaxReauthByMechanism == nil {
					sc.MaxReauthByMechanism = map[string]time.Duration{}
				}
				sc.MaxReauthByMechanism[name] = d
			}
		}
		sec.sasl = sc
	}
	return sec, nil
}

// serverTLSLookup is the ssl.* lookup of a listener's server side. KIP-684:
// on SASL_SSL, ssl.client.auth counts only when set for the listener; the
// broker-wide value is for SSL listeners.
func serverTLSLookup(cfg *config.Broker, listener, protocol string, layers ...map[string]string) tlsconf.Lookup {
	lookup := cfg.ListenerLookup(listener, "", layers...)
	if protocol != "SASL_SSL" {
		return lookup
	}
	return func(k string) (string, bool) {
		if k == "ssl.client.auth" {
			if v, ok := cfg.ListenerPrefixed(listener, k, layers...); ok {
				return v, true
			}
			return "none", true
		}
		return lookup(k)
	}
}

// secure gives a listener its TLS and SASL.
func (n *Node) secure(lc server.ListenerConfig) server.ListenerConfig {
	if sec, ok := n.listenerSec[lc.Name]; ok {
		lc.TLS, lc.SASL = sec.tls, sec.sasl
	}
	return lc
}

// applyListenerTLS follows dynamic ssl.* updates of this broker
// (listener.name.<l>.ssl.keystore.location and the like, Kafka's
// reconfigurable SSL configs): each TLS listener reloads its stores with
// the dynamic configs laid over the static ones. An AlterConfigs of this
// node whose stores do not load was refused before it was committed
// (checkListenerTLS); one that still fails here (a cluster-wide change, a
// file changed since) is logged and the stores in force stay.
func (n *Node) applyListenerTLS(img *metadata.Image) {
	perBroker := img.BrokerConfig(strconv.Itoa(int(n.cfg.NodeID)))
	cluster := img.BrokerConfig("")
	for name, sec := range n.listenerSec {
		if sec.tls == nil {
			continue
		}
		lookup := serverTLSLookup(n.cfg, name, protocolOf(n.cfg, name), cluster, perBroker)
		if !sec.tlsSettingsChanged(lookup) {
			continue
		}
		if err := sec.tls.Update(lookup); err != nil {
			n.log.Warn("dynamic TLS update not applied", "listener", name, "err", err)
			continue
		}
		n.log.Info("TLS key and trust stores reloaded", "listener", name)
	}
}

// checkListenerTLS loads the stores each TLS listener would use with
// these per-broker dynamic configs over the cluster-wide ones, installing
// nothing (the broker refuses an AlterConfigs of this node whose stores
// do not load).
func (n *Node) checkListenerTLS(perBroker map[string]string) error {
	cluster := n.meta.Image().BrokerConfig("")
	for _, name := range slices.Sorted(maps.Keys(n.listenerSec)) {
		sec := n.listenerSec[name]
		if sec.tls == nil {
			continue
		}
		lookup := serverTLSLookup(n.cfg, name, protocolOf(n.cfg, name), cluster, perBroker)
		if !sec.tlsSettingsChanged(lookup) {
			continue
		}
		if err := sec.tls.CheckUpdate(lookup); err != nil {
			return fmt.Errorf("listener %s: %w", name, err)
		}
	}
	return nil
}

func (s listenerSecurity) tlsSettingsChanged(lookup func(string) (string, bool)) bool {
	return tlsconf.ReadSettings(tlsconf.Lookup(lookup)).String() != s.tls.Settings().String()
}

// scramStore reads SCRAM credentials from the node's current metadata
// image.
type scramStore struct{ n *Node }

func (s scramStore) ScramCredential(user string, mechanism int8) (scram.Credential, bool) {
	if s.n.meta == nil {
		return scram.Credential{}, false
	}
	c, ok := s.n.meta.Image().ScramCredential(user, mechanism)
	if !ok {
		return scram.Credential{}, false
	}
	return scram.Credential{Salt: c.Salt, Iterations: c.Iterations, StoredKey: c.StoredKey, ServerKey: c.ServerKey}, true
}

// DelegationToken finds a delegation token in the current image, with its
// HMAC under delegation.token.secret.key; none without a secret (tokens
// are disabled then).
func (s scramStore) DelegationToken(id string) (delegation.Token, bool) {
	secret := s.n.cfg.DelegationTokenSecretKey
	if secret == "" {
		secret = s.n.cfg.DelegationTokenMasterKey
	}
	if s.n.meta == nil || secret == "" {
		return delegation.Token{}, false
	}
	t, ok := s.n.meta.Image().DelegationToken(id)
	if !ok {
		return delegation.Token{}, false
	}
	expires := min(t.ExpirationTimestamp, t.MaxTimestamp)
	return delegation.Token{Owner: t.Owner, HMAC: delegation.HMAC(secret, id), Expires: time.UnixMilli(expires)}, true
}

var _ sasl.Mechanism = (*scram.Mechanism)(nil)
