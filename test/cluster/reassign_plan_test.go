package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestReassignPlanWithThrottle drives kafka-reassign-partitions.sh's
// workflow through `vltava partitions reassign`: --execute of a JSON plan
// with --throttle sets the KIP-73 throttled-replica lists on the moved
// topic (the current replicas as leaders, the new one as follower), the
// move completes, and --verify reports it completed and removes every
// throttle.
func TestReassignPlanWithThrottle(t *testing.T) {
	const topic = "planned"
	c := StartCluster(t)
	c.createTopicAssigned(topic, map[int32][]int32{0: {1, 2}, 1: {2, 3}})
	cl := c.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 100 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}

	// The rates are per-broker configs, each stored by the controller for
	// the broker it names, whichever broker the request reached.
	for _, id := range []string{"1", "2", "3"} {
		if out, err := c.runCLI("configs", "alter", "--broker", id, "--set", "leader.replication.throttled.rate=1"); err != nil {
			t.Fatalf("setting a per-broker config on broker %s: %v: %s", id, err, strings.TrimSpace(out))
		}
		if out, err := c.runCLI("configs", "alter", "--broker", id, "--delete", "leader.replication.throttled.rate"); err != nil {
			t.Fatalf("clearing it on broker %s: %v: %s", id, err, out)
		}
	}

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"planned","partition":0,"replicas":[3,2],"log_dirs":["any","any"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A generous rate: the test checks the configs, not the pacing.
	args := []string{"partitions", "reassign", "--execute", "--reassignment-json-file", plan}
	args = append(args, "--throttle", "100000000")
	out, err := c.runCLI(args...)
	if err != nil || !strings.Contains(out, "Successfully started partition reassignments for planned-0") {
		t.Fatalf("--execute: %v\n%s", err, out)
	}
	if !strings.Contains(out, `{"topic":"planned","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}`) {
		t.Errorf("--execute does not print the rollback plan:\n%s", out)
	}
	topicThrottles := func() map[string]string {
		rcs, err := c.Admin().DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatalf("describing %s: %v", topic, err)
		}
		got := map[string]string{}
		for _, rc := range rcs {
			for _, cfg := range rc.Configs {
				if strings.HasSuffix(cfg.Key, ".replication.throttled.replicas") && cfg.Value != nil && *cfg.Value != "" {
					got[cfg.Key] = *cfg.Value
				}
			}
		}
		return got
	}
	// Config changes reach each broker when it applies the metadata log
	// (IncrementalAlterConfigs answers once committed, as Kafka), so the
	// brokers' view is polled.
	waitFor(t, 10*time.Second, "topic throttles after --execute", func() (bool, string) {
		got := topicThrottles()
		return got["leader.replication.throttled.replicas"] == "0:1,0:2" && got["follower.replication.throttled.replicas"] == "0:3", fmt.Sprint(got)
	})

	waitFor(t, 60*time.Second, "--verify reports the move completed", func() (bool, string) {
		out, err := c.runCLI("partitions", "reassign", "--verify", "--reassignment-json-file", plan)
		if err != nil {
			return false, err.Error() + ": " + out
		}
		return strings.Contains(out, "Reassignment of partition planned-0 is completed.") &&
			strings.Contains(out, "Clearing topic-level throttles on topic planned"), out
	})
	waitFor(t, 10*time.Second, "no topic throttles after --verify", func() (bool, string) {
		got := topicThrottles()
		return len(got) == 0, fmt.Sprint(got)
	})
	md, err := c.Admin().Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if r := md.Topics[topic].Partitions[0].Replicas; len(r) != 2 || r[0] != 3 || r[1] != 2 {
		t.Errorf("replicas of planned-0 after the move: %v", r)
	}
}
