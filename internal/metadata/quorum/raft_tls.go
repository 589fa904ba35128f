package quorum

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// QuorumTLS secures the quorum port when the controller listener's
// protocol is SSL or SASL_SSL: every connection (raft's RPCs, the join RPC
// and Kafka-protocol connections to the controller) starts with a TLS
// handshake, and the byte that routes it (raftStreamLayer) is the first
// byte inside TLS. SASL, on SASL_SSL, then authenticates the Kafka-protocol
// connections (the controller's server.Server); raft and join connections
// are authenticated by the TLS client certificate when the controller
// listener sets ssl.client.auth=required.
type QuorumTLS struct {
	// Server is the TLS configuration of accepted connections.
	Server *tls.Config
	// Client returns the TLS configuration to dial addr with.
	Client func(addr string) *tls.Config
}

// accept runs the server side of the handshake on an accepted connection;
// without TLS it returns conn as is.
func (q *QuorumTLS) accept(conn net.Conn, timeout time.Duration) (net.Conn, error) {
	if q == nil || q.Server == nil {
		return conn, nil
	}
	tc := tls.Server(conn, q.Server)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, err
	}
	return tc, nil
}

// dial connects to addr, with TLS when configured.
func (q *QuorumTLS) dial(ctx context.Context, addr string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil || q == nil || q.Client == nil {
		return conn, err
	}
	tc := tls.Client(conn, q.Client(addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}
