// Package mechanisms is the registry of SASL mechanisms: one constructor
// per mechanism name, each taking the listener's settings through a lookup
// that resolves Kafka's override order (see Lookup). The listener code
// builds every entry of sasl.enabled.mechanisms through Build at start-up,
// so a mechanism that cannot be built stops start-up naming it.
package mechanisms

import (
	"fmt"
	"strings"

	"github.com/vltava/vltava/internal/security/gssapi"
	"github.com/vltava/vltava/internal/security/oauthbearer"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/security/sasl/plain"
	"github.com/vltava/vltava/internal/security/sasl/scram"
)

// Lookup resolves a key for one mechanism of one listener, in Kafka's
// order: listener.name.<listener>.<mechanism, lower case>.<key>, then
// listener.name.<listener>.<key>, then <key>, then the key's default.
type Lookup func(key string) (string, bool)

// Deps are what mechanisms need from the node besides their settings.
type Deps struct {
	// Scram finds SCRAM credentials (the metadata image's).
	Scram scram.CredentialStore
}

// constructor builds one mechanism.
type constructor func(lookup Lookup, deps Deps) (sasl.Mechanism, error)

// constructors is the registry, by SASL mechanism name.
var constructors = map[string]constructor{
	plain.Name: func(l Lookup, _ Deps) (sasl.Mechanism, error) { return plain.New(l) },
	scram.SHA256: func(_ Lookup, d Deps) (sasl.Mechanism, error) {
		return scram.New(scram.SHA256, d.Scram)
	},
	scram.SHA512: func(_ Lookup, d Deps) (sasl.Mechanism, error) {
		return scram.New(scram.SHA512, d.Scram)
	},
	oauthbearer.MechanismName: func(l Lookup, _ Deps) (sasl.Mechanism, error) { return oauthbearer.New(l) },
	gssapi.MechanismName:      func(l Lookup, _ Deps) (sasl.Mechanism, error) { return gssapi.New(l) },
}

// Build builds the named mechanism (its name as in sasl.enabled.mechanisms,
// case-sensitive as Kafka's).
func Build(name string, lookup Lookup, deps Deps) (sasl.Mechanism, error) {
	c, ok := constructors[name]
	if !ok {
		return nil, fmt.Errorf("unknown SASL mechanism %q (known: GSSAPI, PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER)", name)
	}
	if strings.HasPrefix(name, "SCRAM-") && deps.Scram == nil {
		return nil, fmt.Errorf("SASL mechanism %s needs the SCRAM credential store", name)
	}
	return c(lookup, deps)
}
