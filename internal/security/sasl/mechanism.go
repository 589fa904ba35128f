// Package sasl is the broker side of SASL authentication (KIP-43, KIP-152):
// the Mechanism each enabled sasl.enabled.mechanisms entry names, and the
// Exchange one connection runs with it. The connection code drives an
// Exchange with the tokens of SaslHandshake v0 raw frames or SaslAuthenticate
// requests; mechanisms know nothing of framing.
package sasl

import (
	"context"
	"errors"
	"time"

	"github.com/vltava/vltava/internal/security"
)

// Mechanism is one SASL mechanism as configured on one listener (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER, GSSAPI).
type Mechanism interface {
	// Name is the mechanism's SASL name, as in sasl.enabled.mechanisms.
	Name() string
	// Start begins one authentication exchange for a connection.
	Start(info ConnInfo) (Exchange, error)
}

// ConnInfo is what a mechanism may know of the connection it authenticates.
type ConnInfo struct {
	Listener string
	// TLS reports whether the connection is encrypted (SASL_SSL), which
	// some mechanisms' policies depend on.
	TLS bool
	// RemoteHost is the client's address without port.
	RemoteHost string
}

// Exchange is one authentication in progress. Calls come one at a time
// from the connection's handler goroutine.
type Exchange interface {
	// Next consumes the client's token and returns the server's reply.
	// done reports that authentication succeeded: Principal and Lifetime
	// are then valid. An error ends the exchange: wrap ErrAuthentication
	// for a failed authentication (the client gets
	// SASL_AUTHENTICATION_FAILED and its message, which must not reveal
	// whether the user exists); other errors close the connection.
	Next(ctx context.Context, client []byte) (server []byte, done bool, err error)
	// Principal is the authenticated principal, before any principal
	// mapping rules (those are applied by the caller).
	Principal() security.Principal
	// Lifetime bounds the session (KIP-368): the remaining lifetime of the
	// credential (a token's expiry), or 0 when the credential does not
	// expire; the caller takes the minimum with connections.max.reauth.ms.
	Lifetime() time.Duration
}

// ErrAuthentication marks a failed authentication: wrong credentials,
// unknown user, expired token, malformed token.
var ErrAuthentication = errors.New("authentication failed")
