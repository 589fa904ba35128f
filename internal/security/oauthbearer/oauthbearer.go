// Package oauthbearer is the broker side of SASL/OAUTHBEARER (KIP-255,
// RFC 7628): the client sends a bearer token in its initial response and the
// broker validates it, either unsecured (an "alg":"none" JWT, Kafka's
// OAuthBearerUnsecuredValidatorCallbackHandler, for development) or secured
// (KIP-768's OAuthBearerValidatorCallbackHandler: a signed JWT checked against
// the identity provider's JWKS, its issuer, audience and lifetime).
//
// The validator is chosen by sasl.server.callback.handler.class, as Kafka:
// absent (or the unsecured class) is unsecured, the KIP-768 class is secured.
//
// NewClient (client.go) is the client side, for the CLI and the broker's
// own connections: unsecured tokens, or KIP-768 client-credentials tokens
// from sasl.oauthbearer.token.endpoint.url.
package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/jaas"
	"github.com/vltava/vltava/internal/security/sasl"
)

// MechanismName is the SASL name, as in sasl.enabled.mechanisms.
const MechanismName = "OAUTHBEARER"

// The login module sasl.jaas.config must name for OAUTHBEARER, and the
// callback handler classes sasl.server.callback.handler.class may name.
const (
	loginModuleClass = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
	// SecuredHandlerClass selects the KIP-768 JWKS validator.
	SecuredHandlerClass = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
	// securedHandlerClassOld is its name in Kafka 3.1-3.3, still accepted by Kafka.
	securedHandlerClassOld = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler"
	// UnsecuredHandlerClass names the default, unsecured validator explicitly.
	UnsecuredHandlerClass = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler"
)

// validToken is what a validator learns of an accepted token.
type validToken struct {
	principal string
	expiry    time.Time
	scope     []string
}

// failure is a rejected token: the RFC 7628 §3.2.2 error status (and scope)
// the client is sent, and the reason, for the broker's log only.
type failure struct {
	status string
	scope  string
	reason string
}

func invalidToken(reason string) *failure { return &failure{status: "invalid_token", reason: reason} }

// errorJSON is the server's error message, formatted as Kafka's
// OAuthBearerSaslServer.jsonErrorResponse does.
func (f *failure) errorJSON() string {
	s := fmt.Sprintf(`{"status":"%s"`, f.status)
	if f.scope != "" {
		s += fmt.Sprintf(`, "scope":"%s"`, f.scope)
	}
	return s + "}"
}

type validator interface {
	validate(ctx context.Context, token string, now time.Time) (validToken, *failure)
}

// Mechanism is OAUTHBEARER as configured on one listener.
type Mechanism struct {
	validator validator
	closer    io.Closer // the JWKS refresher, nil when unsecured
	now       func() time.Time
}

var (
	_ sasl.Mechanism = (*Mechanism)(nil)
	// New has the constructor shape the SASL mechanism registry calls.
	_ func(func(string) (string, bool)) (sasl.Mechanism, error) = New
)

// New builds the mechanism from the listener's configuration; lookup
// resolves a key in Kafka's order (listener.name.<l>.oauthbearer.<key>,
// listener.name.<l>.<key>, <key>). The secured validator fetches the JWKS
// before New returns, so a broker whose identity provider cannot be reached
// fails to start, as Kafka's does.
func New(lookup func(key string) (string, bool)) (sasl.Mechanism, error) {
	return newMechanism(lookup)
}

func newMechanism(lookup func(key string) (string, bool)) (*Mechanism, error) {
	raw, ok := lookup("sasl.jaas.config")
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, errors.New("OAUTHBEARER: sasl.jaas.config must name " + loginModuleClass)
	}
	mod, err := jaas.ParseOne(raw)
	if err != nil {
		return nil, fmt.Errorf("OAUTHBEARER: sasl.jaas.config: %w", err)
	}
	if mod.Class != loginModuleClass {
		return nil, fmt.Errorf("OAUTHBEARER: sasl.jaas.config names login module %s, not %s", mod.Class, loginModuleClass)
	}
	if err := refuseSSLOptions(mod.Options); err != nil {
		return nil, err
	}
	m := &Mechanism{now: time.Now}
	handler, _ := lookup("sasl.server.callback.handler.class")
	switch strings.TrimSpace(handler) {
	case "", UnsecuredHandlerClass:
		v, err := newUnsecuredValidator(mod.Options)
		if err != nil {
			return nil, fmt.Errorf("OAUTHBEARER: %w", err)
		}
		m.validator = v
	case SecuredHandlerClass, securedHandlerClassOld:
		v, err := newSecuredValidator(lookup)
		if err != nil {
			return nil, fmt.Errorf("OAUTHBEARER: %w", err)
		}
		m.validator, m.closer = v, v.keys
	default:
		return nil, fmt.Errorf("OAUTHBEARER: sasl.server.callback.handler.class=%s: only %s (secured, KIP-768) and the unsecured default are supported; Java plugin classes cannot be loaded", handler, SecuredHandlerClass)
	}
	return m, nil
}

// Name is "OAUTHBEARER".
func (m *Mechanism) Name() string { return MechanismName }

// Close stops the JWKS refresher of a secured mechanism.
func (m *Mechanism) Close() error {
	if m.closer == nil {
		return nil
	}
	return m.closer.Close()
}

// Start begins one exchange.
func (m *Mechanism) Start(sasl.ConnInfo) (sasl.Exchange, error) {
	return &exchange{m: m}, nil
}

// exchange is one authentication: the client's initial response, then on
// failure the error challenge and the client's %x01 (RFC 7628 §3.2.3).
type exchange struct {
	m         *Mechanism
	errorSent *failure // the error challenge sent, awaiting the client's %x01
	done      bool
	principal security.Principal
	expiry    time.Time
}

// authError is a failed authentication; its message is what the client is
// told, Kafka's wording, and its reason what the broker logs.
type authError struct{ msg, reason string }

func (e *authError) Error() string        { return e.msg }
func (e *authError) Is(target error) bool { return target == sasl.ErrAuthentication }

// Reason is why the token was refused, for the broker's log (the client
// sees only the RFC 7628 status).
func (e *authError) Reason() string {
	if e.reason == "" {
		return e.msg
	}
	return e.reason
}

func (e *exchange) Next(ctx context.Context, client []byte) ([]byte, bool, error) {
	switch {
	case e.done:
		return nil, false, &authError{msg: "Authentication failed: the OAUTHBEARER exchange is already complete"}
	case e.errorSent != nil:
		// OAuthBearerSaslServer: the client acknowledges our error with a
		// lone %x01 and the authentication then fails with that error.
		f := e.errorSent
		e.errorSent = nil
		e.done = true
		if len(client) == 1 && client[0] == 0x01 {
			return nil, false, &authError{msg: f.errorJSON(), reason: f.reason}
		}
		return nil, false, &authError{msg: "Authentication failed: expected %x01 after the server's error"}
	}
	ir, err := parseInitialResponse(client)
	if err != nil {
		e.done = true
		return nil, false, &authError{msg: "Authentication failed: " + err.Error()}
	}
	tok, f := e.m.validator.validate(ctx, ir.token, e.m.now())
	if f != nil {
		// RFC 7628 §3.2.2: the error travels as a challenge; the
		// exchange fails once the client answers it.
		e.errorSent = f
		return []byte(f.errorJSON()), false, nil
	}
	// Kafka allows an authorization id only when it is the token's
	// principal.
	if ir.authzid != "" && ir.authzid != tok.principal {
		e.done = true
		return nil, false, &authError{msg: fmt.Sprintf("Authentication failed: Client requested an authorization id (%s) that is different from the token's principal name (%s)", ir.authzid, tok.principal)}
	}
	// Extensions (KIP-342) are accepted as both of Kafka's validators
	// accept them: every one is valid, none changes the principal.
	e.done = true
	e.principal = security.User(tok.principal)
	e.expiry = tok.expiry
	return []byte{}, true, nil
}

func (e *exchange) Principal() security.Principal { return e.principal }

// Lifetime is the time left until the token's exp (KIP-368: the session
// ends when the token does).
func (e *exchange) Lifetime() time.Duration {
	if e.expiry.IsZero() {
		return 0
	}
	d := e.expiry.Sub(e.m.now())
	if d <= 0 {
		// An expired session must re-authenticate at once; 0 would
		// mean "never expires".
		return time.Nanosecond
	}
	return d
}

// refuseSSLOptions refuses the ssl.* JAAS options with which Kafka
// configures TLS to the JWKS and token endpoints: Vltava reaches them with
// the system's trust store, and accepting the options unused would hide
// that.
func refuseSSLOptions(options map[string]string) error {
	for k := range options {
		if strings.HasPrefix(k, "ssl.") {
			return fmt.Errorf("OAUTHBEARER: sasl.jaas.config option %s is not supported: the JWKS and token endpoints are reached with the system's trust store", k)
		}
	}
	return nil
}
