package httpapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/security"
)

// selfSigned returns a certificate for cn signed by itself.
func selfSigned(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// certAuth is the mTLS authenticator shape: the client certificate's
// subject is the principal, as Kafka's default SSL principal mapping.
type certAuth struct{}

func (certAuth) Authenticate(r *http.Request) (security.Principal, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return security.Principal{}, errors.New("no client certificate")
	}
	return security.User("CN=" + r.TLS.PeerCertificates[0].Subject.CommonName), nil
}

// TestTLSAndClientCertificateHooks serves over TLS from the TLS supplier
// and authenticates by client certificate through the Authenticator hook.
func TestTLSAndClientCertificateHooks(t *testing.T) {
	server, client := selfSigned(t, "broker"), selfSigned(t, "alice")
	ls := listenerAt(t)
	ls[0].Scheme = "https"
	s := New(Options{Service: "test", Listeners: ls, Authenticator: certAuth{},
		TLS: func() (*tls.Config, error) {
			return &tls.Config{Certificates: []tls.Certificate{server}, ClientAuth: tls.RequireAnyClientCert}, nil
		}})
	s.HandleFunc("GET /who", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, PrincipalOf(r).String()) })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, // a self-signed test certificate
		Certificates:       []tls.Certificate{client},
	}}}
	resp, err := cl.Get("https://" + s.Addrs()[0].String() + "/who")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "User:CN=alice" {
		t.Fatalf("GET /who over mTLS = %d %q, want User:CN=alice", resp.StatusCode, body)
	}
}

// TestHTTPSListenerNeedsTLS: an https listener without a TLS supplier is
// refused at Start, never served in plain text.
func TestHTTPSListenerNeedsTLS(t *testing.T) {
	ls := listenerAt(t)
	ls[0].Scheme = "https"
	if err := New(Options{Service: "test", Listeners: ls}).Start(); err == nil {
		t.Fatal("https listener without TLS started")
	}
}
