package httpapi

import (
	"crypto/md5"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// pki is a test CA with a server key store (PEM) and a client certificate.
type pki struct {
	ca       *certs.CA
	keystore string // server key store, PEM
	trust    string // the CA, PEM
	client   tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	ca := certs.NewCA(t, "http test CA")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "server", ca)
	cl := ca.Client(t, pkix.Name{CommonName: "alice", Organization: []string{"Acme"}})
	pair, err := tls.X509KeyPair(cl.CertPEM, cl.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{ca: ca, keystore: ks, trust: ca.WritePEM(t, dir, "ca"), client: pair}
}

// httpsClient trusts the test CA and presents cert, if any.
func (p *pki) httpsClient(cert *tls.Certificate) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Cert)
	tc := &tls.Config{RootCAs: roots}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
}

// serve starts a Server from the prefix-"svc." props, with /who answering
// the request's principal.
func serve(t *testing.T, props map[string]string) *Server {
	t.Helper()
	o, err := ConfigFor(props, "svc.")
	if err != nil {
		t.Fatal(err)
	}
	s := New(o)
	s.HandleFunc("GET /who", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, PrincipalOf(r).String()) })
	s.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, PrincipalOf(r).String()) })
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func do(t *testing.T, cl *http.Client, url, user, pass string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func writeUsers(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "password.properties")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigHTTPSWithTestCA serves an https listener from the ssl.* keys:
// a client trusting the CA is served, a plain-text request is not.
func TestConfigHTTPSWithTestCA(t *testing.T) {
	p := newPKI(t)
	addr := freeport.Addr(t)
	s := serve(t, map[string]string{
		"svc.listeners":             "https://" + addr,
		"svc.ssl.keystore.type":     "PEM",
		"svc.ssl.keystore.location": p.keystore,
	})
	url := "https://" + s.Addrs()[0].String() + "/who"
	if code, body, _ := do(t, p.httpsClient(nil), url, "", ""); code != 200 || body != "User:ANONYMOUS" {
		t.Fatalf("https GET = %d %q, want 200 User:ANONYMOUS", code, body)
	}
	resp, err := http.Get("http://" + addr + "/who")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain-text request served on the https listener")
		}
	}
}

// TestConfigBasicAuth: BASIC with a Jetty password file answers 401 with
// the realm's challenge for missing or wrong credentials, 403 for a user
// without an allowed role, 200 with the user as principal, and serves the
// skip paths without credentials.
func TestConfigBasicAuth(t *testing.T) {
	sum := md5.Sum([]byte("bob-secret"))
	users := writeUsers(t, "# users\nalice: alice-secret,admin\nbob=MD5:"+hex.EncodeToString(sum[:])+",developer\ncarol: carol-secret\n")
	s := serve(t, map[string]string{
		"svc.listeners":                 "http://" + freeport.Addr(t),
		"svc.authentication.method":     "basic",
		"svc.authentication.realm":      "KafkaRest",
		"svc.authentication.roles":      "admin,developer",
		"svc.authentication.users.file": users,
		"svc.authentication.skip.paths": "/health",
	})
	base := "http://" + s.Addrs()[0].String()
	cl := http.DefaultClient
	code, _, h := do(t, cl, base+"/who", "", "")
	if code != http.StatusUnauthorized || h.Get("WWW-Authenticate") != `Basic realm="KafkaRest"` {
		t.Fatalf("no credentials: %d %q, want 401 with the KafkaRest realm", code, h.Get("WWW-Authenticate"))
	}
	if code, _, _ := do(t, cl, base+"/who", "alice", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	if code, _, _ := do(t, cl, base+"/who", "mallory", "alice-secret"); code != http.StatusUnauthorized {
		t.Fatalf("unknown user: %d, want 401", code)
	}
	if code, body, _ := do(t, cl, base+"/who", "alice", "alice-secret"); code != 200 || body != "User:alice" {
		t.Fatalf("alice: %d %q, want 200 User:alice", code, body)
	}
	if code, body, _ := do(t, cl, base+"/who", "bob", "bob-secret"); code != 200 || body != "User:bob" {
		t.Fatalf("bob (MD5 password): %d %q, want 200 User:bob", code, body)
	}
	if code, _, _ := do(t, cl, base+"/who", "carol", "carol-secret"); code != http.StatusForbidden {
		t.Fatalf("carol (no role): %d, want 403", code)
	}
	if code, body, _ := do(t, cl, base+"/health", "", ""); code != 200 || body != "User:ANONYMOUS" {
		t.Fatalf("skip path: %d %q, want 200 anonymous", code, body)
	}
}

// TestUsersFileReloads: a changed users file takes effect without a
// restart; one that does not parse keeps the previous users.
func TestUsersFileReloads(t *testing.T) {
	path := writeUsers(t, "alice: one\n")
	f, err := OpenUsersFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Check("alice", "one"); !ok {
		t.Fatal("alice: one refused")
	}
	if err := os.WriteFile(path, []byte("alice: two,admin\nnew: three\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 5*time.Second, "the new password to take effect", func() bool { _, ok := f.Check("alice", "two"); return ok })
	if _, ok := f.Check("alice", "one"); ok {
		t.Fatal("the old password still works")
	}
	if err := os.WriteFile(path, []byte("alice: OBF:1v2j1uum1xtv1zej1zer1xtn1uvk1v1v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.True(t, 5*time.Second, "the bad file to be reported", func() bool { f.Check("x", "y"); return f.Err() != nil })
	if _, ok := f.Check("alice", "two"); !ok {
		t.Fatal("a file that does not parse replaced the users in force")
	}
}

// TestConfigMTLS: with ssl.client.authentication=REQUIRED a client without
// a certificate is refused in the handshake; with one, the principal is
// its subject mapped by ssl.principal.mapping.rules. REQUESTED serves a
// client without a certificate as anonymous.
func TestConfigMTLS(t *testing.T) {
	p := newPKI(t)
	props := func(mode string) map[string]string {
		return map[string]string{
			"svc.listeners":                   "https://" + freeport.Addr(t),
			"svc.ssl.keystore.type":           "PEM",
			"svc.ssl.keystore.location":       p.keystore,
			"svc.ssl.truststore.type":         "PEM",
			"svc.ssl.truststore.location":     p.trust,
			"svc.ssl.client.authentication":   mode,
			"svc.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),O=(.*)$/$1@$2/L,DEFAULT",
		}
	}
	s := serve(t, props("REQUIRED"))
	url := "https://" + s.Addrs()[0].String() + "/who"
	if resp, err := p.httpsClient(nil).Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("REQUIRED: a client without a certificate got %d", resp.StatusCode)
	}
	if code, body, _ := do(t, p.httpsClient(&p.client), url, "", ""); code != 200 || body != "User:alice@acme" {
		t.Fatalf("REQUIRED with a certificate: %d %q, want 200 User:alice@acme", code, body)
	}
	// A certificate from another CA is refused too.
	other := certs.NewCA(t, "other CA").Client(t, pkix.Name{CommonName: "alice", Organization: []string{"Acme"}})
	otherPair, _ := tls.X509KeyPair(other.CertPEM, other.KeyPEM)
	if resp, err := p.httpsClient(&otherPair).Get(url); err == nil {
		resp.Body.Close()
		t.Fatalf("REQUIRED: a certificate from an untrusted CA got %d", resp.StatusCode)
	}

	s = serve(t, props("requested"))
	url = "https://" + s.Addrs()[0].String() + "/who"
	if code, body, _ := do(t, p.httpsClient(nil), url, "", ""); code != 200 || body != "User:ANONYMOUS" {
		t.Fatalf("REQUESTED without a certificate: %d %q, want anonymous", code, body)
	}
	if code, body, _ := do(t, p.httpsClient(&p.client), url, "", ""); code != 200 || body != "User:alice@acme" {
		t.Fatalf("REQUESTED with a certificate: %d %q", code, body)
	}
}

// TestConfigRefusals: settings that cannot be honoured are refused, naming
// the key.
func TestConfigRefusals(t *testing.T) {
	p := newPKI(t)
	users := writeUsers(t, "alice: x\n")
	https := map[string]string{"svc.listeners": "https://127.0.0.1:1", "svc.ssl.keystore.type": "PEM", "svc.ssl.keystore.location": p.keystore}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	plain := map[string]string{"svc.listeners": "http://127.0.0.1:1"}
	for _, c := range []struct {
		props map[string]string
		key   string
	}{
		{with(plain, "svc.listeners", "tcp://127.0.0.1:1"), "svc.listeners"},
		{with(plain, "svc.authentication.method", "BEARER"), "svc.authentication.method"},
		{with(plain, "svc.authentication.method", "BASIC"), "svc.authentication.users.file"},
		{with(plain, "svc.authentication.method", "BASIC", "svc.authentication.users.file", "/nonexistent"), "svc.authentication.users.file"},
		{with(plain, "svc.authentication.users.file", users), "svc.authentication.users.file"},
		{with(plain, "svc.ssl.keystore.location", p.keystore), "svc.ssl.keystore.location"},
		{map[string]string{"svc.listeners": "https://127.0.0.1:1"}, "svc.ssl"},
		{with(https, "svc.ssl.client.authentication", "MAYBE"), "svc.ssl.client.authentication"},
		{with(https, "svc.ssl.client.authentication", "REQUIRED", "svc.ssl.client.auth", "false"), "svc.ssl.client.authentication"},
		{with(https, "svc.ssl.principal.mapping.rules", "RULE:broken"), "svc.ssl"},
	} {
		_, err := ConfigFor(c.props, "svc.")
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("ConfigFor(%v) = %v, want an error naming %s", c.props, err, c.key)
		}
	}
	// Confluent's older boolean and Kafka's values agree with the new key.
	if _, err := ConfigFor(with(https, "svc.ssl.client.auth", "true", "svc.ssl.client.authentication", "REQUIRED",
		"svc.ssl.truststore.type", "PEM", "svc.ssl.truststore.location", p.trust), "svc."); err != nil {
		t.Fatal(err)
	}
}
