package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// controllerFailoverBound is the issue's "topic creation works again within
// a few seconds", made generous for a loaded 2-core machine.
const controllerFailoverBound = 20 * time.Second

// TestControllerFailover kills the active controller (the Raft leader of
// the metadata quorum, found with DescribeQuorum): the survivors elect a
// new one, topic creation works again within controllerFailoverBound, the
// dead broker drops out of Metadata and DescribeCluster once fenced, and
// the restarted node rejoins the quorum as a voter and catches up.
func TestControllerFailover(t *testing.T) {
	c := StartCluster(t)
	all := []int32{1, 2, 3}

	q, err := c.quorum()
	if err != nil {
		t.Fatalf("DescribeQuorum: %v", err)
	}
	logf(t, "quorum before: %v", q)
	if got := sorted(mapKeys(q.VoterLEO)); !slices.Equal(got, all) {
		t.Errorf("DescribeQuorum voters = %v, want %v", got, all)
	}
	for _, id := range all {
		brokers, ctrl, err := c.describeClusterFrom(id)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(brokers, all) || !slices.Contains(all, ctrl) {
			t.Errorf("DescribeCluster from node %d: brokers %v controller %d, want brokers %v and a controller among them", id, brokers, ctrl, all)
		}
	}
	old := q.Leader
	if !slices.Contains(all, old) {
		t.Fatalf("DescribeQuorum leader = %d, not a voter", old)
	}

	c.Node(old).Kill()
	killed := time.Now()
	const topic = "after-controller-failover"
	if err := c.tryCreateTopic(topic, 3, 2, nil, 45*time.Second); err != nil {
		t.Fatalf("creating a topic after the controller (node %d) died: %v", old, err)
	}
	took := time.Since(killed)
	logf(t, "topic creation worked again %v after killing controller node %d", took.Round(time.Millisecond), old)
	if took > controllerFailoverBound {
		t.Errorf("topic creation took %v after the controller died, want under %v", took.Round(time.Millisecond), controllerFailoverBound)
	}
	var nq quorumState
	waitFor(t, 15*time.Second, "a new quorum leader", func() (bool, string) {
		q, err := c.quorum(old)
		if err != nil {
			return false, err.Error()
		}
		nq = q
		return q.Leader >= 0 && q.Leader != old && q.Epoch > 0, q.String()
	})
	logf(t, "quorum after: %v", nq)

	survivors := slices.DeleteFunc(slices.Clone(all), func(id int32) bool { return id == old })
	waitFor(t, 20*time.Second, fmt.Sprintf("node %d gone from Metadata and DescribeCluster (fenced)", old), func() (bool, string) {
		var status []string
		ok := true
		for _, id := range survivors {
			md, err := c.brokersSeenBy(id)
			dc, ctrl, derr := c.describeClusterFrom(id)
			if err != nil || derr != nil {
				return false, fmt.Sprintf("%v %v", err, derr)
			}
			if !slices.Equal(md, survivors) || !slices.Equal(dc, survivors) || !slices.Contains(survivors, ctrl) {
				ok = false
			}
			status = append(status, fmt.Sprintf("node %d: Metadata %v, DescribeCluster %v controller %d", id, md, dc, ctrl))
		}
		return ok, strings.Join(status, "; ")
	})

	// The new topic serves acks=all writes and reads with the old
	// controller still down.
	cl := c.ClientOf(survivors, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := newLedger("ctl")
	for seq := range int64(30) {
		r := &kgo.Record{Value: []byte(recordValue("ctl", seq)), Partition: int32(seq % 3)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("producing to %s with node %d down: %v", topic, old, err)
		}
		l.ack(ackedRecord{Seq: seq, Partition: r.Partition, Offset: r.Offset})
	}
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, 3), l))

	c.Node(old).Restart()
	rejoined := time.Now()
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d rejoining the quorum as a caught-up voter", old), func() (bool, string) {
		q, err := c.quorum()
		if err != nil {
			return false, err.Error()
		}
		leo, ok := q.VoterLEO[old]
		return ok && q.Leader >= 0 && leo >= q.HighWater && q.HighWater > 0, q.String()
	})
	c.WaitFormed()
	logf(t, "node %d rejoined and caught up in %v", old, time.Since(rejoined).Round(time.Millisecond))

	// With all three back, a topic needing every broker can be created.
	c.createTopic("after-rejoin", 1, 3, nil)
}

// mapKeys returns m's keys.
func mapKeys[V any](m map[int32]V) []int32 {
	var ks []int32
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
