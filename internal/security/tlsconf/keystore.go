package tlsconf

import (
	"bytes"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// Store types, as ssl.keystore.type and ssl.truststore.type name them.
const (
	TypeJKS    = "JKS"
	TypePKCS12 = "PKCS12"
	TypePEM    = "PEM"
)

// loadKeyStore reads the broker's (or client's) certificate chain and
// private key: inline PEM (ssl.keystore.certificate.chain and
// ssl.keystore.key), or the ssl.keystore.location file of type
// ssl.keystore.type. ok is false when no key store is configured.
func loadKeyStore(s *Settings) (cert tls.Certificate, ok bool, err error) {
	if s.KeystoreCertificateChain != "" || s.KeystoreKey != "" {
		if s.KeystoreCertificateChain == "" || s.KeystoreKey == "" {
			return cert, false, errors.New("ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
		}
		if s.KeystoreLocation != "" {
			return cert, false, errors.New("ssl.keystore.location must not be set with ssl.keystore.certificate.chain and ssl.keystore.key")
		}
		if !strings.EqualFold(s.KeystoreType, TypePEM) {
			return cert, false, fmt.Errorf("ssl.keystore.type must be PEM for inline ssl.keystore.key, not %s", s.KeystoreType)
		}
		cert, err = pemKeyPair([]byte(s.KeystoreCertificateChain), []byte(s.KeystoreKey), s.KeyPassword)
		return cert, err == nil, err
	}
	if s.KeystoreLocation == "" {
		return cert, false, nil
	}
	data, err := os.ReadFile(s.KeystoreLocation)
	if err != nil {
		return cert, false, fmt.Errorf("ssl.keystore.location: %w", err)
	}
	switch strings.ToUpper(s.KeystoreType) {
	case TypePEM:
		// Kafka's PEM key store file holds the key and the chain.
		cert, err = pemKeyPair(data, data, s.KeyPassword)
	case TypePKCS12:
		cert, err = pkcs12KeyPair(data, s.KeystorePassword)
	case TypeJKS:
		keyPass := s.KeyPassword
		if keyPass == "" {
			keyPass = s.KeystorePassword
		}
		cert, err = jksKeyPair(data, s.KeystorePassword, keyPass)
	default:
		return cert, false, fmt.Errorf("ssl.keystore.type %q is not one of JKS, PKCS12, PEM", s.KeystoreType)
	}
	if err != nil {
		return cert, false, fmt.Errorf("ssl.keystore.location %s (%s): %w", s.KeystoreLocation, s.KeystoreType, err)
	}
	return cert, true, nil
}

// loadTrustStore reads the certificates trusted to sign peers'
// certificates: inline PEM (ssl.truststore.certificates) or the
// ssl.truststore.location file. nil when none is configured (the system
// roots, as Java's default trust store).
func loadTrustStore(s *Settings) (*x509.CertPool, error) {
	var certs []*x509.Certificate
	switch {
	case s.TruststoreCertificates != "":
		if s.TruststoreLocation != "" {
			return nil, errors.New("ssl.truststore.location must not be set with ssl.truststore.certificates")
		}
		c, err := pemCertificates([]byte(s.TruststoreCertificates))
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.certificates: %w", err)
		}
		certs = c
	case s.TruststoreLocation != "":
		data, err := os.ReadFile(s.TruststoreLocation)
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location: %w", err)
		}
		switch strings.ToUpper(s.TruststoreType) {
		case TypePEM:
			certs, err = pemCertificates(data)
		case TypePKCS12:
			// Java's keytool marks each certificate trusted; so must
			// the file (go-pkcs12 refuses unmarked ones).
			certs, err = pkcs12.DecodeTrustStore(data, s.TruststorePassword)
		case TypeJKS:
			certs, err = jksTrusted(data, s.TruststorePassword)
		default:
			return nil, fmt.Errorf("ssl.truststore.type %q is not one of JKS, PKCS12, PEM", s.TruststoreType)
		}
		if err != nil {
			return nil, fmt.Errorf("ssl.truststore.location %s (%s): %w", s.TruststoreLocation, s.TruststoreType, err)
		}
	default:
		return nil, nil
	}
	if len(certs) == 0 {
		return nil, errors.New("the trust store holds no certificate")
	}
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return pool, nil
}

func pemCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, err
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return certs, nil
}

// pemKeyPair builds a certificate from PEM blocks. An encrypted private key
// (ENCRYPTED PRIVATE KEY, PKCS#8 with ssl.key.password) is not supported by
// Go's standard library and is refused rather than misread.
func pemKeyPair(certPEM, keyPEM []byte, keyPassword string) (tls.Certificate, error) {
	if keyPassword != "" || bytes.Contains(keyPEM, []byte("ENCRYPTED PRIVATE KEY")) || bytes.Contains(keyPEM, []byte("Proc-Type: 4,ENCRYPTED")) {
		return tls.Certificate{}, errors.New("ssl.key.password: encrypted PEM private keys are not supported; use an unencrypted PKCS#8 key or a PKCS12/JKS key store")
	}
	certs, err := pemCertificates(certPEM)
	if err != nil {
		return tls.Certificate{}, err
	}
	var keyDER []byte
	rest := keyPEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type == "PRIVATE KEY" || strings.HasSuffix(b.Type, " PRIVATE KEY") {
			keyDER = b.Bytes
			break
		}
	}
	if keyDER == nil {
		return tls.Certificate{}, errors.New("no PEM private key found")
	}
	key, err := parsePrivateKey(keyDER)
	if err != nil {
		return tls.Certificate{}, err
	}
	return certificate(key, certs)
}

func parsePrivateKey(der []byte) (crypto.PrivateKey, error) {
	if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(der); err == nil {
		return k, nil
	}
	return nil, errors.New("the private key is neither PKCS#8, PKCS#1 nor SEC 1")
}

func pkcs12KeyPair(data []byte, password string) (tls.Certificate, error) {
	key, leaf, cas, err := pkcs12.DecodeChain(data, password)
	if err != nil {
		return tls.Certificate{}, err
	}
	return certificate(key, append([]*x509.Certificate{leaf}, cas...))
}

func jksKeyPair(data []byte, storePassword, keyPassword string) (tls.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(storePassword)); err != nil {
		return tls.Certificate{}, err
	}
	for _, alias := range ks.Aliases() {
		if !ks.IsPrivateKeyEntry(alias) {
			continue
		}
		e, err := ks.GetPrivateKeyEntry(alias, []byte(keyPassword))
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("key entry %q: %w", alias, err)
		}
		key, err := parsePrivateKey(e.PrivateKey)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("key entry %q: %w", alias, err)
		}
		var chain []*x509.Certificate
		for _, c := range e.CertificateChain {
			xc, err := x509.ParseCertificate(c.Content)
			if err != nil {
				return tls.Certificate{}, fmt.Errorf("key entry %q: %w", alias, err)
			}
			chain = append(chain, xc)
		}
		return certificate(key, chain)
	}
	return tls.Certificate{}, errors.New("the key store holds no private key entry")
}

func jksTrusted(data []byte, password string) ([]*x509.Certificate, error) {
	ks := keystore.New()
	if err := ks.Load(bytes.NewReader(data), []byte(password)); err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for _, alias := range ks.Aliases() {
		if !ks.IsTrustedCertificateEntry(alias) {
			continue
		}
		e, err := ks.GetTrustedCertificateEntry(alias)
		if err != nil {
			return nil, err
		}
		c, err := x509.ParseCertificate(e.Certificate.Content)
		if err != nil {
			return nil, fmt.Errorf("trusted entry %q: %w", alias, err)
		}
		certs = append(certs, c)
	}
	return certs, nil
}

func certificate(key crypto.PrivateKey, chain []*x509.Certificate) (tls.Certificate, error) {
	if len(chain) == 0 {
		return tls.Certificate{}, errors.New("no certificate for the private key")
	}
	c := tls.Certificate{PrivateKey: key, Leaf: chain[0]}
	for _, x := range chain {
		c.Certificate = append(c.Certificate, x.Raw)
	}
	// Check the key belongs to the leaf, as the standard library's
	// X509KeyPair does.
	type publicKeyer interface{ Public() crypto.PublicKey }
	pk, ok := key.(publicKeyer)
	if !ok {
		return tls.Certificate{}, errors.New("unsupported private key type")
	}
	type equaler interface{ Equal(crypto.PublicKey) bool }
	if eq, ok := pk.Public().(equaler); !ok || !eq.Equal(chain[0].PublicKey) {
		return tls.Certificate{}, errors.New("the private key does not match the certificate")
	}
	return c, nil
}
