package restproxy

import "testing"

// compactJSON returns compact data as it is and compacts the rest, a space
// inside a string kept.
func TestCompactJSON(t *testing.T) {
	for in, want := range map[string]string{
		`{"a":1,"b":[true,null]}`:      `{"a":1,"b":[true,null]}`,
		"{\"a\": 1,\n\t\"b\" : [ 2 ]}": `{"a":1,"b":[2]}`,
		`{"s":"x y"}`:                  `{"s":"x y"}`,
		`{ "s" : "x y" }`:              `{"s":"x y"}`,
		`"text"`:                       `"text"`,
	} {
		got, err := compactJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("compactJSON(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
