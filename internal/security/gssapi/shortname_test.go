package gssapi

import "testing"

// TestShortNamerKafkaExamples runs the examples of Kafka's documentation
// (the sasl.kerberos.principal.to.local.rules section of Authentication
// using SASL/Kerberos) and of its KerberosNameTest.
func TestShortNamerKafkaExamples(t *testing.T) {
	cases := []struct {
		name      string
		rules     []string
		principal string
		want      string // "" when no rule applies / an error
	}{
		// Documentation: user@MYDOMAIN.COM → user, keeping DEFAULT.
		{"doc strip realm", []string{"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"}, "user@MYDOMAIN.COM", "user"},
		{"doc lower case", []string{"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//L", "DEFAULT"}, "User@MYDOMAIN.COM", "user"},
		{"doc upper case", []string{"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//U", "DEFAULT"}, "user@MYDOMAIN.COM", "USER"},
		{"doc other realm falls to DEFAULT and fails", []string{"RULE:[1:$1@$0](.*@MYDOMAIN.COM)s/@.*//", "DEFAULT"}, "user@OTHER.COM", ""},
		// DEFAULT: the first component, in the default realm only.
		{"default user", nil, "alice@REALM.COM", "alice"},
		{"default service", nil, "kafka/broker1.example.com@REALM.COM", "kafka"},
		{"default foreign realm", nil, "alice@FOREIGN.COM", ""},
		{"already simple", nil, "alice", "alice"},
		// KerberosNameTest.testParse.
		{"two components, g", []string{`RULE:[1:$1](App\..*)s/App\.(.*)/$1/g`, `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g`, "DEFAULT"}, "App.service-name/example.com@REALM.COM", "service-name"},
		{"one component, g", []string{`RULE:[1:$1](App\..*)s/App\.(.*)/$1/g`, `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g`, "DEFAULT"}, "App.service-name@REALM.COM", "service-name"},
		{"falls through to DEFAULT", []string{`RULE:[1:$1](App\..*)s/App\.(.*)/$1/g`, `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g`, "DEFAULT"}, "user/host@REALM.COM", "user"},
		// KerberosNameTest.testToLowerCase.
		{"lower, no match part", []string{"RULE:[1:$1]/L", "RULE:[2:$1](Test.*)s/ABC///L", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L`, "RULE:[2:$1]/L", "DEFAULT"}, "User@REALM.COM", "user"},
		{"lower, substitution", []string{"RULE:[1:$1]/L", "RULE:[2:$1](Test.*)s/ABC///L", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L`, "RULE:[2:$1]/L", "DEFAULT"}, "TestABC/host@FOO.COM", "test"},
		{"lower, global", []string{"RULE:[1:$1]/L", "RULE:[2:$1](Test.*)s/ABC///L", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L`, "RULE:[2:$1]/L", "DEFAULT"}, "ABC_User_ABC/host@FOO.COM", "xyz_user_xyz"},
		{"lower, group", []string{"RULE:[1:$1]/L", "RULE:[2:$1](Test.*)s/ABC///L", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L`, "RULE:[2:$1]/L", "DEFAULT"}, "App.SERVICE-name/example.com@REALM.COM", "service-name"},
		{"lower, whole", []string{"RULE:[1:$1]/L", "RULE:[2:$1](Test.*)s/ABC///L", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/L", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/L`, "RULE:[2:$1]/L", "DEFAULT"}, "User/root@REALM.COM", "user"},
		// KerberosNameTest.testToUpperCase.
		{"upper", []string{"RULE:[1:$1]/U", "RULE:[2:$1](Test.*)s/ABC///U", "RULE:[2:$1](ABC.*)s/ABC/XYZ/g/U", `RULE:[2:$1](App\..*)s/App\.(.*)/$1/g/U`, "RULE:[2:$1]/U", "DEFAULT"}, "abc_user_abc/host@FOO.COM", "ABC_USER_ABC"},
		// Replace only the first occurrence without g.
		{"first occurrence only", []string{"RULE:[1:$1](.*)s/a/b/"}, "banana@REALM.COM", "bbnana"},
		// A result that is not a simple name is an error.
		{"non-simple result", []string{"RULE:[2:$1/$2]"}, "kafka/host@REALM.COM", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := NewShortNamer("REALM.COM", c.rules)
			if err != nil {
				t.Fatalf("rules %q: %v", c.rules, err)
			}
			name, err := ParseKerberosName(c.principal)
			if err != nil {
				t.Fatal(err)
			}
			got, err := n.ShortName(name)
			if c.want == "" {
				if err == nil {
					t.Fatalf("ShortName(%s) = %q, want an error", c.principal, got)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ShortName(%s) = %q, %v; want %q", c.principal, got, err, c.want)
			}
		})
	}
}

// TestShortNamerInvalidRules: KerberosNameTest.testInvalidRules.
func TestShortNamerInvalidRules(t *testing.T) {
	for _, rule := range []string{
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*//LU",
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*/L",
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*/U",
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*/LU",
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*/",
		"RULE:[1:$1@$0](.*@EXAMPLE.COM)s/@.*",
		"RULE:[:$1]",
		"NOT A RULE",
	} {
		if _, err := NewShortNamer("REALM.COM", []string{rule}); err == nil {
			t.Errorf("rule %q accepted, want it refused", rule)
		}
	}
}

func TestJavaReplacement(t *testing.T) {
	for in, want := range map[string]string{"$1": "${1}", `a\$b`: "a$$b", "x$1y": "x${1}y", "$10": "${1}0", "": ""} {
		got, err := javaReplacement(in, 1)
		if err != nil || got != want {
			t.Errorf("javaReplacement(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := javaReplacement("$2", 1); err == nil {
		t.Error("a reference to a missing group accepted")
	}
}
