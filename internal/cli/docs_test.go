package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestCLIDocCoversEveryCommand keeps docs/CLI.md in step with the
// commands: every runnable command appears there as "vltava <path>".
func TestCLIDocCoversEveryCommand(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CLI.md")
	if err != nil {
		t.Fatal(err)
	}
	var walk func(path string, c *cobra.Command)
	walk = func(path string, c *cobra.Command) {
		path += " " + c.Name()
		if c.Runnable() && !strings.Contains(string(doc), "vltava"+path) {
			t.Errorf("docs/CLI.md does not show `vltava%s`", path)
		}
		for _, sub := range c.Commands() {
			walk(path, sub)
		}
	}
	for _, c := range Commands() {
		walk("", c)
	}
}
