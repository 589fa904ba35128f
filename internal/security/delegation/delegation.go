// Package delegation is what Kafka's delegation tokens (KIP-48) share
// between the broker's APIs and SCRAM authentication: a token's HMAC is
// HMAC-SHA512 of its id under delegation.token.secret.key (so every node
// with the same secret derives it, and it is never stored), and a client
// authenticates with SCRAM, the token id as user name and the base64 HMAC
// as password, sending the tokenauth=true extension.
package delegation

import (
	"crypto/hmac"
	"crypto/sha512"
	"encoding/base64"
	"time"
)

// HMAC is the token's HMAC: HMAC-SHA512 of the token id, keyed with the
// secret.
func HMAC(secret, tokenID string) []byte {
	m := hmac.New(sha512.New, []byte(secret))
	m.Write([]byte(tokenID))
	return m.Sum(nil)
}

// Password is the SCRAM password of a token with this HMAC: its standard
// base64 form, as Kafka's tools print it and clients configure it.
func Password(hmac []byte) string { return base64.StdEncoding.EncodeToString(hmac) }

// Token is what SCRAM needs of a delegation token: its owner (who a
// connection authenticated with it acts as), its HMAC and its expiry.
type Token struct {
	Owner   string // "Type:Name"
	HMAC    []byte
	Expires time.Time
}

// Store finds delegation tokens by id.
type Store interface {
	DelegationToken(id string) (Token, bool)
}
