package broker

// CreateTopics (key 19), v0-v7.
//
// num_partitions and replication_factor of -1 take the broker defaults
// (num.partitions, default.replication.factor; KIP-464, v4+). An explicit
// replica assignment replaces both. validate_only (v1+) checks everything
// and creates nothing. v5+ returns the created topic's partition count,
// replication factor and configs; v7 its topic id. The controller applies
// Kafka's rules and error codes (metadata.Controller.CreateTopics).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.CreateTopics, 0, 7, (*Broker).handleCreateTopics) }

func (b *Broker) handleCreateTopics(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	specs := make([]metadata.CreateTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		spec := metadata.CreateTopic{
			Name:              rt.Topic,
			NumPartitions:     rt.NumPartitions,
			ReplicationFactor: rt.ReplicationFactor,
			Configs:           make(map[string]*string, len(rt.Configs)),
		}
		if len(rt.ReplicaAssignment) > 0 {
			spec.Assignment = make(map[int32][]int32, len(rt.ReplicaAssignment))
			for _, a := range rt.ReplicaAssignment {
				spec.Assignment[a.Partition] = a.Replicas
			}
		}
		for _, c := range rt.Configs {
			spec.Configs[c.Name] = c.Value
		}
		specs = append(specs, spec)
	}
	results := b.controller.CreateTopics(ctx, specs, req.ValidateOnly)
	b.awaitMetadata(ctx)

	img := b.meta.Image()
	for i, res := range results {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic = req.Topics[i].Topic
		st.NumPartitions, st.ReplicationFactor = -1, -1
		if res.Err != nil {
			st.ErrorCode = b.errCode(res.Err)
			st.ErrorMessage = errMessage(res.Err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = res.TopicID
		st.NumPartitions = res.NumPartitions
		st.ReplicationFactor = res.ReplicationFactor
		if r.Version >= 5 {
			overrides := make(map[string]string)
			for k, v := range specs[i].Configs {
				if v != nil {
					overrides[k] = *v
				}
			}
			for _, e := range config.DescribeTopic(b.cfg, b.dynamicBrokerConfig(img), overrides) {
				c := kmsg.NewCreateTopicsResponseTopicConfig()
				c.Name = e.Name
				if e.HasValue && !e.Sensitive {
					v := e.Value
					c.Value = &v
				}
				c.ReadOnly = e.ReadOnly
				c.Source = int8(e.Source)
				c.IsSensitive = e.Sensitive
				st.Configs = append(st.Configs, c)
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
