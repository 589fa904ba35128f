package oauthbearer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/testing/poll"
)

func TestUnsecuredLoginTokenClaims(t *testing.T) {
	now := time.Unix(1700000000, 0)
	tok, err := unsecuredLoginToken(map[string]string{
		"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": ",read,write",
		"unsecuredLoginNumberClaim_n": "7", "unsecuredLoginLifetimeSeconds": "60"}, now)
	if err != nil {
		t.Fatal(err)
	}
	server, err := New(lookupOf(map[string]string{
		"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorRequiredScope="write";`}))
	if err != nil {
		t.Fatal(err)
	}
	ex, _ := server.Start(sasl.ConnInfo{})
	_, done, err := ex.Next(context.Background(), []byte("n,,\x01auth=Bearer "+tok+"\x01\x01"))
	// The token expired long ago (now is 2023): refused, with the error
	// challenge, which shows the token parsed.
	if done || err != nil {
		t.Fatalf("done=%v err=%v, want the error challenge for an expired token", done, err)
	}
	if !errors.Is(func() error { _, _, err := ex.Next(context.Background(), []byte{1}); return err }(), sasl.ErrAuthentication) {
		t.Fatal("expired unsecured token accepted")
	}
	fresh, err := unsecuredLoginToken(map[string]string{"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": ",read,write"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ex, _ = server.Start(sasl.ConnInfo{})
	if _, done, err := ex.Next(context.Background(), []byte("n,,\x01auth=Bearer "+fresh+"\x01\x01")); !done || err != nil {
		t.Fatalf("fresh token with the list scope: done=%v err=%v", done, err)
	}
}

// TestUnsecuredClientMintsFreshTokens: the unsecured login makes a new
// token for every authentication (re-authentication included), so a
// long-lived client never presents an expired one.
func TestUnsecuredClientMintsFreshTokens(t *testing.T) {
	m, err := NewClient(lookupOf(map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="alice";`}))
	if err != nil {
		t.Fatal(err)
	}
	first := func() string {
		_, msg, err := m.Authenticate(context.Background(), "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		return string(msg)
	}
	a := first()
	poll.True(t, 5*time.Second, "a later authentication to carry a new token", func() bool { return first() != a })
}
