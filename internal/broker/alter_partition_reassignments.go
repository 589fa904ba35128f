package broker

// AlterPartitionReassignments (key 45), v0 (KIP-455): move partitions to new
// replica sets, or cancel a reassignment (null replicas). The controller
// adds the new replicas first and drops the old ones only once the new ones
// are in the ISR (rules.Controller.AlterPartitionReassignments); other
// brokers forward. Per-partition codes: UNKNOWN_TOPIC_OR_PARTITION,
// INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/server"
)

func init() {
	register(kmsg.AlterPartitionAssignments, 0, 0, (*Broker).handleAlterPartitionReassignments)
}

func (b *Broker) handleAlterPartitionReassignments(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionAssignmentsRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	var reqs []rules.Reassignment
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			reqs = append(reqs, rules.Reassignment{
				TopicPartition: rules.TopicPartition{Topic: t.Topic, Partition: p.Partition}, Replicas: p.Replicas,
			})
		}
	}
	errs := b.controller.AlterPartitionReassignments(ctx, reqs)
	b.awaitMetadata(ctx)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if err := errs[i]; err != nil {
				rp.ErrorCode = b.errCode(err)
				rp.ErrorMessage = errMessage(err)
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
