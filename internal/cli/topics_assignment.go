package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// parseReplicaAssignment parses kafka-topics.sh's --replica-assignment:
// "1:2,2:3" places partition 0 on brokers 1 and 2 and partition 1 on 2
// and 3. Every partition needs the same number of distinct replicas, as
// Kafka checks.
func parseReplicaAssignment(s string) (map[int32][]int32, error) {
	out := map[int32][]int32{}
	for i, part := range strings.Split(s, ",") {
		var replicas []int32
		seen := map[int32]bool{}
		for _, b := range strings.Split(part, ":") {
			n, err := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("--replica-assignment %q: bad broker id %q", s, b)
			}
			if seen[int32(n)] {
				return nil, fmt.Errorf("--replica-assignment %q: partition %d lists broker %d twice", s, i, n)
			}
			seen[int32(n)] = true
			replicas = append(replicas, int32(n))
		}
		if i > 0 && len(replicas) != len(out[0]) {
			return nil, fmt.Errorf("--replica-assignment %q: partition %d has %d replicas, partition 0 has %d", s, i, len(replicas), len(out[0]))
		}
		out[int32(i)] = replicas
	}
	return out, nil
}

// createTopicPlaced creates a topic with explicit replica placement
// (CreateTopics with assignments; kadm.CreateTopic takes counts only).
func createTopicPlaced(ctx context.Context, cl *kgo.Client, topic string, placed map[int32][]int32, cfg map[string]*string) (kadm.CreateTopicResponse, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
	for p := int32(0); p < int32(len(placed)); p++ {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = p, placed[p]
		t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	}
	for _, k := range sortedKeys(cfg) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, cfg[k]
		t.Configs = append(t.Configs, c)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kadm.CreateTopicResponse{}, err
	}
	if len(resp.Topics) != 1 {
		return kadm.CreateTopicResponse{}, fmt.Errorf("creating topic %q: %d topics in the answer", topic, len(resp.Topics))
	}
	rt := resp.Topics[0]
	out := kadm.CreateTopicResponse{Topic: rt.Topic, ID: rt.TopicID, NumPartitions: rt.NumPartitions,
		ReplicationFactor: rt.ReplicationFactor, Err: kerr.ErrorForCode(rt.ErrorCode)}
	if rt.ErrorMessage != nil {
		out.ErrMessage = *rt.ErrorMessage
	}
	return out, nil
}
