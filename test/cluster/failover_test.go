package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLeaderFailoverKeepsAcknowledgedRecords is the first promise:
// a 3-node cluster keeps serving while partition leaders are SIGKILLed and
// restarted again and again, and loses no record acknowledged with
// acks=all. franz-go and librdkafka idempotent producers write all along;
// a kgo consumer group keeps consuming (its commits advance after every
// failover, across __consumer_offsets leadership moves); afterwards every
// acknowledged record is read back exactly once, at its acknowledged
// offset, in order.
func TestLeaderFailoverKeepsAcknowledgedRecords(t *testing.T) {
	leaderFailover(t, failoverOptions{})
}

// TestLeaderFailoverKeepsAcknowledgedRecordsSASLSSL is the same test, with
// the same checks, on a cluster whose only listeners are SASL_SSL
// (WithSecureListeners): clients, inter-broker replication, the
// broker-to-controller channel and raft all go over TLS with SASL, every
// killed node rejoining that way. The franz-go producer and consumer group
// and the librdkafka producer authenticate with SCRAM-SHA-512 as the
// harness user, librdkafka trusting the cluster CA from a PEM file; the
// harness's own admin and read-back clients connect as admin with PLAIN.
func TestLeaderFailoverKeepsAcknowledgedRecordsSASLSSL(t *testing.T) {
	secure, scramOpts, caPEM := secureListeners(t)
	leaderFailover(t, failoverOptions{
		cluster: []Option{secure},
		prepare: func(t *testing.T, c *Cluster) { createHarnessSCRAMUser(t, c, scramOpts) },
		kgo:     scramOpts,
		rdkafka: rdkafkaSecurity{
			Protocol:   "SASL_SSL",
			Mechanism:  "SCRAM-SHA-512",
			Username:   harnessSCRAMUser,
			Password:   harnessSCRAMPassword,
			CALocation: caPEM,
		},
	})
}

// failoverOptions varies leaderFailover's cluster and clients.
type failoverOptions struct {
	// cluster are StartCluster's options.
	cluster []Option
	// prepare, if set, runs once the cluster has formed, before the topic
	// and the clients exist (for instance to create the clients' user).
	prepare func(t *testing.T, c *Cluster)
	// kgo is how the franz-go producer and consumer group connect
	// (TLS, SASL); empty: with the cluster's own client options.
	kgo []kgo.Opt
	// rdkafka is how the librdkafka producer connects.
	rdkafka rdkafkaSecurity
}

// leaderFailover is TestLeaderFailoverKeepsAcknowledgedRecords' body: four
// rounds of SIGKILLing a partition leader under load, then the checks.
func leaderFailover(t *testing.T, o failoverOptions) {
	const (
		topic      = "failover"
		partitions = 3
		rounds     = 4
		group      = "failover-group"
	)
	c := StartCluster(t, o.cluster...)
	if o.prepare != nil {
		o.prepare(t, c)
	}
	c.createTopic(topic, partitions, 3, map[string]string{"min.insync.replicas": "2"})
	adm := c.Admin()

	kp := startKgoProducer(t, c, "kgo", topic, partitions, 2*time.Millisecond, 0, o.kgo...)
	rp := startRdkafkaProducer(t, c, "rdk", topic, partitions, 4*time.Millisecond, o.rdkafka)
	producers := []producer{kp, rp}
	stopped := false
	stopProducers := func() {
		if stopped {
			return
		}
		stopped = true
		for _, p := range producers {
			if err := p.Stop(); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(stopProducers)
	gc := startGroupConsumer(t, c, group, topic, o.kgo...)

	waitProgress(t, 30*time.Second, "both producers acknowledged before any failure", 200, producers...)
	committed := gc.waitCommitAdvance(t, adm, 0, 30*time.Second, "the group's first commit")

	for round := 0; round < rounds; round++ {
		p := int32(round % partitions)
		view := c.waitFullyReplicated(topic, partitions, 60*time.Second)
		old := view.Partitions[p]
		victim := old.Leader
		logf(t, "round %d: killing node %d, leader of %s[%d] (%v)", round, victim, topic, p, old)
		killed := time.Now()
		c.Node(victim).Kill()

		nv := c.waitTopic(topic, 30*time.Second, fmt.Sprintf("p%d led by a live node after node %d died", p, victim),
			func(v topicView) bool {
				np := v.Partitions[p]
				return np.Leader >= 0 && np.Leader != victim && np.LeaderEpoch > old.LeaderEpoch
			}, victim)
		logf(t, "round %d: p%d failed over in %v: %v", round, p, time.Since(killed).Round(time.Millisecond), nv.Partitions[p])

		waitProgress(t, 45*time.Second, fmt.Sprintf("round %d: producers acknowledge again with node %d down", round, victim), 100, producers...)
		committed = gc.waitCommitAdvance(t, adm, committed, 45*time.Second,
			fmt.Sprintf("round %d: the group commits again with node %d down", round, victim))
		logf(t, "round %d: writes and group commits resumed %v after the kill (%v; %v; committed %d)",
			round, time.Since(killed).Round(time.Millisecond), kp.Ledger(), rp.Ledger(), committed)

		c.Node(victim).Restart()
		// The restarted node must catch up and rejoin every ISR before the
		// next round, or the next kill would leave fewer than
		// min.insync.replicas.
		c.waitFullyReplicated(topic, partitions, 60*time.Second)
		logf(t, "round %d: node %d back in every ISR %v after the kill", round, victim, time.Since(killed).Round(time.Millisecond))
	}

	waitProgress(t, 30*time.Second, "producers after the last round", 100, producers...)
	stopProducers()
	for _, p := range producers {
		if acked, _ := p.Ledger().counts(); acked == 0 {
			t.Fatalf("%v: nothing acknowledged", p.Ledger())
		}
	}

	logs := c.readAll(topic, partitions)
	summary := verifyLedgers(t, logs, kp.Ledger(), rp.Ledger())
	t.Logf("verification:\n%s", summary)

	waitFor(t, 60*time.Second, "the consumer group delivered every acknowledged record", func() (bool, string) {
		n, ex := gc.missing(kp.Ledger(), rp.Ledger())
		return n == 0, fmt.Sprintf("%d acknowledged records not delivered yet, e.g. %v; consumer errors: %v", n, ex, gc.errors())
	})
}
