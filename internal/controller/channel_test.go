package controller

import (
	"context"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/server"
)

// parkingController holds forwarded CreateTopics requests until release is
// closed, as the active controller holds one until every broker has
// applied it, and answers heartbeats at once.
type parkingController struct {
	parked  atomic.Int64
	release chan struct{}
}

func (p *parkingController) VersionRange(key int16) (int16, int16, bool) {
	switch kmsg.Key(key) {
	case kmsg.BrokerHeartbeat:
		return 0, 1, true
	case kmsg.CreateTopics:
		return 0, 7, true
	}
	return 0, 0, false
}

func (p *parkingController) Handle(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if req, ok := r.Body.(*kmsg.CreateTopicsRequest); ok {
		p.parked.Add(1)
		select {
		case <-p.release:
		case <-ctx.Done():
		}
		return req.ResponseKind(), nil
	}
	return r.Body.(*kmsg.BrokerHeartbeatRequest).ResponseKind(), nil
}

// TestHeartbeatsDoNotQueueBehindForwardedRequests: while a forwarded admin
// request waits at the controller (for this very broker's heartbeat, in
// the real one), this broker's heartbeats still get through.
func TestHeartbeatsDoNotQueueBehindForwardedRequests(t *testing.T) {
	ctrl := &parkingController{release: make(chan struct{})}
	addr := serveBehindMarker(t, ctrl)
	c := NewClient(ClientOptions{NodeID: 7, Quorum: staleQuorum{leader: 1, known: true}, Voters: map[int32]string{1: addr}})
	defer c.Close()

	forwarded := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(7)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := c.Forward(ctx, req)
		forwarded <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for ctrl.parked.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the forwarded request never reached the controller")
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Heartbeat(ctx, Heartbeat{BrokerID: 7, BrokerEpoch: 1}); err != nil {
		t.Fatalf("heartbeat while a forwarded request is parked at the controller: %v", err)
	}
	close(ctrl.release)
	if err := <-forwarded; err != nil {
		t.Fatalf("forwarded request: %v", err)
	}
}

// serveBehindMarker serves h as a controller's quorum port does, behind
// metadata.ControllerRPCByte, and returns its address.
func serveBehindMarker(t *testing.T, h server.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(server.Config{}, h, slog.New(slog.DiscardHandler))
	if err := s.Serve(&markerListener{Listener: ln}, server.ListenerConfig{Name: "CONTROLLER", SecurityProtocol: "PLAINTEXT"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}
