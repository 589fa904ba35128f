package controller

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metadata/quorum"
	"github.com/vltava/vltava/internal/server"
)

// staleQuorum is a broker's view of the quorum that names a leader
// (possibly gone) and has an empty image: the client must not need it.
type staleQuorum struct {
	leader int32
	known  bool
}

func (q staleQuorum) Image() *metadata.Image                 { return metadata.EmptyImage() }
func (staleQuorum) Subscribe(func(old, new *metadata.Image)) {}
func (staleQuorum) IsLeader() bool                           { return false }
func (q staleQuorum) LeaderID() (int32, bool)                { return q.leader, q.known }
func (staleQuorum) LeaderCh() <-chan bool                    { return nil }

// markerListener accepts only connections that start with
// quorum.ControllerRPCByte, as a controller's quorum port routes them,
// and strips it.
type markerListener struct {
	net.Listener
	bad atomic.Int64
}

func (l *markerListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := io.ReadFull(conn, b[:]); err != nil || b[0] != quorum.ControllerRPCByte {
			l.bad.Add(1)
			conn.Close()
			continue
		}
		conn.SetReadDeadline(time.Time{})
		return conn, nil
	}
}

// fakeController answers BrokerHeartbeat: as the active controller, or
// with NOT_CONTROLLER.
type fakeController struct {
	active bool
	calls  atomic.Int64
}

func (f *fakeController) VersionRange(key int16) (int16, int16, bool) {
	if key == int16(kmsg.BrokerHeartbeat) {
		return 0, 1, true
	}
	return 0, 0, false
}

func (f *fakeController) Handle(_ context.Context, r *server.Request) (kmsg.Response, error) {
	f.calls.Add(1)
	resp := r.Body.(*kmsg.BrokerHeartbeatRequest).ResponseKind().(*kmsg.BrokerHeartbeatResponse)
	if !f.active {
		resp.ErrorCode = kerr.NotController.Code
	}
	return resp, nil
}

// startFakeController serves f behind the marker byte and returns its
// address.
func startFakeController(t *testing.T, f *fakeController) (string, *markerListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ml := &markerListener{Listener: ln}
	s := server.New(server.Config{}, f, slog.New(slog.DiscardHandler))
	if err := s.Serve(ml, server.ListenerConfig{Name: "CONTROLLER", SecurityProtocol: "PLAINTEXT"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String(), ml
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestClientFindsControllerFromVoters: the client reaches the active
// controller at its controller.quorum.voters address, behind the marker
// byte, without any broker registration in the image, whether the leader
// it believes in is the right one, unknown, gone, or not the controller.
func TestClientFindsControllerFromVoters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quorum staleQuorum
	}{
		{"leader known", staleQuorum{leader: 3, known: true}},
		{"leader unknown (a restarted broker)", staleQuorum{}},
		{"leader gone (stale view)", staleQuorum{leader: 1, known: true}},
		{"leader is a follower now", staleQuorum{leader: 2, known: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			follower, active := &fakeController{}, &fakeController{active: true}
			followerAddr, fl := startFakeController(t, follower)
			activeAddr, al := startFakeController(t, active)
			c := NewClient(ClientOptions{NodeID: 7, Quorum: tc.quorum,
				Voters: map[int32]string{1: deadAddr(t), 2: followerAddr, 3: activeAddr}})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			for i := range 3 {
				if _, err := c.Heartbeat(ctx, Heartbeat{BrokerID: 7, BrokerEpoch: 1}); err != nil {
					t.Fatalf("heartbeat %d: %v", i, err)
				}
			}
			if got := active.calls.Load(); got != 3 {
				t.Errorf("active controller answered %d heartbeats, want 3", got)
			}
			if fl.bad.Load()+al.bad.Load() != 0 {
				t.Error("a connection did not start with the controller marker byte")
			}
		})
	}
}

// TestClientWithoutVotersTimesOut: with no voters there is
// nobody to ask; the call ends with the context, as REQUEST_TIMED_OUT.
func TestClientWithoutVotersTimesOut(t *testing.T) {
	c := NewClient(ClientOptions{NodeID: 7, Quorum: staleQuorum{}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Heartbeat(ctx, Heartbeat{BrokerID: 7})
	if !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("heartbeat without voters: %v, want REQUEST_TIMED_OUT", err)
	}
}

// The lifecycle loop's RPCs (heartbeats and the replicas of offline dirs it
// reports between them) never share a connection with forwarded admin
// requests, which wait for this broker's next heartbeat.
func TestLifecycleRPCsAvoidForwardingChannel(t *testing.T) {
	forwarding := channelOf(int16(kmsg.CreateTopics))
	for _, k := range []kmsg.Key{kmsg.BrokerRegistration, kmsg.BrokerHeartbeat, kmsg.AssignReplicasToDirs} {
		if channelOf(int16(k)) == forwarding {
			t.Errorf("%s travels with forwarded requests", kmsg.NameForKey(int16(k)))
		}
	}
}
