package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsTopicWaitsForEnoughBrokers: with offsets.topic.replication.factor
// above the brokers registered, group coordination answers
// COORDINATOR_NOT_AVAILABLE, as Kafka does, and __consumer_offsets is not
// created with fewer replicas; once enough brokers are back it is created
// with the full replication factor.
func TestOffsetsTopicWaitsForEnoughBrokers(t *testing.T) {
	const extra = int32(4)
	c := StartCluster(t, WithNodes(4), WithBrokerOnly(extra), WithOverride("offsets.topic.replication.factor", "4"))
	if err := c.Node(extra).Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	findCoordinator := func() (int16, error) {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKeys = []string{"waiting-group"}
		resp, err := c.requestFrom(1, req, 5*time.Second)
		if err != nil {
			return 0, err
		}
		return resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, nil
	}
	waitFor(t, 30*time.Second, "COORDINATOR_NOT_AVAILABLE with 3 of 4 brokers", func() (bool, string) {
		code, err := findCoordinator()
		return err == nil && code == kerr.CoordinatorNotAvailable.Code, fmt.Sprintf("code %d err %v", code, err)
	})
	if _, err := c.topicFrom(1, "__consumer_offsets"); err == nil {
		t.Fatal("__consumer_offsets created with fewer brokers than offsets.topic.replication.factor")
	}

	c.Node(extra).Restart()
	waitFor(t, 60*time.Second, "a coordinator once the fourth broker is back", func() (bool, string) {
		code, err := findCoordinator()
		return err == nil && code == 0, fmt.Sprintf("code %d err %v", code, err)
	})
	v, err := c.topicFrom(1, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	for p, ps := range v.Partitions {
		if len(ps.Replicas) != 4 {
			t.Fatalf("__consumer_offsets partition %d has replicas %v, want 4", p, ps.Replicas)
		}
	}
}
