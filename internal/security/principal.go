// Package security holds what authentication yields and authorization and
// quotas consume: the principal a connection acts as. TLS, SASL, the ACL
// authorizer and client quotas live in its subpackages.
package security

import (
	"fmt"
	"strings"
)

// Principal is a Kafka principal, as KafkaPrincipal: a type ("User" for
// every built-in authenticator) and a name. ACLs and quotas match on its
// string form, "User:alice".
type Principal struct {
	Type string
	Name string
}

// UserType is the principal type every built-in authenticator yields.
const UserType = "User"

// Anonymous is the principal of a connection that did not authenticate
// (PLAINTEXT, or SSL without a client certificate), as Kafka's
// KafkaPrincipal.ANONYMOUS.
var Anonymous = Principal{Type: UserType, Name: "ANONYMOUS"}

// User returns the principal User:name.
func User(name string) Principal { return Principal{Type: UserType, Name: name} }

// String is Kafka's form, "Type:Name".
func (p Principal) String() string { return p.Type + ":" + p.Name }

// ParsePrincipal parses "Type:Name" (as in super.users and ACL bindings).
// The name may itself contain colons; the type may not be empty.
func ParsePrincipal(s string) (Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if !ok || typ == "" {
		return Principal{}, fmt.Errorf("principal %q is not of the form Type:Name", s)
	}
	return Principal{Type: typ, Name: name}, nil
}
