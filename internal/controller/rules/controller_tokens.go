package rules

// Delegation tokens (KIP-48), as Kafka's DelegationTokenControlManager:
// the handler on the active controller builds a new token (id, owner,
// timestamps from delegation.token.max.lifetime.ms and
// delegation.token.expiry.time.ms); renewals and expiries are validated
// against the current image and committed in the same critical section, so
// a renewal racing an expiry sees the other's outcome.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// CreateDelegationToken commits a new token.
func (c *Controller) CreateDelegationToken(ctx context.Context, t metadata.DelegationToken) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.log.Image().DelegationToken(t.TokenID); ok {
		return fmt.Errorf("%w: delegation token id %s is taken", kerr.DuplicateResource, t.TokenID)
	}
	_, err := c.log.Commit(ctx, []metadata.Record{t.Record()})
	return err
}

// TokenChange is a renewal or an expiry of a token by a principal
// ("Type:Name") at Now (Unix ms).
type TokenChange struct {
	TokenID   string
	Principal string
	Now       int64
	// Period is the renewal's or expiry's period in ms: the token then
	// expires at Now+Period (at most its max timestamp). For a renewal it
	// is already bounded by delegation.token.expiry.time.ms; for an expiry
	// a negative period removes the token at once.
	Period int64
}

// MayRenewToken is Kafka's rule for renewing and expiring: the owner or one of
// the renewers.
func MayRenewToken(t metadata.DelegationToken, principal string) bool {
	return t.Owner == principal || slices.Contains(t.Renewers, principal)
}

// checkChange finds the token a change applies to and checks it may be
// made: DELEGATION_TOKEN_NOT_FOUND, DELEGATION_TOKEN_EXPIRED,
// DELEGATION_TOKEN_OWNER_MISMATCH.
func (c *Controller) checkChange(ch TokenChange) (metadata.DelegationToken, error) {
	t, ok := c.log.Image().DelegationToken(ch.TokenID)
	switch {
	case !ok:
		return t, kerr.DelegationTokenNotFound
	case t.MaxTimestamp < ch.Now || t.ExpirationTimestamp < ch.Now:
		return t, kerr.DelegationTokenExpired
	case !MayRenewToken(t, ch.Principal):
		return t, kerr.DelegationTokenOwnerMismatch
	}
	return t, nil
}

// RenewDelegationToken moves a token's expiry to Now+Period, at most its
// max timestamp, and returns the new expiry.
func (c *Controller) RenewDelegationToken(ctx context.Context, ch TokenChange) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.checkChange(ch)
	if err != nil {
		return 0, err
	}
	t.ExpirationTimestamp = min(t.MaxTimestamp, ch.Now+ch.Period)
	if _, err := c.log.Commit(ctx, []metadata.Record{t.Record()}); err != nil {
		return 0, err
	}
	return t.ExpirationTimestamp, nil
}

// ExpireDelegationToken sets a token's expiry to Now+Period (at most its
// max timestamp), or removes the token when Period is negative, and
// returns the new expiry (Period itself when removed, as Kafka answers).
func (c *Controller) ExpireDelegationToken(ctx context.Context, ch TokenChange) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, err := c.checkChange(ch)
	if err != nil {
		return 0, err
	}
	var rec metadata.Record
	expiry := ch.Period
	if ch.Period < 0 {
		rec = &metadata.RemoveDelegationTokenRecord{TokenID: t.TokenID}
	} else {
		t.ExpirationTimestamp = min(t.MaxTimestamp, ch.Now+ch.Period)
		expiry = t.ExpirationTimestamp
		rec = t.Record()
	}
	if _, err := c.log.Commit(ctx, []metadata.Record{rec}); err != nil {
		return 0, err
	}
	return expiry, nil
}

// RemoveExpiredDelegationTokens removes every token that expired before
// now (Unix ms), as Kafka's expired-token remover, and returns how many.
func (c *Controller) RemoveExpiredDelegationTokens(ctx context.Context, now int64) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var recs []metadata.Record
	for _, t := range c.log.Image().DelegationTokens() {
		if t.ExpirationTimestamp < now || t.MaxTimestamp < now {
			recs = append(recs, &metadata.RemoveDelegationTokenRecord{TokenID: t.TokenID})
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	if _, err := c.log.Commit(ctx, recs); err != nil {
		return 0, err
	}
	return len(recs), nil
}
