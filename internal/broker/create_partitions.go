package broker

// CreatePartitions (key 37), v0-v3.
//
// Raises a topic's partition count; an explicit assignment gives the
// replicas of each new partition. Fewer or equal partitions than today is
// INVALID_PARTITIONS, unknown topics UNKNOWN_TOPIC_OR_PARTITION, a topic
// named twice INVALID_REQUEST. validate_only creates nothing. The
// controller answers once every live broker has applied the new partitions,
// within timeout_ms (awaitBrokersApplied); a broker that forwarded the
// request, once they are in its own metadata.

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.CreatePartitions, 0, 3, (*Broker).handleCreatePartitions) }

func (b *Broker) handleCreatePartitions(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreatePartitionsRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		resp := fwd.(*kmsg.CreatePartitionsResponse)
		if !req.ValidateOnly {
			want := make(map[string]int32, len(req.Topics))
			for _, t := range req.Topics {
				want[t.Topic] = t.Count
			}
			b.awaitImage(ctx, func(img *metadata.Image) bool {
				for _, t := range resp.Topics {
					if t.ErrorCode != 0 {
						continue
					}
					if ti, ok := img.Topic(t.Topic); !ok || len(ti.Partitions) < int(want[t.Topic]) {
						return false
					}
				}
				return true
			})
		}
		return resp, nil
	}
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
	if !req.ValidateOnly && slices.ContainsFunc(results, func(r rules.CreatePartitionsResult) bool { return r.Err == nil }) {
		b.awaitBrokersApplied(ctx, r, req.TimeoutMillis)
	}
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
