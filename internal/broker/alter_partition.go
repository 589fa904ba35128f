package broker

// AlterPartition (key 56), v0-v3, served by the active controller: a
// partition leader proposes a new ISR (shrunk after replica.lag.time.max.ms,
// expanded when a follower caught up). v0-v1 name topics, v2+ use topic ids;
// v3 sends each ISR member with its broker epoch (KIP-903; Vltava checks
// membership against the registered, active brokers instead). The controller
// validates with Kafka's codes (rules.Controller.AlterPartition) and
// answers each partition's resulting state.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/controller/rules"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.AlterPartition, 0, 3, (*Broker).handleAlterPartition) }

func (b *Broker) handleAlterPartition(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.AlterPartitionRequest)
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	if b.active == nil || !b.active.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	img := b.meta.Image()
	type ref struct{ topic, part int }
	var items []rules.AlterPartitionItem
	var refs []ref
	for ti, t := range req.Topics {
		id := metadata.Uuid(t.TopicID)
		if r.Version < 2 {
			id = metadata.ZeroUuid
			if ti, ok := img.Topic(t.Topic); ok {
				id = ti.ID
			}
		}
		for pi, p := range t.Partitions {
			isr := p.NewISR
			if r.Version >= 3 {
				isr = nil
				for _, m := range p.NewEpochISR {
					isr = append(isr, m.BrokerID)
				}
			}
			items = append(items, rules.AlterPartitionItem{TopicID: id, Partition: p.Partition,
				LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr})
			refs = append(refs, ref{ti, pi})
		}
	}
	results, err := b.controller.AlterPartition(ctx, req.BrokerID, req.BrokerEpoch, items)
	if err != nil {
		resp.ErrorCode = b.errCode(err)
		return resp, nil
	}
	for i, res := range results {
		rt := req.Topics[refs[i].topic]
		if len(resp.Topics) == 0 || resp.Topics[len(resp.Topics)-1].TopidID != rt.TopicID || resp.Topics[len(resp.Topics)-1].Topic != rt.Topic {
			t := kmsg.NewAlterPartitionResponseTopic()
			t.Topic, t.TopidID = rt.Topic, rt.TopicID
			resp.Topics = append(resp.Topics, t)
		}
		p := kmsg.NewAlterPartitionResponseTopicPartition()
		p.Partition = items[i].Partition
		p.LeaderID, p.LeaderEpoch, p.ISR, p.PartitionEpoch = res.Leader, res.LeaderEpoch, res.ISR, res.PartitionEpoch
		if res.Err != nil {
			p.ErrorCode = b.errCode(res.Err)
			if r.Version < 2 && p.ErrorCode == kerr.UnknownTopicID.Code {
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			if r.Version < 3 && p.ErrorCode == kerr.IneligibleReplica.Code {
				p.ErrorCode = kerr.OperationNotAttempted.Code
			}
		}
		last := &resp.Topics[len(resp.Topics)-1]
		last.Partitions = append(last.Partitions, p)
	}
	return resp, nil
}
