package config

import (
	"reflect"
	"testing"
)

func TestParseProperties(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals separator", "a=b", map[string]string{"a": "b"}},
		{"colon separator", "a: b", map[string]string{"a": "b"}},
		{"whitespace separator", "a   b", map[string]string{"a": "b"}},
		{"whitespace then equals", "a \t = b", map[string]string{"a": "b"}},
		{"leading whitespace ignored", "   \ta=b", map[string]string{"a": "b"}},
		{"trailing whitespace of value kept", "a=b  ", map[string]string{"a": "b  "}},
		{"empty value", "a=", map[string]string{"a": ""}},
		{"key only", "a", map[string]string{"a": ""}},
		{"second separator is part of value", "a==b", map[string]string{"a": "=b"}},
		{"hash comment", "# a=b\nc=d", map[string]string{"c": "d"}},
		{"bang comment", "  ! a=b\nc=d", map[string]string{"c": "d"}},
		{"hash inside value is literal", "a=b#c", map[string]string{"a": "b#c"}},
		{"blank lines", "\n\n  \na=b\n\n", map[string]string{"a": "b"}},
		{"CRLF and CR line ends", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"continuation", "a=one,\\\n    two", map[string]string{"a": "one,two"}},
		{"multi-line continuation", "a=1\\\n 2\\\n 3\nb=4", map[string]string{"a": "123", "b": "4"}},
		{"continuation line starting with # is not a comment", "a=x\\\n  #y", map[string]string{"a": "x#y"}},
		{"comment line ending in backslash does not continue", "# c \\\na=b", map[string]string{"a": "b"}},
		{"escaped backslash at end is not continuation", "a=c:\\\\\nb=d", map[string]string{"a": `c:\`, "b": "d"}},
		{"escaped separator in key", `a\=b=c`, map[string]string{"a=b": "c"}},
		{"escaped colon and space in key", `a\:b\ c=d`, map[string]string{"a:b c": "d"}},
		{"escape sequences", `a=x\ty\nz\\w`, map[string]string{"a": "x\ty\nz\\w"}},
		{"unicode escape", `a=caf\u00e9`, map[string]string{"a": "café"}},
		{"unknown escape yields the char", `a=\q`, map[string]string{"a": "q"}},
		{"later duplicate wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"continuation at end of input", "a=b\\", map[string]string{"a": "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(tt.in)
			if err != nil {
				t.Fatalf("ParseProperties(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseProperties(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\uzzzz`} {
		if _, err := ParseProperties(in); err == nil {
			t.Errorf("ParseProperties(%q) succeeded, want malformed escape error", in)
		}
	}
}
