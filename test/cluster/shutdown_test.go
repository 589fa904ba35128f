package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestControlledShutdownMovesLeadership stops a leader with SIGTERM: as in
// Kafka's controlled shutdown, the node hands its leaderships to other
// in-sync replicas before it exits (status 0), so the survivors show new
// leaders at once — long before broker.session.timeout.ms, set to 60 s
// here so that only a controlled shutdown can explain a quick move — and
// an idempotent acks=all producer loses nothing.
func TestControlledShutdownMovesLeadership(t *testing.T) {
	const (
		topic      = "drain"
		partitions = 3
	)
	c := StartCluster(t, WithOverride("broker.session.timeout.ms", "60000"))
	view := c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	kp := startKgoProducer(t, c, "kgo", topic, partitions, 2*time.Millisecond, 0)
	t.Cleanup(func() { _ = kp.Stop() })
	waitProgress(t, 30*time.Second, "acknowledged writes before the shutdown", 300, kp)

	victim := view.Partitions[0].Leader
	var led []int32
	for p, ps := range view.Partitions {
		if ps.Leader == victim {
			led = append(led, p)
		}
	}
	start := time.Now()
	if err := c.Node(victim).Stop(30 * time.Second); err != nil {
		t.Errorf("node %d after SIGTERM: %v, want a clean exit", victim, err)
	}
	logf(t, "node %d (leader of %v) stopped in %v", victim, led, time.Since(start).Round(time.Millisecond))
	nv := c.waitTopic(topic, 10*time.Second, fmt.Sprintf("no partition led by stopped node %d", victim), func(v topicView) bool {
		for _, ps := range v.Partitions {
			if ps.Leader < 0 || ps.Leader == victim || slices.Contains(ps.ISR, victim) {
				return false
			}
		}
		return true
	}, victim)
	logf(t, "leaderships moved %v after SIGTERM: %v", time.Since(start).Round(time.Millisecond), nv)

	waitProgress(t, 30*time.Second, fmt.Sprintf("acknowledged writes with node %d stopped", victim), 300, kp)
	c.Node(victim).Restart()
	c.waitFullyReplicated(topic, partitions, 60*time.Second)
	waitProgress(t, 30*time.Second, "acknowledged writes after the restart", 100, kp)
	if err := kp.Stop(); err != nil {
		t.Error(err)
	}
	if _, failed := kp.Ledger().counts(); failed > 0 {
		t.Errorf("%v: records failed across a controlled shutdown", kp.Ledger())
	}
	t.Logf("verification: %s", verifyLedgers(t, c.readAll(topic, partitions), kp.Ledger()))
}
