package metadata

import (
	"fmt"
	"maps"
	"slices"
)

// DelegationTokenRecordType and RemoveDelegationTokenRecordType are Kafka's
// apiKeys 10 and 26 (KIP-48 in KRaft).
const (
	DelegationTokenRecordType       RecordType = 10
	RemoveDelegationTokenRecordType RecordType = 26
)

// DelegationTokenRecord creates a delegation token or updates its expiry
// (a renewal), as Kafka's record of the same name. The token's HMAC is not
// stored: every node derives it from the token id with
// delegation.token.secret.key.
type DelegationTokenRecord struct {
	// Owner and Requester are principals in "Type:Name" form.
	Owner     string   `json:"owner"`
	Requester string   `json:"requester"`
	Renewers  []string `json:"renewers"`
	// IssueTimestamp, MaxTimestamp and ExpirationTimestamp are Unix
	// milliseconds: when the token was created, when it can no longer be
	// renewed, and when it expires unless renewed.
	IssueTimestamp      int64  `json:"issue_timestamp"`
	MaxTimestamp        int64  `json:"max_timestamp"`
	ExpirationTimestamp int64  `json:"expiration_timestamp"`
	TokenID             string `json:"token_id"`
}

// RemoveDelegationTokenRecord deletes an expired token.
type RemoveDelegationTokenRecord struct {
	TokenID string `json:"token_id"`
}

func (*DelegationTokenRecord) Type() RecordType       { return DelegationTokenRecordType }
func (*RemoveDelegationTokenRecord) Type() RecordType { return RemoveDelegationTokenRecordType }
func (*DelegationTokenRecord) isRecord()              {}
func (*RemoveDelegationTokenRecord) isRecord()        {}

// DelegationToken is a token as the image holds it (Kafka's
// TokenInformation).
type DelegationToken struct {
	TokenID   string
	Owner     string
	Requester string
	Renewers  []string
	// Unix milliseconds, as in DelegationTokenRecord.
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
}

// DelegationToken returns the token with the given id.
func (img *Image) DelegationToken(id string) (DelegationToken, bool) {
	t, ok := img.tokens[id]
	return t, ok
}

// DelegationTokens returns every token, ordered by token id.
func (img *Image) DelegationTokens() []DelegationToken {
	out := make([]DelegationToken, 0, len(img.tokens))
	for _, id := range slices.Sorted(maps.Keys(img.tokens)) {
		out = append(out, img.tokens[id])
	}
	return out
}

// applyDelegationToken applies the token records; the map is copied once
// per batch.
func (b *imageBuilder) applyDelegationToken(r Record) error {
	if !b.tokensCopied {
		b.tokens = maps.Clone(b.tokens)
		if b.tokens == nil {
			b.tokens = map[string]DelegationToken{}
		}
		b.tokensCopied = true
	}
	switch r := r.(type) {
	case *DelegationTokenRecord:
		if r.TokenID == "" || r.Owner == "" {
			return fmt.Errorf("delegation token without an id or an owner")
		}
		if r.ExpirationTimestamp > r.MaxTimestamp {
			return fmt.Errorf("delegation token %s expires at %d, after its max timestamp %d", r.TokenID, r.ExpirationTimestamp, r.MaxTimestamp)
		}
		b.tokens[r.TokenID] = DelegationToken{
			TokenID: r.TokenID, Owner: r.Owner, Requester: r.Requester, Renewers: slices.Clone(r.Renewers),
			IssueTimestamp: r.IssueTimestamp, MaxTimestamp: r.MaxTimestamp, ExpirationTimestamp: r.ExpirationTimestamp,
		}
	case *RemoveDelegationTokenRecord:
		if _, ok := b.tokens[r.TokenID]; !ok {
			return fmt.Errorf("no delegation token %q", r.TokenID)
		}
		delete(b.tokens, r.TokenID)
	}
	return nil
}

// appendDelegationTokenRecords appends the tokens to a snapshot's records.
func (img *Image) appendDelegationTokenRecords(recs []Record) []Record {
	for _, t := range img.DelegationTokens() {
		recs = append(recs, t.Record())
	}
	return recs
}

// Record is the record that creates t as it is.
func (t DelegationToken) Record() *DelegationTokenRecord {
	return &DelegationTokenRecord{Owner: t.Owner, Requester: t.Requester, Renewers: slices.Clone(t.Renewers),
		IssueTimestamp: t.IssueTimestamp, MaxTimestamp: t.MaxTimestamp, ExpirationTimestamp: t.ExpirationTimestamp, TokenID: t.TokenID}
}
