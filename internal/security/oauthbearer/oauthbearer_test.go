package oauthbearer

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/testing/freeport"
	"github.com/vltava/vltava/internal/testing/oidc"
	"github.com/vltava/vltava/internal/testing/poll"
)

const unsecuredJAAS = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="admin";`

func lookupOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// unsecuredToken builds an "alg":"none" JWT, as Kafka's
// OAuthBearerUnsecuredLoginCallbackHandler and librdkafka's unsecured
// token do.
func unsecuredToken(t *testing.T, claims map[string]any) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]any{"alg": "none"}) + "." + enc(claims) + "."
}

// authenticate runs one exchange between franz-go's OAUTHBEARER client and
// the mechanism, as the connection code would with SaslAuthenticate.
func authenticate(t *testing.T, m sasl.Mechanism, auth oauth.Auth) (sasl.Exchange, error) {
	t.Helper()
	ctx := context.Background()
	sess, msg, err := auth.AsMechanism().Authenticate(ctx, "127.0.0.1:9092")
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	ex, err := m.Start(sasl.ConnInfo{Listener: "SASL_PLAINTEXT"})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		srv, done, err := ex.Next(ctx, msg)
		if err != nil {
			return ex, err
		}
		if done {
			return ex, nil
		}
		cdone, cmsg, err := sess.Challenge(srv)
		if err != nil {
			t.Fatalf("client gave up instead of acknowledging the server's error: %v", err)
		}
		if cdone {
			t.Fatalf("client done before the server")
		}
		msg = cmsg
	}
	t.Fatal("exchange did not end")
	return nil, nil
}

func wantFailure(t *testing.T, err error, status string) {
	t.Helper()
	if !errors.Is(err, sasl.ErrAuthentication) {
		t.Fatalf("err = %v, want an authentication failure", err)
	}
	if !strings.Contains(err.Error(), `"status":"`+status+`"`) {
		t.Fatalf("err = %q, want the RFC 7628 error status %s", err, status)
	}
}

func TestUnsecuredToken(t *testing.T) {
	m, err := New(lookupOf(map[string]string{"sasl.jaas.config": unsecuredJAAS}))
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	ex, err := authenticate(t, m, oauth.Auth{Token: unsecuredToken(t, map[string]any{
		"sub": "alice", "iat": time.Now().Unix(), "exp": exp.Unix(), "scope": "read write"}),
		Extensions: map[string]string{"traceId": "abc"}})
	if err != nil {
		t.Fatalf("valid unsecured token refused: %v", err)
	}
	if ex.Principal() != security.User("alice") {
		t.Fatalf("principal = %v, want User:alice", ex.Principal())
	}
	if l := ex.Lifetime(); l <= 59*time.Minute || l > time.Hour {
		t.Fatalf("lifetime = %v, want the time to exp (about 1h)", l)
	}
}

func TestUnsecuredTokenRefusals(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name   string
		jaas   string
		token  string
		authz  string
		status string // RFC 7628 status, or "" for a refusal without a challenge
	}{
		{name: "expired", token: unsecuredToken(t, map[string]any{"sub": "a", "exp": now.Add(-time.Minute).Unix()}), status: "invalid_token"},
		{name: "no exp", token: unsecuredToken(t, map[string]any{"sub": "a"}), status: "invalid_token"},
		{name: "no principal", token: unsecuredToken(t, map[string]any{"exp": now.Add(time.Hour).Unix()}), status: "invalid_token"},
		{name: "issued in the future", token: unsecuredToken(t, map[string]any{"sub": "a", "iat": now.Add(time.Hour).Unix(), "exp": now.Add(2 * time.Hour).Unix()}), status: "invalid_token"},
		{name: "exp before iat", token: unsecuredToken(t, map[string]any{"sub": "a", "iat": now.Add(-time.Minute).Unix(), "exp": now.Add(-2 * time.Minute).Unix()}), status: "invalid_token"},
		{name: "signature present", token: unsecuredToken(t, map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix()}) + "sig", status: "invalid_token"},
		{name: "missing required scope",
			jaas:   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="admin write";`,
			token:  unsecuredToken(t, map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix(), "scope": "write"}),
			status: "insufficient_scope"},
		{name: "authorization id of another principal", token: unsecuredToken(t, map[string]any{"sub": "a", "exp": now.Add(time.Hour).Unix()}), authz: "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			jaasCfg := unsecuredJAAS
			if c.jaas != "" {
				jaasCfg = c.jaas
			}
			m, err := New(lookupOf(map[string]string{"sasl.jaas.config": jaasCfg}))
			if err != nil {
				t.Fatal(err)
			}
			_, err = authenticate(t, m, oauth.Auth{Token: c.token, Zid: c.authz})
			if c.status == "" {
				if !errors.Is(err, sasl.ErrAuthentication) {
					t.Fatalf("err = %v, want an authentication failure", err)
				}
				return
			}
			wantFailure(t, err, c.status)
			if c.status == "insufficient_scope" && !strings.Contains(err.Error(), `"scope":"admin write"`) {
				t.Fatalf("err = %q, want the required scope named", err)
			}
		})
	}
}

func TestUnsecuredOptions(t *testing.T) {
	jaasCfg := `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required
		unsecuredValidatorPrincipalClaimName="user" unsecuredValidatorScopeClaimName="roles"
		unsecuredValidatorRequiredScope="admin" unsecuredValidatorAllowableClockSkewMs="120000";`
	m, err := New(lookupOf(map[string]string{"sasl.jaas.config": jaasCfg}))
	if err != nil {
		t.Fatal(err)
	}
	// Expired a minute ago, within the two minutes of skew allowed; the
	// scope claim is a list.
	ex, err := authenticate(t, m, oauth.Auth{Token: unsecuredToken(t, map[string]any{
		"user": "bob", "exp": time.Now().Add(-time.Minute).Unix(), "roles": []string{"admin"}})})
	if err != nil {
		t.Fatalf("token within the clock skew refused: %v", err)
	}
	if ex.Principal() != security.User("bob") {
		t.Fatalf("principal = %v, want User:bob from the configured claim", ex.Principal())
	}
}

func TestMalformedInitialResponse(t *testing.T) {
	m, err := New(lookupOf(map[string]string{"sasl.jaas.config": unsecuredJAAS}))
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"", "n,,", "y,,\x01auth=Bearer abc\x01\x01", "n,,\x01\x01", "n,,\x01auth=Basic abc\x01\x01",
		"n,,\x01auth=Bearer abc\x01", "n,,\x01auth=Bearer abc\x01bad key=1\x01\x01", "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01"} {
		ex, _ := m.Start(sasl.ConnInfo{})
		_, done, err := ex.Next(context.Background(), []byte(msg))
		if done || !errors.Is(err, sasl.ErrAuthentication) {
			t.Errorf("%q: done=%v err=%v, want an authentication failure", msg, done, err)
		}
	}
}

func FuzzInitialResponse(f *testing.F) {
	f.Add([]byte("n,a=alice,\x01auth=Bearer abc.def.\x01k=v\x01\x01"))
	f.Add([]byte("n,,\x01auth=Bearer x\x01\x01"))
	v, err := newUnsecuredValidator(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseInitialResponse(b)
		if err != nil {
			return
		}
		if r.token == "" {
			t.Fatalf("accepted %q without a token", b)
		}
		// The validator must refuse or accept any token without panicking;
		// an accepted one names a principal and expires.
		tok, fail := v.validate(context.Background(), r.token, time.Now())
		if fail == nil && (tok.principal == "" || tok.expiry.IsZero()) {
			t.Fatalf("accepted %q without a principal or expiry", r.token)
		}
	})
}

func TestConfigRefusals(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{}, "sasl.jaas.config"},
		{map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required;`}, "OAuthBearerLoginModule"},
		{map[string]string{"sasl.jaas.config": unsecuredJAAS, "sasl.server.callback.handler.class": "com.example.Handler"}, "sasl.server.callback.handler.class"},
		{map[string]string{"sasl.jaas.config": unsecuredJAAS, "sasl.server.callback.handler.class": SecuredHandlerClass}, "sasl.oauthbearer.jwks.endpoint.url"},
		{map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs="x";`}, "unsecuredValidatorAllowableClockSkewMs"},
		{map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required ssl.truststore.location="/ca.jks";`}, "ssl.truststore.location"},
	} {
		_, err := New(lookupOf(c.props))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error naming %s", c.props, err, c.want)
		}
	}
}

// securedMechanism is the KIP-768 validator against a test provider.
func securedMechanism(t *testing.T, idp *oidc.Server, extra map[string]string) *Mechanism {
	t.Helper()
	props := map[string]string{
		"sasl.jaas.config":                   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"sasl.server.callback.handler.class": SecuredHandlerClass,
		keyJWKSURL:                           idp.JWKSURL(),
		keyAudience:                          idp.Audience,
		keyIssuer:                            idp.Issuer(),
	}
	for k, v := range extra {
		props[k] = v
	}
	m, err := newMechanism(lookupOf(props))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestSecuredToken(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, nil)
	ex, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, idp.Claims("svc-orders", 10*time.Minute))})
	if err != nil {
		t.Fatalf("valid signed token refused: %v", err)
	}
	if ex.Principal() != security.User("svc-orders") {
		t.Fatalf("principal = %v", ex.Principal())
	}
	if l := ex.Lifetime(); l <= 9*time.Minute || l > 10*time.Minute {
		t.Fatalf("lifetime = %v, want the time to exp", l)
	}
}

func TestSecuredTokenRefusals(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, map[string]string{keyClockSkew: "0"})
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	with := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		c := idp.Claims("alice", time.Hour)
		mod(c)
		return c
	}
	forged, err := oidc.SignWith(other, "key-1", idp.Claims("alice", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"expired":         idp.Sign(t, with(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Second).Unix() })),
		"wrong audience":  idp.Sign(t, with(func(c jwt.MapClaims) { c["aud"] = "someone-else" })),
		"wrong issuer":    idp.Sign(t, with(func(c jwt.MapClaims) { c["iss"] = "https://evil.example" })),
		"no iat":          idp.Sign(t, with(func(c jwt.MapClaims) { delete(c, "iat") })),
		"no sub":          idp.Sign(t, with(func(c jwt.MapClaims) { delete(c, "sub") })),
		"not yet valid":   idp.Sign(t, with(func(c jwt.MapClaims) { c["nbf"] = time.Now().Add(time.Hour).Unix() })),
		"bad signature":   forged,
		"unsecured token": unsecuredToken(t, idp.Claims("alice", time.Hour)),
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := authenticate(t, m, oauth.Auth{Token: tok})
			wantFailure(t, err, "invalid_token")
		})
	}
}

func TestSecuredClockSkew(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	expired := idp.Claims("alice", time.Hour)
	expired["exp"] = time.Now().Add(-10 * time.Second).Unix()
	tok := idp.Sign(t, expired)
	// Kafka's default sasl.oauthbearer.clock.skew.seconds=30 accepts a
	// token that expired 10 s ago; 5 s of skew does not.
	if _, err := authenticate(t, securedMechanism(t, idp, nil), oauth.Auth{Token: tok}); err != nil {
		t.Fatalf("token within the default 30 s skew refused: %v", err)
	}
	_, err := authenticate(t, securedMechanism(t, idp, map[string]string{keyClockSkew: "5"}), oauth.Auth{Token: tok})
	wantFailure(t, err, "invalid_token")
}

func TestSecuredAudienceWithoutExpectedAudience(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, map[string]string{keyAudience: ""})
	_, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, idp.Claims("alice", time.Hour))})
	wantFailure(t, err, "invalid_token")
	noAud := idp.Claims("alice", time.Hour)
	delete(noAud, "aud")
	if _, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, noAud)}); err != nil {
		t.Fatalf("token without aud refused when no audience is expected: %v", err)
	}
}

func TestSecuredCustomClaims(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, map[string]string{keySubClaim: "client_id", keyAudience: "a, vltava"})
	c := idp.Claims("ignored", time.Hour)
	c["client_id"] = "billing"
	ex, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, c)})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Principal() != security.User("billing") {
		t.Fatalf("principal = %v, want User:billing from sasl.oauthbearer.sub.claim.name", ex.Principal())
	}
}

// TestUnknownKidRefreshesTheJWKS: after the provider rotates its key, the
// first token signed with the new key makes the broker refetch the JWKS,
// and is accepted.
func TestUnknownKidRefreshesTheJWKS(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, nil)
	before := idp.JWKSFetches()
	idp.Rotate(t)
	if _, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, idp.Claims("alice", time.Hour))}); err != nil {
		t.Fatalf("token signed with the rotated key refused: %v", err)
	}
	if idp.JWKSFetches() != before+1 {
		t.Fatalf("JWKS fetched %d times after the rotation, want 1", idp.JWKSFetches()-before)
	}
	// An unknown kid refreshes the set at most once a minute.
	forged, err := oidc.SignWith(mustKey(t), "key-unknown", idp.Claims("alice", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := authenticate(t, m, oauth.Auth{Token: forged})
		wantFailure(t, err, "invalid_token")
	}
	if got := idp.JWKSFetches() - before; got != 2 {
		t.Fatalf("JWKS fetched %d times, want 2 (one per unknown kid a minute)", got)
	}
}

func mustKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestJWKSRefreshedPeriodically(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	securedMechanism(t, idp, map[string]string{keyJWKSRefresh: "20"})
	poll.True(t, 10*time.Second, "JWKS refetched every sasl.oauthbearer.jwks.endpoint.refresh.ms", func() bool {
		return idp.JWKSFetches() >= 3
	})
}

func TestJWKSUnreachableAtStart(t *testing.T) {
	_, err := New(lookupOf(map[string]string{
		"sasl.jaas.config":                   `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`,
		"sasl.server.callback.handler.class": SecuredHandlerClass,
		keyJWKSURL:                           "http://127.0.0.1:1/jwks",
		keyJWKSBackoff:                       "10",
		keyJWKSBackoffMax:                    "50",
	}))
	if err == nil || !strings.Contains(err.Error(), keyJWKSURL) {
		t.Fatalf("New = %v, want an error naming %s", err, keyJWKSURL)
	}
}

func TestJWKSFromFile(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	resp, err := idp.HTTPGet(idp.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "jwks.json")
	if err := os.WriteFile(path, resp, 0o600); err != nil {
		t.Fatal(err)
	}
	m := securedMechanism(t, idp, map[string]string{keyJWKSURL: "file://" + path})
	if _, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, idp.Claims("alice", time.Hour))}); err != nil {
		t.Fatalf("token refused with a file: JWKS: %v", err)
	}
}

// TestJWKSFetchRetried: a JWKS endpoint failing at first is retried with
// backoff (sasl.oauthbearer.jwks.endpoint.retry.backoff.ms, doubling) within
// sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms, so start-up
// survives it.
func TestJWKSFetchRetried(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	jwks, err := idp.HTTPGet(idp.JWKSURL())
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(jwks)
	}))
	l, err := net.Listen("tcp", freeport.Addr(t))
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	m := securedMechanism(t, idp, map[string]string{keyJWKSURL: srv.URL, keyJWKSBackoff: "5", keyJWKSBackoffMax: "1000"})
	if calls.Load() != 3 {
		t.Fatalf("JWKS requested %d times, want 3 (two failures retried)", calls.Load())
	}
	if _, err := authenticate(t, m, oauth.Auth{Token: idp.Sign(t, idp.Claims("alice", time.Hour))}); err != nil {
		t.Fatal(err)
	}
}

// TestSecuredConcurrentAuthentications: one mechanism serves every
// connection of a listener at once, across a key rotation (run with -race).
func TestSecuredConcurrentAuthentications(t *testing.T) {
	idp := oidc.Start(t, "vltava")
	m := securedMechanism(t, idp, nil)
	old := idp.Sign(t, idp.Claims("old-key-user", time.Hour))
	idp.Rotate(t)
	rotated := idp.Sign(t, idp.Claims("new-key-user", time.Hour))
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok, want := rotated, "new-key-user"
			if i%2 == 0 {
				tok, want = old, "old-key-user"
			}
			ex, _ := m.Start(sasl.ConnInfo{})
			_, done, err := ex.Next(context.Background(), []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
			switch {
			case want == "new-key-user" && (!done || err != nil || ex.Principal() != security.User(want)):
				errs <- fmt.Errorf("token of the rotated key: done=%v err=%v principal=%v", done, err, ex.Principal())
			case want == "old-key-user" && done && ex.Principal() != security.User(want):
				errs <- fmt.Errorf("token of the old key authenticated as %v", ex.Principal())
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRefusalReasonForTheLog: the client sees only the RFC 7628 status;
// the broker's log gets why.
func TestRefusalReasonForTheLog(t *testing.T) {
	m, err := New(lookupOf(map[string]string{"sasl.jaas.config": unsecuredJAAS}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = authenticate(t, m, oauth.Auth{Token: unsecuredToken(t, map[string]any{"sub": "a", "exp": time.Now().Add(-time.Hour).Unix()})})
	var r interface{ Reason() string }
	if !errors.As(err, &r) || !strings.Contains(r.Reason(), "expired") || strings.Contains(err.Error(), "expired") {
		t.Fatalf("err %q, reason %v: want the expiry in the reason only", err, r)
	}
}
