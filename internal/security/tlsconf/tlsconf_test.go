package tlsconf

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/certs"
)

func lookupOf(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// handshake runs a TLS handshake between server and client configs over a
// pipe and returns the server side's state.
func handshake(t *testing.T, srv *Provider, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	sc := tls.Server(a, srv.Config())
	go func() {
		cc := tls.Client(b, client)
		err := cc.Handshake()
		if err == nil {
			// Read what the server sends next (an alert refusing
			// the client's certificate, or the close): the pipe does
			// not buffer, so the server's write waits for this.
			_, _ = cc.Read(make([]byte, 1))
		}
		errc <- err
	}()
	a.SetDeadline(time.Now().Add(5 * time.Second))
	serr := sc.Handshake()
	st := sc.ConnectionState()
	a.Close()
	cerr := <-errc
	if serr != nil {
		return tls.ConnectionState{}, serr
	}
	if cerr != nil {
		return tls.ConnectionState{}, cerr
	}
	return st, nil
}

// TestKeyStoreTypes: the broker's key store as a PEM file, inline PEM,
// PKCS12 made by openssl and JKS; the client's trust store likewise; every
// pair handshakes and the client verifies the server's name.
func TestKeyStoreTypes(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "test-ca")
	srv := ca.Server(t)
	pemKS, _, _ := srv.WritePEM(t, dir, "server", ca)
	p12 := srv.WritePKCS12(t, dir, "server", "p12-secret", ca)
	jks := srv.WriteJKS(t, dir, "server", "jks-secret", "key-secret", ca)
	keystores := map[string]map[string]string{
		"PEM file": {"ssl.keystore.type": "PEM", "ssl.keystore.location": pemKS},
		"inline PEM": {"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": string(srv.CertPEM) + string(ca.PEM),
			"ssl.keystore.key": string(srv.KeyPEM)},
		"PKCS12": {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": p12, "ssl.keystore.password": "p12-secret"},
		"JKS": {"ssl.keystore.type": "JKS", "ssl.keystore.location": jks, "ssl.keystore.password": "jks-secret",
			"ssl.key.password": "key-secret"},
	}
	truststores := map[string]map[string]string{
		"PEM file":   {"ssl.truststore.type": "PEM", "ssl.truststore.location": ca.WritePEM(t, dir, "ca")},
		"inline PEM": {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)},
		"PKCS12":     {"ssl.truststore.type": "PKCS12", "ssl.truststore.location": ca.WriteTrustPKCS12(t, dir, "trust", "t-secret"), "ssl.truststore.password": "t-secret"},
		"JKS":        {"ssl.truststore.type": "JKS", "ssl.truststore.location": ca.WriteTrustJKS(t, dir, "trust", "t-secret"), "ssl.truststore.password": "t-secret"},
	}
	for ksName, ks := range keystores {
		p, err := NewServer(lookupOf(ks))
		if err != nil {
			t.Fatalf("%s key store: %v", ksName, err)
		}
		for tsName, ts := range truststores {
			client, err := NewClient(lookupOf(ts), "localhost")
			if err != nil {
				t.Fatalf("%s trust store: %v", tsName, err)
			}
			if _, err := handshake(t, p, client); err != nil {
				t.Errorf("key store %s, trust store %s: %v", ksName, tsName, err)
			}
		}
	}
	// A wrong password is refused at load, naming the store.
	_, err := NewServer(lookupOf(map[string]string{"ssl.keystore.type": "JKS", "ssl.keystore.location": jks, "ssl.keystore.password": "wrong"}))
	if err == nil || !strings.Contains(err.Error(), "ssl.keystore.location") {
		t.Errorf("wrong JKS password: %v", err)
	}
}

// TestEndpointIdentification: https checks the host name, empty does not
// (the chain is still verified).
func TestEndpointIdentification(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "test-ca")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "server", ca)
	p, err := NewServer(lookupOf(map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks}))
	if err != nil {
		t.Fatal(err)
	}
	trust := map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)}
	c, _ := NewClient(lookupOf(trust), "other.example")
	if _, err := handshake(t, p, c); err == nil {
		t.Error("https: a certificate for localhost was accepted for other.example")
	}
	trust["ssl.endpoint.identification.algorithm"] = ""
	c, _ = NewClient(lookupOf(trust), "other.example")
	if _, err := handshake(t, p, c); err != nil {
		t.Errorf("empty algorithm: %v", err)
	}
	other := certs.NewCA(t, "other-ca")
	c, _ = NewClient(lookupOf(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(other.PEM),
		"ssl.endpoint.identification.algorithm": ""}), "localhost")
	if _, err := handshake(t, p, c); err == nil {
		t.Error("empty algorithm: a chain from an untrusted CA was accepted")
	}
}

// TestClientAuthAndPrincipal: required refuses a client without a
// certificate, requested lets it in; the certificate's subject is mapped
// by ssl.principal.mapping.rules.
func TestClientAuthAndPrincipal(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "test-ca")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "server", ca)
	alice := ca.Client(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"ServiceUsers"}, Organization: []string{"Acme"}, Country: []string{"CZ"}})
	aliceKS, _, _ := alice.WritePEM(t, dir, "alice", ca)
	base := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks,
		"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)}
	clientTrust := map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)}
	withCert := map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM),
		"ssl.keystore.type": "PEM", "ssl.keystore.location": aliceKS}

	for _, tc := range []struct {
		auth       string
		cert       bool
		wantOK     bool
		wantPeerDN string
	}{
		{"required", false, false, ""},
		{"required", true, true, "CN=alice,OU=ServiceUsers,O=Acme,C=CZ"},
		{"requested", false, true, ""},
		{"requested", true, true, "CN=alice,OU=ServiceUsers,O=Acme,C=CZ"},
		{"none", true, true, ""},
	} {
		cfg := map[string]string{"ssl.client.auth": tc.auth}
		for k, v := range base {
			cfg[k] = v
		}
		p, err := NewServer(lookupOf(cfg))
		if err != nil {
			t.Fatal(err)
		}
		cl := clientTrust
		if tc.cert {
			cl = withCert
		}
		c, err := NewClient(lookupOf(cl), "localhost")
		if err != nil {
			t.Fatal(err)
		}
		st, err := handshake(t, p, c)
		if (err == nil) != tc.wantOK {
			t.Errorf("%s, cert %v: handshake error %v, want ok=%v", tc.auth, tc.cert, err, tc.wantOK)
			continue
		}
		dn := ""
		if len(st.PeerCertificates) > 0 {
			dn = SubjectDN(st.PeerCertificates[0])
		}
		if dn != tc.wantPeerDN {
			t.Errorf("%s, cert %v: peer DN %q, want %q", tc.auth, tc.cert, dn, tc.wantPeerDN)
		}
	}
}

func TestPrincipalMappingRules(t *testing.T) {
	dn := "CN=alice,OU=ServiceUsers,O=Acme,C=CZ"
	for _, tc := range []struct {
		rules, want, wantErr string
	}{
		{"DEFAULT", dn, ""},
		{"", dn, ""},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/", "alice", ""},
		{"RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/U", "ALICE", ""},
		{"RULE:^CN=(.*?),OU=Other.*$/$1/,DEFAULT", dn, ""},
		{"RULE:^CN=(.*?),OU=(.*?),O=(.*?),C=(.*?)$/$1@$3/L, DEFAULT", "alice@acme", ""},
		{"RULE:^CN=(.*?),OU=Other.*$/$1/", "", "no ssl.principal.mapping.rules rule matches"},
		{"RULE:^CN=([a-z]*)$/$1x/", "", "no ssl.principal.mapping.rules rule matches"},
		{"RULE:^CN=([a-z]*),.*$/$1x/", "alicex", ""},
		{"RULE:(.*)/x/L\nRULE:(.*)/y/", "x", ""},
		{"nonsense", "", "invalid rule"},
	} {
		m, err := ParsePrincipalMappingRules(tc.rules)
		if err != nil {
			if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: parse error %v", tc.rules, err)
			}
			continue
		}
		got, err := m.Map(dn)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: Map = %q, %v; want error %q", tc.rules, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: Map = %q, %v; want %q", tc.rules, got, err, tc.want)
		}
	}
}

// TestProtocolsAndSuites: ssl.enabled.protocols and ssl.cipher.suites take
// Kafka's names; what Go cannot do is refused by name.
func TestProtocolsAndSuites(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "test-ca")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "server", ca)
	server := func(extra map[string]string) (*Provider, error) {
		m := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks}
		for k, v := range extra {
			m[k] = v
		}
		return NewServer(lookupOf(m))
	}
	for _, tc := range []struct {
		cfg     map[string]string
		wantErr string
	}{
		{map[string]string{"ssl.enabled.protocols": "TLSv1.2"}, ""},
		{map[string]string{"ssl.enabled.protocols": "TLSv1.1,TLSv1.3"}, "leaves a gap"},
		{map[string]string{"ssl.enabled.protocols": "SSLv3"}, `"SSLv3" is not supported`},
		{map[string]string{"ssl.protocol": "SSL"}, "ssl.protocol"},
		{map[string]string{"ssl.protocol": "TLSv1.1", "ssl.enabled.protocols": "TLSv1.2,TLSv1.3"}, "below every version"},
		{map[string]string{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}, ""},
		{map[string]string{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"}, "cannot do TLS_DHE_RSA_WITH_AES_128_GCM_SHA256"},
		{map[string]string{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "only all together"},
		{map[string]string{"ssl.client.auth": "maybe"}, "ssl.client.auth"},
		{map[string]string{"ssl.principal.mapping.rules": "RULE:broken"}, "ssl.principal.mapping.rules"},
	} {
		_, err := server(tc.cfg)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v: %v, want %q", tc.cfg, err, tc.wantErr)
		}
	}
	// TLSv1.2 only with one suite: a TLS 1.3-only client cannot connect,
	// a TLS 1.2 client gets that suite.
	p, err := server(map[string]string{"ssl.enabled.protocols": "TLSv1.2", "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(lookupOf(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM), "ssl.enabled.protocols": "TLSv1.3"}), "localhost")
	if _, err := handshake(t, p, c); err == nil {
		t.Error("a TLSv1.3-only client connected to a TLSv1.2 listener")
	}
	// ssl.protocol=TLSv1.2 caps a client at TLSv1.2 even with TLSv1.3
	// enabled, as Kafka documents.
	p13, err := server(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, _ = NewClient(lookupOf(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM), "ssl.protocol": "TLSv1.2"}), "localhost")
	if st, err := handshake(t, p13, c); err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("ssl.protocol=TLSv1.2 client: version %x, %v", st.Version, err)
	}
	c, _ = NewClient(lookupOf(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)}), "localhost")
	st, err := handshake(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("negotiated %x / %s", st.Version, tls.CipherSuiteName(st.CipherSuite))
	}
}

// TestReloadOnFileChange: a key store replaced on disk is used by the next
// handshakes, without a restart; Update takes new settings.
func TestReloadOnFileChange(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := certs.NewCA(t, "ca-one"), certs.NewCA(t, "ca-two")
	ks, _, _ := ca1.Server(t).WritePEM(t, dir, "server", ca1)
	p, err := NewServer(lookupOf(map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks}))
	if err != nil {
		t.Fatal(err)
	}
	trusts := func(ca *certs.CA) *tls.Config {
		c, _ := NewClient(lookupOf(map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.certificates": string(ca.PEM)}), "localhost")
		return c
	}
	if _, err := handshake(t, p, trusts(ca1)); err != nil {
		t.Fatal(err)
	}
	// Replace the file with a certificate of the second CA.
	other, _, _ := ca2.Server(t).WritePEM(t, t.TempDir(), "server", ca2)
	data, _ := os.ReadFile(other)
	if err := os.WriteFile(ks, data, 0o600); err != nil {
		t.Fatal(err)
	}
	p.checked.Store(0) // the next handshake checks the files now
	if _, err := handshake(t, p, trusts(ca2)); err != nil {
		t.Errorf("after the key store changed: %v", err)
	}
	// Update with a new location.
	third, _, _ := ca1.Server(t).WritePEM(t, t.TempDir(), "server", ca1)
	if err := p.Update(lookupOf(map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": third})); err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, p, trusts(ca1)); err != nil {
		t.Errorf("after Update: %v", err)
	}
	// A failed update keeps the configuration in force.
	if err := p.Update(lookupOf(map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": dir + "/missing"})); err == nil {
		t.Error("Update to a missing file succeeded")
	}
	if _, err := handshake(t, p, trusts(ca1)); err != nil {
		t.Errorf("after a failed Update: %v", err)
	}
}

// TestCheckUpdate: a dynamic key store update is checked without being
// installed: a store that does not load, and (KIP-978) a certificate with
// another subject or other SANs unless ssl.allow.dn.changes /
// ssl.allow.san.changes, are refused; a new certificate for the same names
// passes.
func TestCheckUpdate(t *testing.T) {
	dir := t.TempDir()
	ca := certs.NewCA(t, "ca")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "server", ca)
	p, err := NewServer(lookupOf(map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": ks}))
	if err != nil {
		t.Fatal(err)
	}
	before := p.current.Load()
	update := func(path string, extra ...string) error {
		m := map[string]string{"ssl.keystore.type": "PEM", "ssl.keystore.location": path}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return p.CheckUpdate(lookupOf(m))
	}
	ca2 := certs.NewCA(t, "other-ca")
	same, _, _ := ca2.Server(t).WritePEM(t, t.TempDir(), "same-names", ca2)
	if err := update(same); err != nil {
		t.Errorf("a certificate with the same subject and SANs: %v", err)
	}
	if err := update(filepath.Join(dir, "missing.pem")); err == nil {
		t.Error("a key store that does not exist passed")
	}
	otherSAN, _, _ := ca.Server(t, "broker.example").WritePEM(t, t.TempDir(), "san", ca)
	if err := update(otherSAN); err == nil || !strings.Contains(err.Error(), "subject alternative names") {
		t.Errorf("other SANs: %v, want refused", err)
	}
	if err := update(otherSAN, "ssl.allow.san.changes", "true"); err != nil {
		t.Errorf("other SANs with ssl.allow.san.changes=true: %v", err)
	}
	client := ca.Client(t, pkix.Name{CommonName: "someone-else"})
	otherDN := filepath.Join(t.TempDir(), "dn.pem")
	if err := os.WriteFile(otherDN, append(append(append([]byte{}, client.CertPEM...), ca.PEM...), client.KeyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := update(otherDN, "ssl.allow.san.changes", "true"); err == nil || !strings.Contains(err.Error(), "distinguished name") {
		t.Errorf("another subject: %v, want refused", err)
	}
	if err := update(otherDN, "ssl.allow.san.changes", "true", "ssl.allow.dn.changes", "true"); err != nil {
		t.Errorf("another subject with both allowed: %v", err)
	}
	if p.current.Load() != before {
		t.Error("CheckUpdate installed a configuration")
	}
}
