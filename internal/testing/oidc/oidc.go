// Package oidc is a test identity provider on loopback: it serves a JWKS
// (RFC 7517) and an OAuth 2 token endpoint granting client-credentials
// requests (RFC 6749 §4.4) with RS256-signed JWTs, as an OIDC provider does
// for Kafka's KIP-768 clients (librdkafka's sasl.oauthbearer.method=oidc,
// Kafka's OAuthBearerLoginCallbackHandler) and brokers.
package oidc

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/vltava/vltava/internal/testing/freeport"
)

// Server is the identity provider. Its issuer is its base URL.
type Server struct {
	URL      string
	Audience string
	// TokenLifetime is the lifetime of tokens from the token endpoint.
	TokenLifetime time.Duration

	srv         *httptest.Server
	jwksFetches atomic.Int64

	mu      sync.Mutex
	key     *rsa.PrivateKey
	kid     string
	serial  int
	clients map[string]string // client id → secret
}

// Start starts a provider on a loopback port, stopped at the test's end.
// Tokens carry aud=audience.
func Start(t testing.TB, audience string) *Server {
	t.Helper()
	s := &Server{Audience: audience, TokenLifetime: time.Hour, clients: map[string]string{}}
	s.Rotate(t)
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", s.serveJWKS)
	mux.HandleFunc("/token", s.serveToken)
	mux.HandleFunc("/.well-known/openid-configuration", s.serveDiscovery)
	s.srv = httptest.NewUnstartedServer(mux)
	l, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatalf("oidc: listen: %v", err)
	}
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// JWKSURL is the JWKS endpoint, for sasl.oauthbearer.jwks.endpoint.url.
func (s *Server) JWKSURL() string { return s.URL + "/jwks" }

// TokenURL is the token endpoint, for sasl.oauthbearer.token.endpoint.url.
func (s *Server) TokenURL() string { return s.URL + "/token" }

// Issuer is the iss of the tokens issued.
func (s *Server) Issuer() string { return s.URL }

// JWKSFetches counts the JWKS requests served.
func (s *Server) JWKSFetches() int64 { return s.jwksFetches.Load() }

// AddClient registers client credentials the token endpoint grants.
func (s *Server) AddClient(id, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = secret
}

// Rotate replaces the signing key with a new one under a new kid; the JWKS
// then serves only the new key.
func (s *Server) Rotate(t testing.TB) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("oidc: key: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.serial++
	s.key, s.kid = k, fmt.Sprintf("key-%d", s.serial)
}

// Sign signs claims with the current key (RS256, its kid in the header).
func (s *Server) Sign(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	s.mu.Lock()
	key, kid := s.key, s.kid
	s.mu.Unlock()
	tok, err := SignWith(key, kid, claims)
	if err != nil {
		t.Fatalf("oidc: sign: %v", err)
	}
	return tok
}

// SignWith signs claims with any RSA key (a key the provider does not
// publish, for bad-signature tests).
func SignWith(key *rsa.PrivateKey, kid string, claims jwt.MapClaims) (string, error) {
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = kid
	return tok.SignedString(key)
}

// Claims returns the standard claims of a token for sub: this issuer, the
// audience, issued now, expiring after lifetime.
func (s *Server) Claims(sub string, lifetime time.Duration) jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{"iss": s.Issuer(), "aud": s.Audience, "sub": sub,
		"iat": now.Unix(), "exp": now.Add(lifetime).Unix()}
}

func (s *Server) serveJWKS(w http.ResponseWriter, r *http.Request) {
	s.jwksFetches.Add(1)
	s.mu.Lock()
	key, kid := s.key, s.kid
	s.mu.Unlock()
	jwk, err := jwkset.NewJWKFromKey(&key.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
		KID: kid, ALG: jwkset.AlgRS256, USE: jwkset.UseSig}})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{jwk.Marshal()}})
}

func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"issuer": s.Issuer(), "jwks_uri": s.JWKSURL(), "token_endpoint": s.TokenURL()})
}

// serveToken grants grant_type=client_credentials to a registered client,
// authenticated with HTTP Basic (client_secret_basic) or form fields
// (client_secret_post). The token's sub is the client id, its scope the
// requested scope.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
		oauthError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	if r.PostForm.Get("grant_type") != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type")
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	want, known := s.clients[id]
	key, kid := s.key, s.kid
	s.mu.Unlock()
	if !known || want != secret {
		oauthError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	claims := s.Claims(id, s.TokenLifetime)
	if sc := strings.TrimSpace(r.PostForm.Get("scope")); sc != "" {
		claims["scope"] = sc
	}
	tok, err := SignWith(key, kid, claims)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer",
		"expires_in": int(s.TokenLifetime / time.Second)})
}

func oauthError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// HTTPGet fetches a URL of the provider (a test reads the JWKS to save it
// as a file).
func (s *Server) HTTPGet(u string) ([]byte, error) {
	resp, err := s.srv.Client().Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
