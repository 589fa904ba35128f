// Package scram is the SASL SCRAM-SHA-256 and SCRAM-SHA-512 mechanisms
// (RFC 5802, RFC 7677; Kafka's KIP-84) on github.com/xdg-go/scram. The
// credentials (salt, iterations, stored key, server key) come from a
// CredentialStore: the metadata image's UserScramCredentialRecords. Each
// exchange uses a fresh server nonce, so a replayed client-final message
// fails its proof.
package scram

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"

	xscram "github.com/xdg-go/scram"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/delegation"
	"github.com/vltava/vltava/internal/security/sasl"
)

// Mechanism names and their ids in UserScramCredentialRecord and the
// Alter/DescribeUserScramCredentials APIs (Kafka's ScramMechanism).
const (
	SHA256 = "SCRAM-SHA-256"
	SHA512 = "SCRAM-SHA-512"

	TypeSHA256 int8 = 1
	TypeSHA512 int8 = 2
)

// MinIterations and MaxIterations bound a credential's iterations, as
// Kafka's ScramMechanism (4096 .. 16384).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

// Credential is one user's stored SCRAM credential for one mechanism.
type Credential struct {
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// CredentialStore finds a user's credential for a mechanism (by its id).
// A store that is also a delegation.Store authenticates delegation tokens
// (a client-first message with the tokenauth=true extension, KIP-48).
type CredentialStore interface {
	ScramCredential(user string, mechanism int8) (Credential, bool)
}

// tokenCredential is the credential of a delegation token: its password
// (the base64 HMAC) at the least iterations, as Kafka's token cache keeps,
// or false if there is no such token or it has expired.
func (m *Mechanism) tokenCredential(id string, salt []byte) (delegation.Token, Credential, bool) {
	ts, ok := m.store.(delegation.Store)
	if !ok {
		return delegation.Token{}, Credential{}, false
	}
	t, ok := ts.DelegationToken(id)
	if !ok || !time.Now().Before(t.Expires) {
		return delegation.Token{}, Credential{}, false
	}
	c, err := NewCredential(m.typ, delegation.Password(t.HMAC), salt, MinIterations)
	if err != nil {
		return delegation.Token{}, Credential{}, false
	}
	return t, c, true
}

// tokenAuthRequested reports whether a client-first message carries the
// tokenauth=true extension (RFC 5802 extensions follow the nonce).
func tokenAuthRequested(clientFirst string) bool {
	fields := strings.Split(clientFirst, ",")
	if len(fields) < 5 {
		return false
	}
	for _, f := range fields[4:] {
		if k, v, ok := strings.Cut(f, "="); ok && k == "tokenauth" && strings.EqualFold(v, "true") {
			return true
		}
	}
	return false
}

// MechanismType returns the id of a mechanism name.
func MechanismType(name string) (int8, bool) {
	switch name {
	case SHA256:
		return TypeSHA256, true
	case SHA512:
		return TypeSHA512, true
	}
	return 0, false
}

// MechanismName returns the name of a mechanism id.
func MechanismName(t int8) (string, bool) {
	switch t {
	case TypeSHA256:
		return SHA256, true
	case TypeSHA512:
		return SHA512, true
	}
	return "", false
}

func hashFor(t int8) (func() hash.Hash, xscram.HashGeneratorFcn) {
	if t == TypeSHA512 {
		return sha512.New, xscram.SHA512
	}
	return sha256.New, xscram.SHA256
}

// NewCredential derives a credential from a password (SaltedPassword with
// PBKDF2-HMAC, then ClientKey, StoredKey = H(ClientKey), ServerKey). A nil
// salt draws a random one.
func NewCredential(mechanism int8, password string, salt []byte, iterations int32) (Credential, error) {
	if _, ok := MechanismName(mechanism); !ok {
		return Credential{}, fmt.Errorf("unknown SCRAM mechanism %d", mechanism)
	}
	if iterations < MinIterations || iterations > MaxIterations {
		return Credential{}, fmt.Errorf("iterations %d out of range [%d, %d]", iterations, MinIterations, MaxIterations)
	}
	if salt == nil {
		salt = make([]byte, 32)
		rand.Read(salt)
	}
	h, _ := hashFor(mechanism)
	salted, err := pbkdf2.Key(h, password, salt, int(iterations), h().Size())
	if err != nil {
		return Credential{}, err
	}
	return deriveKeys(h, salted, salt, iterations), nil
}

// FromSaltedPassword builds a credential from a salted password, as
// AlterUserScramCredentials carries it.
func FromSaltedPassword(mechanism int8, salted, salt []byte, iterations int32) Credential {
	h, _ := hashFor(mechanism)
	return deriveKeys(h, salted, salt, iterations)
}

func deriveKeys(h func() hash.Hash, salted, salt []byte, iterations int32) Credential {
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return Credential{Salt: salt, Iterations: iterations, StoredKey: stored.Sum(nil), ServerKey: mac(salted, "Server Key")}
}

// Mechanism is one of the SCRAM mechanisms over a credential store.
type Mechanism struct {
	name  string
	typ   int8
	store CredentialStore
}

// New returns the mechanism of the given name reading store.
func New(name string, store CredentialStore) (*Mechanism, error) {
	t, ok := MechanismType(name)
	if !ok {
		return nil, fmt.Errorf("%s is not a SCRAM mechanism", name)
	}
	return &Mechanism{name: name, typ: t, store: store}, nil
}

// Name implements sasl.Mechanism.
func (m *Mechanism) Name() string { return m.name }

// Start implements sasl.Mechanism.
func (m *Mechanism) Start(sasl.ConnInfo) (sasl.Exchange, error) {
	_, gen := hashFor(m.typ)
	e := &exchange{m: m}
	srv, err := gen.NewServer(func(user string) (xscram.StoredCredentials, error) {
		var (
			c  Credential
			ok bool
		)
		if e.tokenAuth {
			var salt [32]byte
			rand.Read(salt[:])
			e.token, c, ok = m.tokenCredential(user, salt[:])
		} else {
			c, ok = m.store.ScramCredential(user, m.typ)
		}
		if !ok {
			// Kafka answers an unknown user like a wrong password;
			// a made-up credential makes the proof check fail the
			// same way, after the same work.
			e.unknown = true
			c, _ = NewCredential(m.typ, "", []byte(user), MinIterations)
		}
		e.cred = c
		return xscram.StoredCredentials{
			KeyFactors: xscram.KeyFactors{Salt: string(c.Salt), Iters: int(c.Iterations)},
			StoredKey:  c.StoredKey, ServerKey: c.ServerKey,
		}, nil
	})
	if err != nil {
		return nil, err
	}
	e.conv = srv.NewConversation()
	return e, nil
}

// exchange runs the client-first step on xdg-go/scram (parsing, the
// credential lookup, the server nonce) and checks the client-final message
// itself, as Kafka's ScramSaslServer does: the client's nonce must end with
// the server-first nonce (librdkafka sends the client nonce in front of the
// whole server nonce, which Kafka accepts), and the proof must verify
// against the stored key over the messages as sent.
type exchange struct {
	m       *Mechanism
	conv    *xscram.ServerConversation
	cred    Credential
	unknown bool
	// tokenAuth is set by a tokenauth=true extension: the user name is a
	// delegation token id, token the token found.
	tokenAuth bool
	token     delegation.Token

	step        int
	gs2Header   string
	clientFirst string // client-first-message-bare
	serverFirst string
	serverNonce string
	user        string
}

// errInvalid is the one failure of every SCRAM step: it must not tell an
// unknown user from a wrong password.
func (e *exchange) errInvalid() error {
	return fmt.Errorf("%w: Authentication failed during authentication due to invalid credentials with SASL mechanism %s", sasl.ErrAuthentication, e.m.name)
}

// Next runs one step: client-first → server-first, client-final →
// server-final.
func (e *exchange) Next(_ context.Context, token []byte) ([]byte, bool, error) {
	e.step++
	switch e.step {
	case 1:
		c1 := string(token)
		e.tokenAuth = tokenAuthRequested(c1)
		reply, err := e.conv.Step(c1)
		if err != nil {
			return nil, false, e.errInvalid()
		}
		// gs2-header is everything up to the second comma.
		i := strings.IndexByte(c1, ',')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(c1[i+1:], ',')
		}
		if j < 0 {
			return nil, false, e.errInvalid()
		}
		e.gs2Header, e.clientFirst = c1[:i+j+2], c1[i+j+2:]
		if a := e.conv.AuthzID(); a != "" && a != e.conv.Username() {
			return nil, false, fmt.Errorf("%w: Authentication failed: Client requested an authorization id that is different from username", sasl.ErrAuthentication)
		}
		e.user = e.conv.Username()
		e.serverFirst = reply
		nonce, ok := strings.CutPrefix(reply, "r=")
		if !ok {
			return nil, false, e.errInvalid()
		}
		e.serverNonce, _, _ = strings.Cut(nonce, ",")
		return []byte(reply), false, nil
	case 2:
		sig, err := e.verifyFinal(string(token))
		if err != nil || e.unknown {
			return nil, false, e.errInvalid()
		}
		return []byte("v=" + base64.StdEncoding.EncodeToString(sig)), true, nil
	}
	return nil, false, e.errInvalid()
}

// verifyFinal checks client-final-message ("c=...,r=...,p=...") and returns
// the server signature.
func (e *exchange) verifyFinal(c2 string) ([]byte, error) {
	i := strings.LastIndex(c2, ",p=")
	if i < 0 {
		return nil, errors.New("no proof")
	}
	withoutProof, proofB64 := c2[:i], c2[i+3:]
	var cbind, nonce string
	for _, attr := range strings.Split(withoutProof, ",") {
		switch {
		case strings.HasPrefix(attr, "c="):
			cbind = attr[2:]
		case strings.HasPrefix(attr, "r="):
			nonce = attr[2:]
		}
	}
	if cbind != base64.StdEncoding.EncodeToString([]byte(e.gs2Header)) {
		return nil, errors.New("channel binding mismatch")
	}
	if !strings.HasSuffix(nonce, e.serverNonce) || e.serverNonce == "" {
		return nil, errors.New("nonce mismatch")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil {
		return nil, err
	}
	h, _ := hashFor(e.m.typ)
	authMessage := e.clientFirst + "," + e.serverFirst + "," + withoutProof
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientSig := mac(e.cred.StoredKey, authMessage)
	if len(proof) != len(clientSig) {
		return nil, errors.New("proof length")
	}
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ clientSig[k]
	}
	stored := h()
	stored.Write(clientKey)
	if !hmac.Equal(stored.Sum(nil), e.cred.StoredKey) {
		return nil, errors.New("invalid proof")
	}
	return mac(e.cred.ServerKey, authMessage), nil
}

// Principal is the user, or a delegation token's owner.
func (e *exchange) Principal() security.Principal {
	if e.tokenAuth {
		if p, err := security.ParsePrincipal(e.token.Owner); err == nil {
			return p
		}
	}
	return security.User(e.user)
}

// Lifetime is a delegation token's remaining life, else 0.
func (e *exchange) Lifetime() time.Duration {
	if e.tokenAuth {
		return max(time.Until(e.token.Expires), time.Millisecond)
	}
	return 0
}

// TokenAuthenticated reports whether the exchange authenticated a
// delegation token.
func (e *exchange) TokenAuthenticated() bool { return e.tokenAuth }
