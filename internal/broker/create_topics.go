package broker

// CreateTopics (key 19), v0-v7.
//
// num_partitions and replication_factor of -1 take the broker defaults
// (num.partitions, default.replication.factor; KIP-464, v4+). An explicit
// replica assignment replaces both. validate_only (v1+) checks everything
// and creates nothing. v5+ returns the created topic's partition count,
// replication factor and configs; v7 its topic id. The controller applies
// Kafka's rules and error codes (rules.Controller.CreateTopics) and
// answers once every live broker has applied the new topics, within
// timeout_ms (awaitBrokersApplied, which also says what 0 means). A
// broker that is not the active controller forwards the request to it
// (KIP-590) and answers once the created topics are in its own metadata.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.CreateTopics, 0, 7, (*Broker).handleCreateTopics) }

func (b *Broker) handleCreateTopics(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.CreateTopicsRequest)
	if fwd, ok := b.forwardToController(ctx, r); ok {
		resp := fwd.(*kmsg.CreateTopicsResponse)
		if !req.ValidateOnly {
			b.awaitImage(ctx, func(img *metadata.Image) bool {
				for _, t := range resp.Topics {
					if _, ok := img.Topic(t.Topic); t.ErrorCode == 0 && !ok {
						return false
					}
				}
				return true
			})
		}
		return resp, nil
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)

	specs := make([]rules.CreateTopic, 0, len(req.Topics))
	for _, rt := range req.Topics {
		spec := rules.CreateTopic{
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
	if !req.ValidateOnly && slices.ContainsFunc(results, func(r rules.CreateTopicResult) bool { return r.Err == nil }) {
		b.awaitBrokersApplied(ctx, r, req.TimeoutMillis)
	}

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

// createTopics creates topics for the broker itself (auto-creation, the
// offsets topic): at the local controller when it is the active one,
// otherwise through the controller channel. It returns once the created
// topics are in this node's metadata (or the wait timed out).
func (b *Broker) createTopics(ctx context.Context, specs []rules.CreateTopic) []rules.CreateTopicResult {
	if b.controllerIsLocal() {
		return b.controller.CreateTopics(ctx, specs, false)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	req.TimeoutMillis = b.cfg.RequestTimeoutMs
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.Name, s.NumPartitions, s.ReplicationFactor
		for k, v := range s.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	results := make([]rules.CreateTopicResult, len(specs))
	fwd, err := b.channel.Forward(ctx, req)
	if err != nil {
		for i, s := range specs {
			results[i] = rules.CreateTopicResult{Name: s.Name, Err: err}
		}
		return results
	}
	resp := fwd.(*kmsg.CreateTopicsResponse)
	for i, s := range specs {
		results[i] = rules.CreateTopicResult{Name: s.Name, Err: fmt.Errorf("%w: no answer for %s", kerr.UnknownServerError, s.Name)}
		for _, t := range resp.Topics {
			if t.Topic != s.Name {
				continue
			}
			results[i] = rules.CreateTopicResult{Name: s.Name, TopicID: t.TopicID, NumPartitions: t.NumPartitions,
				ReplicationFactor: t.ReplicationFactor, Err: codeError(t.ErrorCode, t.ErrorMessage)}
		}
	}
	b.awaitImage(ctx, func(img *metadata.Image) bool {
		for _, r := range results {
			if _, ok := img.Topic(r.Name); r.Err == nil && !ok {
				return false
			}
		}
		return true
	})
	return results
}

// codeError turns a response's error code and message back into an error
// wrapping the *kerr.Error.
func codeError(code int16, msg *string) error {
	if code == 0 {
		return nil
	}
	if msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", kerr.ErrorForCode(code), *msg)
	}
	return kerr.ErrorForCode(code)
}
