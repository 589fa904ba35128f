package broker

// SaslAuthenticate (key 36), v0-v2.
//
// Carries one token of the SASL exchange chosen by SaslHandshake v1
// (KIP-152). A failed authentication is SASL_AUTHENTICATION_FAILED with a
// message that never says whether the user exists, sent after
// connection.failed.authentication.delay.ms, and the connection closes
// (server.SASLSession). v1+ returns the session lifetime (KIP-368): the
// remaining lifetime of the credential capped by connections.max.reauth.ms,
// 0 when the session does not expire; the client re-authenticates before
// it ends. v2 is the flexible version. Without SASL on the listener, or
// without a handshake first: ILLEGAL_SASL_STATE.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.SASLAuthenticate, 0, 2, (*Broker).handleSASLAuthenticate) }

func (b *Broker) handleSASLAuthenticate(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.SASLAuthenticateRequest)
	resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	s := saslSession(r)
	if s == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate on a listener without SASL"
		resp.ErrorMessage = &msg
		return resp, nil
	}
	reply, _, lifetime, err := s.Authenticate(ctx, req.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		resp.ErrorMessage = errMessage(err)
		return resp, nil
	}
	resp.SASLAuthBytes = reply
	if r.Version >= 1 {
		resp.SessionLifetimeMillis = lifetime.Milliseconds()
	}
	return resp, nil
}
