// Package certs makes throwaway certificates for tests: a CA, server
// certificates for loopback, client certificates with a chosen subject,
// written as PEM files, PKCS12 (with openssl, as deployments make them) or
// JKS (with keystore-go). Nothing here is used outside tests.
package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// CA is a certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// PEM is the CA certificate.
	PEM []byte
}

// Leaf is a certificate signed by a CA, with its key.
type Leaf struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
	KeyPEM  []byte
}

// NewCA makes a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Vltava tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &CA{Cert: c, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Server makes a server certificate for localhost and 127.0.0.1 (and any
// extra host names).
func (ca *CA) Server(t testing.TB, hosts ...string) *Leaf {
	t.Helper()
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost", Organization: []string{"Vltava tests"}},
		DNSNames:    append([]string{"localhost"}, hosts...),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	return ca.sign(t, tmpl)
}

// Client makes a client certificate with the given subject.
func (ca *CA) Client(t testing.TB, subject pkix.Name) *Leaf {
	t.Helper()
	return ca.sign(t, &x509.Certificate{Subject: subject, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

func (ca *CA) sign(t testing.TB, tmpl *x509.Certificate) *Leaf {
	key := newKey(t)
	tmpl.SerialNumber = serial(t)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return &Leaf{
		Cert: c, Key: key,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
	}
}

// WritePEM writes the leaf's chain (leaf, then CA) and key to one file, as
// Kafka's PEM key store file holds them, and returns its path; also the
// separate cert and key files (for clients that take them apart).
func (l *Leaf) WritePEM(t testing.TB, dir, name string, ca *CA) (keystore, certFile, keyFile string) {
	t.Helper()
	chain := append(append([]byte{}, l.CertPEM...), ca.PEM...)
	keystore = write(t, filepath.Join(dir, name+".keystore.pem"), append(append([]byte{}, l.KeyPEM...), chain...))
	certFile = write(t, filepath.Join(dir, name+".crt"), chain)
	keyFile = write(t, filepath.Join(dir, name+".key"), l.KeyPEM)
	return keystore, certFile, keyFile
}

// WritePKCS12 writes the leaf as a PKCS12 key store made by openssl, and
// returns its path.
func (l *Leaf) WritePKCS12(t testing.TB, dir, name, password string, ca *CA) string {
	t.Helper()
	_, certFile, keyFile := l.WritePEM(t, dir, name, ca)
	out := filepath.Join(dir, name+".p12")
	cmd := exec.Command("openssl", "pkcs12", "-export", "-in", certFile, "-inkey", keyFile,
		"-name", name, "-out", out, "-passout", "pass:"+password)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl pkcs12: %v\n%s", err, msg)
	}
	return out
}

// WriteJKS writes the leaf as a JKS key store (key entry name, chain leaf
// then CA), and returns its path.
func (l *Leaf) WriteJKS(t testing.TB, dir, name, storePassword, keyPassword string, ca *CA) string {
	t.Helper()
	kder, err := x509.MarshalPKCS8PrivateKey(l.Key)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	err = ks.SetPrivateKeyEntry(name, keystore.PrivateKeyEntry{
		CreationTime: time.Now(),
		PrivateKey:   kder,
		CertificateChain: []keystore.Certificate{
			{Type: "X509", Content: l.Cert.Raw},
			{Type: "X509", Content: ca.Cert.Raw},
		},
	}, []byte(keyPassword))
	if err != nil {
		t.Fatal(err)
	}
	return writeKeyStore(t, filepath.Join(dir, name+".jks"), ks, storePassword)
}

// WriteTrustJKS writes the CA as a JKS trust store.
func (ca *CA) WriteTrustJKS(t testing.TB, dir, name, password string) string {
	t.Helper()
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{
		CreationTime: time.Now(), Certificate: keystore.Certificate{Type: "X509", Content: ca.Cert.Raw},
	}); err != nil {
		t.Fatal(err)
	}
	return writeKeyStore(t, filepath.Join(dir, name+".jks"), ks, password)
}

// WriteTrustPKCS12 writes the CA as a PKCS12 trust store with the
// trusted-certificate attribute Java's keytool sets (OpenSSL 3.0's pkcs12
// cannot set it).
func (ca *CA) WriteTrustPKCS12(t testing.TB, dir, name, password string) string {
	t.Helper()
	data, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca.Cert}, password)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, filepath.Join(dir, name+".p12"), data)
}

// WritePEM writes the CA certificate and returns its path.
func (ca *CA) WritePEM(t testing.TB, dir, name string) string {
	t.Helper()
	return write(t, filepath.Join(dir, name+".pem"), ca.PEM)
}

func writeKeyStore(t testing.TB, path string, ks keystore.KeyStore, password string) string {
	var buf bytes.Buffer
	if err := ks.Store(&buf, []byte(password)); err != nil {
		t.Fatal(err)
	}
	return write(t, path, buf.Bytes())
}

func write(t testing.TB, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
