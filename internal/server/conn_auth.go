package server

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"time"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/tlsconf"
)

// authenticationTimeout is how long a new connection has to finish its TLS
// handshake and SASL exchange.
func (c *conn) authenticationTimeout() time.Duration {
	if t := c.srv.cfg.AuthenticationTimeout; t > 0 {
		return t
	}
	return c.srv.cfg.IdleTimeout
}

// authenticateTransport runs the TLS handshake of SSL and SASL_SSL
// listeners, bounded by the authentication timeout, and takes an SSL
// client's principal from its certificate. A client that does not speak TLS
// (a plaintext Kafka client sends a frame size where a ClientHello belongs)
// fails the handshake and only its own connection closes. On SASL listeners
// it also arms the timer that closes a connection still unauthenticated at
// the timeout. false: the connection must close.
func (c *conn) authenticateTransport() bool {
	timeout := c.authenticationTimeout()
	if c.lcfg.TLS != nil {
		tc := tlsconf.Server(c.nc, c.lcfg.TLS.Config())
		ctx := c.ctx
		if timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, timeout)
			defer cancel()
		}
		if err := tc.HandshakeContext(ctx); err != nil {
			c.log.Info("closing connection: TLS handshake failed", "err", err)
			return false
		}
		c.stream = tc
		if c.sasl == nil {
			// SSL: the principal is the client certificate's subject
			// (Kafka's DefaultKafkaPrincipalBuilder), ANONYMOUS
			// without one.
			if p, ok, err := certificatePrincipal(tc.ConnectionState(), c.lcfg.TLS.Mapper()); err != nil {
				c.log.Info("closing connection: TLS client certificate not mapped to a principal", "err", err)
				return false
			} else if ok {
				c.info.Principal = p
			}
		}
	}
	if c.sasl != nil && timeout > 0 {
		// The handler goroutine marks success; the timer only reads
		// the flag, so it never races the session's other state.
		done := c.saslDone()
		t := time.AfterFunc(timeout, func() {
			select {
			case <-done:
			default:
				c.log.Info("closing connection: SASL authentication did not complete in time", "timeout", timeout)
				c.nc.Close()
			}
		})
		go func() {
			select {
			case <-done:
				t.Stop()
			case <-c.ctx.Done():
				t.Stop()
			}
		}()
	}
	return true
}

// saslDone returns a channel closed when the connection first
// authenticates.
func (c *conn) saslDone() <-chan struct{} {
	ch := make(chan struct{})
	c.sasl.onAuthenticated = func() { close(ch) }
	return ch
}

func certificatePrincipal(st tls.ConnectionState, mapper *tlsconf.PrincipalMapper) (security.Principal, bool, error) {
	if len(st.PeerCertificates) == 0 {
		return security.Principal{}, false, nil
	}
	name, err := mapper.Map(tlsconf.SubjectDN(st.PeerCertificates[0]))
	if err != nil {
		return security.Principal{}, false, err
	}
	return security.User(name), true, nil
}

// handleRawToken handles a frame after SaslHandshake v0: the whole frame is
// a token of the exchange, and the answer is the server's token, size-
// prefixed, with no Kafka header (KIP-43). A failure closes the connection
// (there is no way to carry an error code), after the failed-authentication
// delay.
func (c *conn) handleRawToken(token []byte) bool {
	reply, _, _, err := c.sasl.Authenticate(c.ctx, token)
	if err != nil {
		var se *saslError
		if errors.As(err, &se) {
			c.log.Info("closing connection: SASL authentication failed", "reason", se.msg)
		} else {
			c.log.Info("closing connection: SASL authentication failed", "err", err)
		}
		return false
	}
	if reply == nil {
		// Nothing to send: GSSAPI's last step answers the client's
		// security-layer choice with silence, as the JDK's server does,
		// and kafka-python waits for no frame there.
		return true
	}
	out := make([]byte, 4+len(reply))
	binary.BigEndian.PutUint32(out, uint32(len(reply)))
	copy(out[4:], reply)
	select {
	case c.out <- frame{{Bytes: out}}:
		return true
	case <-c.writeDone:
		return false
	}
}
