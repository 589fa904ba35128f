package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/security/sasl/plain"
	"github.com/vltava/vltava/internal/security/tlsconf"
	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// saslHandler answers ApiVersions, Metadata (recording the principal) and
// the SASL APIs the way the broker's handlers do.
type saslHandler struct {
	testHandler
	mu         sync.Mutex
	principals []security.Principal
}

func (h *saslHandler) VersionRange(key int16) (int16, int16, bool) {
	switch kmsg.Key(key) {
	case kmsg.SASLHandshake:
		return 0, 1, true
	case kmsg.SASLAuthenticate:
		return 0, 2, true
	}
	return h.testHandler.VersionRange(key)
}

func (h *saslHandler) Handle(ctx context.Context, r *Request) (kmsg.Response, error) {
	switch req := r.Body.(type) {
	case *kmsg.SASLHandshakeRequest:
		resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.SupportedMechanisms = r.Conn.SASL.EnabledMechanisms()
		if err := r.Conn.SASL.Handshake(req.Mechanism, r.Version); err != nil {
			resp.ErrorCode = codeOf(err)
		}
		return resp, nil
	case *kmsg.SASLAuthenticateRequest:
		resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		reply, _, life, err := r.Conn.SASL.Authenticate(ctx, req.SASLAuthBytes)
		if err != nil {
			resp.ErrorCode = codeOf(err)
			msg := err.Error()
			resp.ErrorMessage = &msg
			return resp, nil
		}
		resp.SASLAuthBytes, resp.SessionLifetimeMillis = reply, life.Milliseconds()
		return resp, nil
	case *kmsg.MetadataRequest:
		h.mu.Lock()
		h.principals = append(h.principals, r.Conn.Principal)
		h.mu.Unlock()
	}
	return h.testHandler.Handle(ctx, r)
}

func (h *saslHandler) lastPrincipal() security.Principal {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.principals[len(h.principals)-1]
}

func codeOf(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startServer(t *testing.T, h Handler, cfg Config) *Server {
	t.Helper()
	s := New(cfg, h, quietLog())
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func saslListener(name string) ListenerConfig {
	return ListenerConfig{Name: name, SecurityProtocol: "SASL_PLAINTEXT", SASL: &SASLConfig{
		Mechanisms:                []sasl.Mechanism{plain.NewWithUsers(map[string]string{"alice": "alice-secret"})},
		FailedAuthenticationDelay: 150 * time.Millisecond,
	}}
}

func exchange(t *testing.T, c net.Conn, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	if _, err := c.Write(encodeRequest(req, 1, "test")); err != nil {
		t.Fatal(err)
	}
	readResponse(t, c, resp)
}

func metadataReq() *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	return req
}

// expectClosed reads until the server closes c.
func expectServerClose(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("connection still open")
			}
			return
		}
	}
}

func authenticatePlain(t *testing.T, c net.Conn, user, pass string) *kmsg.SASLAuthenticateResponse {
	t.Helper()
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	exchange(t, c, hs, hsResp)
	if hsResp.ErrorCode != 0 {
		t.Fatalf("SaslHandshake PLAIN: %v", kerr.ErrorForCode(hsResp.ErrorCode))
	}
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(2)
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + pass)
	auResp := au.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	exchange(t, c, au, auResp)
	return auResp
}

// TestSASLGate: before authenticating only ApiVersions and the SASL APIs
// are served; any other request closes the connection. An unknown
// mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled list; PLAIN
// authenticates and the principal is the user.
func TestSASLGate(t *testing.T) {
	h := &saslHandler{}
	addr := freeport.Addr(t)
	lc := saslListener("SASL")
	lc.Addr = addr
	startServer(t, h, Config{Listeners: []ListenerConfig{lc}})

	c := dial(t, addr)
	exchange(t, c, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse())
	c.Write(encodeRequest(metadataReq(), 2, "test"))
	expectServerClose(t, c)

	c = dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "GSSAPI"
	resp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	exchange(t, c, hs, resp)
	if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(resp.SupportedMechanisms) != 1 || resp.SupportedMechanisms[0] != "PLAIN" {
		t.Fatalf("unknown mechanism: code %d, mechanisms %v", resp.ErrorCode, resp.SupportedMechanisms)
	}
	if au := authenticatePlain(t, c, "alice", "alice-secret"); au.ErrorCode != 0 {
		t.Fatalf("PLAIN: %v", kerr.ErrorForCode(au.ErrorCode))
	}
	exchange(t, c, metadataReq(), metadataReq().ResponseKind())
	if p := h.lastPrincipal(); p != security.User("alice") {
		t.Errorf("principal %v, want User:alice", p)
	}
}

// TestSASLFailure: a wrong password and an unknown user get the same
// SASL_AUTHENTICATION_FAILED answer, no sooner than
// connection.failed.authentication.delay.ms, and the connection closes;
// another connection, authenticated meanwhile, keeps working.
func TestSASLFailure(t *testing.T) {
	h := &saslHandler{}
	addr := freeport.Addr(t)
	lc := saslListener("SASL")
	lc.Addr = addr
	startServer(t, h, Config{Listeners: []ListenerConfig{lc}})
	good := dial(t, addr)
	if au := authenticatePlain(t, good, "alice", "alice-secret"); au.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(au.ErrorCode))
	}
	var msgs []string
	for _, cred := range [][2]string{{"alice", "wrong"}, {"mallory", "wrong"}} {
		c := dial(t, addr)
		start := time.Now()
		au := authenticatePlain(t, c, cred[0], cred[1])
		if au.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("%s: code %d", cred[0], au.ErrorCode)
		}
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Errorf("%s: failure answered after %v, before the delay", cred[0], d)
		}
		msgs = append(msgs, *au.ErrorMessage)
		expectServerClose(t, c)
	}
	if msgs[0] != msgs[1] {
		t.Errorf("messages differ: %q vs %q", msgs[0], msgs[1])
	}
	exchange(t, good, metadataReq(), metadataReq().ResponseKind())
}

// TestSASLRawTokens: SaslHandshake v0 (kafka-python 2.0) is followed by a
// raw, size-prefixed token without a Kafka header; the answer is a raw
// token too, and Kafka requests follow.
func TestSASLRawTokens(t *testing.T) {
	h := &saslHandler{}
	addr := freeport.Addr(t)
	lc := saslListener("SASL")
	lc.Addr = addr
	startServer(t, h, Config{Listeners: []ListenerConfig{lc}})
	c := dial(t, addr)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(0)
	hs.Mechanism = "PLAIN"
	hsResp := hs.ResponseKind().(*kmsg.SASLHandshakeResponse)
	exchange(t, c, hs, hsResp)
	if hsResp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(hsResp.ErrorCode))
	}
	token := []byte("\x00alice\x00alice-secret")
	c.Write(binary.BigEndian.AppendUint32(nil, uint32(len(token))))
	c.Write(token)
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatal(err)
	}
	if n := binary.BigEndian.Uint32(size[:]); n != 0 {
		t.Fatalf("PLAIN's raw answer has %d bytes, want 0", n)
	}
	exchange(t, c, metadataReq(), metadataReq().ResponseKind())

	// A bad raw token closes the connection.
	c = dial(t, addr)
	exchange(t, c, hs, hs.ResponseKind())
	c.Write([]byte{0, 0, 0, 3, 'b', 'a', 'd'})
	expectServerClose(t, c)
}

// TestSASLAuthenticationTimeout: a client that never finishes
// authenticating is closed after the timeout.
func TestSASLAuthenticationTimeout(t *testing.T) {
	addr := freeport.Addr(t)
	lc := saslListener("SASL")
	lc.Addr = addr
	startServer(t, &saslHandler{}, Config{Listeners: []ListenerConfig{lc}, AuthenticationTimeout: 200 * time.Millisecond})
	c := dial(t, addr)
	exchange(t, c, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse())
	expectServerClose(t, c)
	// One that does authenticate stays open past the timeout.
	c = dial(t, addr)
	authenticatePlain(t, c, "alice", "alice-secret")
	deadline := time.Now().Add(400 * time.Millisecond)
	poll.True(t, time.Second, "the authentication timeout to pass", func() bool { return time.Now().After(deadline) })
	exchange(t, c, metadataReq(), metadataReq().ResponseKind())
}

// TestSASLReauthentication (KIP-368): the session lifetime is
// connections.max.reauth.ms; re-authenticating within it keeps the
// connection, a request after it expired closes the connection.
func TestSASLReauthentication(t *testing.T) {
	addr := freeport.Addr(t)
	lc := saslListener("SASL")
	lc.Addr = addr
	lc.SASL.MaxReauth = 300 * time.Millisecond
	startServer(t, &saslHandler{}, Config{Listeners: []ListenerConfig{lc}})
	c := dial(t, addr)
	au := authenticatePlain(t, c, "alice", "alice-secret")
	if au.SessionLifetimeMillis <= 0 || au.SessionLifetimeMillis > 300 {
		t.Fatalf("session lifetime %d ms", au.SessionLifetimeMillis)
	}
	if au := authenticatePlain(t, c, "alice", "alice-secret"); au.ErrorCode != 0 {
		t.Fatalf("re-authentication: %v", kerr.ErrorForCode(au.ErrorCode))
	}
	exchange(t, c, metadataReq(), metadataReq().ResponseKind())
	expired := time.Now().Add(350 * time.Millisecond)
	poll.True(t, 2*time.Second, "the session to expire", func() bool { return time.Now().After(expired) })
	c.Write(encodeRequest(metadataReq(), 9, "test"))
	expectServerClose(t, c)
}

func tlsProvider(t *testing.T, ca *certs.CA, clientAuth string) *tlsconf.Provider {
	t.Helper()
	srv := ca.Server(t)
	p, err := tlsconf.NewServer(func(k string) (string, bool) {
		switch k {
		case "ssl.keystore.type", "ssl.truststore.type":
			return "PEM", true
		case "ssl.keystore.certificate.chain":
			return string(srv.CertPEM), true
		case "ssl.keystore.key":
			return string(srv.KeyPEM), true
		case "ssl.truststore.certificates":
			return string(ca.PEM), true
		case "ssl.client.auth":
			return clientAuth, true
		case "ssl.principal.mapping.rules":
			return "RULE:^CN=([a-z]+),.*$/$1/,DEFAULT", true
		}
		return "", false
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTLSListeners: an SSL listener serves TLS clients, takes the principal
// from the client certificate (mapped), and closes a plaintext client's
// connection; a TLS client on the plaintext listener is closed too; and
// neither harms the other connections.
func TestTLSListeners(t *testing.T) {
	ca := certs.NewCA(t, "ca")
	h := &saslHandler{}
	sslAddr, plainAddr := freeport.Addr(t), freeport.Addr(t)
	startServer(t, h, Config{Listeners: []ListenerConfig{
		{Name: "SSL", SecurityProtocol: "SSL", Addr: sslAddr, TLS: tlsProvider(t, ca, "requested")},
		{Name: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Addr: plainAddr},
	}, AuthenticationTimeout: 2 * time.Second})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	alice := ca.Client(t, pkix.Name{CommonName: "alice", Organization: []string{"Acme"}})
	cert, err := tls.X509KeyPair(alice.CertPEM, alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	dialTLS := func(addr string, certs ...tls.Certificate) (net.Conn, error) {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
			&tls.Config{RootCAs: pool, ServerName: "localhost", Certificates: certs})
		if err == nil {
			t.Cleanup(func() { c.Close() })
			c.SetDeadline(time.Now().Add(10 * time.Second))
		}
		return c, err
	}
	good, err := dialTLS(sslAddr, cert)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, good, metadataReq(), metadataReq().ResponseKind())
	if p := h.lastPrincipal(); p != security.User("alice") {
		t.Errorf("principal %v, want User:alice", p)
	}
	anon, err := dialTLS(sslAddr)
	if err != nil {
		t.Fatal(err)
	}
	exchange(t, anon, metadataReq(), metadataReq().ResponseKind())
	if p := h.lastPrincipal(); p != security.Anonymous {
		t.Errorf("principal without a certificate %v, want ANONYMOUS", p)
	}

	// A plaintext Kafka client on the SSL port.
	plain := dial(t, sslAddr)
	plain.Write(encodeRequest(kmsg.NewPtrApiVersionsRequest(), 1, "plain"))
	expectServerClose(t, plain)
	// A TLS client on the plaintext port: its ClientHello reads as a
	// frame far over socket.request.max.bytes.
	if c, err := dialTLS(plainAddr); err == nil {
		c.Close()
		t.Error("TLS handshake succeeded on the plaintext listener")
	}
	exchange(t, good, metadataReq(), metadataReq().ResponseKind())
	exchange(t, dial(t, plainAddr), metadataReq(), metadataReq().ResponseKind())

	// A client that opens the SSL port and never handshakes is closed at
	// the timeout.
	idle := dial(t, sslAddr)
	expectServerClose(t, idle)
}
