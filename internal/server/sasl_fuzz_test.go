package server

import (
	"context"
	"errors"
	"testing"

	"github.com/vltava/vltava/internal/security"
	"github.com/vltava/vltava/internal/security/sasl"
	"github.com/vltava/vltava/internal/security/sasl/plain"
	"github.com/vltava/vltava/internal/security/sasl/scram"
)

type fuzzScramStore struct{ c scram.Credential }

func (s fuzzScramStore) ScramCredential(user string, _ int8) (scram.Credential, bool) {
	return s.c, user == "alice"
}

// FuzzSASLTokens feeds arbitrary tokens through a connection's SASL state
// for each mechanism, as SaslAuthenticate (or raw frames after SaslHandshake
// v0) would. Invariants: it never panics; a token either continues the
// exchange, completes it with a principal, or fails with
// SASL_AUTHENTICATION_FAILED, never authenticating from garbage.
func FuzzSASLTokens(f *testing.F) {
	f.Add("PLAIN", []byte("\x00alice\x00alice-secret"), []byte{})
	f.Add("PLAIN", []byte("\x00\x00"), []byte{})
	f.Add("SCRAM-SHA-256", []byte("n,,n=alice,r=abcdef"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add("SCRAM-SHA-512", []byte("y,a=bob,n=alice,r=x"), []byte("c=,p="))
	f.Add("SCRAM-SHA-256", []byte("n,,n=al=2Cice,r=\x00"), []byte(",,,,"))
	cred, err := scram.NewCredential(scram.TypeSHA256, "alice-secret", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	store := fuzzScramStore{cred}
	s256, _ := scram.New(scram.SHA256, store)
	s512, _ := scram.New(scram.SHA512, store)
	cfg := &SASLConfig{Mechanisms: []sasl.Mechanism{plain.NewWithUsers(map[string]string{"alice": "alice-secret"}), s256, s512}}
	f.Fuzz(func(t *testing.T, mech string, first, second []byte) {
		info := &ConnInfo{Listener: "SASL", Principal: security.Anonymous}
		s := newSASLSession(cfg, info, false, "127.0.0.1")
		if err := s.Handshake(mech, 1); err != nil {
			return
		}
		for _, tok := range [][]byte{first, second} {
			_, done, _, err := s.Authenticate(context.Background(), tok)
			if err != nil {
				if !s.closeAfterResponse {
					t.Fatal("a failed exchange leaves the connection open")
				}
				var se *saslError
				if !errors.As(err, &se) {
					t.Fatalf("failure is not a SASL error: %v", err)
				}
				return
			}
			if done {
				if info.Principal == security.Anonymous {
					t.Fatal("authenticated without a principal")
				}
				if mech != "PLAIN" {
					t.Fatalf("SCRAM authenticated from fuzzed tokens %q %q", first, second)
				}
				return
			}
		}
	})
}
