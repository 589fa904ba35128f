package broker

// SaslHandshake (key 17), v0-v1.
//
// Picks the SASL mechanism of a SASL_PLAINTEXT or SASL_SSL connection
// (server.SASLSession). v0 (KIP-43): the tokens that follow are raw,
// size-prefixed frames without Kafka headers, which the connection handles
// itself; v1 (KIP-152): they come in SaslAuthenticate requests. A mechanism
// the listener does not enable is UNSUPPORTED_SASL_MECHANISM with the
// enabled list. On a listener without SASL Kafka answers ILLEGAL_SASL_STATE.
// A handshake after authentication starts a re-authentication (KIP-368),
// which must keep the mechanism.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.SASLHandshake, 0, 1, (*Broker).handleSASLHandshake) }

func (b *Broker) handleSASLHandshake(_ context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLHandshakeRequest)
	resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
	s := saslSession(r)
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	resp.SupportedMechanisms = s.EnabledMechanisms()
	resp.ErrorCode = b.errCode(s.Handshake(req.Mechanism, r.Version))
	return resp, nil
}

// saslSession is the SASL state of the request's connection, nil on a
// listener without SASL (or a request made in-process).
func saslSession(r *server.Request) *server.SASLSession {
	if r.Conn == nil {
		return nil
	}
	return r.Conn.SASL
}
