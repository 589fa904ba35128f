package cli_test

import (
	"strings"
	"testing"
)

type quotaRow struct {
	Entity map[string]*string `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// TestConfigsQuotas drives kafka-configs.sh's quota forms: users, clients,
// a user and client combined, the default entities and ips; describe by
// name, by default and for every entity of a type; delete; and Kafka's
// refusals (a key the entity does not take, a fraction for a byte rate).
func TestConfigsQuotas(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--add-config", "producer_byte_rate=1048576,consumer_byte_rate=2097152")
	ok(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-name", "alice",
		"--entity-type", "clients", "--entity-default", "--add-config", "request_percentage=12.5")
	ok(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-default",
		"--entity-type", "clients", "--entity-name", "app", "--add-config", "controller_mutation_rate=10")
	ok(t, b, "", "configs", "alter", "--entity-type", "clients", "--entity-default", "--set", "producer_byte_rate=1000")
	ok(t, b, "", "configs", "--alter", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "connection_creation_rate=100")

	out := ok(t, b, "", "configs", "--describe", "--entity-type", "users", "--entity-name", "alice")
	if want := "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0, producer_byte_rate=1048576.0\n"; out != want {
		t.Errorf("describe alice:\n got %q\nwant %q", out, want)
	}
	out = ok(t, b, "", "configs", "--describe", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients", "--entity-default")
	if want := "Quota configs for user-principal 'alice', the default client-id are request_percentage=12.5\n"; out != want {
		t.Errorf("describe alice/<default>:\n got %q\nwant %q", out, want)
	}
	out = ok(t, b, "", "configs", "--describe", "--entity-type", "users", "--entity-default", "--entity-type", "clients", "--entity-name", "app")
	if !strings.Contains(out, "the default user-principal, client-id 'app' are controller_mutation_rate=10.0") {
		t.Errorf("describe <default>/app: %q", out)
	}
	rows := decode[[]quotaRow](t, ok(t, b, "", "configs", "describe", "--entity-type", "clients", "--output", "json"))
	if len(rows) != 1 || rows[0].Entity["client-id"] != nil || rows[0].Values["producer_byte_rate"] != 1000 {
		t.Errorf("every client entity: %+v", rows)
	}
	rows = decode[[]quotaRow](t, ok(t, b, "", "configs", "describe", "--entity-type", "ips", "--output", "json"))
	if len(rows) != 1 || *rows[0].Entity["ip"] != "127.0.0.1" || rows[0].Values["connection_creation_rate"] != 100 {
		t.Errorf("ips: %+v", rows)
	}

	ok(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-name", "alice", "--delete-config", "producer_byte_rate")
	out = ok(t, b, "", "configs", "--describe", "--entity-type", "users", "--entity-name", "alice")
	if want := "Quota configs for user-principal 'alice' are consumer_byte_rate=2097152.0\n"; out != want {
		t.Errorf("after delete:\n got %q\nwant %q", out, want)
	}

	if stderr := fails(t, b, "", "configs", "--alter", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "producer_byte_rate=1"); !strings.Contains(stderr, "INVALID_REQUEST") || !strings.Contains(stderr, "Invalid configuration key producer_byte_rate") {
		t.Errorf("ip with a byte rate: %q", stderr)
	}
	if stderr := fails(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "producer_byte_rate=1.5"); !strings.Contains(stderr, "producer_byte_rate cannot be a fractional value") {
		t.Errorf("fractional byte rate: %q", stderr)
	}
	if stderr := fails(t, b, "", "configs", "--alter", "--entity-type", "users", "--entity-name", "bob", "--entity-type", "ips", "--entity-name", "127.0.0.1", "--add-config", "producer_byte_rate=1"); !strings.Contains(stderr, "ips cannot be combined") {
		t.Errorf("users with ips: %q", stderr)
	}
}
