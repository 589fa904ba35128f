package tlsconf

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/certs"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// tlsPair is a loopback TLS connection: the server side coalesced, over a
// socket that counts its writes, and a plain crypto/tls client.
func tlsPair(t testing.TB, coalesce bool) (srv net.Conn, counted *countingConn, cl *tls.Conn) {
	t.Helper()
	ca := certs.NewCA(t, "coalesce-ca")
	leaf := ca.Server(t)
	cert, err := tls.X509KeyPair(append(leaf.CertPEM, ca.PEM...), leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		accepted <- nc
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	nc := <-accepted
	if nc == nil {
		t.Fatal("accept failed")
	}
	counted = &countingConn{Conn: nc}
	scfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	if coalesce {
		srv = Server(counted, scfg)
	} else {
		srv = tls.Server(counted, scfg)
	}
	cl = tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "localhost"})
	t.Cleanup(func() { srv.Close(); cl.Close() })
	hs := make(chan error, 1)
	go func() { hs <- cl.Handshake() }()
	if err := srv.(interface{ Handshake() error }).Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-hs; err != nil {
		t.Fatal(err)
	}
	return srv, counted, cl
}

// TestCoalescedWrites: a 1 MiB Write reaches the socket in a syscall per
// coalesceMax bytes, not one per 16 KiB record, and the peer reads every
// byte in order; so do Writes after it.
func TestCoalescedWrites(t *testing.T) {
	srv, counted, cl := tlsPair(t, true)
	msg := make([]byte, 1<<20)
	rand.Read(msg)
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(msg)+3)
		_, err := io.ReadFull(cl, b)
		if err != nil {
			b = nil
		}
		got <- b
	}()
	before := counted.writes.Load()
	if n, err := srv.Write(msg); err != nil || n != len(msg) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	writes := counted.writes.Load() - before
	if max := int64(len(msg)/coalesceMax + 1); writes > max {
		t.Errorf("1 MiB took %d socket writes, want at most %d", writes, max)
	}
	if _, err := srv.Write([]byte("end")); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if !bytes.Equal(b[:len(msg)], msg) || string(b[len(msg):]) != "end" {
		t.Fatal("the peer read other bytes than were written")
	}
}

// TestCoalescedWriteFailureIsSticky: once the socket refuses a write, the
// connection refuses every later one (the tls.Conn counted the lost
// records as sent, so nothing after them could be decrypted).
func TestCoalescedWriteFailureIsSticky(t *testing.T) {
	srv, _, _ := tlsPair(t, true)
	srv.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := srv.Write([]byte("lost")); err == nil {
		t.Fatal("Write past its deadline succeeded")
	}
	srv.SetWriteDeadline(time.Time{})
	if _, err := srv.Write([]byte("after")); !errors.Is(err, errBroken) {
		t.Fatalf("Write after a failed one: %v, want %v", err, errBroken)
	}
}

// BenchmarkTLSWrite64K is the fetch path's write under TLS: 64 KiB chunks
// (copyFileRegion's reads) through crypto/tls as is and coalesced, read
// by a crypto/tls peer. cpu-ms/MB is the process's CPU (both ends) per MB:
//
//	go test -bench TLSWrite64K -cpu 2 ./internal/security/tlsconf
func BenchmarkTLSWrite64K(b *testing.B) {
	for _, tc := range []struct {
		name     string
		coalesce bool
	}{{"crypto-tls", false}, {"coalesced", true}} {
		b.Run(tc.name, func(b *testing.B) {
			srv, _, cl := tlsPair(b, tc.coalesce)
			chunk := make([]byte, 64<<10)
			const perOp = 16 // 1 MiB per op
			done := make(chan struct{})
			go func() {
				defer close(done)
				buf := make([]byte, 64<<10)
				for want := int64(b.N) * perOp * int64(len(chunk)); want > 0; {
					n, err := cl.Read(buf)
					if err != nil {
						return
					}
					want -= int64(n)
				}
			}()
			c0 := cpuTime()
			b.SetBytes(perOp * int64(len(chunk)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := 0; j < perOp; j++ {
					if _, err := srv.Write(chunk); err != nil {
						b.Fatal(err)
					}
				}
			}
			<-done
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-c0)/float64(time.Millisecond)/(float64(b.N)*perOp*float64(len(chunk))/1e6), "cpu-ms/MB")
		})
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
