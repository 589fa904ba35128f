package compat

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"

	"github.com/vltava/vltava/internal/testing/freeport"
)

// TestMetricsAuthentication checks the authentication counters per listener
// and mechanism after one client authenticates over OAUTHBEARER and one is
// refused (an expired token): successful and failed each count it.
func TestMetricsAuthentication(t *testing.T) {
	t.Parallel()
	admin := freeport.Addr(t)
	b := startSASLBroker(t, "OAUTHBEARER", map[string]string{"sasl.jaas.config": oauthLoginModule},
		map[string]string{"admin.listeners": "http://" + admin})
	base := "http://" + admin
	ping := func(token string) error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.sasl), kgo.RetryTimeout(5*time.Second),
			kgo.SASL(oauth.Auth{Token: token}.AsMechanism()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.Ping(ctx)
	}
	if err := ping(unsecuredJWT(t, "alice", time.Now().Add(time.Hour))); err != nil {
		t.Fatalf("a valid token: %v", err)
	}
	if err := ping(unsecuredJWT(t, "alice", time.Now().Add(-time.Minute))); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("an expired token: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
	labels := map[string]string{"listener": "SASL_PLAINTEXT", "mechanism": "OAUTHBEARER"}
	atLeastOne := func(v float64) bool { return v >= 1 }
	awaitSample(t, base, "kafka_server_socket_server_metrics_successful_authentication_total", labels, atLeastOne, ">= 1")
	failed := awaitSample(t, base, "kafka_server_socket_server_metrics_failed_authentication_total", labels, atLeastOne, ">= 1")
	// franz-go does not retry a refused authentication: one failure.
	if failed != 1 {
		t.Errorf("failed authentications = %v, want 1 (one expired token presented once)", failed)
	}
}
