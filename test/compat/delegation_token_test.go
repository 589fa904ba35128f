package compat

import (
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestFranzDelegationTokens (KIP-48) with franz-go's kadm and its SCRAM
// token authentication (scram.Auth.IsToken): alice, over SASL_SSL with
// SCRAM, creates a token; a client authenticating with the token (its id
// and base64 HMAC, tokenauth=true) produces and consumes as alice's
// principal, with alice's ACLs and no more; the token cannot create tokens;
// PLAINTEXT cannot request tokens; carol may not create a token for alice,
// renew alice's token or see it, until alice names her a renewer of
// another; alice renews, then expires the token, and authenticating with it fails.
func TestFranzDelegationTokens(t *testing.T) {
	sb := startSecureBroker(t,
		WithOverride("authorizer.class.name", standardAuthorizer),
		WithOverride("super.users", "User:ANONYMOUS"), // the harness's PLAINTEXT admin
		WithOverride("delegation.token.secret.key", "a-secret-every-node-shares"),
		WithOverride("delegation.token.expiry.time.ms", "600000"),
		WithOverride("delegation.token.max.lifetime.ms", "3600000"),
	)
	ctx := testContext(t, 2*time.Minute)
	adm := newAdmin(t, sb.Broker)
	topic, other := uniqueTopic(t), uniqueTopic(t)+"-other"
	group := topic + "-group"
	createTopic(t, adm, topic, 1, nil)
	createTopic(t, adm, other, 1, nil)
	for _, a := range []*kadm.ACLBuilder{
		kadm.NewACLs().Topics(topic).Allow("User:alice").Operations(kadm.OpWrite, kadm.OpRead),
		kadm.NewACLs().Groups(group).Allow("User:alice").Operations(kadm.OpRead),
	} {
		res, err := adm.CreateACLs(ctx, a.ResourcePatternType(kadm.ACLPatternLiteral))
		if err == nil {
			for _, r := range res {
				err = errors.Join(err, r.Err)
			}
		}
		if err != nil {
			t.Fatalf("CreateAcls: %v", err)
		}
	}
	saslSSL := func(opts ...kgo.Opt) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false))}, opts...)
	}
	alice := kadm.NewClient(newClient(t, sb.Broker, saslSSL(kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha512Mechanism()))...))
	carol := kadm.NewClient(newClient(t, sb.Broker, saslSSL(kgo.SASL(plain.Auth{User: sb.plainUser, Pass: sb.plainPass}.AsMechanism()))...))

	if _, err := adm.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("CreateDelegationToken over PLAINTEXT: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}
	if _, err := carol.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Owner: &kadm.Principal{Type: "User", Name: "alice"}}); !errors.Is(err, kerr.DelegationTokenAuthorizationFailed) {
		t.Errorf("carol creating a token for alice: %v, want DELEGATION_TOKEN_AUTHORIZATION_FAILED", err)
	}
	before := time.Now()
	tok, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{MaxLifetime: 30 * time.Minute})
	if err != nil {
		t.Fatalf("CreateDelegationToken as alice: %v", err)
	}
	if tok.Owner.Name != "alice" || tok.TokenRequesterPrincipal.Name != "alice" || tok.TokenID == "" || len(tok.HMAC) != 64 {
		t.Fatalf("token %+v", tok)
	}
	if got := tok.MaxTimestamp.Sub(tok.IssueTimestamp); got != 30*time.Minute {
		t.Errorf("max life %v, want the requested 30m (below delegation.token.max.lifetime.ms)", got)
	}
	if got := tok.ExpiryTimestamp.Sub(tok.IssueTimestamp); got != 10*time.Minute {
		t.Errorf("expiry after %v, want delegation.token.expiry.time.ms (10m)", got)
	}
	if tok.IssueTimestamp.Before(before.Add(-time.Second)) {
		t.Errorf("issued at %v, before the request (%v)", tok.IssueTimestamp, before)
	}

	// The token authenticates as alice.
	tokenAuth := kgo.SASL(scram.Auth{User: tok.TokenID, Pass: base64.StdEncoding.EncodeToString(tok.HMAC), IsToken: true}.AsSha256Mechanism())
	prod := newClient(t, sb.Broker, saslSSL(tokenAuth, kgo.DefaultProduceTopic(topic))...)
	for _, v := range []string{"t1", "t2", "t3"} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce with the token: %v", err)
		}
	}
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: other, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("produce with the token to a topic alice may not write: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	cons := newClient(t, sb.Broker, saslSSL(tokenAuth, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))...)
	for i, r := range consume(t, cons, 3, 30*time.Second) {
		if want := []string{"t1", "t2", "t3"}[i]; string(r.Value) != want {
			t.Fatalf("record %d = %q, want %q", i, r.Value, want)
		}
	}
	if _, err := kadm.NewClient(prod).CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenRequestNotAllowed) {
		t.Errorf("a token creating a token: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", err)
	}

	// Describe: the owner sees it, carol does not.
	if ts, err := alice.DescribeDelegationTokens(ctx); err != nil || len(ts) != 1 || ts[0].TokenID != tok.TokenID || string(ts[0].HMAC) != string(tok.HMAC) {
		t.Errorf("alice describes %+v, %v; want her token", ts, err)
	}
	if ts, err := carol.DescribeDelegationTokens(ctx); err != nil || len(ts) != 0 {
		t.Errorf("carol describes %+v, %v; want no token", ts, err)
	}
	// Renew: carol may not; alice may, up to the max timestamp.
	if _, err := carol.RenewDelegationToken(ctx, tok.HMAC, time.Minute); !errors.Is(err, kerr.DelegationTokenOwnerMismatch) {
		t.Errorf("carol renewing alice's token: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", err)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("not an hmac"), time.Minute); !errors.Is(err, kerr.DelegationTokenNotFound) {
		t.Errorf("renewing an unknown HMAC: %v, want DELEGATION_TOKEN_NOT_FOUND", err)
	}
	exp, err := alice.RenewDelegationToken(ctx, tok.HMAC, 2*time.Minute)
	if err != nil {
		t.Fatalf("alice renewing: %v", err)
	}
	if d := time.Until(exp); d > 2*time.Minute+time.Second || d < time.Minute {
		t.Errorf("renewed to expire in %v, want about the 2m asked", d)
	}
	if ts, err := alice.DescribeDelegationTokens(ctx, kadm.Principal{Type: "User", Name: "alice"}); err != nil || len(ts) != 1 || !ts[0].ExpiryTimestamp.Equal(exp) {
		t.Errorf("after renewal alice describes %+v, %v; want expiry %v", ts, err, exp)
	}

	// A renewer named at creation may renew, and sees the token.
	tok2, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{Renewers: []kadm.Principal{{Type: "User", Name: sb.plainUser}}})
	if err != nil {
		t.Fatalf("CreateDelegationToken with a renewer: %v", err)
	}
	if _, err := carol.RenewDelegationToken(ctx, tok2.HMAC, time.Minute); err != nil {
		t.Errorf("carol renewing a token naming her a renewer: %v", err)
	}
	if ts, err := carol.DescribeDelegationTokens(ctx); err != nil || len(ts) != 1 || ts[0].TokenID != tok2.TokenID {
		t.Errorf("carol describes %+v, %v; want the token naming her", ts, err)
	}

	// Expire at once: the token no longer authenticates.
	if _, err := alice.ExpireDelegationToken(ctx, tok.HMAC, -time.Millisecond); err != nil {
		t.Fatalf("alice expiring: %v", err)
	}
	if ts, err := alice.DescribeDelegationTokens(ctx); err != nil || len(ts) != 1 || ts[0].TokenID != tok2.TokenID {
		t.Errorf("after expiry alice describes %+v, %v; want only her second token", ts, err)
	}
	cl, err := kgo.NewClient(saslSSL(tokenAuth, kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cl.Ping(pctx); err == nil || !strings.Contains(err.Error(), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("authenticating with the expired token: %v, want SASL_AUTHENTICATION_FAILED", err)
	}
}

// TestDelegationTokensDisabled: without delegation.token.secret.key every
// token API answers DELEGATION_TOKEN_AUTH_DISABLED.
func TestDelegationTokensDisabled(t *testing.T) {
	sb := startSecureBroker(t)
	ctx := testContext(t, 30*time.Second)
	alice := kadm.NewClient(newClient(t, sb.Broker, kgo.SeedBrokers(sb.saslSSL), kgo.DialTLSConfig(sb.clientTLS(t, false)),
		kgo.SASL(scram.Auth{User: sb.scramUser, Pass: sb.scramPass}.AsSha256Mechanism())))
	if _, err := alice.CreateDelegationToken(ctx, kadm.CreateDelegationToken{}); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("CreateDelegationToken: %v", err)
	}
	if _, err := alice.RenewDelegationToken(ctx, []byte("x"), time.Minute); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("RenewDelegationToken: %v", err)
	}
	if _, err := alice.ExpireDelegationToken(ctx, []byte("x"), time.Minute); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("ExpireDelegationToken: %v", err)
	}
	if _, err := alice.DescribeDelegationTokens(ctx); !errors.Is(err, kerr.DelegationTokenAuthDisabled) {
		t.Errorf("DescribeDelegationToken: %v", err)
	}
}
