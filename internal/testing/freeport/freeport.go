// Package freeport hands tests loopback ports for servers they start.
//
// A port found by listening on 127.0.0.1:0 comes from the kernel's
// ephemeral range, the same range every bind to port 0 and every outgoing
// connection draws from. Between the moment a test closes that listener
// and the moment its server binds the port, another server's ephemeral
// listener (a broker-only node's raft transport, say) or a client socket
// can take it, and the server fails to start. Ports handed out here lie
// below the ephemeral range, so nothing takes them by accident; each is
// handed out once per process and checked free when it is chosen.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lowest is the first port considered: below it lie well-known services.
const lowest = 10000

var (
	mu   sync.Mutex
	next int // the next port to try; 0 until first use
	top  int // one past the last usable port: the ephemeral range's start
)

// ephemeralStart reads the start of the kernel's ephemeral port range,
// defaulting to Linux's usual 32768.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n <= lowest+1000 {
		return 32768
	}
	return n
}

// Port returns a loopback port that is free now, outside the ephemeral
// range, and not returned before by this process.
func Port(t testing.TB) int {
	t.Helper()
	p, err := Next()
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	return p
}

// Addr returns "127.0.0.1:<port>" for a Port.
func Addr(t testing.TB) string {
	t.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(Port(t)))
}

// Next is Port for programs without a testing.TB (benchmark drivers).
func Next() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if next == 0 {
		top = ephemeralStart()
		// A random start keeps test processes running side by side
		// (go test runs packages in parallel) out of each other's way.
		next = lowest + rand.IntN(top-lowest)
	}
	for range top - lowest {
		p := next
		next++
		if next >= top {
			next = lowest
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port in [%d, %d)", lowest, top)
}
