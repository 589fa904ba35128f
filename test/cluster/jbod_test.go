package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFailedLogDirGoesOffline is KIP-858's promise for a broker with two
// log dirs (JBOD): when one dir starts failing I/O (the storage fault test
// hook, as root ignores permission bits), that dir goes offline, its
// partitions' leadership and ISR membership move to the other replicas,
// and the broker keeps running and serving the partitions of its healthy
// dir; once its other dir fails as well, it stops, as Kafka halts, and
// restarted with one dir still unreadable it serves the other. A franz-go producer (acks=all) and consumer group carry on
// throughout and no acknowledged record is lost; DescribeLogDirs reports
// the failed dir with KAFKA_STORAGE_ERROR.
func TestFailedLogDirGoesOffline(t *testing.T) {
	const (
		topic      = "jbod"
		partitions = 6
		victim     = int32(3)
		group      = "jbod-group"
	)
	c := StartCluster(t, WithLogDirs(2), WithFaultTrigger())
	// The victim is the preferred leader of partitions 0-3, so whichever
	// three of its six partitions each of its dirs gets, both dirs hold
	// partitions it leads.
	assignment := [][]int32{{3, 1, 2}, {3, 2, 1}, {3, 1, 2}, {3, 2, 1}, {1, 2, 3}, {2, 3, 1}}
	createAssignedTopic(t, c, topic, assignment, map[string]string{"min.insync.replicas": "2"})
	c.waitFullyReplicated(topic, partitions, 30*time.Second)

	dirs := c.Node(victim).LogDirs()
	healthy, failing := dirs[0], dirs[1]
	adm := c.Admin()
	placed := brokerPlacement(t, adm, victim, topic)
	logf(t, "node %d placement: %s holds %v, %s holds %v", victim, healthy, placed[healthy], failing, placed[failing])
	if len(placed[healthy]) != 3 || len(placed[failing]) != 3 {
		t.Fatalf("node %d placed %v in %s and %v in %s, want three partitions in each (fewest partitions first)", victim, placed[healthy], healthy, placed[failing], failing)
	}

	kp := startKgoProducer(t, c, "kgo", topic, partitions, 2*time.Millisecond, 0)
	stopped := false
	stopProducer := func() {
		if !stopped {
			stopped = true
			if err := kp.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stopProducer)
	gc := startGroupConsumer(t, c, group, topic)
	waitProgress(t, 30*time.Second, "records acknowledged before the failure", 200, kp)
	committed := gc.waitCommitAdvance(t, adm, 0, 30*time.Second, "the group's first commit")

	logf(t, "failing I/O under node %d's %s", victim, failing)
	if err := os.WriteFile(c.Node(victim).FaultTriggerFile(), []byte(failing+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	failedAt := time.Now()

	// The failed dir's partitions move off the victim; its healthy dir's
	// stay, and it still leads some of them.
	view := c.waitTopic(topic, 60*time.Second, fmt.Sprintf("the partitions of node %d's failed dir led elsewhere, without it in their ISR", victim), func(v topicView) bool {
		for _, p := range placed[failing] {
			ps := v.Partitions[p]
			if ps.Leader < 0 || ps.Leader == victim || slices.Contains(ps.ISR, victim) {
				return false
			}
		}
		return true
	})
	logf(t, "failed dir's partitions moved in %v: %v", time.Since(failedAt).Round(time.Millisecond), view)
	ledHealthy := 0
	for _, p := range placed[healthy] {
		ps := view.Partitions[p]
		if !slices.Contains(ps.ISR, victim) {
			t.Errorf("p%d in node %d's healthy dir lost it from the ISR: %v", p, victim, ps)
		}
		if ps.Leader == victim {
			ledHealthy++
		}
	}
	if ledHealthy == 0 {
		t.Errorf("node %d leads none of its healthy dir's partitions %v any more: %v", victim, placed[healthy], view)
	}

	waitFor(t, 30*time.Second, "DescribeLogDirs reporting the failed dir offline", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		described, err := adm.DescribeBrokerLogDirs(ctx, victim, nil)
		if err != nil {
			return false, err.Error()
		}
		bad, good := described[failing], described[healthy]
		status := fmt.Sprintf("%s: err=%v; %s: err=%v topics=%v", failing, bad.Err, healthy, good.Err, good.Topics)
		return errors.Is(bad.Err, kerr.KafkaStorageError) && good.Err == nil && len(good.Topics[topic]) == 3, status
	})

	waitProgress(t, 45*time.Second, "records acknowledged after the failure", 300, kp)
	committed = gc.waitCommitAdvance(t, adm, committed, 45*time.Second, "the group commits after the failure")
	if !c.Node(victim).Running() {
		t.Fatalf("node %d stopped after losing one of its two log dirs", victim)
	}
	if out := c.Node(victim).Output(); !strings.Contains(out, "log dir failed") {
		t.Errorf("node %d's output does not show the dir failure", victim)
	}

	// With its last log dir failing too, the broker stops (Kafka halts),
	// and the others carry on without it.
	exited := c.Node(victim).ExpectExit()
	logf(t, "failing I/O under node %d's last log dir %s", victim, healthy)
	if err := os.WriteFile(c.Node(victim).FaultTriggerFile(), []byte(failing+"\n"+healthy+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		logf(t, "node %d stopped with no usable log dir left", victim)
	case <-time.After(60 * time.Second):
		t.Fatalf("node %d still running 60s after its last log dir failed", victim)
	}
	c.waitTopic(topic, 60*time.Second, fmt.Sprintf("every partition led without node %d", victim), func(v topicView) bool {
		for _, ps := range v.Partitions {
			if ps.Leader < 0 || ps.Leader == victim {
				return false
			}
		}
		return true
	}, victim)
	waitProgress(t, 60*time.Second, "records acknowledged with node "+fmt.Sprint(victim)+" stopped", 300, kp)

	// Restarted with only the first dir readable, the broker starts with
	// the other offline (KIP-858): it serves the first dir's partitions
	// again and leaves the others' to their other replicas.
	if err := os.WriteFile(c.Node(victim).FaultTriggerFile(), []byte(failing+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Node(victim).Restart()
	logf(t, "node %d restarted with %s still failing", victim, failing)
	view = c.waitTopic(topic, 60*time.Second, fmt.Sprintf("node %d back in the ISR of its readable dir's partitions only", victim), func(v topicView) bool {
		for _, p := range placed[healthy] {
			if !slices.Contains(v.Partitions[p].ISR, victim) {
				return false
			}
		}
		for _, p := range placed[failing] {
			if slices.Contains(v.Partitions[p].ISR, victim) || v.Partitions[p].Leader == victim {
				return false
			}
		}
		return true
	})
	logf(t, "after the restart: %v", view)
	waitFor(t, 30*time.Second, "DescribeLogDirs reporting the dir offline since start", func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		described, err := adm.DescribeBrokerLogDirs(ctx, victim, nil)
		if err != nil {
			return false, err.Error()
		}
		return errors.Is(described[failing].Err, kerr.KafkaStorageError) && len(described[healthy].Topics[topic]) == 3, fmt.Sprint(described)
	})
	waitProgress(t, 45*time.Second, "records acknowledged after the restart", 300, kp)
	stopProducer()
	if acked, _ := kp.Ledger().counts(); acked == 0 {
		t.Fatalf("%v: nothing acknowledged", kp.Ledger())
	}
	logs := c.readAll(topic, partitions)
	t.Logf("verification (group committed %d):\n%s", committed, verifyLedgers(t, logs, kp.Ledger()))
	waitFor(t, 60*time.Second, "the consumer group delivered every acknowledged record", func() (bool, string) {
		n, ex := gc.missing(kp.Ledger())
		return n == 0, fmt.Sprintf("%d acknowledged records not delivered yet, e.g. %v; consumer errors: %v", n, ex, gc.errors())
	})
}

// TestAlterReplicaLogDirsUnderLoad moves replicas between the log dirs of
// their brokers (JBOD) with AlterReplicaLogDirs while a franz-go producer
// (acks=all) and a consumer group run: a leader's replica and a follower's.
// Each move completes (DescribeLogDirs shows the replica in its new dir),
// the partitions stay fully replicated, and no acknowledged record is lost.
func TestAlterReplicaLogDirsUnderLoad(t *testing.T) {
	const (
		topic      = "moving"
		partitions = 2
		group      = "moving-group"
	)
	c := StartCluster(t, WithLogDirs(2))
	c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2", "segment.bytes": "65536"})
	adm := c.Admin()
	kp := startKgoProducer(t, c, "kgo", topic, partitions, 2*time.Millisecond, 200)
	stopped := false
	stopProducer := func() {
		if !stopped {
			stopped = true
			if err := kp.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stopProducer)
	gc := startGroupConsumer(t, c, group, topic)
	waitProgress(t, 30*time.Second, "records acknowledged before the moves", 500, kp)

	view := c.waitFullyReplicated(topic, partitions, 30*time.Second)
	leader := view.Partitions[0].Leader
	follower := view.Partitions[0].Replicas[0]
	for _, r := range view.Partitions[0].Replicas {
		if r != leader {
			follower = r
		}
	}
	for _, broker := range []int32{leader, follower} {
		placed := brokerPlacement(t, adm, broker, topic)
		dirs := c.Node(broker).LogDirs()
		src, dst := dirs[0], dirs[1]
		if !slices.Contains(placed[src], 0) {
			src, dst = dst, src
		}
		logf(t, "moving p0 on node %d (leader %d) from %s to %s", broker, leader, src, dst)
		var req kadm.AlterReplicaLogDirsReq
		req.Add(dst, kadm.TopicsSet{topic: {0: {}}})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := adm.AlterBrokerReplicaLogDirs(ctx, broker, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if err := res[topic][0].Err; err != nil {
			t.Fatalf("AlterReplicaLogDirs on node %d: %v", broker, err)
		}
		waitFor(t, 60*time.Second, fmt.Sprintf("p0 on node %d in %s", broker, dst), func() (bool, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			described, err := adm.DescribeBrokerLogDirs(ctx, broker, kadm.TopicsSet{topic: {0: {}}})
			if err != nil {
				return false, err.Error()
			}
			p, ok := described[dst].Topics[topic][0]
			_, stillOld := described[src].Topics[topic][0]
			return ok && !p.IsFuture && !stillOld, fmt.Sprintf("%s: %v; %s: %v", src, described[src].Topics, dst, described[dst].Topics)
		})
		waitProgress(t, 30*time.Second, fmt.Sprintf("records acknowledged after the move on node %d", broker), 300, kp)
		c.waitFullyReplicated(topic, partitions, 60*time.Second)
	}
	stopProducer()
	logs := c.readAll(topic, partitions)
	t.Logf("verification:\n%s", verifyLedgers(t, logs, kp.Ledger()))
	waitFor(t, 60*time.Second, "the consumer group delivered every acknowledged record", func() (bool, string) {
		n, ex := gc.missing(kp.Ledger())
		return n == 0, fmt.Sprintf("%d acknowledged records not delivered yet, e.g. %v; consumer errors: %v", n, ex, gc.errors())
	})
}

// createAssignedTopic creates topic with an explicit replica assignment.
func createAssignedTopic(t *testing.T, c *Cluster, topic string, assignment [][]int32, configs map[string]string) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	waitFor(t, 30*time.Second, "creating "+topic, func() (bool, string) {
		err := c.sendCreateTopics(req)
		return err == nil || errors.Is(err, kerr.TopicAlreadyExists), fmt.Sprint(err)
	})
}

// brokerPlacement returns, per log dir of broker, the partitions of topic
// it holds there (DescribeLogDirs).
func brokerPlacement(t *testing.T, adm *kadm.Client, broker int32, topic string) map[string][]int32 {
	t.Helper()
	var out map[string][]int32
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d describing its log dirs", broker), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		described, err := adm.DescribeBrokerLogDirs(ctx, broker, nil)
		if err != nil {
			return false, err.Error()
		}
		out = map[string][]int32{}
		for dir, d := range described {
			if d.Err != nil {
				return false, fmt.Sprintf("%s: %v", dir, d.Err)
			}
			for p := range d.Topics[topic] {
				out[dir] = append(out[dir], p)
			}
			sort.Slice(out[dir], func(i, j int) bool { return out[dir][i] < out[dir][j] })
		}
		return len(out) == 2, fmt.Sprint(out)
	})
	return out
}
