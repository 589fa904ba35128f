package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
)

// SASLConfig is the SASL side of a SASL_PLAINTEXT or SASL_SSL listener.
type SASLConfig struct {
	// Mechanisms are the listener's sasl.enabled.mechanisms, in the
	// configured order, each built from the listener's settings.
	Mechanisms []sasl.Mechanism
	// FailedAuthenticationDelay is connection.failed.authentication.delay.ms
	// (KIP-306): a failed authentication is answered, and the connection
	// closed, only after it, which slows password guessing.
	FailedAuthenticationDelay time.Duration
	// MaxReauth is connections.max.reauth.ms (KIP-368): a session lasts at
	// most this long (0: as long as the credential) before the client must
	// re-authenticate; a connection that sends anything else after its
	// session expired is closed.
	MaxReauth time.Duration
	// MaxReauthByMechanism overrides MaxReauth per mechanism
	// (listener.name.<l>.<mechanism>.connections.max.reauth.ms, KIP-368).
	MaxReauthByMechanism map[string]time.Duration
	// MapPrincipal, if set, turns the mechanism's principal into the
	// connection's (GSSAPI's sasl.kerberos.principal.to.local.rules); nil
	// keeps it, as Kafka's DefaultKafkaPrincipalBuilder does for the other
	// mechanisms.
	MapPrincipal func(mechanism string, p security.Principal) (security.Principal, error)
}

func (c *SASLConfig) mechanism(name string) sasl.Mechanism {
	for _, m := range c.Mechanisms {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// EnabledMechanisms lists the mechanisms' names, as SaslHandshake answers
// them.
func (c *SASLConfig) EnabledMechanisms() []string {
	names := make([]string, len(c.Mechanisms))
	for i, m := range c.Mechanisms {
		names[i] = m.Name()
	}
	return names
}

// SASLSession is the SASL state of one connection (Kafka's
// SaslServerAuthenticator), driven by the SaslHandshake and SaslAuthenticate
// handlers and by the connection for SaslHandshake v0's raw tokens. Only
// the connection's handler goroutine touches it.
//
// States: a connection starts unauthenticated and may send ApiVersions,
// SaslHandshake and SaslAuthenticate only. SaslHandshake picks an enabled
// mechanism; v0 switches the connection to raw, size-prefixed tokens
// without Kafka headers (KIP-43, what kafka-python 2.0 sends), v1 expects
// SaslAuthenticate requests (KIP-152). Once the exchange succeeds the
// principal is the connection's and every API is served until the session
// expires (KIP-368); the client re-authenticates with another SaslHandshake
// and SaslAuthenticate, same mechanism, same principal.
type SASLSession struct {
	cfg  *SASLConfig
	info *ConnInfo
	conn sasl.ConnInfo

	mech     sasl.Mechanism
	exchange sasl.Exchange
	// raw: SaslHandshake v0 succeeded, the next frames are raw tokens.
	raw bool
	// authenticated: an exchange succeeded at least once.
	authenticated bool
	// mechanismUsed is the mechanism of the first successful exchange;
	// re-authentication must use it (KIP-368).
	mechanismUsed string
	// expiry ends the session; zero when it does not expire.
	expiry time.Time
	// closeAfterResponse: authentication failed, the connection closes
	// once the answer is written.
	closeAfterResponse bool
	// onAuthenticated is called on the first success (the connection's
	// authentication timeout stops).
	onAuthenticated func()
}

func newSASLSession(cfg *SASLConfig, info *ConnInfo, tls bool, remoteHost string) *SASLSession {
	return &SASLSession{cfg: cfg, info: info, conn: sasl.ConnInfo{Listener: info.Listener, TLS: tls, RemoteHost: remoteHost}}
}

// errIllegalSASLState is the Kafka error of a SASL request out of turn.
var errIllegalSASLState = kerr.IllegalSaslState

// saslError is a SASL failure to answer with code and message: its text is
// the message alone (a client shows it), and it unwraps to the Kafka error.
type saslError struct {
	code *kerr.Error
	msg  string
}

func (e *saslError) Error() string { return e.msg }
func (e *saslError) Unwrap() error { return e.code }

// EnabledMechanisms lists the listener's mechanisms.
func (s *SASLSession) EnabledMechanisms() []string { return s.cfg.EnabledMechanisms() }

// Handshake handles SaslHandshake: it picks the mechanism for the exchange
// that follows. An unknown or disabled mechanism wraps
// kerr.UnsupportedSaslMechanism; a handshake while an exchange is under way
// wraps kerr.IllegalSaslState.
func (s *SASLSession) Handshake(mechanism string, version int16) error {
	if s.exchange != nil {
		return &saslError{errIllegalSASLState, "SaslHandshake while an authentication is in progress"}
	}
	m := s.cfg.mechanism(mechanism)
	if m == nil {
		return &saslError{kerr.UnsupportedSaslMechanism, fmt.Sprintf("Unsupported SASL mechanism %s (enabled on listener %s: %s)",
			mechanism, s.info.Listener, strings.Join(s.cfg.EnabledMechanisms(), ", "))}
	}
	if s.authenticated && mechanism != s.mechanismUsed {
		// KIP-368: re-authentication keeps the mechanism.
		s.closeAfterResponse = true
		return &saslError{kerr.UnsupportedSaslMechanism, "re-authentication must use the mechanism " + s.mechanismUsed}
	}
	ex, err := m.Start(s.conn)
	if err != nil {
		return err
	}
	s.mech, s.exchange = m, ex
	s.raw = version == 0
	return nil
}

// Authenticate handles one SaslAuthenticate token (and, through the
// connection, each raw token after SaslHandshake v0). It returns the
// server's token and, when the exchange completed, the session lifetime
// (0: unbounded). A failed authentication waits
// connection.failed.authentication.delay.ms, then returns an error wrapping
// kerr.SaslAuthenticationFailed with the mechanism's message (which names no
// user), and the connection closes after the answer.
func (s *SASLSession) Authenticate(ctx context.Context, token []byte) (reply []byte, done bool, lifetime time.Duration, err error) {
	if s.exchange == nil {
		return nil, false, 0, &saslError{errIllegalSASLState, "SaslAuthenticate without a successful SaslHandshake"}
	}
	reply, done, err = s.exchange.Next(ctx, token)
	if err == nil && done {
		err = s.complete()
	}
	if err != nil {
		s.exchange = nil
		s.closeAfterResponse = true
		if !errors.Is(err, sasl.ErrAuthentication) {
			return nil, false, 0, err
		}
		metrics.AuthenticationFailed(s.info.Listener, s.mech.Name())
		if d := s.cfg.FailedAuthenticationDelay; d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		msg := strings.TrimPrefix(err.Error(), sasl.ErrAuthentication.Error()+": ")
		return nil, false, 0, &saslError{kerr.SaslAuthenticationFailed, msg}
	}
	if done {
		lifetime = s.lifetime()
		metrics.AuthenticationSucceeded(s.info.Listener, s.mech.Name())
	}
	return reply, done, lifetime, nil
}

// complete makes a finished exchange's principal the connection's.
func (s *SASLSession) complete() error {
	p := s.exchange.Principal()
	if s.cfg.MapPrincipal != nil {
		var err error
		if p, err = s.cfg.MapPrincipal(s.mech.Name(), p); err != nil {
			return fmt.Errorf("%w: %v", sasl.ErrAuthentication, err)
		}
	}
	if s.authenticated && p != s.info.Principal {
		// KIP-368: a re-authenticated connection keeps its principal.
		return fmt.Errorf("%w: re-authentication cannot change the principal", sasl.ErrAuthentication)
	}
	life := s.cfg.MaxReauth
	if d, ok := s.cfg.MaxReauthByMechanism[s.mech.Name()]; ok {
		life = d
	}
	if l := s.exchange.Lifetime(); l > 0 && (life == 0 || l < life) {
		life = l
	}
	s.expiry = time.Time{}
	if life > 0 {
		s.expiry = time.Now().Add(life)
	}
	s.info.Principal = p
	tok, ok := s.exchange.(interface{ TokenAuthenticated() bool })
	s.info.TokenAuthenticated = ok && tok.TokenAuthenticated()
	if !s.authenticated && s.onAuthenticated != nil {
		s.onAuthenticated()
	}
	s.authenticated, s.mechanismUsed = true, s.mech.Name()
	s.exchange, s.raw = nil, false
	return nil
}

func (s *SASLSession) lifetime() time.Duration {
	if s.expiry.IsZero() {
		return 0
	}
	return max(time.Until(s.expiry), time.Millisecond)
}

// preAuthAPIs are the APIs served before authentication, as Kafka's
// SaslServerAuthenticator allows.
var preAuthAPIs = []int16{18 /* ApiVersions */, 17 /* SaslHandshake */, 36 /* SaslAuthenticate */}

// admits reports whether a request of this key may be handled now: before
// authentication (or after the session expired) only the SASL exchange and
// ApiVersions are.
func (s *SASLSession) admits(key int16) error {
	if slices.Contains(preAuthAPIs, key) {
		return nil
	}
	if !s.authenticated {
		return errors.New("request before SASL authentication completed")
	}
	if s.exchange != nil {
		return errors.New("request during SASL re-authentication")
	}
	if !s.expiry.IsZero() && time.Now().After(s.expiry) {
		return errors.New("SASL session expired without re-authentication (connections.max.reauth.ms)")
	}
	return nil
}
