package broker

// ConsumerGroupDescribe (key 69), v0-v1: KIP-848 consumer groups with
// their epochs, assignor, and each member's subscription, current and
// target assignment (group.Coordinator.DescribeConsumerGroup). A group
// that does not exist or is a classic group is GROUP_ID_NOT_FOUND. v1 adds
// the member type (1: a consumer-protocol member, 0: a classic member
// of a consumer group during an online migration). Authorized operations, when asked, are
// every group operation (no ACLs).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/security/acl"
	"github.com/vltava/vltava/internal/server"
)

func init() { register(kmsg.ConsumerGroupDescribe, 0, 1, (*Broker).handleConsumerGroupDescribe) }

func (b *Broker) handleConsumerGroupDescribe(ctx context.Context, r *server.Request) (kmsg.Response, error) {
	req := r.Body.(*kmsg.ConsumerGroupDescribeRequest)
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = authorizedOpsOmitted
		if !b.allowedGroup(r, id, acl.OpDescribe) { // Kafka: DESCRIBE on the group
			rg.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = b.authorizedOps(r, acl.ResourceGroup, id)
		}
		if b.groups == nil {
			rg.ErrorCode = b.errCode(errNoCoordinator)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		if !b.groups.ConsumerProtocolEnabled() {
			// Without the consumer protocol Kafka answers
			// UNSUPPORTED_VERSION.
			rg.ErrorCode = kerr.UnsupportedVersion.Code
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		d, err := b.groups.DescribeConsumerGroup(id)
		if err != nil {
			rg.ErrorCode = b.errCode(err)
			rg.ErrorMessage = errMessage(err)
			resp.Groups = append(resp.Groups, rg)
			continue
		}
		rg.State, rg.Epoch, rg.AssignmentEpoch, rg.AssignorName = d.State, d.Epoch, d.AssignmentEpoch, d.AssignorName
		for _, m := range d.Members {
			rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
			rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.MemberID, m.InstanceID, m.RackID, m.MemberEpoch
			rm.ClientID, rm.ClientHost = m.ClientID, m.ClientHost
			rm.SubscribedTopics = m.SubscribedTopicNames
			if rm.SubscribedTopics == nil {
				rm.SubscribedTopics = []string{}
			}
			rm.SubscribedTopicRegex = m.SubscribedTopicRegex
			rm.Assignment = describedAssignment(m.Assignment)
			rm.TargetAssignment = describedAssignment(m.TargetAssignment)
			rm.MemberType = 1
			if m.Classic {
				rm.MemberType = 0 // a classic member (KIP-848 migration)
			}
			rg.Members = append(rg.Members, rm)
		}
		if !b.mayDescribeGroupTopics(r, rg.Members) {
			// Kafka: a group is described only to a principal that may
			// DESCRIBE every topic its members subscribe to or are assigned.
			rg.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rg.ErrorMessage = kmsg.StringPtr("The described group uses topics that the client is not authorized to describe.")
			rg.Members = nil
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}

// mayDescribeGroupTopics reports whether r may DESCRIBE every topic the
// members subscribe to or hold in their current or target assignment.
func (b *Broker) mayDescribeGroupTopics(r *server.Request, members []kmsg.ConsumerGroupDescribeResponseGroupMember) bool {
	if b.trusted(r) {
		return true
	}
	for _, m := range members {
		for _, t := range m.SubscribedTopics {
			if !b.allowedTopic(r, t, acl.OpDescribe) {
				return false
			}
		}
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !b.allowedTopic(r, tp.Topic, acl.OpDescribe) {
					return false
				}
			}
		}
	}
	return true
}

func describedAssignment(ts []group.NamedTopicPartitions) kmsg.Assignment {
	a := kmsg.NewAssignment()
	a.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range ts {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID, tp.Topic, tp.Partitions = t.TopicID, t.Topic, t.Partitions
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}
