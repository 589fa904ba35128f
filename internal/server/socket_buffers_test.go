package server

import (
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// socket.send.buffer.bytes / socket.receive.buffer.bytes set SO_SNDBUF and
// SO_RCVBUF on accepted connections (Linux reports twice the value set).
func TestSocketBuffers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the buffer sizes back with Linux semantics")
	}
	s, _, addr := startTestServer(t, Config{SendBuffer: 24 << 10, ReceiveBuffer: 20 << 10})
	c := dial(t, addr)
	if err := roundTrip(t, c, 1, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	var nc net.Conn
	for conn := range s.mu.conns {
		nc = conn.nc
	}
	s.mu.Unlock()
	raw, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var snd, rcv int
	raw.Control(func(fd uintptr) {
		snd, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF)
		rcv, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	})
	if snd != 2*(24<<10) || rcv != 2*(20<<10) {
		t.Fatalf("SO_SNDBUF=%d SO_RCVBUF=%d, want %d and %d", snd, rcv, 2*(24<<10), 2*(20<<10))
	}
}
