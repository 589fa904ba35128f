package compat

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/certs"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/poll"
)

// adminPKI is a test CA, the admin listener's PEM key store, and a client
// certificate for mTLS, written under one temporary dir.
type adminPKI struct {
	ca                *certs.CA
	caFile            string
	keystore          string
	clientCert        string
	clientKey         string
	clientCertificate tls.Certificate
}

func newAdminPKI(t *testing.T) *adminPKI {
	t.Helper()
	dir := t.TempDir()
	ca := certs.NewCA(t, "admin test CA")
	ks, _, _ := ca.Server(t).WritePEM(t, dir, "admin", ca)
	cl := ca.Client(t, pkix.Name{CommonName: "prometheus", Organization: []string{"Monitoring"}})
	_, certFile, keyFile := cl.WritePEM(t, dir, "prometheus", ca)
	pair, err := tls.X509KeyPair(cl.CertPEM, cl.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return &adminPKI{ca: ca, caFile: ca.WritePEM(t, dir, "ca"), keystore: ks, clientCert: certFile, clientKey: keyFile, clientCertificate: pair}
}

func (p *adminPKI) client(withCert bool) *http.Client {
	roots := x509.NewCertPool()
	roots.AddCert(p.ca.Cert)
	tc := &tls.Config{RootCAs: roots}
	if withCert {
		tc.Certificates = []tls.Certificate{p.clientCertificate}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
}

func getStatus(t *testing.T, cl *http.Client, url, user, pass string) (int, string) {
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
	return resp.StatusCode, string(b)
}

// TestAdminListenerHTTPSAndAuth serves the admin listener over https with a
// test CA, once with HTTP Basic authentication and once with client
// certificates required, and points a real Prometheus server (Debian's) at
// both: the jobs with the right CA and credentials or certificate are up,
// the one with a wrong password is down (401). Go's client checks the
// answers directly: 401 without or with wrong credentials, 200 with good
// ones, the skip path served without any; no certificate, no handshake.
func TestAdminListenerHTTPSAndAuth(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake has no admin listener")
	if _, err := os.Stat(debianPrometheus); err != nil {
		t.Fatalf("%s not found (%v): run scripts/install-test-deps.sh", debianPrometheus, err)
	}
	pki := newAdminPKI(t)
	users := filepath.Join(t.TempDir(), "admin.password")
	if err := os.WriteFile(users, []byte("prom: scrape-secret,monitoring\nother: other-secret,nothing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	basicAdmin := freeport.Addr(t)
	StartBroker(t,
		WithOverride("admin.listeners", "https://"+basicAdmin),
		WithOverride("admin.ssl.keystore.type", "PEM"),
		WithOverride("admin.ssl.keystore.location", pki.keystore),
		WithOverride("admin.authentication.method", "BASIC"),
		WithOverride("admin.authentication.realm", "vltava-test"),
		WithOverride("admin.authentication.roles", "monitoring"),
		WithOverride("admin.authentication.users.file", users),
		WithOverride("admin.authentication.skip.paths", "/v1/health/live"))
	mtlsAdmin := freeport.Addr(t)
	StartBroker(t,
		WithOverride("admin.listeners", "https://"+mtlsAdmin),
		WithOverride("admin.ssl.keystore.type", "PEM"),
		WithOverride("admin.ssl.keystore.location", pki.keystore),
		WithOverride("admin.ssl.truststore.type", "PEM"),
		WithOverride("admin.ssl.truststore.location", pki.caFile),
		WithOverride("admin.ssl.client.authentication", "REQUIRED"))

	cl := pki.client(false)
	metrics := "https://" + basicAdmin + "/metrics"
	if code, _ := getStatus(t, cl, metrics, "", ""); code != http.StatusUnauthorized {
		t.Errorf("BASIC, no credentials: %d, want 401", code)
	}
	if code, _ := getStatus(t, cl, metrics, "prom", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("BASIC, wrong password: %d, want 401", code)
	}
	if code, _ := getStatus(t, cl, metrics, "other", "other-secret"); code != http.StatusForbidden {
		t.Errorf("BASIC, a user without the monitoring role: %d, want 403", code)
	}
	if code, body := getStatus(t, cl, metrics, "prom", "scrape-secret"); code != 200 || !strings.Contains(body, "kafka_server_brokertopicmetrics_messagesin_total") {
		t.Errorf("BASIC, good credentials: %d, want 200 with the metrics", code)
	}
	if code, _ := getStatus(t, cl, "https://"+basicAdmin+"/v1/health/live", "", ""); code != 200 {
		t.Errorf("skip path /v1/health/live: %d, want 200 without credentials", code)
	}
	if resp, err := http.Get("http://" + basicAdmin + "/metrics"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Error("plain http served on the https admin listener")
		}
	}
	if resp, err := cl.Get("https://" + mtlsAdmin + "/metrics"); err == nil {
		resp.Body.Close()
		t.Errorf("mTLS REQUIRED, no client certificate: got %d, want the handshake refused", resp.StatusCode)
	}
	if code, _ := getStatus(t, pki.client(true), "https://"+mtlsAdmin+"/metrics", "", ""); code != 200 {
		t.Errorf("mTLS REQUIRED with a certificate: %d, want 200", code)
	}

	tlsCA := fmt.Sprintf("    scheme: https\n    tls_config:\n      ca_file: %s\n", pki.caFile)
	jobs := fmt.Sprintf("  - job_name: basic\n%s    basic_auth:\n      username: prom\n      password: scrape-secret\n    static_configs:\n      - targets: ['%s']\n", tlsCA, basicAdmin) +
		fmt.Sprintf("  - job_name: basic-wrong\n%s    basic_auth:\n      username: prom\n      password: wrong\n    static_configs:\n      - targets: ['%s']\n", tlsCA, basicAdmin) +
		fmt.Sprintf("  - job_name: mtls\n    scheme: https\n    tls_config:\n      ca_file: %s\n      cert_file: %s\n      key_file: %s\n    static_configs:\n      - targets: ['%s']\n", pki.caFile, pki.clientCert, pki.clientKey, mtlsAdmin)
	prom := startPrometheusJobs(t, jobs)
	for q, v := range map[string]float64{
		`up{job="basic"}`:       1,
		`up{job="basic-wrong"}`: 0,
		`up{job="mtls"}`:        1,
		`kafka_controller_kafkacontroller_activecontrollercount{job="basic"}`: 1,
		`kafka_controller_kafkacontroller_activecontrollercount{job="mtls"}`:  1,
	} {
		poll.Until(t, 60*time.Second, fmt.Sprintf("Prometheus query %s = %v", q, v), func() error {
			got, err := promQuery(prom, q)
			if err != nil {
				return err
			}
			if got != v {
				return fmt.Errorf("got %v", got)
			}
			return nil
		})
	}
}

// TestAdminListenerTakenRefusesStart: a broker whose admin endpoint is
// already bound does not start, and says which key to change, as Kafka
// with a listener it cannot bind.
func TestAdminListenerTakenRefusesStart(t *testing.T) {
	t.Parallel()
	skipOnKfake(t, "kfake has no admin listener")
	held, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	bin, err := brokerBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "server",
		"--override", "listeners=PLAINTEXT://"+freeport.Addr(t),
		"--override", "log.dirs="+t.TempDir(),
		"--override", "admin.listeners=http://"+held.Addr().String())
	done := make(chan error, 1)
	var out []byte
	go func() {
		var err error
		out, err = cmd.CombinedOutput()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("the broker exited 0 with its admin endpoint taken:\n%s", out)
		}
		if !strings.Contains(string(out), "admin.listeners") {
			t.Fatalf("the refusal does not name admin.listeners:\n%s", out)
		}
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("the broker kept running with its admin endpoint taken:\n%s", out)
	}
}
