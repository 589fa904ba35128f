package compat

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawConn is one Kafka protocol connection driven by hand: requests are
// framed with kmsg's RequestFormatter and responses decoded with kmsg, so
// tests control versions, producer ids and sequence numbers exactly and can
// also send bytes no client would. Not safe for concurrent use.
type rawConn struct {
	conn net.Conn
	fmt  *kmsg.RequestFormatter
	corr int32
}

// rawIOTimeout bounds a single read or write on a raw connection.
const rawIOTimeout = 15 * time.Second

func dialRawContext(ctx context.Context, addr string) (*rawConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return &rawConn{conn: conn, fmt: kmsg.NewRequestFormatter(kmsg.FormatterClientID("vltava-compat"))}, nil
}

// dialRaw connects to addr and closes the connection at test cleanup.
func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialRawContext(ctx, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (c *rawConn) Close() error { return c.conn.Close() }

// send writes one request and returns its correlation id.
func (c *rawConn) send(req kmsg.Request) (int32, error) {
	c.corr++
	return c.corr, c.writeRaw(c.fmt.AppendRequest(nil, req, c.corr))
}

// writeRaw writes bytes as they are (framing is the caller's business).
func (c *rawConn) writeRaw(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(rawIOTimeout))
	_, err := c.conn.Write(b)
	return err
}

// readFrame reads one size-prefixed response frame.
func (c *rawConn) readFrame() ([]byte, error) {
	_ = c.conn.SetReadDeadline(time.Now().Add(rawIOTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.conn, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("implausible response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c.conn, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// roundTrip sends req and decodes its response.
func (c *rawConn) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	corr, err := c.send(req)
	if err != nil {
		return nil, err
	}
	return c.receive(req, corr)
}

// receive reads the response to req sent with correlation id corr.
func (c *rawConn) receive(req kmsg.Request, corr int32) (kmsg.Response, error) {
	frame, err := c.readFrame()
	if err != nil {
		return nil, err
	}
	body, err := stripResponseHeader(frame, req, corr)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// stripResponseHeader checks the correlation id and skips the response
// header: v0 is the id alone, v1 (flexible versions) adds tagged fields.
// ApiVersions responses always use header v0 so that a client can parse the
// reply even when the broker did not understand its version (KIP-511).
func stripResponseHeader(frame []byte, req kmsg.Request, corr int32) ([]byte, error) {
	if len(frame) < 4 {
		return nil, errors.New("response shorter than its header")
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		return skipTaggedFields(body)
	}
	return body, nil
}

func skipTaggedFields(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, errors.New("bad tagged field count")
	}
	b = b[used:]
	for i := uint64(0); i < n; i++ {
		if _, used = binary.Uvarint(b); used <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || uint64(len(b)-used) < size {
			return nil, errors.New("bad tagged field size")
		}
		b = b[used+int(size):]
	}
	return b, nil
}

// waitClosed reports whether the peer closes the connection within timeout:
// a read returns EOF or a reset rather than data or a timeout. Any bytes the
// broker sends before closing are returned too.
func (c *rawConn) waitClosed(timeout time.Duration) (closed bool, got []byte) {
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 4096)
	for {
		_ = c.conn.SetReadDeadline(deadline)
		n, err := c.conn.Read(buf)
		got = append(got, buf[:n]...)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return false, got
		}
		return true, got
	}
}

// waitLeaderReady polls a raw ListOffsets (latest) for topic/partition until
// it succeeds. Right after CreateTopics a broker may briefly answer
// NOT_LEADER_OR_FOLLOWER while it applies the new metadata; clients retry,
// and raw tests must not mistake that window for the behaviour under test.
func (c *rawConn) waitLeaderReady(t testing.TB, topic string, partition int32) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 4
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = partition
		rp.CurrentLeaderEpoch = -1
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := c.roundTrip(req)
		if err != nil {
			t.Fatalf("ListOffsets %s/%d: %v", topic, partition, err)
		}
		lo := resp.(*kmsg.ListOffsetsResponse)
		var code int16 = -1
		if len(lo.Topics) == 1 && len(lo.Topics[0].Partitions) == 1 {
			code = lo.Topics[0].Partitions[0].ErrorCode
		}
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d not led by the broker within 20s: %s", topic, partition, errName(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
