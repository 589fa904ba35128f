package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update-doc", false, "rewrite docs/CONFIGURATION.md from the Def tables")

// TestConfigurationDocIsCurrent fails when docs/CONFIGURATION.md differs from
// what the Def tables generate; run `go generate ./internal/config` to fix.
func TestConfigurationDocIsCurrent(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "docs", "CONFIGURATION.md")
	if *updateDoc {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run `go generate ./internal/config`)", err)
	}
	if !bytes.Equal(have, buf.Bytes()) {
		t.Errorf("%s is out of date; run `go generate ./internal/config`", path)
	}
	for _, want := range []string{"| `log.retention.ms` | LONG | null |", "| `retention.ms` | LONG | `604800000` | [-1,...] | `log.retention.ms`, `log.retention.minutes`, `log.retention.hours` |", "| `node.id` | `1` | -1 (required) |"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("generated doc lacks %q", want)
		}
	}
}
