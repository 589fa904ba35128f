package scram

import (
	"context"
	"errors"
	"testing"

	xscram "github.com/xdg-go/scram"

	"github.com/vltava/vltava/internal/security/sasl"
)

type memStore map[string]Credential

func (m memStore) ScramCredential(user string, mech int8) (Credential, bool) {
	c, ok := m[user]
	return c, ok
}

func newStore(t *testing.T, mech int8, user, pass string) memStore {
	c, err := NewCredential(mech, pass, nil, 4096)
	if err != nil {
		t.Fatal(err)
	}
	return memStore{user: c}
}

// run drives one exchange with a client conversation and returns the
// final server result; final, if set, replaces the client-final message.
func run(t *testing.T, m *Mechanism, client *xscram.ClientConversation, final func(string) string) error {
	t.Helper()
	ex, err := m.Start(sasl.ConnInfo{})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := client.Step("")
	if err != nil {
		t.Fatal(err)
	}
	s1, done, err := ex.Next(context.Background(), []byte(c1))
	if err != nil || done {
		return err
	}
	c2, err := client.Step(string(s1))
	if err != nil {
		t.Fatal(err)
	}
	if final != nil {
		c2 = final(c2)
	}
	s2, done, err := ex.Next(context.Background(), []byte(c2))
	if err != nil {
		return err
	}
	if !done {
		t.Fatal("exchange not done after the client-final message")
	}
	if _, err := client.Step(string(s2)); err != nil {
		t.Fatalf("client rejects the server signature: %v", err)
	}
	if p := ex.Principal(); p.String() != "User:alice" {
		t.Errorf("principal %v", p)
	}
	return nil
}

func TestScramExchange(t *testing.T) {
	for _, tc := range []struct {
		name string
		typ  int8
		gen  xscram.HashGeneratorFcn
	}{{SHA256, TypeSHA256, xscram.SHA256}, {SHA512, TypeSHA512, xscram.SHA512}} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := New(tc.name, newStore(t, tc.typ, "alice", "alice-secret"))
			conv := func(user, pass string) *xscram.ClientConversation {
				c, err := tc.gen.NewClient(user, pass, "")
				if err != nil {
					t.Fatal(err)
				}
				return c.NewConversation()
			}
			if err := run(t, m, conv("alice", "alice-secret"), nil); err != nil {
				t.Fatalf("good password: %v", err)
			}
			wrong := run(t, m, conv("alice", "wrong"), nil)
			unknown := run(t, m, conv("bob", "wrong"), nil)
			if !errors.Is(wrong, sasl.ErrAuthentication) || !errors.Is(unknown, sasl.ErrAuthentication) {
				t.Fatalf("wrong password: %v; unknown user: %v", wrong, unknown)
			}
			if wrong.Error() != unknown.Error() {
				t.Errorf("an unknown user fails differently from a wrong password: %q vs %q", unknown, wrong)
			}
			// A client-final message replayed into a new exchange (its
			// nonce is another exchange's) fails.
			var captured string
			if err := run(t, m, conv("alice", "alice-secret"), func(c2 string) string { captured = c2; return c2 }); err != nil {
				t.Fatal(err)
			}
			if err := run(t, m, conv("alice", "alice-secret"), func(string) string { return captured }); !errors.Is(err, sasl.ErrAuthentication) {
				t.Errorf("replayed client-final: %v, want an authentication failure", err)
			}
			// A tampered proof fails.
			if err := run(t, m, conv("alice", "alice-secret"), func(c2 string) string {
				return c2[:len(c2)-4] + "AAA="
			}); !errors.Is(err, sasl.ErrAuthentication) {
				t.Errorf("tampered proof: %v", err)
			}
		})
	}
}

// TestScramCredentialDerivation: a credential from a password equals the
// one derived from the salted password a client sends in
// AlterUserScramCredentials.
func TestScramCredentialDerivation(t *testing.T) {
	salt := []byte("0123456789abcdef")
	c, err := NewCredential(TypeSHA256, "pw", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := xscram.SHA256.NewClient("u", "pw", "")
	kf, err := client.GetStoredCredentialsWithError(xscram.KeyFactors{Salt: string(salt), Iters: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if string(kf.StoredKey) != string(c.StoredKey) || string(kf.ServerKey) != string(c.ServerKey) {
		t.Error("derived keys differ from the library's")
	}
	if _, err := NewCredential(TypeSHA256, "pw", salt, 100); err == nil {
		t.Error("100 iterations accepted")
	}
}
