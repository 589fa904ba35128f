package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestBrokerOnlyNodeObservesQuorum adds a broker-only node (process.roles=
// broker) to three combined voters: it replicates the metadata log as an
// observer (DescribeQuorum lists it among the observers, caught up, and
// not among the voters), is a live broker in Metadata, hosts and leads
// replicas, and after a crash rejoins and catches up again.
func TestBrokerOnlyNodeObservesQuorum(t *testing.T) {
	const (
		topic  = "observed"
		broker = int32(4)
	)
	c := StartCluster(t, WithNodes(4), WithBrokerOnly(broker))
	waitObserver := func(what string) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() (bool, string) {
			q, err := c.quorum(broker)
			if err != nil {
				return false, err.Error()
			}
			leo, ok := q.ObserverLEO[broker]
			voters := sorted(mapKeys(q.VoterLEO))
			return ok && leo >= q.HighWater && q.HighWater > 0 && slices.Equal(voters, []int32{1, 2, 3}), q.String()
		})
	}
	waitObserver(fmt.Sprintf("node %d a caught-up observer, voters [1 2 3]", broker))

	c.createTopicAssigned(topic, map[int32][]int32{0: {broker, 1, 2}})
	produced := produceN(t, c, nil, "obs", topic, 100)
	v, err := c.topicView(topic)
	if err != nil {
		t.Fatal(err)
	}
	if v.Partitions[0].Leader != broker {
		t.Errorf("leader of %s[0] = %d, want the preferred replica, broker-only node %d", topic, v.Partitions[0].Leader, broker)
	}
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, 1), produced))

	c.Node(broker).Kill()
	more := produceN(t, c, []int32{1, 2, 3}, "obs2", topic, 100)
	c.Node(broker).Restart()
	c.WaitFormed()
	waitObserver(fmt.Sprintf("restarted node %d caught up again as an observer", broker))
	c.waitFullyReplicated(topic, 1, 45*time.Second)
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, 1), produced, more))

	// Its copy is whole: once it leads again (it is the preferred
	// replica), everything is read from it.
	c.electPreferred(topic, 0, broker)
	t.Logf("verification through node %d: %s", broker, verifyLedgers(t, c.readAll(topic, 1), produced, more))
}
