package broker

// OffsetDelete (key 47), v0 (KIP-496).
//
// Deletes committed offsets of a group, writing tombstones to
// __consumer_offsets. A partition of a topic the group still consumes is
// GROUP_SUBSCRIBED_TO_TOPIC; a non-empty group that is not a consumer group
// is NON_EMPTY_GROUP; an unknown group GROUP_ID_NOT_FOUND.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.OffsetDelete, 0, 0, (*Broker).handleOffsetDelete) }

func (b *Broker) handleOffsetDelete(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.OffsetDeleteRequest)
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	if !b.allowedGroup(r, req.Group, acl.OpDelete) { // Kafka: DELETE on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var tps []group.TopicPartition
	var topicDenied []bool // per topic of the request: no READ (Kafka)
	for _, t := range req.Topics {
		denied := !b.allowedTopic(r, t.Topic, acl.OpRead)
		topicDenied = append(topicDenied, denied)
		for _, p := range t.Partitions {
			if !denied {
				tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
			}
		}
	}
	if b.groups == nil {
		resp.ErrorCode = b.errCode(errNoCoordinator)
		return resp, nil
	}
	groupErr, errs := b.groups.DeleteOffsets(req.Group, tps)
	if groupErr != nil {
		resp.ErrorCode = b.errCode(groupErr)
		return resp, nil
	}
	i := 0
	for ti, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if topicDenied[ti] {
				rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			} else {
				rp.ErrorCode = b.errCode(errs[i])
				i++
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
