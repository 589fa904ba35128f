package cli_test

import (
	"strings"
	"testing"
)

// TestGroupsKafkaForm covers kafka-consumer-groups.sh's mode flags,
// --all-groups, --delete-offsets and --export / --from-file.
func TestGroupsKafkaForm(t *testing.T) {
	b := groupBroker(t)
	ok(t, b, "", "topics", "create", "ga", "--partitions", "2")
	ok(t, b, "", "topics", "create", "gb", "--partitions", "1")
	ok(t, b, "a0\na1\na2\na3\n", "produce", "ga", "--partition", "0")
	ok(t, b, "b0\nb1\n", "produce", "gb")
	for _, g := range []string{"g1", "g2"} {
		ok(t, b, "", "consume", "ga", "--group", g, "--from-beginning", "--max-messages", "4", "--timeout", "10s")
		ok(t, b, "", "consume", "gb", "--group", g, "--from-beginning", "--max-messages", "2", "--timeout", "10s")
	}

	if out := ok(t, b, "", "groups", "--list"); !strings.Contains(out, "g1") || !strings.Contains(out, "g2") {
		t.Errorf("--list: %q", out)
	}
	d := decode[groupDesc](t, ok(t, b, "", "groups", "--describe", "--group", "g1", "--output", "json"))
	if d.Group != "g1" || len(d.Offsets) != 3 {
		t.Errorf("--describe --group: %+v", d)
	}
	if d := decode[groupDesc](t, ok(t, b, "", "groups", "describe", "--group", "g2", "--output", "json")); d.Group != "g2" {
		t.Errorf("describe --group: %+v", d)
	}
	all := decode[[]groupDesc](t, ok(t, b, "", "groups", "describe", "--all-groups", "--output", "json"))
	if len(all) != 2 {
		t.Errorf("--all-groups: %+v", all)
	}
	if out := ok(t, b, "", "groups", "--describe", "--all-groups", "--state"); !strings.Contains(out, "g1") || !strings.Contains(out, "Empty") {
		t.Errorf("--state: %q", out)
	}

	// --export prints Kafka's CSV; --from-file reads it back.
	csv := ok(t, b, "", "groups", "--reset-offsets", "--group", "g1", "--topic", "ga:0", "--to-offset", "1", "--export")
	if csv != "ga,0,1\n" {
		t.Errorf("--export: %q", csv)
	}
	multi := ok(t, b, "", "groups", "reset-offsets", "--all-groups", "--topic", "gb", "--to-earliest", "--export")
	if multi != "g1,gb,0,0\ng2,gb,0,0\n" {
		t.Errorf("--export of several groups: %q", multi)
	}
	plan := writeFile(t, "plan.csv", csv)
	ok(t, b, "", "groups", "reset-offsets", "g1", "--from-file", plan, "--execute")
	d = decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g1", "--output", "json"))
	for _, o := range d.Offsets {
		if o.Topic == "ga" && o.Partition == 0 && o.CurrentOffset != 1 {
			t.Errorf("after --from-file: %+v", o)
		}
	}
	ok(t, b, "", "groups", "reset-offsets", "--all-groups", "--from-file", writeFile(t, "multi.csv", multi), "--execute")
	for _, g := range []string{"g1", "g2"} {
		for _, o := range decode[groupDesc](t, ok(t, b, "", "groups", "describe", g, "--output", "json")).Offsets {
			if o.Topic == "gb" && o.CurrentOffset != 0 {
				t.Errorf("%s after the multi-group file: %+v", g, o)
			}
		}
	}
	// Kafka's ISO 8601 --by-duration.
	if out := ok(t, b, "", "groups", "reset-offsets", "g2", "--topic", "gb", "--by-duration", "PT1H", "--export"); out != "gb,0,0\n" {
		t.Errorf("--by-duration PT1H: %q", out)
	}

	// --delete-offsets removes only the named topic's offsets.
	out := ok(t, b, "", "groups", "--delete-offsets", "--group", "g2", "--topic", "gb")
	if !strings.Contains(out, "gb") || !strings.Contains(out, "Successful") {
		t.Errorf("--delete-offsets: %q", out)
	}
	for _, o := range decode[groupDesc](t, ok(t, b, "", "groups", "describe", "g2", "--output", "json")).Offsets {
		if o.Topic == "gb" {
			t.Errorf("gb offsets survived --delete-offsets: %+v", o)
		}
	}
	if stderr := fails(t, b, "", "groups", "delete-offsets", "nope-group", "--topic", "gb"); !strings.Contains(stderr, "does not exist") {
		t.Errorf("delete-offsets of a missing group: %q", stderr)
	}

	ok(t, b, "", "groups", "--delete", "--all-groups")
	if out := ok(t, b, "", "groups", "list", "--output", "json"); strings.Contains(out, "g1") || strings.Contains(out, "g2") {
		t.Errorf("groups left after --delete --all-groups: %q", out)
	}
}
