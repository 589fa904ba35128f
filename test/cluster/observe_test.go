package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metadataTopic is KRaft's metadata log, the partition DescribeQuorum asks
// about.
const metadataTopic = "__cluster_metadata"

// partitionState is one partition as a node's Metadata response shows it.
type partitionState struct {
	Leader      int32
	LeaderEpoch int32
	Replicas    []int32 // in assignment order: the first is the preferred leader
	ISR         []int32 // sorted
	ErrorCode   int16
}

func (p partitionState) String() string {
	s := fmt.Sprintf("leader=%d epoch=%d replicas=%v isr=%v", p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
	if p.ErrorCode != 0 {
		s += " err=" + kerr.ErrorForCode(p.ErrorCode).Error()
	}
	return s
}

// topicView is a topic's partitions as seen by one node.
type topicView struct {
	From       int32 // the node that answered
	Partitions map[int32]partitionState
}

func (v topicView) String() string {
	var parts []string
	for p := int32(0); p < int32(len(v.Partitions)); p++ {
		parts = append(parts, fmt.Sprintf("p%d{%v}", p, v.Partitions[p]))
	}
	return fmt.Sprintf("(from node %d) %s", v.From, strings.Join(parts, " "))
}

// requestFrom sends req to node id alone (a fresh client seeded with only
// its address), so the answer is that node's view and a dead or paused
// node costs at most the timeout.
func (c *Cluster) requestFrom(id int32, req kmsg.Request, timeout time.Duration, opts ...kgo.Opt) (kmsg.Response, error) {
	cl, err := c.newClient([]string{c.topo.brokerAddr(id)}, append([]kgo.Opt{kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return cl.Request(ctx, req)
}

// responsive returns the nodes that are running and not paused, minus
// excluded ones, in id order.
func (c *Cluster) responsive(excluded ...int32) []int32 {
	var ids []int32
	for _, n := range c.nodes {
		n.mu.Lock()
		ok := n.runningLocked() && !n.mu.paused
		n.mu.Unlock()
		if ok && !slices.Contains(excluded, n.ID) {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// topicFrom returns node id's view of topic.
func (c *Cluster) topicFrom(id int32, topic string) (topicView, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := c.requestFrom(id, req, 3*time.Second)
	if err != nil {
		return topicView{}, fmt.Errorf("metadata from node %d: %w", id, err)
	}
	mr := resp.(*kmsg.MetadataResponse)
	if len(mr.Topics) != 1 {
		return topicView{}, fmt.Errorf("metadata from node %d: %d topics in the response", id, len(mr.Topics))
	}
	t := mr.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return topicView{}, fmt.Errorf("metadata from node %d: topic %s: %w", id, topic, err)
	}
	v := topicView{From: id, Partitions: map[int32]partitionState{}}
	for _, p := range t.Partitions {
		v.Partitions[p.Partition] = partitionState{
			Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
			Replicas: slices.Clone(p.Replicas), ISR: sorted(p.ISR), ErrorCode: p.ErrorCode,
		}
	}
	return v, nil
}

// topicView returns the view of the first responsive node (not in
// excluded) that answers.
func (c *Cluster) topicView(topic string, excluded ...int32) (topicView, error) {
	var errs []error
	for _, id := range c.responsive(excluded...) {
		v, err := c.topicFrom(id, topic)
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return topicView{}, errors.New("no responsive node to ask")
	}
	return topicView{}, errors.Join(errs...)
}

// waitTopic polls the topic's view (asking nodes not in excluded) until
// cond holds for it, and returns that view.
func (c *Cluster) waitTopic(topic string, timeout time.Duration, what string, cond func(topicView) bool, excluded ...int32) topicView {
	c.t.Helper()
	var got topicView
	waitFor(c.t, timeout, fmt.Sprintf("%s: %s", topic, what), func() (bool, string) {
		v, err := c.topicView(topic, excluded...)
		if err != nil {
			return false, err.Error()
		}
		got = v
		return cond(v), v.String()
	})
	return got
}

// waitFullyReplicated waits until every partition of topic has a leader
// and an ISR equal to its replica set, in the view of every responsive node
// (followers apply metadata asynchronously; a test that acts on a
// partition's state must not act on one node's stale view).
func (c *Cluster) waitFullyReplicated(topic string, partitions int32, timeout time.Duration) topicView {
	c.t.Helper()
	var got topicView
	waitFor(c.t, timeout, topic+": every partition led with a full ISR on every node", func() (bool, string) {
		got = topicView{}
		for _, id := range c.responsive() {
			v, err := c.topicFrom(id, topic)
			if err != nil {
				return false, err.Error()
			}
			if int32(len(v.Partitions)) != partitions {
				return false, fmt.Sprintf("node %d sees %d partitions", id, len(v.Partitions))
			}
			for p, ps := range v.Partitions {
				if ps.ErrorCode != 0 || ps.Leader < 0 || !slices.Equal(ps.ISR, sorted(ps.Replicas)) {
					return false, fmt.Sprintf("node %d: p%d{%v}", id, p, ps)
				}
				if prev, ok := got.Partitions[p]; ok && (prev.Leader != ps.Leader || prev.LeaderEpoch != ps.LeaderEpoch) {
					return false, fmt.Sprintf("nodes disagree on p%d: node %d {%v}, node %d {%v}", p, got.From, prev, id, ps)
				}
			}
			got = v
		}
		return true, ""
	})
	return got
}

// createTopic creates topic with rf replicas per partition and the given
// topic configs, retrying retriable errors (a controller election may be
// under way), then waits until it is fully replicated.
func (c *Cluster) createTopic(topic string, partitions int32, rf int16, configs map[string]string) topicView {
	c.t.Helper()
	if err := c.tryCreateTopic(topic, partitions, rf, configs, 30*time.Second); err != nil {
		c.t.Fatalf("creating topic %s (partitions=%d rf=%d %v): %v", topic, partitions, rf, configs, err)
	}
	return c.waitFullyReplicated(topic, partitions, 30*time.Second)
}

// tryCreateTopic sends CreateTopics until it succeeds, fails with a
// non-retriable error, or timeout passes. TOPIC_ALREADY_EXISTS after a
// retry counts as success (an earlier attempt may have committed).
func (c *Cluster) tryCreateTopic(topic string, partitions int32, rf int16, configs map[string]string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	attempt := 0
	for {
		attempt++
		err := c.createTopicOnce(topic, partitions, rf, configs)
		if err == nil || (attempt > 1 && errors.Is(err, kerr.TopicAlreadyExists)) {
			return nil
		}
		var ke *kerr.Error
		if errors.As(err, &ke) && !ke.Retriable && !errors.Is(err, kerr.NotController) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %d attempts: %w", attempt, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) createTopicOnce(topic string, partitions int32, rf int16, configs map[string]string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, partitions, rf
	for k, v := range configs {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	return c.sendCreateTopics(req)
}

// sendCreateTopics sends req through a client of the responsive nodes
// (kgo routes it to the controller the cluster advertises).
func (c *Cluster) sendCreateTopics(req *kmsg.CreateTopicsRequest) error {
	cl, err := c.newClient(c.addrs(c.responsive()), kgo.RequestRetries(1))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics: %d topics in the response", len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := ""
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg = *m
		}
		return fmt.Errorf("%w: %s", err, msg)
	}
	return nil
}

// quorumState is the metadata quorum as DescribeQuorum reports it.
type quorumState struct {
	From        int32
	Leader      int32
	Epoch       int32
	HighWater   int64
	VoterLEO    map[int32]int64
	ObserverLEO map[int32]int64
}

func (q quorumState) String() string {
	return fmt.Sprintf("(from node %d) leader=%d epoch=%d hw=%d voters=%v observers=%v",
		q.From, q.Leader, q.Epoch, q.HighWater, q.VoterLEO, q.ObserverLEO)
}

// quorumFrom asks node id for DescribeQuorum (KIP-595/KIP-642).
func (c *Cluster) quorumFrom(id int32) (quorumState, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = metadataTopic
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rp.Partition = 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := c.requestFrom(id, req, 3*time.Second)
	if err != nil {
		return quorumState{}, fmt.Errorf("DescribeQuorum from node %d: %w", id, err)
	}
	dr := resp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(dr.ErrorCode); err != nil {
		return quorumState{}, fmt.Errorf("DescribeQuorum from node %d: %w", id, err)
	}
	if len(dr.Topics) != 1 || len(dr.Topics[0].Partitions) != 1 {
		return quorumState{}, fmt.Errorf("DescribeQuorum from node %d: malformed response %+v", id, dr)
	}
	p := dr.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return quorumState{}, fmt.Errorf("DescribeQuorum from node %d: partition: %w", id, err)
	}
	q := quorumState{From: id, Leader: p.LeaderID, Epoch: p.LeaderEpoch, HighWater: p.HighWatermark,
		VoterLEO: map[int32]int64{}, ObserverLEO: map[int32]int64{}}
	for _, v := range p.CurrentVoters {
		q.VoterLEO[v.ReplicaID] = v.LogEndOffset
	}
	for _, o := range p.Observers {
		q.ObserverLEO[o.ReplicaID] = o.LogEndOffset
	}
	return q, nil
}

// quorum asks the responsive nodes (not in excluded) in turn.
func (c *Cluster) quorum(excluded ...int32) (quorumState, error) {
	var errs []error
	for _, id := range c.responsive(excluded...) {
		q, err := c.quorumFrom(id)
		if err == nil {
			return q, nil
		}
		errs = append(errs, err)
	}
	return quorumState{}, errors.Join(errs...)
}

// describeClusterFrom returns the broker ids and controller id node id
// reports in DescribeCluster (KIP-700).
func (c *Cluster) describeClusterFrom(id int32) (brokers []int32, controller int32, err error) {
	resp, err := c.requestFrom(id, kmsg.NewPtrDescribeClusterRequest(), 3*time.Second)
	if err != nil {
		return nil, -1, fmt.Errorf("DescribeCluster from node %d: %w", id, err)
	}
	dr := resp.(*kmsg.DescribeClusterResponse)
	if err := kerr.ErrorForCode(dr.ErrorCode); err != nil {
		return nil, -1, fmt.Errorf("DescribeCluster from node %d: %w", id, err)
	}
	for _, b := range dr.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	return sorted(brokers), dr.ControllerID, nil
}

// electPreferred runs preferred-leader election (ElectLeaders, KIP-460)
// for topic's partition p until preferred leads it.
func (c *Cluster) electPreferred(topic string, p, preferred int32) {
	c.t.Helper()
	adm := kadm.NewClient(c.ClientOf(c.responsive(), kgo.RequestRetries(2)))
	waitFor(c.t, 30*time.Second, fmt.Sprintf("preferred replica %d leading %s[%d]", preferred, topic, p), func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		res, err := adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{topic: {p: {}}})
		status := fmt.Sprintf("ElectLeaders: %v %v", res, err)
		v, verr := c.topicView(topic)
		if verr != nil {
			return false, status + "; " + verr.Error()
		}
		return v.Partitions[p].Leader == preferred, status + "; " + v.String()
	})
}

// sorted returns a sorted copy of ids.
func sorted(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// logf logs with a wall-clock prefix, so test logs line up with node logs.
func logf(t testing.TB, format string, args ...any) {
	t.Helper()
	t.Logf(time.Now().Format("15:04:05.000")+" "+format, args...)
}
