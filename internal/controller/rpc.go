package controller

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security/clientauth"
)

// rpcConn is one Kafka-protocol connection from this node to a controller's
// quorum port, used for the broker-to-controller RPCs (BrokerRegistration,
// BrokerHeartbeat, AlterPartition, AllocateProducerIds) and forwarded admin
// requests. Requests on a connection are strictly sequential (one in
// flight), which is all the control plane needs.
//
// Wire format: one marker byte right after connecting (the quorum port's
// quorum.ControllerRPCByte, which routes the connection to the
// controller's Kafka endpoint), then Kafka's size-prefixed frames; request
// header v1 (v2 for flexible versions, whose tagged fields are always empty
// here); response header v0 (v1 with tagged fields for flexible versions).
//
// Thread-safety: call is safe for concurrent use; calls are serialized by mu.
type rpcConn struct {
	addr     string
	clientID string
	marker   byte
	fmt      *kmsg.RequestFormatter
	// security is the controller listener's protocol (TLS, then the
	// marker byte, then SASL: clientauth.Dial).
	security *clientauth.Security

	mu struct {
		sync.Mutex
		conn   *clientauth.Conn
		r      *bufio.Reader
		corrID int32
	}
}

func newRPCConn(addr, clientID string, marker byte, sec *clientauth.Security) *rpcConn {
	if sec == nil {
		sec = clientauth.Plaintext
	}
	return &rpcConn{addr: addr, clientID: clientID, marker: marker, security: sec, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// maxRPCResponse bounds a control-plane response; they are small.
const maxRPCResponse = 64 << 20

// call sends req (its version set) and returns the decoded response. Any
// I/O error closes the connection; the next call dials again.
func (c *rpcConn) call(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil && c.mu.conn.Expired() {
		// The SASL session ends soon (KIP-368): authenticate anew.
		c.mu.conn.Close()
		c.mu.conn, c.mu.r = nil, nil
	}
	if c.mu.conn == nil {
		conn, err := c.security.Dial(ctx, c.addr, c.clientID, []byte{c.marker}, 5*time.Second)
		if err != nil {
			return nil, err
		}
		c.mu.conn, c.mu.r = conn, bufio.NewReader(conn)
	}
	conn := c.mu.conn
	resp, err := c.roundTripLocked(ctx, conn, req)
	if err != nil {
		conn.Close()
		c.mu.conn, c.mu.r = nil, nil
		return nil, err
	}
	return resp, nil
}

func (c *rpcConn) roundTripLocked(ctx context.Context, conn net.Conn, req kmsg.Request) (kmsg.Response, error) {
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	c.mu.corrID++
	corr := c.mu.corrID
	if _, err := conn.Write(c.fmt.AppendRequest(nil, req, corr)); err != nil {
		return nil, err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.mu.r, hdr[:]); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxRPCResponse {
		return nil, fmt.Errorf("controller rpc: invalid response size %d", size)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return nil, fmt.Errorf("controller rpc: correlation id %d, want %d", got, corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(c.mu.r, body); err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		var err error
		if body, err = skipTags(body); err != nil {
			return nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("controller rpc: decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return resp, nil
}

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errors.New("controller rpc: bad tagged field count")
	}
	b = b[l:]
	for range n {
		if _, l = binary.Uvarint(b); l <= 0 {
			return nil, errors.New("controller rpc: bad tag")
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errors.New("controller rpc: bad tag size")
		}
		b = b[l+int(size):]
	}
	return b, nil
}

// close closes the connection, if open.
func (c *rpcConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil {
		c.mu.conn.Close()
		c.mu.conn, c.mu.r = nil, nil
	}
}
