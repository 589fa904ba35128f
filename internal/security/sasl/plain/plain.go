// Package plain is the SASL PLAIN mechanism (RFC 4616) as Kafka's
// PlainLoginModule configures it: the users and their passwords are the
// user_<name>="<password>" options of the listener's JAAS configuration
// (listener.name.<l>.plain.sasl.jaas.config, or sasl.jaas.config).
package plain

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/jaas"
	"github.com/vltava/vltava/internal/security/sasl"
)

// Name is the mechanism's name.
const Name = "PLAIN"

// LoginModule is the JAAS login module class Kafka's PLAIN uses.
const LoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"

// Mechanism is PLAIN with its users.
type Mechanism struct {
	users map[string]string
}

// New builds PLAIN from a listener's settings: lookup resolves
// sasl.jaas.config in Kafka's order.
func New(lookup func(key string) (string, bool)) (sasl.Mechanism, error) {
	raw, ok := lookup("sasl.jaas.config")
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, errors.New("PLAIN needs a JAAS configuration with " + LoginModule + " (listener.name.<listener>.plain.sasl.jaas.config)")
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return nil, err
	}
	if mod.Class != LoginModule {
		return nil, fmt.Errorf("PLAIN's sasl.jaas.config names login module %s, not %s", mod.Class, LoginModule)
	}
	users := map[string]string{}
	for k, v := range mod.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok {
			users[name] = v
		}
	}
	return &Mechanism{users: users}, nil
}

// NewWithUsers builds PLAIN over a fixed user table (tests).
func NewWithUsers(users map[string]string) *Mechanism { return &Mechanism{users: users} }

// Name implements sasl.Mechanism.
func (*Mechanism) Name() string { return Name }

// Start implements sasl.Mechanism.
func (m *Mechanism) Start(sasl.ConnInfo) (sasl.Exchange, error) { return &exchange{m: m}, nil }

type exchange struct {
	m    *Mechanism
	user string
}

// errCredentials is Kafka's one message for an unknown user and a wrong
// password alike.
var errCredentials = fmt.Errorf("%w: Invalid username or password", sasl.ErrAuthentication)

// Next checks the one PLAIN message: [authzid] NUL authcid NUL passwd.
func (e *exchange) Next(_ context.Context, token []byte) ([]byte, bool, error) {
	parts := bytes.Split(token, []byte{0})
	if len(parts) != 3 {
		return nil, false, fmt.Errorf("%w: Invalid SASL/PLAIN response: expected 3 tokens", sasl.ErrAuthentication)
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, fmt.Errorf("%w: Authentication failed: username not specified", sasl.ErrAuthentication)
	}
	if len(pass) == 0 {
		return nil, false, fmt.Errorf("%w: Authentication failed: password not specified", sasl.ErrAuthentication)
	}
	want, known := e.m.users[user]
	// Compare even for an unknown user, so timing does not tell.
	ok := subtle.ConstantTimeCompare([]byte(want), pass) == 1
	if !known || !ok {
		return nil, false, errCredentials
	}
	if authz != "" && authz != user {
		return nil, false, fmt.Errorf("%w: Authentication failed: Client requested an authorization id that is different from username", sasl.ErrAuthentication)
	}
	e.user = user
	return []byte{}, true, nil
}

func (e *exchange) Principal() security.Principal { return security.User(e.user) }
func (e *exchange) Lifetime() time.Duration       { return 0 }
