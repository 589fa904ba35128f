package broker

// CreatePartitions (key 37), v0-v3.
//
// Raises a topic's partition count; an explicit assignment gives the
// replicas of each new partition. Fewer or equal partitions than today is
// INVALID_PARTITIONS, unknown topics UNKNOWN_TOPIC_OR_PARTITION, a topic
// named twice INVALID_REQUEST. validate_only creates nothing.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.CreatePartitions, 0, 3, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	if fwd, ok := b.forwardToController(ctx, r); ok {
		return fwd, nil
	}
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	specs := make([]rules.CreatePartitionsSpec, 0, len(req.Topics))
	for _, t := range req.Topics {
		spec := rules.CreatePartitionsSpec{Name: t.Topic, Count: t.Count}
		for _, a := range t.Assignment {
			spec.Assignment = append(spec.Assignment, a.Replicas)
		}
		specs = append(specs, spec)
	}
	results := b.controller.CreatePartitions(ctx, specs, req.ValidateOnly)
	b.awaitMetadata(ctx)
	for i, res := range results {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = req.Topics[i].Topic
		st.ErrorCode = b.errCode(res.Err)
		if res.Err != nil {
			st.ErrorMessage = errMessage(res.Err)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
