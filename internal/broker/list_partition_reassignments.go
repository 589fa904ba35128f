package broker

// ListPartitionReassignments (key 46), v0 (KIP-455): the reassignments in
// progress, for the listed partitions or (null topics) all of them, with
// their replicas, adding and removing replicas. Answered by the active
// controller's image; other brokers forward so the answer reflects the
// latest committed state.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/server"
)

func init() {
	register(kmsg.ListPartitionReassignments, 0, 0, (*Broker).handleListPartitionReassignments)
}

func (b *Broker) handleListPartitionReassignments(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ListPartitionReassignmentsRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	var parts []rules.TopicPartition
	if req.Topics != nil {
		parts = []rules.TopicPartition{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, rules.TopicPartition{Topic: t.Topic, Partition: p})
			}
		}
	}
	idx := map[string]int{}
	for _, o := range rules.ListPartitionReassignments(b.meta.Image(), parts) {
		i, ok := idx[o.Topic]
		if !ok {
			i = len(resp.Topics)
			idx[o.Topic] = i
			t := kmsg.NewListPartitionReassignmentsResponseTopic()
			t.Topic = o.Topic
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas = o.Partition, o.Replicas, o.Adding, o.Removing
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, p)
	}
	return resp, nil
}
