package broker

// ConsumerGroupHeartbeat (key 68), v0-v1: the KIP-848 consumer group
// protocol (group.Coordinator.ConsumerGroupHeartbeat). Member epoch 0
// joins, -1 leaves, -2 is a static member leaving temporarily; the
// response carries the member's epoch, the heartbeat interval
// (group.consumer.heartbeat.interval.ms) and, when it changed or the
// request was full, its assignment. In v0 the coordinator generates the
// member id on the first heartbeat; from v1 the client does (KIP-1082)
// and SubscribedTopicRegex is accepted (Kafka's RE2/J syntax, full match).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ConsumerGroupHeartbeat, 0, 1, (*Broker).handleConsumerGroupHeartbeat) }

func (b *Broker) handleConsumerGroupHeartbeat(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupHeartbeatRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	if !b.allowedGroup(r, req.Group, acl.OpRead) { // Kafka: READ on the group
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	// Kafka: DESCRIBE on every subscribed topic, else the heartbeat is
	// TOPIC_AUTHORIZATION_FAILED.
	for _, t := range req.SubscribedTopicNames {
		if !b.allowedTopic(r, t, acl.OpDescribe) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.ErrorMessage = kmsg.StringPtr("The group member is not authorized to describe some of the subscribed topics.")
			return resp, nil
		}
	}
	if b.groups == nil {
		resp.ErrorCode = b.errCode(errNoCoordinator)
		return resp, nil
	}
	if !b.groups.ConsumerProtocolEnabled() {
		// group.coordinator.rebalance.protocols without "consumer":
		// Kafka answers UNSUPPORTED_VERSION.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp, nil
	}
	hr := group.ConsumerHeartbeatRequest{
		Version:              r.Version,
		GroupID:              req.Group,
		MemberID:             req.MemberID,
		MemberEpoch:          req.MemberEpoch,
		InstanceID:           req.InstanceID,
		RackID:               req.RackID,
		RebalanceTimeoutMs:   req.RebalanceTimeoutMillis,
		SubscribedTopicNames: req.SubscribedTopicNames,
		ServerAssignor:       req.ServerAssignor,
		ClientID:             r.ClientID,
		ClientHost:           clientHost(r),
	}
	if r.Version >= 1 {
		hr.SubscribedTopicRegex = req.SubscribedTopicRegex
	}
	if !b.trusted(r) {
		// A regex subscribes only to the topics the member may DESCRIBE
		// (Kafka 4).
		s := subject(r)
		hr.MayDescribe = func(topic string) bool { return b.authz.Authorize(s, acl.ResourceTopic, topic, acl.OpDescribe) }
	}
	if req.Topics != nil {
		hr.Owned = make([]group.TopicPartitions, 0, len(req.Topics))
		for _, t := range req.Topics {
			hr.Owned = append(hr.Owned, group.TopicPartitions{TopicID: t.TopicID, Partitions: t.Partitions})
		}
	}
	res := b.groups.ConsumerGroupHeartbeat(hr)
	if res.Err != nil {
		resp.ErrorCode = b.errCode(res.Err)
		resp.ErrorMessage = errMessage(res.Err)
		return resp, nil
	}
	id := res.MemberID
	resp.MemberID = &id
	resp.MemberEpoch = res.MemberEpoch
	resp.HeartbeatIntervalMillis = int32(res.HeartbeatInterval.Milliseconds())
	if res.HasAssignment {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range res.Assignment {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t.TopicID, t.Partitions
			a.Topics = append(a.Topics, at)
		}
		if a.Topics == nil {
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		resp.Assignment = &a
	}
	return resp, nil
}
