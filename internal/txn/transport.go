package txn

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security/clientauth"
)

// NetTransport is the MarkerTransport of a broker: leaders come from the
// metadata image, and WriteTxnMarkers goes to each leader's inter-broker
// listener over a connection kept per broker (one request in flight on
// each, as Kafka's TransactionMarkerChannelManager keeps one channel per
// broker). The WriteTxnMarkers version is negotiated with ApiVersions on
// each new connection. Thread-safety: safe for concurrent use; a broker's
// calls are serialized on its connection.
type NetTransport struct {
	// Image returns the current metadata image.
	Image func() *metadata.Image
	// Listener is inter.broker.listener.name.
	Listener string
	// ClientID names this broker in the requests.
	ClientID string
	// Security is the inter-broker listener's protocol (TLS, SASL), as
	// the replica fetchers connect; nil is PLAINTEXT.
	Security *clientauth.Security

	mu    sync.Mutex
	conns map[int32]*markerConn
}

// Leader implements MarkerTransport.
func (t *NetTransport) Leader(tp TopicPartition) (int32, bool, bool) {
	p, ok := t.Image().Partition(tp.Topic, tp.Partition)
	if !ok {
		return 0, false, false
	}
	return p.Leader, p.Leader >= 0, true
}

// WriteTxnMarkers implements MarkerTransport.
func (t *NetTransport) WriteTxnMarkers(ctx context.Context, node int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	addr, err := t.addr(node)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[int32]*markerConn{}
	}
	c := t.conns[node]
	if c == nil || c.addr != addr {
		if c != nil {
			c.close()
		}
		c = &markerConn{addr: addr, clientID: t.ClientID, sec: t.Security, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID(t.ClientID))}
		t.conns[node] = c
	}
	t.mu.Unlock()
	return c.writeTxnMarkers(ctx, req)
}

// Close closes the connections.
func (t *NetTransport) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.conns {
		c.close()
	}
	t.conns = nil
}

func (t *NetTransport) addr(node int32) (string, error) {
	br, ok := t.Image().Broker(node)
	if !ok || len(br.Endpoints) == 0 {
		return "", fmt.Errorf("broker %d has no registered endpoint", node)
	}
	ep := br.Endpoints[0]
	for _, e := range br.Endpoints {
		if e.Name == t.Listener {
			ep = e
			break
		}
	}
	return net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))), nil
}

// markerConn is one connection to a partition leader. mu serializes the
// calls; no other lock is taken under it.
type markerConn struct {
	addr     string
	clientID string
	sec      *clientauth.Security // nil: PLAINTEXT
	fmt      *kmsg.RequestFormatter

	mu struct {
		sync.Mutex
		conn    *clientauth.Conn
		r       *bufio.Reader
		corr    int32
		version int16
	}
}

// ErrMarkersUnsupported means the leader does not serve WriteTxnMarkers.
var ErrMarkersUnsupported = fmt.Errorf("%w: the partition leader does not serve WriteTxnMarkers", kerr.UnsupportedVersion)

func (c *markerConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil {
		c.mu.conn.Close()
		c.mu.conn = nil
	}
}

func (c *markerConn) writeTxnMarkers(ctx context.Context, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.conn != nil && c.mu.conn.Expired() {
		// The SASL session is about to end (KIP-368): authenticate anew.
		c.mu.conn.Close()
		c.mu.conn = nil
	}
	if c.mu.conn == nil {
		if err := c.dialLocked(ctx); err != nil {
			return nil, err
		}
	}
	req.SetVersion(c.mu.version)
	resp := req.ResponseKind()
	if err := c.roundTripLocked(ctx, req, resp); err != nil {
		c.mu.conn.Close()
		c.mu.conn = nil
		return nil, err
	}
	return resp.(*kmsg.WriteTxnMarkersResponse), nil
}

// dialLocked connects with the inter-broker listener's security protocol
// and negotiates the WriteTxnMarkers version.
func (c *markerConn) dialLocked(ctx context.Context) error {
	sec := c.sec
	if sec == nil {
		sec = clientauth.Plaintext
	}
	conn, err := sec.Dial(ctx, c.addr, c.clientID, nil, 5*time.Second)
	if err != nil {
		return err
	}
	c.mu.conn, c.mu.r = conn, bufio.NewReader(conn)
	av := kmsg.NewPtrApiVersionsRequest()
	av.SetVersion(0)
	avResp := av.ResponseKind()
	if err := c.roundTripLocked(ctx, av, avResp); err != nil {
		conn.Close()
		c.mu.conn = nil
		return err
	}
	ours := (&kmsg.WriteTxnMarkersRequest{}).MaxVersion()
	for _, k := range avResp.(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == int16(kmsg.WriteTxnMarkers) {
			c.mu.version = min(ours, k.MaxVersion)
			return nil
		}
	}
	conn.Close()
	c.mu.conn = nil
	return ErrMarkersUnsupported
}

// maxMarkerResponse bounds a response frame; marker responses are small.
const maxMarkerResponse = 64 << 20

func (c *markerConn) roundTripLocked(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	conn := c.mu.conn
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	c.mu.corr++
	corr := c.mu.corr
	if _, err := conn.Write(c.fmt.AppendRequest(nil, req, corr)); err != nil {
		return err
	}
	var hdr [8]byte
	if _, err := io.ReadFull(c.mu.r, hdr[:]); err != nil {
		return err
	}
	size := int32(binary.BigEndian.Uint32(hdr[:4]))
	if size < 4 || size > maxMarkerResponse {
		return fmt.Errorf("response frame of %d bytes", size)
	}
	if got := int32(binary.BigEndian.Uint32(hdr[4:])); got != corr {
		return fmt.Errorf("response correlation id %d, want %d", got, corr)
	}
	body := make([]byte, size-4)
	if _, err := io.ReadFull(c.mu.r, body); err != nil {
		return err
	}
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != int16(kmsg.ApiVersions) {
		var err error
		if body, err = skipTags(body); err != nil {
			return err
		}
	}
	return resp.ReadFrom(body)
}

var errShortTags = errors.New("truncated tagged fields in response header")

// skipTags skips a response header's tagged fields.
func skipTags(b []byte) ([]byte, error) {
	n, l := binary.Uvarint(b)
	if l <= 0 {
		return nil, errShortTags
	}
	b = b[l:]
	for range n {
		if _, l = binary.Uvarint(b); l <= 0 {
			return nil, errShortTags
		}
		b = b[l:]
		size, l := binary.Uvarint(b)
		if l <= 0 || uint64(len(b)-l) < size {
			return nil, errShortTags
		}
		b = b[l+int(size):]
	}
	return b, nil
}
