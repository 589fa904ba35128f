package quorum

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// TestQuorumPortCarriesControllerConnections: a connection to the quorum
// port that starts with ControllerRPCByte reaches ControllerListener with
// the marker consumed and the rest of the stream intact, in both
// directions, while raft keeps working on the same port; closing the
// controller listener leaves raft's side alone.
func TestQuorumPortCarriesControllerConnections(t *testing.T) {
	c := newRaftTestCluster(t, 3, testRaftConfig())
	id, l := c.leader()
	cl := l.ControllerListener()
	if got, want := cl.Addr().String(), c.addrs[id]; got != want {
		t.Errorf("controller listener addr %s, want the quorum address %s", got, want)
	}

	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := cl.Accept()
		if err != nil {
			t.Errorf("accept: %v", err)
			close(accepted)
			return
		}
		accepted <- conn
	}()
	conn, err := net.DialTimeout("tcp", c.addrs[id], 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	payload := []byte("\x00\x00\x00\x04kafk")
	if _, err := conn.Write(append([]byte{ControllerRPCByte}, payload...)); err != nil {
		t.Fatal(err)
	}
	var server net.Conn
	select {
	case server = <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("controller connection not accepted")
	}
	if server == nil {
		t.FailNow()
	}
	defer server.Close()
	server.SetDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(server, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(payload) {
		t.Errorf("controller listener read %q, want %q (marker consumed, rest intact)", got, payload)
	}
	if _, err := server.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 2)
	if _, err := io.ReadFull(conn, reply); err != nil || string(reply) != "ok" {
		t.Errorf("reply %q, %v; want \"ok\"", reply, err)
	}

	// Raft still replicates over the same port.
	c.waitConverged(c.commit(topicRecords("after-controller-conn", metadata.NewUuid(), 1, 1, 2, 3)...))

	cl.Close()
	if _, err := cl.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	c.waitConverged(c.commit(topicRecords("after-close", metadata.NewUuid(), 1, 1, 2, 3)...))
}
