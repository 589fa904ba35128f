package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Provider serves a listener's TLS configuration and keeps it current:
// when the key store or trust store file changes on disk (checked at most
// once a second, when a client connects), or when Update is called with new
// settings (dynamic ssl.keystore.* / ssl.truststore.* updates through
// AlterConfigs, as Kafka's), the stores are loaded again and new
// connections use them; established connections keep theirs. A reload that
// fails keeps the previous configuration and is reported by Err.
type Provider struct {
	current atomic.Pointer[loaded]
	// checked is when the files were last stat'ed (unix nanos).
	checked atomic.Int64

	mu struct {
		sync.Mutex // serialises reloads; never held during a handshake
		err        error
	}
}

type loaded struct {
	settings Settings
	config   *tls.Config
	mapper   *PrincipalMapper
	files    []fileStamp
}

type fileStamp struct {
	path string
	mod  time.Time
	size int64
}

// NewServer builds the server-side TLS configuration of one listener.
func NewServer(lookup Lookup) (*Provider, error) {
	p := &Provider{}
	l, err := loadServer(ReadSettings(lookup))
	if err != nil {
		return nil, err
	}
	p.current.Store(l)
	p.checked.Store(time.Now().UnixNano())
	return p, nil
}

// Config is the tls.Config to hand to tls.Server: it fetches the current
// configuration for each handshake.
func (p *Provider) Config() *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			p.maybeReload()
			return p.current.Load().config, nil
		},
	}
}

// Settings are the settings in force.
func (p *Provider) Settings() Settings { return p.current.Load().settings }

// Mapper is the current ssl.principal.mapping.rules.
func (p *Provider) Mapper() *PrincipalMapper { return p.current.Load().mapper }

// ClientAuth is the current ssl.client.auth.
func (p *Provider) ClientAuth() string { return p.current.Load().settings.ClientAuth }

// Update reloads with new settings (a dynamic config change). On error the
// previous configuration stays in force.
func (p *Provider) Update(lookup Lookup) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, err := loadServer(ReadSettings(lookup))
	if err != nil {
		return err
	}
	p.current.Store(l)
	p.mu.err = nil
	return nil
}

// CheckUpdate loads the stores a dynamic update to these settings would
// give, installing nothing, so that an update whose stores do not load is
// refused before it is committed. As Kafka's (KIP-978), the new key
// store's certificate must also keep the subject distinguished name and
// the subject alternative names of the one in force, unless
// ssl.allow.dn.changes or ssl.allow.san.changes (read through lookup)
// is true.
func (p *Provider) CheckUpdate(lookup Lookup) error {
	l, err := loadServer(ReadSettings(lookup))
	if err != nil {
		return err
	}
	cur, next := leaf(p.current.Load().config), leaf(l.config)
	if cur == nil || next == nil {
		return errors.New("a key store without a certificate")
	}
	allowed := func(k string) bool {
		v, _ := lookup(k)
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	if !allowed("ssl.allow.dn.changes") && cur.Subject.String() != next.Subject.String() {
		return fmt.Errorf("the key store's distinguished name does not match: in force %q, new %q (ssl.allow.dn.changes=true allows it)", cur.Subject, next.Subject)
	}
	if !allowed("ssl.allow.san.changes") && !slices.Equal(subjectAltNames(cur), subjectAltNames(next)) {
		return fmt.Errorf("the key store's subject alternative names do not match: in force %v, new %v (ssl.allow.san.changes=true allows it)", subjectAltNames(cur), subjectAltNames(next))
	}
	return nil
}

// leaf is a server configuration's certificate, parsed.
func leaf(cfg *tls.Config) *x509.Certificate {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return nil
	}
	if c := cfg.Certificates[0].Leaf; c != nil {
		return c
	}
	c, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		return nil
	}
	return c
}

// subjectAltNames are a certificate's SANs of every kind, as a sorted set.
func subjectAltNames(c *x509.Certificate) []string {
	var out []string
	for _, d := range c.DNSNames {
		out = append(out, "DNS:"+d)
	}
	for _, ip := range c.IPAddresses {
		out = append(out, "IP:"+ip.String())
	}
	for _, e := range c.EmailAddresses {
		out = append(out, "email:"+e)
	}
	for _, u := range c.URIs {
		out = append(out, "URI:"+u.String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Err is the error of the last failed reload from changed files, nil if
// the last one succeeded.
func (p *Provider) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.err
}

// maybeReload reloads the stores when their files changed; at most one
// check a second, and one reload at a time (a handshake that finds a reload
// running uses the configuration in force).
func (p *Provider) maybeReload() {
	now := time.Now().UnixNano()
	last := p.checked.Load()
	if now-last < int64(time.Second) || !p.checked.CompareAndSwap(last, now) {
		return
	}
	if !p.mu.TryLock() {
		return
	}
	defer p.mu.Unlock()
	cur := p.current.Load()
	if !filesChanged(cur.files) {
		return
	}
	l, err := loadServer(cur.settings)
	if err != nil {
		p.mu.err = fmt.Errorf("reloading the TLS stores: %w", err)
		return
	}
	p.mu.err = nil
	p.current.Store(l)
}

func loadServer(s Settings) (*loaded, error) {
	cert, ok, err := loadKeyStore(&s)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("an SSL listener needs a key store: ssl.keystore.location, or ssl.keystore.certificate.chain and ssl.keystore.key")
	}
	cfg, err := baseConfig(&s)
	if err != nil {
		return nil, err
	}
	cfg.Certificates = []tls.Certificate{cert}
	pool, err := loadTrustStore(&s)
	if err != nil {
		return nil, err
	}
	cfg.ClientCAs = pool
	switch s.ClientAuth {
	case "none":
		cfg.ClientAuth = tls.NoClientCert
	case "requested":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	case "required":
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	default:
		return nil, fmt.Errorf("ssl.client.auth %q is not one of none, requested, required", s.ClientAuth)
	}
	mapper, err := ParsePrincipalMappingRules(s.PrincipalMappingRules)
	if err != nil {
		return nil, err
	}
	return &loaded{settings: s, config: cfg, mapper: mapper, files: stamps(s.KeystoreLocation, s.TruststoreLocation)}, nil
}

// baseConfig holds what server and client share: versions and suites.
func baseConfig(s *Settings) (*tls.Config, error) {
	lo, hi, err := versionRange(s)
	if err != nil {
		return nil, err
	}
	ids, only13, err := cipherSuites(s.CipherSuites)
	if err != nil {
		return nil, err
	}
	if only13 {
		lo = max(lo, tls.VersionTLS13)
		if hi < tls.VersionTLS13 {
			return nil, errors.New("ssl.cipher.suites lists only TLS 1.3 suites but ssl.enabled.protocols does not enable TLSv1.3")
		}
	}
	return &tls.Config{MinVersion: lo, MaxVersion: hi, CipherSuites: ids}, nil
}

// NewClient builds the client side (inter-broker connections, the CLI):
// the trust store verifies the server, the key store (if any) is the
// client certificate, and ssl.endpoint.identification.algorithm=https
// checks the server's name against serverName.
func NewClient(lookup Lookup, serverName string) (*tls.Config, error) {
	s := ReadSettings(lookup)
	cfg, err := baseConfig(&s)
	if err != nil {
		return nil, err
	}
	cert, ok, err := loadKeyStore(&s)
	if err != nil {
		return nil, err
	}
	if ok {
		cfg.Certificates = []tls.Certificate{cert}
	}
	pool, err := loadTrustStore(&s)
	if err != nil {
		return nil, err
	}
	cfg.RootCAs = pool
	switch s.EndpointIdentification {
	case "https":
		cfg.ServerName = serverName
	case "":
		// Kafka's empty algorithm: the chain is verified, the host name
		// is not.
		cfg.InsecureSkipVerify = true
		cfg.VerifyPeerCertificate = verifyChainOnly(pool)
	default:
		return nil, fmt.Errorf("ssl.endpoint.identification.algorithm %q is not supported (https, or empty)", s.EndpointIdentification)
	}
	return cfg, nil
}

func stamps(paths ...string) []fileStamp {
	var out []fileStamp
	for _, p := range paths {
		if p == "" {
			continue
		}
		st := fileStamp{path: p}
		if fi, err := os.Stat(p); err == nil {
			st.mod, st.size = fi.ModTime(), fi.Size()
		}
		out = append(out, st)
	}
	return out
}

func filesChanged(files []fileStamp) bool {
	for _, f := range files {
		fi, err := os.Stat(f.path)
		if err != nil {
			continue // a file being replaced: try again later
		}
		if !fi.ModTime().Equal(f.mod) || fi.Size() != f.size {
			return true
		}
	}
	return false
}
