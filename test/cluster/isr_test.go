package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestISRShrinkExpandAndMinInsyncReplicas checks Kafka's in-sync replica
// rules on one partition (rf=3, min.insync.replicas=2):
//   - a follower paused with SIGSTOP leaves the ISR once it lags more than
//     replica.lag.time.max.ms (or its broker is fenced), acks=all writes go on
//     with the other two, and it rejoins the ISR after SIGCONT;
//   - below min.insync.replicas with the quorum alive the leader refuses
//     acks=all with NOT_ENOUGH_REPLICAS, but accepts acks=1;
//   - with both followers SIGKILLed (which also takes the Raft quorum, so
//     the ISR cannot shrink) the leader acknowledges nothing with acks=all;
//   - nothing acknowledged before is lost when they return.
func TestISRShrinkExpandAndMinInsyncReplicas(t *testing.T) {
	const topic = "isr"
	c := StartCluster(t)
	var leader int32
	var followers []int32
	// roles reads the partition's current leader and followers: a later
	// phase may have moved leadership (a killed node does not get it back
	// on restart unless preferred-leader election runs).
	roles := func(v topicView) {
		leader, followers = v.Partitions[0].Leader, nil
		for _, r := range v.Partitions[0].Replicas {
			if r != leader {
				followers = append(followers, r)
			}
		}
		logf(t, "%s[0]: leader %d, followers %v", topic, leader, followers)
	}
	roles(c.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"}))

	var acked []ackedRecord // written with acks=all through produceTo
	seq := int64(0)
	produceAcked := func(what string, timeout time.Duration) {
		t.Helper()
		v := recordValue("raw", seq)
		res := c.produceTo(leader, topic, 0, -1, timeout, v)
		if !res.acknowledged() {
			t.Fatalf("%s: acks=all produce to leader %d: %v", what, leader, res)
		}
		acked = append(acked, ackedRecord{Seq: seq, Partition: 0, Offset: res.BaseOffset})
		seq++
	}
	for range 20 {
		produceAcked("with a full ISR", 5*time.Second)
	}

	if !t.Run("PausedFollowerLeavesAndRejoinsISR", func(t *testing.T) {
		paused := followers[0]
		c.Node(paused).Pause()
		start := time.Now()
		// The first acks=all write after the pause waits for the paused
		// follower until the ISR shrinks; then it must be acknowledged.
		v := recordValue("raw", seq)
		res := c.produceTo(leader, topic, 0, -1, 30*time.Second, v)
		if !res.acknowledged() {
			t.Fatalf("acks=all produce while node %d is paused: %v (want it acknowledged once the ISR shrinks to 2 >= min.insync.replicas)", paused, res)
		}
		acked = append(acked, ackedRecord{Seq: seq, Partition: 0, Offset: res.BaseOffset})
		seq++
		logf(t, "acks=all write with node %d paused: %v", paused, res)
		v2 := c.waitTopic(topic, 30*time.Second, fmt.Sprintf("ISR without paused node %d", paused), func(v topicView) bool {
			return !slices.Contains(v.Partitions[0].ISR, paused) && len(v.Partitions[0].ISR) == 2
		}, paused)
		logf(t, "ISR shrank %v after SIGSTOP: %v", time.Since(start).Round(time.Millisecond), v2)
		for range 10 {
			produceAcked("with the follower out of the ISR", 5*time.Second)
		}

		c.Node(paused).Resume()
		start = time.Now()
		c.waitFullyReplicated(topic, 1, 45*time.Second)
		logf(t, "node %d back in the ISR %v after SIGCONT", paused, time.Since(start).Round(time.Millisecond))
		for range 10 {
			produceAcked("after the follower rejoined", 5*time.Second)
		}
	}) {
		return
	}

	if !t.Run("BelowMinInsyncReplicasIsRefused", func(t *testing.T) {
		// min.insync.replicas=3 on its own topic: one follower down drops
		// the ISR below it while two of three Raft voters stay up, so the
		// controller can shrink the ISR and the leader must refuse.
		const strict = "isr-strict"
		sv := c.createTopic(strict, 1, 3, map[string]string{"min.insync.replicas": "3"})
		sl := sv.Partitions[0].Leader
		if r := c.produceTo(sl, strict, 0, -1, 5*time.Second, "strict:0"); !r.acknowledged() {
			t.Fatalf("acks=all with ISR=3 >= min.insync.replicas=3: %v", r)
		}
		var down int32 = -1
		for _, r := range sv.Partitions[0].Replicas {
			if r != sl {
				down = r
				break
			}
		}
		c.Node(down).Kill()
		// The leader's own view decides what it answers.
		waitFor(t, 30*time.Second, fmt.Sprintf("leader %d's view: ISR without killed node %d", sl, down), func() (bool, string) {
			v, err := c.topicFrom(sl, strict)
			if err != nil {
				return false, err.Error()
			}
			return len(v.Partitions[0].ISR) == 2 && !slices.Contains(v.Partitions[0].ISR, down), v.String()
		})
		r := c.produceTo(sl, strict, 0, -1, 5*time.Second, "strict:1")
		if r.Err != nil || r.Code != kerr.NotEnoughReplicas.Code {
			t.Errorf("acks=all with ISR=2 < min.insync.replicas=3: %v, want NOT_ENOUGH_REPLICAS", r)
		}
		// min.insync.replicas applies to acks=all only.
		if r := c.produceTo(sl, strict, 0, 1, 5*time.Second, "strict:2"); !r.acknowledged() {
			t.Errorf("acks=1 with ISR=2 < min.insync.replicas=3: %v, want it acknowledged", r)
		}
		c.Node(down).Restart()
		c.waitFullyReplicated(strict, 1, 45*time.Second)
		if r := c.produceTo(sl, strict, 0, -1, 10*time.Second, "strict:3"); !r.acknowledged() {
			t.Errorf("acks=all after node %d rejoined the ISR: %v", down, r)
		}
		roles(c.waitFullyReplicated(topic, 1, 45*time.Second))
	}) {
		return
	}

	if !t.Run("TwoReplicasDownNothingAcknowledged", func(t *testing.T) {
		for _, f := range followers {
			c.Node(f).Kill()
		}
		// Kafka's leader keeps an ISR it cannot shrink (the controller has
		// lost its quorum) and waits for followers that never fetch: the
		// request times out (REQUEST_TIMED_OUT), or fails with
		// NOT_ENOUGH_REPLICAS(_AFTER_APPEND) if the ISR did shrink. Two
		// attempts, the second after the brokers' session timeout, so a
		// leader that shrinks its ISR on its own would be caught.
		accepted := []int16{kerr.RequestTimedOut.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code}
		for i := range 2 {
			r := c.produceTo(leader, topic, 0, -1, 4*time.Second, fmt.Sprintf("unacked:%d", i))
			logf(t, "acks=all with both followers down, attempt %d: %v", i, r)
			if r.acknowledged() {
				t.Errorf("leader %d acknowledged an acks=all write with both followers dead: %v", leader, r)
			} else if r.Err == nil && !slices.Contains(accepted, r.Code) {
				t.Errorf("acks=all with both followers dead: %v, want REQUEST_TIMED_OUT, NOT_ENOUGH_REPLICAS or NOT_ENOUGH_REPLICAS_AFTER_APPEND", r)
			}
		}
		for _, f := range followers {
			c.Node(f).Restart()
		}
		c.WaitFormed()
		c.waitFullyReplicated(topic, 1, 60*time.Second)
	}) {
		return
	}

	logs := c.readAll(topic, 1)
	l := newLedger("raw")
	for _, a := range acked {
		l.ack(a)
	}
	t.Logf("verification: %s", verifyLedgers(t, logs, l))
}
