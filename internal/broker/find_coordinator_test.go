package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A node whose offsets.topic.replication.factor exceeds the brokers it has
// answers COORDINATOR_NOT_AVAILABLE, as Kafka does, and does not create
// __consumer_offsets with fewer replicas.
func TestCoordinatorNotAvailableUntilEnoughBrokers(t *testing.T) {
	tn := startNode(t, map[string]string{"offsets.topic.replication.factor": "3"})
	c := tn.dial()

	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g"}
	resp := do[*kmsg.FindCoordinatorResponse](c, 4, fc)
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("FindCoordinator = %+v, want COORDINATOR_NOT_AVAILABLE", resp.Coordinators)
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "g", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	if jr := do[*kmsg.JoinGroupResponse](c, 5, join); jr.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("JoinGroup error = %d, want COORDINATOR_NOT_AVAILABLE", jr.ErrorCode)
	}

	// The topic exists: a commit to an unknown one is answered
	// UNKNOWN_TOPIC_OR_PARTITION before the coordinator is asked, as Kafka.
	createTopic(c, "t", 1, nil)
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group, commit.Generation = "g", -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = "t"
	ct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}
	commit.Topics = append(commit.Topics, ct)
	cr := do[*kmsg.OffsetCommitResponse](c, 2, commit)
	if len(cr.Topics) != 1 || cr.Topics[0].Partitions[0].ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Errorf("OffsetCommit = %+v, want COORDINATOR_NOT_AVAILABLE", cr.Topics)
	}

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	name := "__consumer_offsets"
	mt.Topic = &name
	md.Topics = append(md.Topics, mt)
	mr := do[*kmsg.MetadataResponse](c, 7, md)
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("__consumer_offsets exists with fewer brokers than its replication factor: %+v", mr.Topics)
	}
}
