package server

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTrip sends ApiVersions v0 and reads its answer within timeout.
func roundTrip(t *testing.T, c net.Conn, corr int32, timeout time.Duration) error {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Write(encodeRequest(req, corr, "limits")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	var size [4]byte
	_, err := c.Read(size[:])
	return err
}

// max.connections.per.ip: a connection over the limit is closed at once;
// once one closes, the address may connect again. An override raises the
// limit for its address.
func TestMaxConnectionsPerIP(t *testing.T) {
	_, _, addr := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: 2}})
	a, b := dial(t, addr), dial(t, addr)
	for i, c := range []net.Conn{a, b} {
		if err := roundTrip(t, c, int32(i), 5*time.Second); err != nil {
			t.Fatalf("connection %d within the limit: %v", i, err)
		}
	}
	over := dial(t, addr)
	expectClosed(t, over)

	a.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dial(t, addr)
		if roundTrip(t, c, 9, 5*time.Second) == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new connection admitted after one closed")
		}
	}

	_, _, addr2 := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: 1,
		PerIPOverrides: map[string]int{"127.0.0.1": 3}}})
	for i := range 3 {
		if err := roundTrip(t, dial(t, addr2), int32(i), 5*time.Second); err != nil {
			t.Fatalf("connection %d within the override: %v", i, err)
		}
	}
	expectClosed(t, dial(t, addr2))
}

// max.connections: at the limit the broker stops accepting, as Kafka's
// acceptor does: a new connection waits, unserved, until one closes. The
// inter-broker listener is not held back.
func TestMaxConnectionsWaitsForASlot(t *testing.T) {
	_, _, addr := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: 1, PerIP: math.MaxInt32}})
	first := dial(t, addr)
	if err := roundTrip(t, first, 1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	second := dial(t, addr) // completes in the kernel's backlog
	var ne net.Error
	if err := roundTrip(t, second, 2, 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection served over max.connections=1 (err=%v)", err)
	}
	first.Close()
	// The pending request is answered once the slot frees.
	if err := roundTrip(t, second, 3, 10*time.Second); err != nil {
		t.Fatalf("second connection not served after the first closed: %v", err)
	}

	_, _, ib := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: 1, PerIP: math.MaxInt32, InterBrokerListener: "PLAINTEXT"}})
	for i := range 3 {
		if err := roundTrip(t, dial(t, ib), int32(i), 5*time.Second); err != nil {
			t.Fatalf("inter-broker connection %d held back: %v", i, err)
		}
	}
}

// max.connections counts open connections only: a second, idle listener
// holds no slot.
func TestMaxConnectionsIdleListenerHoldsNoSlot(t *testing.T) {
	cfg := Config{Limits: ConnectionLimits{Enforce: true, Max: 2, PerIP: math.MaxInt32}}
	cfg.Listeners = []ListenerConfig{
		{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"},
		{Name: "OTHER", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"},
	}
	s := New(cfg, &testHandler{released: make(chan struct{}, 1)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	addr := s.Addrs()["PLAINTEXT"].String()
	for i := range 2 {
		if err := roundTrip(t, dial(t, addr), int32(i), 5*time.Second); err != nil {
			t.Fatalf("connection %d of max.connections=2 not served: %v", i, err)
		}
	}
}

// max.connection.creation.rate: beyond the rate (after a burst of one
// second's worth) the accept loop waits, so a new connection is served only
// once the rate allows it (KIP-612).
func TestMaxConnectionCreationRate(t *testing.T) {
	_, _, addr := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: math.MaxInt32, CreationRate: 1}})
	if err := roundTrip(t, dial(t, addr), 1, 5*time.Second); err != nil {
		t.Fatalf("first connection: %v", err)
	}
	second := dial(t, addr)
	var ne net.Error
	if err := roundTrip(t, second, 2, 200*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("second connection served at once over max.connection.creation.rate=1 (err=%v)", err)
	}
	if err := roundTrip(t, second, 3, 5*time.Second); err != nil {
		t.Fatalf("second connection never served: %v", err)
	}
}
