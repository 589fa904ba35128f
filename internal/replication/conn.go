package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/clientauth"
)

// brokerConn is one Kafka-protocol connection from a fetcher to a leader's
// inter-broker listener: size-prefixed frames, request header v1/v2, one
// request in flight at a time (a fetcher waits for each response before
// sending the next, as Kafka's ReplicaFetcherThread does).
//
// Thread-safety: none; a brokerConn belongs to one fetcher goroutine.
type brokerConn struct {
	c         *clientauth.Conn
	formatter *kmsg.RequestFormatter
	corr      int32
	wbuf      []byte
	rbuf      []byte
}

// dialBroker connects with the inter-broker listener's security protocol
// (TLS and SASL, clientauth); sec nil is PLAINTEXT.
func dialBroker(sec *clientauth.Security, addr, clientID string, timeout time.Duration) (*brokerConn, error) {
	if sec == nil {
		sec = clientauth.Plaintext
	}
	c, err := sec.Dial(context.Background(), addr, clientID, nil, timeout)
	if err != nil {
		return nil, err
	}
	return &brokerConn{c: c, formatter: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}, nil
}

// errSessionExpired ends a connection whose SASL session is about to
// expire (KIP-368): the fetcher dials again, authenticating anew.
var errSessionExpired = errors.New("SASL session expiring: reconnecting")

func (b *brokerConn) close() error { return b.c.Close() }

// maxResponseSize bounds a response frame; a fetch response is bounded by
// replica.fetch.response.max.bytes plus framing, far below this.
const maxResponseSize = 1 << 30

// roundTrip sends req and decodes its response into resp (of the same API),
// failing if the exchange is not done by deadline.
func (b *brokerConn) roundTrip(req kmsg.Request, resp kmsg.Response, deadline time.Time) error {
	if b.c.Expired() {
		return errSessionExpired
	}
	b.corr++
	b.wbuf = b.formatter.AppendRequest(b.wbuf[:0], req, b.corr)
	if err := b.c.SetDeadline(deadline); err != nil {
		return err
	}
	if _, err := b.c.Write(b.wbuf); err != nil {
		return err
	}
	var size [4]byte
	if _, err := io.ReadFull(b.c, size[:]); err != nil {
		return err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponseSize {
		return fmt.Errorf("response frame of %d bytes", n)
	}
	// The response's record bytes alias the buffer, so it is fresh per
	// response: the caller appends them to the log after this returns.
	b.rbuf = make([]byte, n)
	if _, err := io.ReadFull(b.c, b.rbuf); err != nil {
		return err
	}
	body := b.rbuf
	if corr := int32(binary.BigEndian.Uint32(body)); corr != b.corr {
		return fmt.Errorf("response correlation id %d, want %d", corr, b.corr)
	}
	body = body[4:]
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		// Response header v1: tagged fields, none of which we use.
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

var errShortTags = errors.New("truncated tagged fields in response header")

// skipTags skips a tagged-field section (uvarint count, then uvarint tag,
// uvarint size and size bytes per field).
func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return nil, errShortTags
	}
	b = b[n:]
	for range count {
		_, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, errShortTags
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < size {
			return nil, errShortTags
		}
		b = b[n+int(size):]
	}
	return b, nil
}
