package broker_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

// callOn sends req as p over a connection of the given security protocol,
// token-authenticated or not.
func (an *authzNode) callOn(protocol string, tokenAuth bool, p security.Principal, req kmsg.Request) kmsg.Response {
	an.t.Helper()
	r := &server.Request{
		Key: req.Key(), Version: req.GetVersion(), ClientID: "token-test", Body: req, Received: time.Now(),
		Conn: &server.ConnInfo{Listener: "PLAINTEXT", SecurityProtocol: protocol, TokenAuthenticated: tokenAuth,
			Remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}, Principal: p},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := an.h.Handle(ctx, r)
	if err != nil {
		an.t.Fatalf("%s as %s: %v", kmsg.NameForKey(req.Key()), p, err)
	}
	return resp
}

func createTokenFor(owner string) *kmsg.CreateDelegationTokenRequest {
	req := versioned(3, kmsg.NewPtrCreateDelegationTokenRequest())
	req.MaxLifetimeMillis = -1
	if owner != "" {
		req.OwnerPrincipalType, req.OwnerPrincipalName = kmsg.StringPtr("User"), kmsg.StringPtr(owner)
	}
	return req
}

// TestDelegationTokenACLs: Kafka's checks of the token APIs. Creating a
// token for another owner needs CREATE_TOKENS on that User resource (a
// DENY wins); a token is described to its owner, and to others with
// DESCRIBE on its DelegationToken resource or DESCRIBE_TOKENS on its
// owner's User resource; PLAINTEXT, anonymous SSL and token-authenticated
// connections may not request tokens; owners and renewers must be Users.
func TestDelegationTokenACLs(t *testing.T) {
	an := startAuthzNode(t, map[string]string{"delegation.token.secret.key": "table-secret"})
	carol, bob := security.User("carol"), security.User("bob")
	sasl := func(p security.Principal, req kmsg.Request) kmsg.Response {
		return an.callOn("SASL_SSL", false, p, req)
	}
	createCode := func(p security.Principal, owner string) int16 {
		return sasl(p, createTokenFor(owner)).(*kmsg.CreateDelegationTokenResponse).ErrorCode
	}
	for _, c := range []struct {
		name     string
		protocol string
		token    bool
		p        security.Principal
	}{
		{"PLAINTEXT", "PLAINTEXT", false, alice},
		{"SSL without a certificate", "SSL", false, security.Anonymous},
		{"a token-authenticated connection", "SASL_SSL", true, alice},
	} {
		resp := an.callOn(c.protocol, c.token, c.p, createTokenFor("")).(*kmsg.CreateDelegationTokenResponse)
		if resp.ErrorCode != kerr.DelegationTokenRequestNotAllowed.Code {
			t.Errorf("%s: %v, want DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", c.name, kerr.ErrorForCode(resp.ErrorCode))
		}
	}
	if got := an.callOn("SSL", false, alice, createTokenFor("")).(*kmsg.CreateDelegationTokenResponse).ErrorCode; got != 0 {
		t.Errorf("SSL with a client certificate's principal: %v", kerr.ErrorForCode(got))
	}
	bad := createTokenFor("")
	r := kmsg.NewCreateDelegationTokenRequestRenewer()
	r.PrincipalType, r.PrincipalName = "Group", "x"
	bad.Renewers = append(bad.Renewers, r)
	if got := sasl(alice, bad).(*kmsg.CreateDelegationTokenResponse).ErrorCode; got != kerr.InvalidPrincipalType.Code {
		t.Errorf("a Group renewer: %v, want INVALID_PRINCIPAL_TYPE", kerr.ErrorForCode(got))
	}

	// CREATE_TOKENS on User:bob.
	if got := createCode(alice, "bob"); got != kerr.DelegationTokenAuthorizationFailed.Code {
		t.Errorf("alice for bob without CREATE_TOKENS: %v", kerr.ErrorForCode(got))
	}
	grant := acl.Binding{ResourceType: acl.ResourceUser, ResourceName: "bob", PatternType: acl.PatternLiteral,
		Principal: alice.String(), Host: "*", Operation: acl.OpCreateTokens, Permission: acl.PermissionAllow}
	deny := grant
	deny.Permission = acl.PermissionDeny
	an.addACLs(grant, deny)
	if got := createCode(alice, "bob"); got != kerr.DelegationTokenAuthorizationFailed.Code {
		t.Errorf("alice for bob with CREATE_TOKENS and a DENY of it: %v", kerr.ErrorForCode(got))
	}
	an.clearACLs()
	an.addACLs(grant)
	created := sasl(alice, createTokenFor("bob")).(*kmsg.CreateDelegationTokenResponse)
	if created.ErrorCode != 0 || created.PrincipalName != "bob" || created.TokenRequesterPrincipalName != "alice" {
		t.Fatalf("alice for bob with CREATE_TOKENS: %v owner %s requester %s", kerr.ErrorForCode(created.ErrorCode), created.PrincipalName, created.TokenRequesterPrincipalName)
	}

	described := func(p security.Principal) int {
		return len(sasl(p, versioned(3, kmsg.NewPtrDescribeDelegationTokenRequest())).(*kmsg.DescribeDelegationTokenResponse).TokenDetails)
	}
	if n := described(bob); n != 1 {
		t.Errorf("the owner describes %d tokens, want 1", n)
	}
	if n := described(carol); n != 0 {
		t.Errorf("carol, without ACLs, describes %d tokens", n)
	}
	an.addACLs(acl.Binding{ResourceType: acl.ResourceDelegationToken, ResourceName: created.TokenID, PatternType: acl.PatternLiteral,
		Principal: carol.String(), Host: "*", Operation: acl.OpDescribe, Permission: acl.PermissionAllow})
	if n := described(carol); n != 1 {
		t.Errorf("carol with DESCRIBE on the token describes %d tokens", n)
	}
	an.clearACLs()
	an.addACLs(acl.Binding{ResourceType: acl.ResourceUser, ResourceName: "bob", PatternType: acl.PatternLiteral,
		Principal: carol.String(), Host: "*", Operation: acl.OpDescribeTokens, Permission: acl.PermissionAllow})
	if n := described(carol); n != 1 {
		t.Errorf("carol with DESCRIBE_TOKENS on User:bob describes %d tokens", n)
	}

	// Renewal is the owner's (or a renewer's): alice requested it but
	// does not own it.
	renew := versioned(2, kmsg.NewPtrRenewDelegationTokenRequest())
	renew.HMAC, renew.RenewTimeMillis = created.HMAC, 1000
	if got := sasl(alice, renew).(*kmsg.RenewDelegationTokenResponse).ErrorCode; got != kerr.DelegationTokenOwnerMismatch.Code {
		t.Errorf("the requester renewing: %v, want DELEGATION_TOKEN_OWNER_MISMATCH", kerr.ErrorForCode(got))
	}
	if resp := sasl(bob, renew).(*kmsg.RenewDelegationTokenResponse); resp.ErrorCode != 0 || resp.ExpiryTimestamp > time.Now().Add(2*time.Second).UnixMilli() {
		t.Errorf("the owner renewing for 1s: %v, expiry %d", kerr.ErrorForCode(resp.ErrorCode), resp.ExpiryTimestamp)
	}
}
