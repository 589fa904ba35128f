package broker

// Delegation tokens (KIP-48): CreateDelegationToken (38),
// RenewDelegationToken (39), ExpireDelegationToken (40) and
// DescribeDelegationToken (41), as Kafka's KRaft brokers and controller
// answer them.
//
// Without delegation.token.secret.key (or the deprecated
// delegation.token.master.key) every one answers
// DELEGATION_TOKEN_AUTH_DISABLED. Tokens may not be requested over
// PLAINTEXT, over SSL without a client certificate, or by a connection
// that itself authenticated with a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED).
// Create, Renew and Expire change the metadata log: a broker forwards them
// to the active controller in an Envelope with the client's principal
// (authorize_envelope.go), where the token is built (a random id; the
// max timestamp now + min(max_lifetime_ms, delegation.token.max.lifetime.ms);
// the expiry now + delegation.token.expiry.time.ms, at most the max) and
// committed as a DelegationTokenRecord; Renew and Expire find the token by
// its HMAC and are made by its owner or a renewer only
// (DELEGATION_TOKEN_OWNER_MISMATCH), before it expired
// (DELEGATION_TOKEN_EXPIRED). Creating a token for another owner needs
// CREATE_TOKENS on that User resource (DELEGATION_TOKEN_AUTHORIZATION_FAILED);
// owners and renewers must be User principals (INVALID_PRINCIPAL_TYPE).
// Describe is answered from this node's image: a token is listed to its
// owner and renewers, and to principals with DESCRIBE on its
// DelegationToken resource or DESCRIBE_TOKENS on its owner's User
// resource. The active controller removes expired tokens every
// delegation.token.expiry.check.interval.ms (RemoveDelegationTokenRecord).

import (
	"context"
	"crypto/hmac"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/security/delegation"
	"github.com/vltava/vltava/internal/server"
)

func init() {
	register(kmsg.CreateDelegationToken, 1, 3, (*Broker).handleCreateDelegationToken)
	register(kmsg.RenewDelegationToken, 1, 2, (*Broker).handleRenewDelegationToken)
	register(kmsg.ExpireDelegationToken, 1, 2, (*Broker).handleExpireDelegationToken)
	register(kmsg.DescribeDelegationToken, 1, 3, (*Broker).handleDescribeDelegationToken)
	for _, k := range []kmsg.Key{kmsg.CreateDelegationToken, kmsg.RenewDelegationToken, kmsg.ExpireDelegationToken} {
		controllerAPIs[int16(k)] = true
	}
}

// tokenSecret is delegation.token.secret.key, else the deprecated
// delegation.token.master.key; "" when tokens are disabled.
func (b *Broker) tokenSecret() string {
	if b.cfg.DelegationTokenSecretKey != "" {
		return b.cfg.DelegationTokenSecretKey
	}
	return b.cfg.DelegationTokenMasterKey
}

// tokenRequestRefused is the error of a token request the connection may
// not make (Kafka's allowTokenRequests), nil if it may: none over
// PLAINTEXT or anonymous SSL, none from a token-authenticated connection.
// In-process requests and enveloped ones (checked by the forwarding
// broker, which knew the connection) pass on protocol.
func (b *Broker) tokenRequestRefused(r *server.Request) error {
	if b.tokenSecret() == "" {
		return kerr.DelegationTokenAuthDisabled
	}
	if r.Conn == nil {
		return nil
	}
	if r.Conn.TokenAuthenticated {
		return kerr.DelegationTokenRequestNotAllowed
	}
	if r.ClientID == controller.ForwardClientID {
		return nil
	}
	switch r.Conn.SecurityProtocol {
	case "", "PLAINTEXT":
		return kerr.DelegationTokenRequestNotAllowed
	case "SSL":
		if r.Conn.Principal == security.Anonymous {
			return kerr.DelegationTokenRequestNotAllowed
		}
	}
	return nil
}

// tokenPrincipal is r's principal in "Type:Name" form (the control plane's
// for in-process requests, which own no tokens).
func tokenPrincipal(r *server.Request) security.Principal {
	if r.Conn == nil {
		return controlPlanePrincipal
	}
	return r.Conn.Principal
}

func (b *Broker) handleCreateDelegationToken(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	requester := tokenPrincipal(r)
	owner := requester
	if req.OwnerPrincipalName != nil && *req.OwnerPrincipalName != "" {
		owner = security.Principal{Name: *req.OwnerPrincipalName}
		if req.OwnerPrincipalType != nil {
			owner.Type = *req.OwnerPrincipalType
		}
	}
	resp.PrincipalType, resp.PrincipalName = owner.Type, owner.Name
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = requester.Type, requester.Name
	fail := func(err *kerr.Error) (kmsg.Response, error) {
		resp.ErrorCode = err.Code
		return resp, nil
	}
	if err := b.tokenRequestRefused(r); err != nil {
		return fail(err.(*kerr.Error))
	}
	if owner.Type != security.UserType {
		return fail(kerr.InvalidPrincipalType)
	}
	for _, rn := range req.Renewers {
		if rn.PrincipalType != security.UserType {
			return fail(kerr.InvalidPrincipalType)
		}
	}
	if owner != requester && !b.allowed(r, acl.ResourceUser, owner.Name, acl.OpCreateTokens) {
		return fail(kerr.DelegationTokenAuthorizationFailed)
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if fr, isResp := fwd.(*kmsg.CreateDelegationTokenResponse); isResp && fr.ErrorCode == 0 {
			b.awaitImage(ctx, func(img *metadata.Image) bool { _, ok := img.DelegationToken(fr.TokenID); return ok })
		}
		return fwd, nil
	}
	if b.controller == nil || !b.controllerIsLocal() {
		return fail(kerr.NotController)
	}
	now := time.Now().UnixMilli()
	maxLife := b.cfg.DelegationTokenMaxLifetimeMs
	if req.MaxLifetimeMillis > 0 {
		maxLife = min(maxLife, req.MaxLifetimeMillis)
	}
	t := metadata.DelegationToken{
		TokenID:        metadata.NewUuid().String(),
		Owner:          owner.String(),
		Requester:      requester.String(),
		IssueTimestamp: now,
		MaxTimestamp:   now + maxLife,
	}
	t.ExpirationTimestamp = min(t.MaxTimestamp, now+b.cfg.DelegationTokenExpiryTimeMs)
	for _, rn := range req.Renewers {
		t.Renewers = append(t.Renewers, security.Principal{Type: rn.PrincipalType, Name: rn.PrincipalName}.String())
	}
	if err := b.controller.CreateDelegationToken(ctx, t); err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	b.awaitImage(ctx, func(img *metadata.Image) bool { _, ok := img.DelegationToken(t.TokenID); return ok })
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = t.IssueTimestamp, t.ExpirationTimestamp, t.MaxTimestamp
	resp.TokenID = t.TokenID
	resp.HMAC = delegation.HMAC(b.tokenSecret(), t.TokenID)
	return resp, nil
}

// tokenByHMAC finds the token whose HMAC is h.
func (b *Broker) tokenByHMAC(h []byte) (metadata.DelegationToken, bool) {
	secret := b.tokenSecret()
	for _, t := range b.meta.Image().DelegationTokens() {
		if hmac.Equal(delegation.HMAC(secret, t.TokenID), h) {
			return t, true
		}
	}
	return metadata.DelegationToken{}, false
}

// changeToken runs a renewal or an expiry (the controller's change) of the
// token with HMAC h, returning the new expiry. awaited reports whether the
// change is visible in this node's image.
func (b *Broker) changeToken(ctx context.Context, r *server.Request, h []byte, period int64,
	change func(context.Context, rules.TokenChange) (int64, error)) (int64, error) {
	if b.controller == nil || !b.controllerIsLocal() {
		return 0, kerr.NotController
	}
	t, ok := b.tokenByHMAC(h)
	if !ok {
		return 0, kerr.DelegationTokenNotFound
	}
	expiry, err := change(ctx, rules.TokenChange{TokenID: t.TokenID, Principal: tokenPrincipal(r).String(), Now: time.Now().UnixMilli(), Period: period})
	if err != nil {
		return 0, err
	}
	b.awaitImage(ctx, func(img *metadata.Image) bool { return tokenExpiryIs(img, t.TokenID, expiry) })
	return expiry, nil
}

// tokenExpiryIs reports whether img shows the token expiring at expiry (or
// gone, for a negative expiry).
func tokenExpiryIs(img *metadata.Image, id string, expiry int64) bool {
	t, ok := img.DelegationToken(id)
	if expiry < 0 {
		return !ok
	}
	return ok && t.ExpirationTimestamp == expiry
}

func (b *Broker) handleRenewDelegationToken(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.RenewDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.RenewDelegationTokenResponse)
	if err := b.tokenRequestRefused(r); err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if fr, isResp := fwd.(*kmsg.RenewDelegationTokenResponse); isResp && fr.ErrorCode == 0 {
			if t, ok := b.tokenByHMAC(req.HMAC); ok {
				b.awaitImage(ctx, func(img *metadata.Image) bool { return tokenExpiryIs(img, t.TokenID, fr.ExpiryTimestamp) })
			}
		}
		return fwd, nil
	}
	period := b.cfg.DelegationTokenExpiryTimeMs
	if req.RenewTimeMillis > 0 {
		period = min(period, req.RenewTimeMillis)
	}
	expiry, err := b.changeToken(ctx, r, req.HMAC, period, b.controller.RenewDelegationToken)
	resp.ErrorCode = b.errCode(err)
	resp.ExpiryTimestamp = expiry
	return resp, nil
}

func (b *Broker) handleExpireDelegationToken(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ExpireDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	if err := b.tokenRequestRefused(r); err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	if fwd, ok := b.forwardToController(ctx, r); ok {
		if fr, isResp := fwd.(*kmsg.ExpireDelegationTokenResponse); isResp && fr.ErrorCode == 0 {
			// The token is known here by its HMAC until the removal
			// or the new expiry arrives.
			if t, ok := b.tokenByHMAC(req.HMAC); ok {
				b.awaitImage(ctx, func(img *metadata.Image) bool { return tokenExpiryIs(img, t.TokenID, fr.ExpiryTimestamp) })
			}
		}
		return fwd, nil
	}
	expiry, err := b.changeToken(ctx, r, req.HMAC, req.ExpiryPeriodMillis, b.controller.ExpireDelegationToken)
	resp.ErrorCode = b.errCode(err)
	resp.ExpiryTimestamp = expiry
	return resp, nil
}

func (b *Broker) handleDescribeDelegationToken(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.DescribeDelegationTokenRequest)
	resp := req.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	if err := b.tokenRequestRefused(r); err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	if req.Owners != nil && len(req.Owners) == 0 {
		return resp, nil // an empty owner list matches no token
	}
	owners := map[string]bool{}
	for _, o := range req.Owners {
		owners[security.Principal{Type: o.PrincipalType, Name: o.PrincipalName}.String()] = true
	}
	me := tokenPrincipal(r).String()
	secret := b.tokenSecret()
	for _, t := range b.meta.Image().DelegationTokens() {
		if len(owners) > 0 && !owners[t.Owner] {
			continue
		}
		owner, err := security.ParsePrincipal(t.Owner)
		if err != nil {
			continue
		}
		if !rules.MayRenewToken(t, me) &&
			!b.allowed(r, acl.ResourceDelegationToken, t.TokenID, acl.OpDescribe) &&
			!b.allowed(r, acl.ResourceUser, owner.Name, acl.OpDescribeTokens) {
			continue
		}
		d := kmsg.NewDescribeDelegationTokenResponseTokenDetail()
		d.PrincipalType, d.PrincipalName = owner.Type, owner.Name
		if req, err := security.ParsePrincipal(t.Requester); err == nil {
			d.TokenRequesterPrincipalType, d.TokenRequesterPrincipalName = req.Type, req.Name
		}
		d.IssueTimestamp, d.ExpiryTimestamp, d.MaxTimestamp = t.IssueTimestamp, t.ExpirationTimestamp, t.MaxTimestamp
		d.TokenID = t.TokenID
		d.HMAC = delegation.HMAC(secret, t.TokenID)
		for _, rn := range t.Renewers {
			if p, err := security.ParsePrincipal(rn); err == nil {
				x := kmsg.NewDescribeDelegationTokenResponseTokenDetailRenewer()
				x.PrincipalType, x.PrincipalName = p.Type, p.Name
				d.Renewers = append(d.Renewers, x)
			}
		}
		resp.TokenDetails = append(resp.TokenDetails, d)
	}
	return resp, nil
}
