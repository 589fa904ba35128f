package cluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// AdminURL is the node's admin listener (/metrics, /v1/health).
func (n *Node) AdminURL() string { return "http://" + n.admin }

// scrapeNode reads one series of a node's /metrics, summed over the series
// matching labels; found is false when none matches.
func scrapeNode(n *Node, name string, labels map[string]string) (sum float64, found bool, err error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(n.AdminURL() + "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return 0, false, err
	}
	f := fams[name]
	if f == nil {
		return 0, false, nil
	}
next:
	for _, m := range f.Metric {
		for _, l := range m.Label {
			if v, ok := labels[l.GetName()]; ok && v != l.GetValue() {
				continue next
			}
		}
		found = true
		sum += value(m)
	}
	return sum, found, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

// awaitClusterSum waits until name{labels} summed over the responsive nodes
// equals want.
func (c *Cluster) awaitClusterSum(name string, labels map[string]string, want float64, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, fmt.Sprintf("%s%v summed over the cluster = %v", name, labels, want), func() (bool, string) {
		var sum float64
		var per []string
		for _, id := range c.responsive() {
			v, _, err := scrapeNode(c.Node(id), name, labels)
			if err != nil {
				return false, fmt.Sprintf("node %d: %v", id, err)
			}
			sum += v
			per = append(per, fmt.Sprintf("node %d: %v", id, v))
		}
		return sum == want, strings.Join(per, ", ")
	})
}

// nodeValue is name summed over node id's series.
func (c *Cluster) nodeValue(id int32, name string) float64 {
	c.t.Helper()
	v, _, err := scrapeNode(c.Node(id), name, nil)
	if err != nil {
		c.t.Fatalf("scraping node %d: %v", id, err)
	}
	return v
}

// awaitNodeValue waits until name summed over node id's series equals want.
func (c *Cluster) awaitNodeValue(id int32, name string, want float64, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, fmt.Sprintf("%s on node %d = %v", name, id, want), func() (bool, string) {
		v, _, err := scrapeNode(c.Node(id), name, nil)
		if err != nil {
			return false, err.Error()
		}
		return v == want, fmt.Sprint(v)
	})
}

// TestMetricsReplicationState checks the replication gauges of a 3-node
// cluster as Kafka's dashboards read them: exactly one active controller
// across the cluster; one under-replicated partition while a follower of an
// rf=3 partition is paused with SIGSTOP, none again after SIGCONT, and the
// leader's ISR shrink and expansion counted once each; one
// offline partition once the only replica of an rf=1 partition is killed,
// counted by the active controller (wherever the quorum moved it), and the
// active controller count still summing to 1.
func TestMetricsReplicationState(t *testing.T) {
	// The ISR shrink must be the leader's (replica.lag.time.max.ms, 3 s),
	// not the controller's fencing of the paused broker, which removes it
	// from the ISR without a shrink on the leader (as in Kafka): a session
	// timeout three times the lag bound keeps the two apart. As in Kafka,
	// a follower whose log end matches the leader's stays in sync however
	// long it is silent, so the test writes to the partition once the
	// follower is paused.
	c := StartCluster(t, WithOverride("broker.session.timeout.ms", "9000"))
	c.awaitClusterSum("kafka_controller_kafkacontroller_activecontrollercount", nil, 1, 30*time.Second)

	v := c.createTopic("urp", 1, 3, nil)
	leader := v.Partitions[0].Leader
	var follower int32
	for _, r := range v.Partitions[0].Replicas {
		if r != leader {
			follower = r
			break
		}
	}
	c.awaitClusterSum("kafka_server_replicamanager_underreplicatedpartitions", nil, 0, 30*time.Second)
	// The ISR counters of the leader: a shrink when the follower is out
	// of the ISR in the image, an expansion when it is back; urp[0] is
	// the only partition with a follower on the paused node.
	const shrinks, expands = "kafka_server_replicamanager_isrshrinks_total", "kafka_server_replicamanager_isrexpands_total"
	shrinks0, expands0 := c.nodeValue(leader, shrinks), c.nodeValue(leader, expands)
	c.Node(follower).Pause()
	logf(t, "paused follower %d of urp[0] (leader %d)", follower, leader)
	cl := c.ClientOf([]int32{leader}, kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite(), kgo.DefaultProduceTopic("urp"))
	pctx, pcancel := context.WithTimeout(context.Background(), 30*time.Second)
	if err := cl.ProduceSync(pctx, &kgo.Record{Value: []byte("ahead of the paused follower")}).FirstErr(); err != nil {
		t.Fatalf("producing to urp with acks=1: %v", err)
	}
	pcancel()
	c.awaitClusterSum("kafka_server_replicamanager_underreplicatedpartitions", nil, 1, 60*time.Second)
	c.awaitClusterSum("kafka_cluster_partition_underreplicated", map[string]string{"topic": "urp"}, 1, 10*time.Second)
	c.awaitNodeValue(leader, shrinks, shrinks0+1, 10*time.Second)
	if v := c.nodeValue(leader, expands); v != expands0 {
		t.Errorf("%s on the leader = %v while the follower is out, want %v", expands, v, expands0)
	}
	c.Node(follower).Resume()
	c.awaitClusterSum("kafka_server_replicamanager_underreplicatedpartitions", nil, 0, 60*time.Second)
	c.awaitNodeValue(leader, expands, expands0+1, 10*time.Second)
	if v := c.nodeValue(leader, shrinks); v != shrinks0+1 {
		t.Errorf("%s on the leader = %v after the follower is back, want %v (one shrink)", shrinks, v, shrinks0+1)
	}

	v = c.createTopic("lonely", 1, 1, nil)
	only := v.Partitions[0].Leader
	c.awaitClusterSum("kafka_controller_kafkacontroller_offlinepartitionscount", nil, 0, 30*time.Second)
	c.Node(only).Kill()
	logf(t, "killed node %d, the only replica of lonely[0]", only)
	c.awaitClusterSum("kafka_controller_kafkacontroller_offlinepartitionscount", nil, 1, 60*time.Second)
	c.awaitClusterSum("kafka_controller_kafkacontroller_activecontrollercount", nil, 1, 30*time.Second)
	c.Node(only).Restart()
	c.awaitClusterSum("kafka_controller_kafkacontroller_offlinepartitionscount", nil, 0, 60*time.Second)
}

// TestConsumerLagOfPartitionsLedElsewhere commits offsets for a group on a
// topic with one replica per partition spread over three brokers, so the
// group's coordinator hosts at most one of them: its lag series must still
// cover every partition (the others read from their leaders), and be
// reported once across the cluster.
func TestConsumerLagOfPartitionsLedElsewhere(t *testing.T) {
	c := StartCluster(t)
	c.createTopic("spread", 3, 1, nil)
	cl := c.Client(kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 10; i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte("v")})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	offsets := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		offsets.Add(kadm.Offset{Topic: "spread", Partition: p, At: int64(p + 1), LeaderEpoch: -1})
	}
	waitFor(t, 60*time.Second, "committing the group's offsets", func() (bool, string) {
		resp, err := c.Admin().CommitOffsets(ctx, "spread-group", offsets)
		if err == nil {
			err = resp.Error()
		}
		return err == nil, fmt.Sprint(err)
	})
	// Lag 9, 8 and 7: 24 in all, summed over every broker's series.
	c.awaitClusterSum("kafka_consumergroup_lag", map[string]string{"consumergroup": "spread-group"}, 24, 60*time.Second)
	for p, want := range map[string]float64{"0": 9, "1": 8, "2": 7} {
		c.awaitClusterSum("kafka_consumergroup_lag", map[string]string{"consumergroup": "spread-group", "partition": p}, want, 10*time.Second)
		// The time lag too: the age of the record at the committed offset,
		// read from the partition's leader when it is elsewhere.
		var age float64
		for _, id := range c.responsive() {
			v, _, err := scrapeNode(c.Node(id), "kafka_consumergroup_lag_seconds", map[string]string{"consumergroup": "spread-group", "partition": p})
			if err != nil {
				t.Fatal(err)
			}
			age += v
		}
		if age <= 0 || age > 60 {
			t.Errorf("partition %s: time lag %v s, want the age of its record at the committed offset", p, age)
		}
	}
}
