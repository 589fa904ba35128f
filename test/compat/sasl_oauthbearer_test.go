package compat

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/testing/oidc"
)

const oauthLoginModule = `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;`

// unsecuredJWT is an "alg":"none" token, as Kafka's unsecured login
// handler and librdkafka's enable.sasl.oauthbearer.unsecure.jwt build.
func unsecuredJWT(t *testing.T, sub string, exp time.Time) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none"}) + "." +
		enc(map[string]any{"sub": sub, "iat": time.Now().Unix(), "exp": exp.Unix()}) + "."
}

// TestSASLOAuthBearerUnsecured: OAUTHBEARER with Kafka's default,
// unsecured validator, from franz-go, librdkafka and kcat; an expired
// token is refused with SASL_AUTHENTICATION_FAILED.
func TestSASLOAuthBearerUnsecured(t *testing.T) {
	t.Parallel()
	b := startSASLBroker(t, "OAUTHBEARER", map[string]string{"sasl.jaas.config": oauthLoginModule}, nil)
	librdkafka := map[string]string{
		"security.protocol":                    "SASL_PLAINTEXT",
		"sasl.mechanisms":                      "OAUTHBEARER",
		"enable.sasl.oauthbearer.unsecure.jwt": "true",
		"sasl.oauthbearer.config":              "principal=alice",
	}
	t.Run("franz-go", func(t *testing.T) {
		b.franzRoundTrip(t, oauth.Auth{Token: unsecuredJWT(t, "alice", time.Now().Add(time.Hour))}.AsMechanism(), 50)
	})
	t.Run("librdkafka", func(t *testing.T) { b.librdkafkaRoundTrip(t, librdkafka) })
	t.Run("kcat", func(t *testing.T) { b.kcatRoundTrip(t, librdkafka) })
	t.Run("expired token", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.sasl), kgo.RetryTimeout(5*time.Second),
			kgo.SASL(oauth.Auth{Token: unsecuredJWT(t, "alice", time.Now().Add(-time.Minute))}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		err = cl.Ping(ctx)
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("expired token: %v, want SASL_AUTHENTICATION_FAILED", err)
		}
	})
}

// TestSASLOAuthBearerOIDC: KIP-768 on both sides. The broker validates
// RS256 tokens against the test provider's JWKS (audience and issuer
// checked); librdkafka and kcat fetch their tokens themselves with
// sasl.oauthbearer.method=oidc (client credentials), franz-go with a token
// of the provider.
func TestSASLOAuthBearerOIDC(t *testing.T) {
	t.Parallel()
	idp := oidc.Start(t, "vltava")
	idp.AddClient("orders-service", "orders-secret")
	b := startSASLBroker(t, "OAUTHBEARER", map[string]string{
		"sasl.jaas.config":                   oauthLoginModule,
		"sasl.server.callback.handler.class": "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
	}, map[string]string{
		"sasl.oauthbearer.jwks.endpoint.url": idp.JWKSURL(),
		"sasl.oauthbearer.expected.audience": idp.Audience,
		"sasl.oauthbearer.expected.issuer":   idp.Issuer(),
	})
	librdkafka := map[string]string{
		"security.protocol":                   "SASL_PLAINTEXT",
		"sasl.mechanisms":                     "OAUTHBEARER",
		"sasl.oauthbearer.method":             "oidc",
		"sasl.oauthbearer.client.id":          "orders-service",
		"sasl.oauthbearer.client.secret":      "orders-secret",
		"sasl.oauthbearer.token.endpoint.url": idp.TokenURL(),
		"sasl.oauthbearer.scope":              "kafka",
	}
	t.Run("franz-go", func(t *testing.T) {
		b.franzRoundTrip(t, oauth.Auth{Token: idp.Sign(t, idp.Claims("orders-service", time.Hour))}.AsMechanism(), 50)
	})
	// Debian's librdkafka lacks the oidc method; the script then fetches
	// tokens from the same endpoint in an oauth_cb (python/sasl_oidc.py).
	t.Run("librdkafka", func(t *testing.T) { b.librdkafkaRoundTrip(t, librdkafka) })
	t.Run("kcat", func(t *testing.T) {
		skipUnlessKcatHasOIDC(t)
		b.kcatRoundTrip(t, librdkafka)
	})
}
