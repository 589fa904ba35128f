// Package tlsconf turns Kafka's ssl.* settings into Go TLS configurations:
// key stores and trust stores (PEM files or inline PEM, PKCS12, JKS),
// ssl.client.auth, ssl.enabled.protocols, ssl.cipher.suites and
// ssl.endpoint.identification.algorithm, reloading certificates when their
// files change; and the principal of an mTLS client, its certificate's
// subject mapped by ssl.principal.mapping.rules.
package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"strings"
)

// Lookup resolves a config key to its value for one listener (or client),
// Kafka's override order already applied; ok is false when the key is
// unset and has no default.
type Lookup func(key string) (string, bool)

// Settings are the ssl.* values one listener or client uses.
type Settings struct {
	KeystoreType             string
	KeystoreLocation         string
	KeystorePassword         string
	KeyPassword              string
	KeystoreKey              string
	KeystoreCertificateChain string
	TruststoreType           string
	TruststoreLocation       string
	TruststorePassword       string
	TruststoreCertificates   string
	ClientAuth               string
	Protocol                 string
	EnabledProtocols         []string
	CipherSuites             []string
	// EndpointIdentification is ssl.endpoint.identification.algorithm:
	// "https" verifies the server's host name (client side); "" does not.
	EndpointIdentification string
	PrincipalMappingRules  string
}

// Keys are the ssl.* keys Settings reads, for callers that list or watch
// them.
var Keys = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.keystore.key", "ssl.keystore.certificate.chain",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
	"ssl.client.auth", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
	"ssl.endpoint.identification.algorithm", "ssl.principal.mapping.rules",
}

// ReadSettings reads the ssl.* keys through lookup, with Kafka's defaults
// for unset keys.
func ReadSettings(lookup Lookup) Settings {
	get := func(k, def string) string {
		if v, ok := lookup(k); ok {
			return strings.TrimSpace(v)
		}
		return def
	}
	list := func(k, def string) []string {
		var out []string
		for _, x := range strings.Split(get(k, def), ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	return Settings{
		KeystoreType:             get("ssl.keystore.type", TypeJKS),
		KeystoreLocation:         get("ssl.keystore.location", ""),
		KeystorePassword:         get("ssl.keystore.password", ""),
		KeyPassword:              get("ssl.key.password", ""),
		KeystoreKey:              get("ssl.keystore.key", ""),
		KeystoreCertificateChain: get("ssl.keystore.certificate.chain", ""),
		TruststoreType:           get("ssl.truststore.type", TypeJKS),
		TruststoreLocation:       get("ssl.truststore.location", ""),
		TruststorePassword:       get("ssl.truststore.password", ""),
		TruststoreCertificates:   get("ssl.truststore.certificates", ""),
		ClientAuth:               strings.ToLower(get("ssl.client.auth", "none")),
		Protocol:                 get("ssl.protocol", "TLSv1.3"),
		EnabledProtocols:         list("ssl.enabled.protocols", "TLSv1.2,TLSv1.3"),
		CipherSuites:             list("ssl.cipher.suites", ""),
		EndpointIdentification:   strings.ToLower(get("ssl.endpoint.identification.algorithm", "https")),
		PrincipalMappingRules:    get("ssl.principal.mapping.rules", "DEFAULT"),
	}
}

// tlsVersions maps Kafka's (Java's) protocol names to Go's versions.
var tlsVersions = map[string]uint16{
	"TLSv1":   tls.VersionTLS10,
	"TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12,
	"TLSv1.3": tls.VersionTLS13,
}

// versionRange turns ssl.enabled.protocols into Go's minimum and maximum.
// Java enables exactly the listed versions; Go takes a range, so a list
// with a gap (TLSv1.1,TLSv1.3) is refused rather than widened.
func versionRange(s *Settings) (lo, hi uint16, err error) {
	// ssl.protocol picks Java's SSLContext, whose version caps what
	// ssl.enabled.protocols enables (Kafka: with ssl.protocol=TLSv1.2 a
	// client does not use TLSv1.3 even if it is enabled); "TLS" caps
	// nothing.
	ceiling := uint16(tls.VersionTLS13)
	switch s.Protocol {
	case "TLS":
	case "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1":
		ceiling = tlsVersions[s.Protocol]
	default:
		return 0, 0, fmt.Errorf("ssl.protocol %q is not supported (TLS, TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", s.Protocol)
	}
	if len(s.EnabledProtocols) == 0 {
		return 0, 0, fmt.Errorf("ssl.enabled.protocols must name at least one protocol")
	}
	set := map[uint16]bool{}
	for _, p := range s.EnabledProtocols {
		v, ok := tlsVersions[p]
		if !ok {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols: %q is not supported (TLSv1, TLSv1.1, TLSv1.2, TLSv1.3)", p)
		}
		set[v] = true
		if lo == 0 || v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	for v := lo; v <= hi; v++ {
		if !set[v] {
			return 0, 0, fmt.Errorf("ssl.enabled.protocols %s leaves a gap; Go enables a contiguous range of TLS versions", strings.Join(s.EnabledProtocols, ","))
		}
	}
	if hi > ceiling {
		hi = ceiling
	}
	if lo > hi {
		return 0, 0, fmt.Errorf("ssl.protocol %s is below every version of ssl.enabled.protocols (%s)", s.Protocol, strings.Join(s.EnabledProtocols, ","))
	}
	return lo, hi, nil
}

// String identifies the settings (passwords and inline keys by a digest
// only), to tell whether a dynamic update changed them.
func (s Settings) String() string {
	digest := func(v string) string {
		if v == "" {
			return ""
		}
		sum := sha256.Sum256([]byte(v))
		return hex.EncodeToString(sum[:8])
	}
	return strings.Join([]string{
		s.KeystoreType, s.KeystoreLocation, digest(s.KeystorePassword), digest(s.KeyPassword), digest(s.KeystoreKey),
		digest(s.KeystoreCertificateChain), s.TruststoreType, s.TruststoreLocation, digest(s.TruststorePassword),
		digest(s.TruststoreCertificates), s.ClientAuth, s.Protocol, strings.Join(s.EnabledProtocols, ","),
		strings.Join(s.CipherSuites, ","), s.EndpointIdentification, s.PrincipalMappingRules,
	}, "|")
}
