package jaas

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	m, err := ParseOne(`org.apache.kafka.common.security.plain.PlainLoginModule required
		username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a \"quoted\" secret" debug=true;`)
	if err != nil {
		t.Fatal(err)
	}
	if m.Class != "org.apache.kafka.common.security.plain.PlainLoginModule" || m.Flag != "required" {
		t.Fatalf("module %+v", m)
	}
	want := map[string]string{"username": "admin", "password": "admin-secret", "user_admin": "admin-secret",
		"user_alice": `a "quoted" secret`, "debug": "true"}
	for k, v := range want {
		if m.Options[k] != v {
			t.Errorf("option %s = %q, want %q", k, m.Options[k], v)
		}
	}
	if len(m.Options) != len(want) {
		t.Errorf("options %v", m.Options)
	}
}

func TestParseMany(t *testing.T) {
	mods, err := Parse(`a.B required x="1"; c.D optional;`)
	if err != nil || len(mods) != 2 || mods[1].Class != "c.D" || mods[1].Flag != "optional" {
		t.Fatalf("%v %+v", err, mods)
	}
	if _, err := ParseOne(`a.B required; c.D optional;`); err == nil {
		t.Fatal("two modules accepted by ParseOne")
	}
}

func TestParseErrorsHidePasswords(t *testing.T) {
	for _, s := range []string{
		``,
		`a.B`,
		`a.B mandatory;`,
		`a.B required password="s3cret"`,
		`a.B required password="s3cret;`,
		`a.B required password;`,
		`a.B required password=;`,
		`a.B required password="s3cret" password="s3cret";`,
	} {
		_, err := ParseOne(s)
		if err == nil {
			t.Errorf("%q: accepted", s)
			continue
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%q: error reveals the password: %v", s, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`a.B required x="1" y=z;`)
	f.Fuzz(func(t *testing.T, s string) {
		mods, err := Parse(s)
		if err == nil && len(mods) == 0 {
			t.Fatal("no modules and no error")
		}
	})
}
