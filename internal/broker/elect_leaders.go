package broker

// ElectLeaders (key 43), v0-v2 (KIP-183, KIP-460): preferred (v0's only
// kind) or unclean leader election for the listed partitions, or for all
// partitions when topics is null (then partitions that need no election are
// left out, as in Kafka). Answered by the active controller; other brokers
// forward. Per-partition codes: ELECTION_NOT_NEEDED,
// PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE,
// UNKNOWN_TOPIC_OR_PARTITION.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ElectLeaders, 0, 2, (*Broker).handleElectLeaders) }

func (b *Broker) handleElectLeaders(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ElectLeadersRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	var parts []rules.TopicPartition
	if req.Topics != nil {
		parts = []rules.TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, rules.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	typ := rules.PreferredElection
	if r.Version >= 1 {
		typ = rules.ElectionType(req.ElectionType)
	}
	results := b.controller.ElectLeaders(ctx, typ, parts)
	b.awaitMetadata(ctx)
	idx := map[string]int{}
	for _, res := range results {
		i, ok := idx[res.Topic]
		if !ok {
			i = len(resp.Topics)
			idx[res.Topic] = i
			t := kmsg.NewElectLeadersResponseTopic()
			t.Topic = res.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewElectLeadersResponseTopicPartition()
		p.Partition = res.Partition
		if res.Err != nil {
			p.ErrorCode = b.errCode(res.Err)
			p.ErrorMessage = errMessage(res.Err)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp, nil
}
