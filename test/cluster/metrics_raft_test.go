package cluster

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// raftLags is the quorum leader's kafka_server_raftmetrics_replica_lag of
// the voters, by replica id, as node n exposes it.
func raftLags(n *Node) (map[string]float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(n.AdminURL() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	lags := map[string]float64{}
	if f := fams["kafka_server_raftmetrics_replica_lag"]; f != nil {
		for _, m := range f.Metric {
			labels := map[string]string{}
			for _, l := range m.Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["role"] == "voter" {
				lags[labels["replica"]] = value(m)
			}
		}
	}
	return lags, nil
}

// TestMetricsRaftQuorum checks the metadata quorum's raft series of a
// 3-node cluster (three voters): every node names the same quorum leader,
// only that leader reports the replica lag, one series per voter, and the
// voters catch up (lag 0) once the cluster is idle.
func TestMetricsRaftQuorum(t *testing.T) {
	c := StartCluster(t)
	c.createTopic("raft-metrics", 1, 3, nil)
	var leader int32 = -1
	waitFor(t, 60*time.Second, "every node naming the same raft leader", func() (bool, string) {
		var per []string
		seen := map[float64]bool{}
		var last float64
		for _, id := range c.responsive() {
			v, found, err := scrapeNode(c.Node(id), "kafka_server_raftmetrics_current_leader", nil)
			if err != nil || !found {
				return false, fmt.Sprintf("node %d: found %v, %v", id, found, err)
			}
			seen[v], last = true, v
			per = append(per, fmt.Sprintf("node %d: %v", id, v))
		}
		leader = int32(last)
		return len(seen) == 1 && last >= 0, strings.Join(per, ", ")
	})
	waitFor(t, 60*time.Second, "the leader's replica lag of each voter at 0", func() (bool, string) {
		lags, err := raftLags(c.Node(leader))
		if err != nil {
			return false, err.Error()
		}
		var ids []string
		for id, lag := range lags {
			if lag != 0 {
				return false, fmt.Sprintf("voter %s: lag %v", id, lag)
			}
			ids = append(ids, id)
		}
		sort.Strings(ids)
		return strings.Join(ids, ",") == "1,2,3", fmt.Sprintf("voters %v", ids)
	})
	for _, id := range c.responsive() {
		if id == leader {
			continue
		}
		if lags, err := raftLags(c.Node(id)); err != nil || len(lags) != 0 {
			t.Errorf("node %d, not the raft leader: replica lag series %v (%v), want none", id, lags, err)
		}
	}
	if v, _, _ := scrapeNode(c.Node(leader), "kafka_server_raftmetrics_high_watermark", nil); v <= 0 {
		t.Errorf("kafka_server_raftmetrics_high_watermark on the leader = %v, want > 0", v)
	}
}
