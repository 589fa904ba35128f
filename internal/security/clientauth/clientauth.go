// Package clientauth is the client side of Kafka's security protocols, for
// the connections Vltava makes itself (replica fetchers, the
// broker-to-controller channel, admin forwarding) and for the CLI: from
// Kafka's client property names (security.protocol, ssl.*, sasl.mechanism,
// sasl.jaas.config with PlainLoginModule or ScramLoginModule, username and
// password; OAuthBearerLoginModule or Krb5LoginModule with the options
// oauthbearer.NewClient and gssapi.NewClient read) it builds the TLS
// configuration and SASL credentials, dials and authenticates raw
// connections (SaslHandshake v1 and SaslAuthenticate), and gives
// franz-go's kgo the same as options.
package clientauth

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"

	kgosasl "github.com/twmb/franz-go/pkg/sasl"

	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/jaas"
	"github.com/vltava/vltava/internal/security/oauthbearer"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// Login modules whose username and password a client sends.
const (
	plainModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	scramModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

// Security is how a client connects: TLS (nil for PLAINTEXT and
// SASL_PLAINTEXT) and SASL (Mechanism "" for PLAINTEXT and SSL).
type Security struct {
	Protocol string
	// TLS verifies the server; ServerName is set per connection from the
	// address dialed when ssl.endpoint.identification.algorithm=https.
	TLS       *tls.Config
	checkHost bool
	Mechanism string
	Username  string
	Password  string
	// Token is the SCRAM login module's tokenauth="true": Username is a
	// delegation token id, Password its HMAC (KIP-48).
	Token bool
	// mech is the client side of OAUTHBEARER and GSSAPI (nil for PLAIN
	// and SCRAM, which Username and Password are enough for).
	mech kgosasl.Mechanism
}

// Plaintext is a PLAINTEXT client.
var Plaintext = &Security{Protocol: "PLAINTEXT"}

// New reads a client's security settings through lookup: security.protocol
// (protocol, if not empty, takes its place: an inter-broker client uses its
// listener's protocol), the ssl.* keys, sasl.mechanism (mechanism, if not
// empty, takes its place: sasl.mechanism.inter.broker.protocol) and
// sasl.jaas.config.
func New(lookup func(string) (string, bool), protocol, mechanism string) (*Security, error) {
	if protocol == "" {
		protocol, _ = lookup("security.protocol")
	}
	s := &Security{Protocol: strings.ToUpper(strings.TrimSpace(protocol))}
	if s.Protocol == "" {
		s.Protocol = "PLAINTEXT"
	}
	switch s.Protocol {
	case "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return nil, fmt.Errorf("security.protocol %q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", protocol)
	}
	if s.Protocol == "SSL" || s.Protocol == "SASL_SSL" {
		cfg, err := tlsconf.NewClient(tlsconf.Lookup(lookup), "")
		if err != nil {
			return nil, err
		}
		s.TLS = cfg
		s.checkHost = !cfg.InsecureSkipVerify
	}
	if s.Protocol == "SASL_PLAINTEXT" || s.Protocol == "SASL_SSL" {
		if mechanism == "" {
			mechanism, _ = lookup("sasl.mechanism")
		}
		s.Mechanism = strings.TrimSpace(mechanism)
		if s.Mechanism == "" {
			s.Mechanism = "GSSAPI"
		}
		var err error
		switch s.Mechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		case "OAUTHBEARER":
			if s.mech, err = oauthbearer.NewClient(lookup); err != nil {
				return nil, fmt.Errorf("sasl.mechanism OAUTHBEARER: %w", err)
			}
			return s, nil
		case "GSSAPI":
			if s.mech, err = gssapi.NewClient(lookup); err != nil {
				return nil, fmt.Errorf("sasl.mechanism GSSAPI: %w", err)
			}
			return s, nil
		default:
			return nil, fmt.Errorf("sasl.mechanism %s is not supported on the client side (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI)", s.Mechanism)
		}
		raw, ok := lookup("sasl.jaas.config")
		if !ok || strings.TrimSpace(raw) == "" {
			return nil, fmt.Errorf("sasl.jaas.config is needed for the %s client's username and password", s.Mechanism)
		}
		mod, err := jaas.ParseOne(raw)
		if err != nil {
			return nil, err
		}
		want := plainModule
		if strings.HasPrefix(s.Mechanism, "SCRAM-") {
			want = scramModule
		}
		if mod.Class != want {
			return nil, fmt.Errorf("sasl.jaas.config for %s must use %s, not %s", s.Mechanism, want, mod.Class)
		}
		s.Username, s.Password = mod.Options["username"], mod.Options["password"]
		s.Token = want == scramModule && strings.EqualFold(mod.Options["tokenauth"], "true")
		if s.Username == "" || s.Password == "" {
			return nil, errors.New("sasl.jaas.config needs username and password options")
		}
	}
	return s, nil
}

// TLSFor returns the TLS configuration for a connection to addr (nil
// without TLS).
func (s *Security) TLSFor(addr string) *tls.Config {
	if s.TLS == nil {
		return nil
	}
	cfg := s.TLS.Clone()
	if s.checkHost {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg.ServerName = host
	}
	return cfg
}
