package plain

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/security/sasl"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestPlain(t *testing.T) {
	m, err := New(lookup(map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";`}))
	if err != nil {
		t.Fatal(err)
	}
	try := func(token string) error {
		ex, _ := m.Start(sasl.ConnInfo{})
		_, done, err := ex.Next(context.Background(), []byte(token))
		if err == nil && (!done || ex.Principal().String() != "User:alice") {
			t.Errorf("%q: done %v principal %v", token, done, ex.Principal())
		}
		return err
	}
	if err := try("\x00alice\x00alice-secret"); err != nil {
		t.Fatal(err)
	}
	if err := try("alice\x00alice\x00alice-secret"); err != nil {
		t.Errorf("authorization id equal to the user: %v", err)
	}
	wrong, unknown := try("\x00alice\x00nope"), try("\x00mallory\x00nope")
	if !errors.Is(wrong, sasl.ErrAuthentication) || wrong.Error() != unknown.Error() {
		t.Errorf("wrong password %v, unknown user %v: want the same authentication failure", wrong, unknown)
	}
	for _, bad := range []string{"", "alice", "\x00alice", "\x00\x00pw", "\x00alice\x00", "bob\x00alice\x00alice-secret", "\x00a\x00b\x00c"} {
		if err := try(bad); !errors.Is(err, sasl.ErrAuthentication) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for cfg, want := range map[string]string{
		"": "needs a JAAS configuration",
		`org.apache.kafka.common.security.scram.ScramLoginModule required;`: "names login module",
		`broken "`: "jaas",
	} {
		if _, err := New(lookup(map[string]string{"sasl.jaas.config": cfg})); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", cfg, err, want)
		}
	}
}
