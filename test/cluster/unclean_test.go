package cluster

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestUncleanLeaderElection checks unclean.leader.election.enable on a
// partition replicated on [4, 1], node 4 broker-only (so both replicas can
// die while the three voters keep the quorum):
//   - disabled (the default): with its only in-sync replica (4) dead, the
//     partition stays leaderless even when the out-of-sync replica (1)
//     returns, and 4's return brings back every acknowledged record;
//   - enabled on the topic: the out-of-sync replica becomes leader (Kafka
//     trades the records only 4 had for availability).
func TestUncleanLeaderElection(t *testing.T) {
	const (
		topic = "unclean"
		in    = int32(4) // stays in sync
		out   = int32(1) // falls behind
	)
	c := StartCluster(t, WithNodes(4), WithBrokerOnly(in))
	c.createTopicAssigned(topic, map[int32][]int32{0: {in, out}})
	a := produceN(t, c, nil, "a", topic, 50)

	fallBehind := func(name string) *ledger {
		t.Helper()
		c.Node(out).Kill()
		c.waitTopic(topic, 30*time.Second, fmt.Sprintf("ISR [%d] after node %d died", in, out), func(v topicView) bool {
			return slices.Equal(v.Partitions[0].ISR, []int32{in}) && v.Partitions[0].Leader == in
		}, out)
		l := produceN(t, c, []int32{2, 3, in}, name, topic, 50)
		c.Node(in).Kill()
		c.waitTopic(topic, 30*time.Second, "no leader with the last in-sync replica dead", func(v topicView) bool {
			return v.Partitions[0].Leader == -1
		}, out, in)
		c.Node(out).Restart()
		return l
	}
	b := fallBehind("b")

	// Kafka never elects the out-of-sync replica while the option is off.
	// Give the controller several heartbeat rounds of the returned node
	// to get it wrong.
	stable := time.Now().Add(8 * time.Second)
	for time.Now().Before(stable) {
		if v, err := c.topicView(topic, in); err == nil && v.Partitions[0].Leader == out {
			t.Fatalf("out-of-sync replica %d elected leader with unclean.leader.election.enable=false: %v", out, v)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.Node(in).Restart()
	c.waitFullyReplicated(topic, 1, 45*time.Second)
	t.Logf("clean: %s", verifyLedgers(t, c.readAll(topic, 1), a, b))

	lost := fallBehind("lost")
	adm := c.AdminOf(2, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	on := "true"
	resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: &on}}, topic)
	if err == nil {
		_, err = resp.On(topic, nil)
	}
	if err != nil {
		t.Fatalf("enabling unclean.leader.election.enable on %s: %v", topic, err)
	}
	v := c.waitTopic(topic, 30*time.Second, fmt.Sprintf("out-of-sync replica %d elected with unclean.leader.election.enable=true", out), func(v topicView) bool {
		return v.Partitions[0].Leader == out
	}, in)
	logf(t, "unclean election: %v", v)
	logs := c.readAll(topic, 1, 2, 3, out)
	t.Logf("unclean: %s", verifyLedgers(t, logs, a, b))
	kept := 0
	for _, r := range logs[0] {
		if name, _, ok := parseRecordValue(r.Value); ok && name == lost.name {
			kept++
		}
	}
	logf(t, "%d of the %d records only node %d had survive the unclean election (Kafka: none)", kept, 50, in)
}
