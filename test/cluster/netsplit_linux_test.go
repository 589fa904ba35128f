package cluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestNetworkPartitionIsolatingLeader cuts a partition leader off from the
// other two nodes (clients still reach every node), in network namespaces:
// the isolated leader must not acknowledge acks=all writes, the majority
// elects a new leader that takes writes, and after the network heals the
// old leader truncates the tail it appended alone (through
// OffsetForLeaderEpoch), so that once it leads again (preferred-leader
// election) its log is the new leader's: every acknowledged record exactly
// once, none of the isolated writes.
func TestNetworkPartitionIsolatingLeader(t *testing.T) {
	if why := netnsUnavailable(); why != "" {
		// CI runs as root with iproute2 installed by
		// scripts/install-test-deps.sh: there a missing namespace is a
		// broken machine, not a reason to skip.
		if os.Getenv("CI") != "" {
			t.Fatalf("network namespaces unavailable on CI: %s", why)
		}
		t.Skipf("network-partition case skipped, no network namespaces: %s", why)
	}
	const topic = "split"
	nt := newNetnsTopology(t, 3)
	c := StartCluster(t, withTopology(nt))
	t.Logf("path: network namespaces (%s)", nt.describe())

	view := c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	old := view.Partitions[0]
	isolated := old.Leader
	others := slices.DeleteFunc([]int32{1, 2, 3}, func(id int32) bool { return id == isolated })

	before := produceN(t, c, nil, "before", topic, 200)

	logf(t, "cutting leader %d off from %v (%v)", isolated, others, old)
	if err := nt.cut(isolated, others...); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	healed := false
	heal := func() {
		if !healed {
			healed = true
			if err := nt.heal(isolated, others...); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(heal)

	// The isolated leader still answers clients; it must not acknowledge.
	// Its writes run while the majority elects a new leader.
	var isolatedValues []string
	isolatedResults := make(chan produceResult, 2)
	for i := range 2 {
		isolatedValues = append(isolatedValues, fmt.Sprintf("isolated:%d", i))
	}
	go func() {
		for _, v := range isolatedValues {
			isolatedResults <- c.produceTo(isolated, topic, 0, -1, 5*time.Second, v)
		}
		close(isolatedResults)
	}()

	nv := c.waitTopic(topic, 30*time.Second, fmt.Sprintf("a leader on the majority side %v", others), func(v topicView) bool {
		p := v.Partitions[0]
		return slices.Contains(others, p.Leader) && p.LeaderEpoch > old.LeaderEpoch
	}, isolated)
	logf(t, "majority elected a new leader %v after the cut: %v", time.Since(cut).Round(time.Millisecond), nv)
	i := 0
	for r := range isolatedResults {
		logf(t, "acks=all to the isolated leader %d, attempt %d: %v", isolated, i, r)
		if r.acknowledged() {
			t.Errorf("isolated leader %d acknowledged an acks=all write it cannot replicate: %v", isolated, r)
		}
		i++
	}

	during := produceN(t, c, others, "during", topic, 200)

	heal()
	logf(t, "network healed")
	c.waitFullyReplicated(topic, 1, 60*time.Second)
	logf(t, "old leader %d back in the ISR %v after the cut", isolated, time.Since(cut).Round(time.Millisecond))

	check := func(when string, logs map[int32][]logRecord) {
		t.Helper()
		t.Logf("%s: %s", when, verifyLedgers(t, logs, before, during))
		for _, r := range logs[0] {
			if slices.Contains(isolatedValues, r.Value) {
				t.Errorf("%s: %q, written only to the isolated leader and never acknowledged, is in the log at offset %d", when, r.Value, r.Offset)
			}
		}
	}
	afterHeal := c.readAll(topic, 1)
	check("read from the new leader", afterHeal)

	// Make the old leader lead again and read its log: it must have
	// dropped its divergent tail and copied what it missed.
	preferred := old.Replicas[0]
	if preferred != isolated {
		t.Logf("isolated leader %d was not the preferred replica (replicas %v); skipping the read through it", isolated, old.Replicas)
		return
	}
	c.electPreferred(topic, 0, preferred)
	c.waitFullyReplicated(topic, 1, 30*time.Second)
	viaOld := c.readAll(topic, 1)
	check(fmt.Sprintf("read from the old leader %d", isolated), viaOld)
	if !maps.EqualFunc(afterHeal, viaOld, slices.Equal) {
		t.Errorf("old leader %d's log differs from the new leader's:\nnew: %s\nold: %s", isolated, brief(afterHeal[0]), brief(viaOld[0]))
	}
}

// produceN writes n acks=all records with an idempotent kgo producer
// seeded with nodes ids (every node if empty) and returns its ledger; every
// record must be acknowledged.
func produceN(t testing.TB, c *Cluster, ids []int32, name, topic string, n int) *ledger {
	t.Helper()
	cl := c.ClientOf(ids, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(30*time.Second))
	l := newLedger(name)
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	var rs []*kgo.Record
	for seq := range int64(n) {
		rs = append(rs, &kgo.Record{Value: []byte(recordValue(name, seq))})
	}
	for i, res := range cl.ProduceSync(ctx, rs...) {
		if res.Err != nil {
			t.Fatalf("%s: record %d not acknowledged: %v", name, i, res.Err)
		}
		l.ack(ackedRecord{Seq: int64(i), Partition: res.Record.Partition, Offset: res.Record.Offset})
	}
	cl.Close()
	return l
}

// brief shows the first and last records of a partition's log.
func brief(recs []logRecord) string {
	if len(recs) <= 6 {
		return fmt.Sprint(recs)
	}
	var parts []string
	for _, r := range append(slices.Clone(recs[:3]), recs[len(recs)-3:]...) {
		parts = append(parts, fmt.Sprintf("%d:%s", r.Offset, r.Value))
	}
	return fmt.Sprintf("%d records: %s", len(recs), strings.Join(parts, " … "))
}
