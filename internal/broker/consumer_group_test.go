package broker_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findCoordinator asks for the group's coordinator until
// __consumer_offsets exists and its partition is loaded.
func waitCoordinator(t *testing.T, c *conn, group string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{group}
		resp := do[*kmsg.FindCoordinatorResponse](c, 4, req)
		if len(resp.Coordinators) == 1 && resp.Coordinators[0].ErrorCode == 0 {
			// The partition may still be loading: a describe
			// tells.
			d := kmsg.NewPtrConsumerGroupDescribeRequest()
			d.Groups = []string{group}
			dr := do[*kmsg.ConsumerGroupDescribeResponse](c, 0, d)
			if dr.Groups[0].ErrorCode != kerr.CoordinatorLoadInProgress.Code && dr.Groups[0].ErrorCode != kerr.NotCoordinator.Code {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no group coordinator within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllLoaded waits until every __consumer_offsets partition led here
// is loaded: until then ListGroups, and groups of a loading partition,
// answer COORDINATOR_LOAD_IN_PROGRESS.
func waitAllLoaded(t *testing.T, c *conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		lr := do[*kmsg.ListGroupsResponse](c, 5, kmsg.NewPtrListGroupsRequest())
		if lr.ErrorCode == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("__consumer_offsets not loaded within 10s: error %d", lr.ErrorCode)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cgHeartbeat(c *conn, v int16, group, member string, epoch int32, topics []string, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.RebalanceTimeoutMillis = -1
	if epoch == 0 {
		req.RebalanceTimeoutMillis = 10000
	}
	req.SubscribedTopicNames = topics
	req.Topics = owned
	return do[*kmsg.ConsumerGroupHeartbeatResponse](c, v, req)
}

func TestConsumerGroupHeartbeatAndDescribe(t *testing.T) {
	tn := startNode(t, map[string]string{"group.consumer.heartbeat.interval.ms": "1234", "group.consumer.min.heartbeat.interval.ms": "1000"})
	c := tn.dial()
	id := createTopic(c, "cg-topic", 3, nil)
	waitCoordinator(t, c, "cg")
	waitAllLoaded(t, c)

	// v0: the coordinator names the member.
	r := cgHeartbeat(c, 0, "cg", "", 0, []string{"cg-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r.ErrorCode != 0 || r.MemberID == nil || *r.MemberID == "" || r.MemberEpoch != 1 || r.HeartbeatIntervalMillis != 1234 {
		t.Fatalf("v0 join: %+v", r)
	}
	if r.Assignment == nil || len(r.Assignment.Topics) != 1 || r.Assignment.Topics[0].TopicID != id || len(r.Assignment.Topics[0].Partitions) != 3 {
		t.Fatalf("v0 join assignment: %+v", r.Assignment)
	}
	// v1: the member id must come from the client.
	if r := cgHeartbeat(c, 1, "cg", "", 0, []string{"cg-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
		t.Fatalf("v1 join without member id: %+v", r)
	}
	r2 := cgHeartbeat(c, 1, "cg", "member-two", 0, []string{"cg-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r2.ErrorCode != 0 || *r2.MemberID != "member-two" || r2.MemberEpoch != 2 {
		t.Fatalf("v1 join: %+v", r2)
	}

	d := kmsg.NewPtrConsumerGroupDescribeRequest()
	d.Groups = []string{"cg", "missing"}
	dr := do[*kmsg.ConsumerGroupDescribeResponse](c, 1, d)
	g := dr.Groups[0]
	if g.ErrorCode != 0 || g.State != "Reconciling" || g.Epoch != 2 || g.AssignmentEpoch != 2 || g.AssignorName != "uniform" || len(g.Members) != 2 {
		t.Fatalf("describe: %+v", g)
	}
	for _, m := range g.Members {
		if m.MemberType != 1 || len(m.SubscribedTopics) != 1 || m.ClientID != "broker-test" {
			t.Fatalf("member: %+v", m)
		}
		if len(m.TargetAssignment.TopicPartitions) == 1 && m.TargetAssignment.TopicPartitions[0].Topic != "cg-topic" {
			t.Fatalf("target assignment topic name: %+v", m.TargetAssignment)
		}
	}
	if dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe missing group: %+v", dr.Groups[1])
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lr := do[*kmsg.ListGroupsResponse](c, 5, lg)
	if len(lr.Groups) != 1 || lr.Groups[0].GroupType != "consumer" || lr.Groups[0].ProtocolType != "consumer" {
		t.Fatalf("list groups: %+v", lr.Groups)
	}

	// Leaving answers epoch -1.
	if r := cgHeartbeat(c, 1, "cg", "member-two", -1, nil, nil); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
}
