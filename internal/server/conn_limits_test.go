package server

import (
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// roundTrip sends ApiVersions v0 and reads one answer within timeout: the
// next response frame of c, that of an earlier request still unanswered if
// there is one.
func roundTrip(t *testing.T, c net.Conn, corr int32, timeout time.Duration) error {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	if _, err := c.Write(encodeRequest(req, corr, "limits")); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(timeout))
	defer c.SetReadDeadline(time.Time{})
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return err
	}
	_, err := io.ReadFull(c, make([]byte, binary.BigEndian.Uint32(size[:])))
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

// startTwoListeners starts a server with listeners PLAINTEXT and OTHER
// and returns it with their addresses.
func startTwoListeners(t *testing.T, limits ConnectionLimits) (s *Server, plaintext, other string) {
	t.Helper()
	cfg := Config{Limits: limits}
	cfg.Listeners = []ListenerConfig{
		{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"},
		{Name: "OTHER", SecurityProtocol: "PLAINTEXT", Addr: "127.0.0.1:0"},
	}
	s = New(cfg, &testHandler{released: make(chan struct{}, 1)}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, s.Addrs()["PLAINTEXT"].String(), s.Addrs()["OTHER"].String()
}

// expectHeld checks that c, connected, is not served: the broker holds it
// in its accept loop (or the kernel's backlog) at a connection limit.
func expectHeld(t *testing.T, c net.Conn, corr int32, what string) {
	t.Helper()
	var ne net.Error
	if err := roundTrip(t, c, corr, 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("%s served (err=%v)", what, err)
	}
}

// serve checks that c is served (its pending request, if any, answered).
func serve(t *testing.T, c net.Conn, corr int32, what string) {
	t.Helper()
	if err := roundTrip(t, c, corr, 10*time.Second); err != nil {
		t.Fatalf("%s not served: %v", what, err)
	}
}

// max.connections counts open connections only: a second, idle listener
// holds no slot.
func TestMaxConnectionsIdleListenerHoldsNoSlot(t *testing.T) {
	_, addr, _ := startTwoListeners(t, ConnectionLimits{Enforce: true, Max: 2, PerIP: math.MaxInt32})
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

// listener.name.<listener>.max.connections (KIP-402): at its limit a
// listener stops accepting, as it does at max.connections, until one of its
// connections closes; the other listeners go on accepting.
func TestListenerMaxConnections(t *testing.T) {
	_, plaintext, other := startTwoListeners(t, ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: math.MaxInt32,
		PerListener: map[string]int{"PLAINTEXT": 2}})
	first, second := dial(t, plaintext), dial(t, plaintext)
	serve(t, first, 1, "PLAINTEXT connection 1 of 2")
	serve(t, second, 2, "PLAINTEXT connection 2 of 2")
	third := dial(t, plaintext)
	expectHeld(t, third, 3, "third PLAINTEXT connection over its listener's max.connections=2")
	for i := range 3 {
		serve(t, dial(t, other), int32(10+i), "OTHER connection while PLAINTEXT is at its limit")
	}
	first.Close()
	serve(t, third, 4, "third PLAINTEXT connection after the first closed")
	// second and third hold the listener's two slots again.
	expectHeld(t, dial(t, plaintext), 5, "fourth PLAINTEXT connection with two open")
}

// The broker-wide max.connections still applies across the listeners: a
// listener under its own limit waits for a slot of the broker's, which a
// connection of another listener closing frees.
func TestListenerMaxConnectionsWithBrokerLimit(t *testing.T) {
	_, plaintext, other := startTwoListeners(t, ConnectionLimits{Enforce: true, Max: 3, PerIP: math.MaxInt32,
		PerListener: map[string]int{"PLAINTEXT": 2}})
	a1, a2 := dial(t, plaintext), dial(t, plaintext)
	serve(t, a1, 1, "PLAINTEXT connection 1")
	serve(t, a2, 2, "PLAINTEXT connection 2")
	serve(t, dial(t, other), 3, "OTHER connection 1 (third of max.connections=3)")
	b2 := dial(t, other)
	expectHeld(t, b2, 4, "OTHER connection over max.connections=3")
	a1.Close()
	serve(t, b2, 5, "OTHER connection after a PLAINTEXT one closed")
	// PLAINTEXT has one connection open, under its own limit, but the
	// broker is at max.connections again.
	expectHeld(t, dial(t, plaintext), 6, "PLAINTEXT connection under its limit with the broker at max.connections")
}

// The inter-broker listener is spared max.connections but not its own
// listener.name.<listener>.max.connections, as in Kafka's
// ConnectionQuotas.connectionSlotAvailable.
func TestListenerMaxConnectionsInterBroker(t *testing.T) {
	_, _, addr := startTestServer(t, Config{Limits: ConnectionLimits{Enforce: true, Max: 1, PerIP: math.MaxInt32,
		PerListener: map[string]int{"PLAINTEXT": 2}, InterBrokerListener: "PLAINTEXT"}})
	serve(t, dial(t, addr), 1, "inter-broker connection 1 (over max.connections=1)")
	serve(t, dial(t, addr), 2, "inter-broker connection 2")
	expectHeld(t, dial(t, addr), 3, "inter-broker connection over its listener's max.connections=2")
}

// listener.name.<listener>.max.connections is dynamic: new limits given to
// SetConnectionLimits wake a listener waiting at the old one, and a lower
// limit holds back new connections while those open stay.
func TestListenerMaxConnectionsSetAtRunTime(t *testing.T) {
	limits := ConnectionLimits{Enforce: true, Max: math.MaxInt32, PerIP: math.MaxInt32, PerListener: map[string]int{"PLAINTEXT": 1}}
	s, _, addr := startTestServer(t, Config{Limits: limits})
	first := dial(t, addr)
	serve(t, first, 1, "connection 1 of 1")
	second := dial(t, addr)
	expectHeld(t, second, 2, "second connection over max.connections=1 of the listener")
	limits.PerListener = map[string]int{"PLAINTEXT": 2}
	s.SetConnectionLimits(limits)
	serve(t, second, 3, "second connection after the listener's limit was raised to 2")

	limits.PerListener = map[string]int{"PLAINTEXT": 1}
	s.SetConnectionLimits(limits)
	serve(t, first, 4, "open connection after the limit was lowered")
	third := dial(t, addr)
	expectHeld(t, third, 5, "new connection with two open and the listener's limit lowered to 1")
	limits.PerListener = nil // the key deleted: no limit of the listener's own
	s.SetConnectionLimits(limits)
	serve(t, third, 6, "new connection after the listener's limit was removed")
}
