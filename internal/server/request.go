package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
)

// Request is one decoded client request.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      string
	// Body is the decoded request, its version set. Byte fields (record
	// batches) alias the frame buffer, which the request owns until its
	// handler returns.
	Body     kmsg.Request
	Conn     *ConnInfo
	Received time.Time
	// Size is the request's length in bytes (its frame without the size
	// prefix), what Kafka's produce quota counts.
	Size int
}

// ConnInfo describes the connection a request arrived on.
type ConnInfo struct {
	ID               uint64
	Listener         string
	SecurityProtocol string
	Remote           net.Addr
	Local            net.Addr
	// Principal is who the connection acts as: security.Anonymous until it
	// authenticates (TLS client certificate or SASL). Only the connection's
	// handler goroutine writes it, between requests (re-authentication,
	// KIP-368, replaces it), so handlers read it without a lock.
	Principal security.Principal
	// SASL is the connection's SASL state on SASL_PLAINTEXT and SASL_SSL
	// listeners (the SaslHandshake and SaslAuthenticate handlers drive
	// it), nil elsewhere.
	SASL *SASLSession
	// TokenAuthenticated reports that the connection authenticated with a
	// delegation token (KIP-48), which may not create or manage tokens.
	// Written with Principal.
	TokenAuthenticated bool

	// throttledUntil is when a KIP-219 mute ends (Throttle); handler
	// goroutine only.
	throttledUntil time.Time
}

// Throttle mutes the connection for d once the response of the request
// being handled is queued: no further request of the connection is handled
// until d has passed (KIP-219: the broker answers a client over its quota
// at once, with the throttle time, then stops reading from it for that
// long). Only the connection's handler goroutine calls it, from Handle.
func (c *ConnInfo) Throttle(d time.Duration) {
	if d <= 0 {
		return
	}
	if until := time.Now().Add(d); until.After(c.throttledUntil) {
		c.throttledUntil = until
	}
}

// Handler answers requests. The context passed to Handle is cancelled when
// the connection closes or the server shuts down, so parked requests (fetch
// long-polls, acks=all waits) end with their connection.
//
// Handler answers requests. The server calls it from each connection's read
// goroutine, one request at a time per connection, so the requests of one
// connection take effect in the order sent (Kafka mutes a connection while
// a request is in flight).
type Handler interface {
	// Handle answers req. A nil response sends nothing (produce with
	// acks=0). An error closes the connection.
	Handle(ctx context.Context, req *Request) (kmsg.Response, error)
	// VersionRange is the range of versions implemented for an API key;
	// ok is false for keys the broker does not serve.
	VersionRange(key int16) (minVersion, maxVersion int16, ok bool)
}

// errFrame marks a frame that cannot be decoded; the connection is closed.
var errFrame = errors.New("malformed request")

// header is a decoded request header (v0, v1 or v2).
type header struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
}

// parseHeader decodes a request header from a frame and returns the rest of
// the frame. Header v0 has no client id and is only used by ControlledShutdown
// v0, which we do not serve, so v1 is assumed; flexible versions (KIP-482,
// header v2) add tagged fields, which are skipped.
func parseHeader(frame []byte) (header, []byte, error) {
	if len(frame) < 8 {
		return header{}, nil, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", errFrame, len(frame))
	}
	r := kbin.Reader{Src: frame}
	h := header{key: r.Int16(), version: r.Int16(), correlationID: r.Int32()}
	if id := r.NullableString(); id != nil {
		h.clientID = *id
	}
	if !r.Ok() {
		return h, nil, fmt.Errorf("%w: truncated request header", errFrame)
	}
	return h, r.Src, nil
}

// skipTags skips a tagged-field section (KIP-482).
func skipTags(b []byte) ([]byte, error) {
	r := kbin.Reader{Src: b}
	n := r.Uvarint()
	for i := uint32(0); i < n && r.Ok(); i++ {
		r.Uvarint() // tag
		size := r.Uvarint()
		r.Span(int(size))
	}
	if !r.Ok() {
		return nil, fmt.Errorf("%w: truncated tagged fields", errFrame)
	}
	return r.Src, nil
}
