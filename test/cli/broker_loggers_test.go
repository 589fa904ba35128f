package cli_test

import (
	"strings"
	"testing"
)

// TestConfigsBrokerLoggers changes a logger's level at run time as
// kafka-configs.sh --entity-type broker-loggers does, in both forms.
func TestConfigsBrokerLoggers(t *testing.T) {
	b := startVltava(t)
	out := ok(t, b, "", "configs", "describe", "--entity-type", "broker-loggers", "--entity-name", "1")
	if !strings.Contains(out, "root") || !strings.Contains(out, "WARN") || !strings.Contains(out, "vltava.storage") {
		t.Fatalf("broker loggers (the harness runs at --log-level warn):\n%s", out)
	}
	ok(t, b, "", "configs", "alter", "--broker-logger", "1", "--set", "vltava.storage=DEBUG")
	out = ok(t, b, "", "configs", "describe", "--broker-logger", "1")
	if !strings.Contains(out, "vltava.storage") || !strings.Contains(out, "DEBUG") {
		t.Fatalf("after SET vltava.storage=DEBUG:\n%s", out)
	}
	ok(t, b, "", "configs", "--alter", "--entity-type", "broker-loggers", "--entity-name", "1", "--delete-config", "vltava.storage")
	for _, line := range strings.Split(ok(t, b, "", "configs", "describe", "--broker-logger", "1"), "\n") {
		if strings.HasPrefix(line, "vltava.storage ") && !strings.Contains(line, "WARN") {
			t.Errorf("after DELETE, back to root's level: %q", line)
		}
	}
	if msg := fails(t, b, "", "configs", "alter", "--broker-logger", "1", "--set", "vltava.storage=LOUD"); !strings.Contains(msg, "INVALID_CONFIG") {
		t.Errorf("unknown level: %q", msg)
	}
}
