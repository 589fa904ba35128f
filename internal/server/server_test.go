package server

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testHandler serves ApiVersions v0-3 and Metadata v0-12; Metadata requests
// sleep a random moment so pipelined requests finish out of order unless
// the server keeps them in order. A Metadata request for topic "panic"
// panics.
type testHandler struct {
	handled atomic.Int64
	// released is signalled when a request for topic "park", which waits
	// for its context, is released.
	released chan struct{}
}

func (h *testHandler) VersionRange(key int16) (int16, int16, bool) {
	switch kmsg.Key(key) {
	case kmsg.ApiVersions:
		return 0, 3, true
	case kmsg.Metadata:
		return 0, 12, true
	case kmsg.Produce:
		return 3, 11, true
	}
	return 0, 0, false
}

func (h *testHandler) Handle(ctx context.Context, r *Request) (kmsg.Response, error) {
	h.handled.Add(1)
	switch req := r.Body.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
		if r.Version > 3 {
			resp.SetVersion(0)
			resp.ErrorCode = 35
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		if len(req.Topics) == 1 && req.Topics[0].Topic != nil && *req.Topics[0].Topic == "panic" {
			panic("test panic")
		}
		if len(req.Topics) == 1 && req.Topics[0].Topic != nil && *req.Topics[0].Topic == "park" {
			<-ctx.Done()
			h.released <- struct{}{}
			return nil, ctx.Err()
		}
		if len(req.Topics) == 1 && req.Topics[0].Topic != nil && *req.Topics[0].Topic == "throttle" {
			r.Conn.Throttle(time.Second)
		}
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = r.CorrelationID
		return resp, nil
	case *kmsg.ProduceRequest:
		if req.Acks == 0 {
			return nil, nil
		}
		return req.ResponseKind(), nil
	}
	return nil, errors.New("unexpected request")
}

func startTestServer(t *testing.T, cfg Config) (*Server, *testHandler, string) {
	t.Helper()
	h := &testHandler{released: make(chan struct{}, 1)}
	cfg.Listeners = []ListenerConfig{{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"}}
	s := New(cfg, h, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, h, s.Addrs()["PLAINTEXT"].String()
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// encodeRequest frames a request with a v1/v2 header.
func encodeRequest(req kmsg.Request, correlationID int32, clientID string) []byte {
	b := []byte{0, 0, 0, 0}
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	b = append(b, clientID...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// readResponse reads one response frame and decodes it into resp.
func readResponse(t *testing.T, c net.Conn, resp kmsg.Response) int32 {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	frame := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(c, frame); err != nil {
		t.Fatalf("reading response: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if resp.IsFlexible() && resp.Key() != int16(kmsg.ApiVersions) {
		body = body[1:] // empty tagged fields
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %T: %v", resp, err)
	}
	return corr
}

// expectClosed asserts the server closes the connection.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var b [1]byte
	_, err := c.Read(b[:])
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("connection still open (err=%v)", err)
	}
}

func TestRoundTripAllHeaderVersions(t *testing.T) {
	_, _, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	for v := int16(0); v <= 12; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		c.Write(encodeRequest(req, int32(100+v), "test-client"))
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		if corr := readResponse(t, c, resp); corr != int32(100+v) {
			t.Fatalf("v%d: correlation id %d, want %d", v, corr, 100+v)
		}
		if resp.ControllerID != int32(100+v) && v >= 1 {
			t.Fatalf("v%d: handler saw correlation id %d", v, resp.ControllerID)
		}
	}
}

func TestPipelinedResponsesKeepRequestOrder(t *testing.T) {
	_, _, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	const n = 200
	go func() {
		for i := 0; i < n; i++ {
			req := kmsg.NewPtrMetadataRequest()
			req.SetVersion(int16(i % 13))
			c.Write(encodeRequest(req, int32(i), "pipeline"))
		}
	}()
	for i := 0; i < n; i++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.SetVersion(int16(i % 13))
		if corr := readResponse(t, c, resp); corr != int32(i) {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
}

func TestAcksZeroSendsNoResponse(t *testing.T) {
	_, h, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.SetVersion(7)
	p.Acks = 0
	c.Write(encodeRequest(p, 1, "p"))
	m := kmsg.NewPtrMetadataRequest()
	m.SetVersion(4)
	c.Write(encodeRequest(m, 2, "p"))
	if corr := readResponse(t, c, m.ResponseKind()); corr != 2 {
		t.Fatalf("first response has correlation id %d, want 2 (acks=0 must not answer)", corr)
	}
	if h.handled.Load() != 2 {
		t.Fatalf("handled %d requests, want 2", h.handled.Load())
	}
}

func TestBadInputClosesOnlyThatConnection(t *testing.T) {
	_, _, addr := startTestServer(t, Config{MaxRequestSize: 1 << 10})
	mustStillServe := func(t *testing.T) {
		c := dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.SetVersion(3)
		req.ClientSoftwareName, req.ClientSoftwareVersion = "x", "1"
		c.Write(encodeRequest(req, 7, "ok"))
		if corr := readResponse(t, c, req.ResponseKind()); corr != 7 {
			t.Fatalf("correlation id %d", corr)
		}
	}
	header := func(key, version int16) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(key))
		b = binary.BigEndian.AppendUint16(b, uint16(version))
		b = binary.BigEndian.AppendUint32(b, 1)
		return binary.BigEndian.AppendUint16(b, 0xffff) // null client id
	}
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	cases := []struct {
		name string
		send []byte
	}{
		{"frame over socket.request.max.bytes", binary.BigEndian.AppendUint32(nil, 1<<20)},
		{"negative frame size", []byte{0xff, 0xff, 0xff, 0xf0}},
		{"frame shorter than a header", frame([]byte{0, 3, 0})},
		{"unknown API key", frame(header(9999, 0))},
		{"API not served", frame(header(int16(kmsg.JoinGroup), 0))},
		{"unsupported version", frame(header(int16(kmsg.Metadata), 99))},
		{"truncated body", frame(append(header(int16(kmsg.Metadata), 1), 0, 0, 0, 5))},
		{"garbage body", frame(append(header(int16(kmsg.Produce), 7), 0xde, 0xad, 0xbe, 0xef))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.Write(tc.send)
			expectClosed(t, c)
			mustStillServe(t)
		})
	}
	t.Run("handler panic", func(t *testing.T) {
		c := dial(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(4)
		topic := "panic"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		c.Write(encodeRequest(req, 1, "p"))
		expectClosed(t, c)
		mustStillServe(t)
	})
}

// KIP-511: ApiVersions at a version newer than the server's still gets an
// answer (v0, UNSUPPORTED_VERSION) rather than a closed connection.
func TestApiVersionsFromTheFuture(t *testing.T) {
	_, _, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	b := binary.BigEndian.AppendUint32(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(kmsg.ApiVersions))
	b = binary.BigEndian.AppendUint16(b, 42)
	b = binary.BigEndian.AppendUint32(b, 5)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = append(b, 0xde, 0xad) // a body we cannot know
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.Write(b)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	if corr := readResponse(t, c, resp); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
	if resp.ErrorCode != 35 {
		t.Fatalf("error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
	}
}

func TestIdleConnectionsAreClosed(t *testing.T) {
	_, _, addr := startTestServer(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	expectClosed(t, c)
}

func TestCloseEndsConnections(t *testing.T) {
	s, _, addr := startTestServer(t, Config{})
	c := dial(t, addr)
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	expectClosed(t, c)
}

// A request parked in its handler (a long-poll, a JoinGroup) is released
// as soon as its client disconnects, not when it would have completed.
func TestDisconnectReleasesParkedRequest(t *testing.T) {
	_, h, addr := startTestServer(t, Config{IdleTimeout: 50 * time.Millisecond})
	c := dial(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(4)
	topic := "park"
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
	c.Write(encodeRequest(req, 1, "p"))
	// Parked past the idle timeout: a busy connection is not idle.
	select {
	case <-h.released:
		t.Fatal("parked request released while its client was still connected")
	case <-time.After(300 * time.Millisecond):
	}
	c.Close()
	select {
	case <-h.released:
	case <-time.After(5 * time.Second):
		t.Fatal("parked request not released after the client disconnected")
	}
}
