package cli_test

import (
	"strings"
	"testing"
)

type aclRow struct {
	ResourceType string `json:"resource_type"`
	ResourceName string `json:"resource_name"`
	PatternType  string `json:"pattern_type"`
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

// startVltavaWithACLs starts the binary with the StandardAuthorizer; the
// CLI connects over PLAINTEXT as User:ANONYMOUS, the super user here.
func startVltavaWithACLs(t *testing.T) *broker {
	t.Helper()
	b := &broker{kind: "vltava", addr: freeAddr(t), dataDir: t.TempDir()}
	b.start(t, mustBinary(t, vltavaBinary), "server",
		"--override", "listeners=PLAINTEXT://"+b.addr,
		"--override", "log.dirs="+b.dataDir,
		"--override", "admin.listeners=",
		"--override", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--override", "super.users=User:ANONYMOUS",
		"--log-level", "warn")
	return b
}

// TestACLsCommand: vltava acls with kafka-acls.sh's flags adds, lists and
// removes bindings.
func TestACLsCommand(t *testing.T) {
	b := startVltavaWithACLs(t)
	list := func(args ...string) []aclRow {
		t.Helper()
		return decode[[]aclRow](t, ok(t, b, "", append([]string{"acls", "--list", "--output", "json"}, args...)...))
	}

	out := ok(t, b, "", "acls", "--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "orders")
	if !strings.Contains(out, "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`") ||
		!strings.Contains(out, "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)") {
		t.Fatalf("--add output:\n%s", out)
	}
	ok(t, b, "", "acls", "--add", "--deny-principal", "User:mallory", "--deny-host", "10.0.0.9", "--topic", "orders")
	ok(t, b, "", "acls", "--add", "--allow-principal", "User:app", "--producer", "--topic", "app-", "--resource-pattern-type", "prefixed")
	ok(t, b, "", "acls", "--add", "--allow-principal", "User:app", "--consumer", "--topic", "orders", "--group", "billing")
	ok(t, b, "", "acls", "--add", "--allow-principal", "User:ops", "--operation", "alter_configs", "--cluster")

	if all := list(); len(all) != 2+1+3+2+1+1 {
		t.Fatalf("--list: %d bindings: %+v", len(all), all)
	}
	orders := list("--topic", "orders")
	if len(orders) != 5 {
		t.Fatalf("--list --topic orders: %+v", orders)
	}
	var denied bool
	for _, r := range orders {
		denied = denied || (r.Principal == "User:mallory" && r.Host == "10.0.0.9" && r.Operation == "ALL" && r.Permission == "DENY")
	}
	if !denied {
		t.Fatalf("--deny-principal binding missing: %+v", orders)
	}
	// match: the literal bindings of the name and the prefixes that apply.
	if m := list("--topic", "app-orders", "--resource-pattern-type", "match"); len(m) != 3 || m[0].PatternType != "PREFIXED" {
		t.Fatalf("--list match app-orders: %+v", m)
	}
	if a := list("--principal", "User:alice"); len(a) != 2 {
		t.Fatalf("--list --principal User:alice: %+v", a)
	}
	text := ok(t, b, "", "acls", "--list", "--cluster")
	if !strings.Contains(text, "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`:") ||
		!strings.Contains(text, "(principal=User:ops, host=*, operation=ALTER_CONFIGS, permissionType=ALLOW)") {
		t.Fatalf("--list --cluster:\n%s", text)
	}

	// --remove asks first; "n" keeps the bindings.
	r := run(t, b, "n\n", "acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders")
	if r.code == 0 || len(list("--principal", "User:alice")) != 2 {
		t.Fatalf("--remove answered n: exit %d, bindings %+v", r.code, list("--principal", "User:alice"))
	}
	ok(t, b, "", "acls", "--remove", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "orders", "--force")
	if a := list("--principal", "User:alice"); len(a) != 1 || a[0].Operation != "DESCRIBE" {
		t.Fatalf("after removing READ: %+v", a)
	}
	// Without a principal, --remove deletes every binding of the resource.
	ok(t, b, "y\n", "acls", "--remove", "--topic", "orders")
	if o := list("--topic", "orders"); len(o) != 0 {
		t.Fatalf("after --remove --topic orders: %+v", o)
	}
	if all := list(); len(all) != 5 {
		t.Fatalf("other resources' bindings: %+v", all)
	}

	for _, bad := range [][]string{
		{"acls", "--add", "--topic", "t"},                                                      // no principal
		{"acls", "--add", "--allow-principal", "alice", "--topic", "t"},                        // no principal type
		{"acls", "--add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"}, // no such operation
		{"acls", "--add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type", "match"},
		{"acls", "--list", "--add"},
		{"acls", "--add", "--allow-principal", "User:a", "--operation", "ClusterAction", "--topic", "t"}, // not a topic operation
		{"acls", "--add", "--allow-principal", "User:a", "--consumer", "--topic", "t"},                   // --consumer needs --group
	} {
		if msg := fails(t, b, "", bad...); strings.Count(strings.TrimSpace(msg), "\n") > 0 {
			t.Errorf("vltava %s: error is not one line: %q", strings.Join(bad, " "), msg)
		}
	}
}
