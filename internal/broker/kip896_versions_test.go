package broker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/poll"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestVersionsKafka4Removed sends, at the oldest version, the requests
// whose versions KIP-896 removed from Kafka 4 and Kafka 3.9 still served
// (Produce v0-v2, Fetch v0-v3 and ListOffsets v0 have tests of their own).
// Old clients in production send them; each must work as Kafka 3.9 did.
func TestVersionsKafka4Removed(t *testing.T) {
	tn := startNode(t, map[string]string{"group.initial.rebalance.delay.ms": "0"})
	c := tn.dial()

	// CreateTopics v0 and Metadata v0 (an empty topic list means all).
	ct := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "old", 1, 1
	ct.Topics = append(ct.Topics, rt)
	ct.TimeoutMillis = 10_000
	if ec := do[*kmsg.CreateTopicsResponse](c, 0, ct).Topics[0].ErrorCode; ec != 0 {
		t.Fatalf("CreateTopics v0: error %d", ec)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{}
	if m := do[*kmsg.MetadataResponse](c, 0, md); len(m.Topics) != 1 || *m.Topics[0].Topic != "old" || len(m.Topics[0].Partitions) != 1 {
		t.Fatalf("Metadata v0: %+v", m.Topics)
	}
	produce(c, "old", 0, "a", "b")

	// OffsetForLeaderEpoch v0 (no leader epoch in the answer).
	oe := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ot := kmsg.NewOffsetForLeaderEpochRequestTopic()
	ot.Topic = "old"
	op := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	op.LeaderEpoch = 0
	ot.Partitions = append(ot.Partitions, op)
	oe.Topics = append(oe.Topics, ot)
	if p := do[*kmsg.OffsetForLeaderEpochResponse](c, 0, oe).Topics[0].Partitions[0]; p.ErrorCode != 0 || p.EndOffset != 2 {
		t.Fatalf("OffsetForLeaderEpoch v0: error %d end offset %d", p.ErrorCode, p.EndOffset)
	}

	// The classic group at v0: join, sync, heartbeat, commit (v0 and
	// v1), fetch (v0), leave.
	waitCoordinator(t, c, "old-group")
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.ProtocolType = "old-group", 10_000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	j := do[*kmsg.JoinGroupResponse](c, 0, jg)
	if j.ErrorCode != 0 || j.MemberID == "" || j.LeaderID != j.MemberID {
		t.Fatalf("JoinGroup v0: %+v", j)
	}
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = "old-group", j.Generation, j.MemberID
	sg.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte("assignment")}}
	if s := do[*kmsg.SyncGroupResponse](c, 0, sg); s.ErrorCode != 0 || string(s.MemberAssignment) != "assignment" {
		t.Fatalf("SyncGroup v0: %+v", s)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "old-group", j.Generation, j.MemberID
	if ec := do[*kmsg.HeartbeatResponse](c, 0, hb).ErrorCode; ec != 0 {
		t.Fatalf("Heartbeat v0: error %d", ec)
	}
	// v0 carries no generation or member: as in Kafka it is for groups
	// that only store offsets (an empty group); v1 commits as a member.
	commit := func(v int16, group string, offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = group, j.Generation, j.MemberID
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "old"
		ocp := kmsg.NewOffsetCommitRequestTopicPartition()
		ocp.Offset = offset
		oct.Partitions = append(oct.Partitions, ocp)
		oc.Topics = append(oc.Topics, oct)
		return do[*kmsg.OffsetCommitResponse](c, v, oc).Topics[0].Partitions[0].ErrorCode
	}
	fetchCommitted := func(group string) int64 {
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Group = group
		oft := kmsg.NewOffsetFetchRequestTopic()
		oft.Topic, oft.Partitions = "old", []int32{0}
		of.Topics = append(of.Topics, oft)
		p := do[*kmsg.OffsetFetchResponse](c, 0, of).Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("OffsetFetch v0: error %d", p.ErrorCode)
		}
		return p.Offset
	}
	for _, tt := range []struct {
		v      int16
		group  string
		offset int64
	}{{0, "offsets-only", 1}, {1, "old-group", 2}} {
		// The group's __consumer_offsets partition may still be loading
		// (COORDINATOR_LOAD_IN_PROGRESS), which clients retry.
		poll.Until(t, 10*time.Second, fmt.Sprintf("OffsetCommit v%d", tt.v), func() error {
			if ec := commit(tt.v, tt.group, tt.offset); ec != 0 {
				if ec == kerr.CoordinatorLoadInProgress.Code {
					return fmt.Errorf("error %d", ec)
				}
				t.Fatalf("OffsetCommit v%d: error %d", tt.v, ec)
			}
			return nil
		})
		if got := fetchCommitted(tt.group); got != tt.offset {
			t.Errorf("after OffsetCommit v%d: OffsetFetch v0 says %d, want %d", tt.v, got, tt.offset)
		}
	}
	lg := kmsg.NewPtrLeaveGroupRequest()
	lg.Group, lg.MemberID = "old-group", j.MemberID
	if ec := do[*kmsg.LeaveGroupResponse](c, 0, lg).ErrorCode; ec != 0 {
		t.Fatalf("LeaveGroup v0: error %d", ec)
	}

	// DeleteTopics v0.
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames, dt.TimeoutMillis = []string{"old"}, 10_000
	if ec := do[*kmsg.DeleteTopicsResponse](c, 0, dt).Topics[0].ErrorCode; ec != 0 {
		t.Fatalf("DeleteTopics v0: error %d", ec)
	}
}
