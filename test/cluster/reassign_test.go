package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReassignmentUnderLoad moves both partitions of a topic to another
// broker set with `vltava partitions reassign` (AlterPartitionReassignments,
// KIP-455) while an idempotent acks=all producer writes to them: the new
// replicas copy the data and join the ISR before the old ones are dropped
// (their directories removed), leadership leaves a removed leader, nothing
// acknowledged is lost, and the moved data is whole on the new replicas
// (read again after killing the new leader).
func TestReassignmentUnderLoad(t *testing.T) {
	const topic = "moving"
	c := StartCluster(t)
	from := map[int32][]int32{0: {1, 2}, 1: {2, 3}}
	to := map[int32][]int32{0: {2, 3}, 1: {1, 3}}
	c.createTopicAssigned(topic, from)

	// 4 KiB records: a few MB to copy, so the move overlaps the load.
	kp := startKgoProducer(t, c, "kgo", topic, 2, time.Millisecond, 4<<10)
	t.Cleanup(func() { _ = kp.Stop() })
	waitProgress(t, 60*time.Second, "acknowledged writes before the reassignment", 2000, kp)

	start := time.Now()
	for p := int32(0); p < 2; p++ {
		out, err := c.runCLI("partitions", "reassign", "--topic", topic, "--partition", fmt.Sprint(p), "--replicas", joinIDs(to[p]))
		if err != nil {
			t.Fatalf("vltava partitions reassign p%d to %v: %v\n%s", p, to[p], err, out)
		}
		logf(t, "vltava partitions reassign: %s", strings.TrimSpace(out))
	}

	adm := c.Admin()
	waitFor(t, 60*time.Second, "reassignments complete (ListPartitionReassignments empty, metadata on every node shows the new replica sets)", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ongoing, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}, 1: {}}})
		if err != nil {
			return false, fmt.Sprintf("ListPartitionReassignments: %v", err)
		}
		var pending []string
		for _, ps := range ongoing {
			for p, r := range ps {
				if len(r.AddingReplicas)+len(r.RemovingReplicas) > 0 {
					pending = append(pending, fmt.Sprintf("p%d replicas=%v adding=%v removing=%v", p, r.Replicas, r.AddingReplicas, r.RemovingReplicas))
				}
			}
		}
		if len(pending) > 0 {
			return false, "in progress: " + strings.Join(pending, "; ")
		}
		for _, id := range c.responsive() {
			v, err := c.topicFrom(id, topic)
			if err != nil {
				return false, err.Error()
			}
			for p, want := range to {
				ps := v.Partitions[p]
				if !slices.Equal(ps.Replicas, want) || !slices.Equal(ps.ISR, sorted(want)) || !slices.Contains(want, ps.Leader) {
					return false, fmt.Sprintf("node %d: p%d{%v}, want replicas %v all in sync", id, p, ps, want)
				}
			}
		}
		return true, ""
	})
	logf(t, "reassignment complete after %v (%v)", time.Since(start).Round(time.Millisecond), kp.Ledger())

	// Old replicas drop their copies; new ones hold them.
	waitFor(t, 30*time.Second, "partition directories only on the new replicas", func() (bool, string) {
		var wrong []string
		for p := int32(0); p < 2; p++ {
			for id := int32(1); id <= 3; id++ {
				_, err := os.Stat(filepath.Join(c.Node(id).DataDir(), fmt.Sprintf("%s-%d", topic, p)))
				has, want := err == nil, slices.Contains(to[p], id)
				if has != want {
					wrong = append(wrong, fmt.Sprintf("node %d has %s-%d: %v, want %v", id, topic, p, has, want))
				}
			}
		}
		return len(wrong) == 0, strings.Join(wrong, "; ")
	})

	waitProgress(t, 30*time.Second, "acknowledged writes after the reassignment", 200, kp)
	if err := kp.Stop(); err != nil {
		t.Error(err)
	}
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, 2), kp.Ledger()))

	// The data is whole on the new replicas: kill p0's leader so the other
	// new replica serves it alone, and read everything again.
	v := c.waitFullyReplicated(topic, 2, 30*time.Second)
	victim := v.Partitions[0].Leader
	c.Node(victim).Kill()
	c.waitTopic(topic, 30*time.Second, fmt.Sprintf("p0 led by the other new replica after node %d died", victim), func(v topicView) bool {
		l := v.Partitions[0].Leader
		return l != victim && slices.Contains(to[0], l) && v.Partitions[1].Leader >= 0 && v.Partitions[1].Leader != victim
	}, victim)
	t.Logf("verification with node %d down: %s", victim, verifyLedgers(t, c.readAll(topic, 2), kp.Ledger()))
}

// createTopicAssigned creates topic with an explicit replica assignment
// (partition → brokers, preferred leader first) and waits until it is
// fully replicated.
func (c *Cluster) createTopicAssigned(topic string, assignment map[int32][]int32) {
	c.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := int32(0); p < int32(len(assignment)); p++ {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = p, assignment[p]
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, rt)
	if err := c.sendCreateTopics(req); err != nil {
		c.t.Fatalf("creating %s with assignment %v: %v", topic, assignment, err)
	}
	v := c.waitFullyReplicated(topic, int32(len(assignment)), 30*time.Second)
	for p, want := range assignment {
		if got := v.Partitions[p].Replicas; !slices.Equal(got, want) {
			c.t.Fatalf("%s p%d replicas = %v, want the requested %v", topic, p, got, want)
		}
	}
}

// runCLI runs the vltava client command args against the cluster and
// returns its combined output.
func (c *Cluster) runCLI(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--bootstrap-server", c.BootstrapServers())...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// joinIDs formats broker ids as "1,2,3".
func joinIDs(ids []int32) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprint(id))
	}
	return strings.Join(s, ",")
}
