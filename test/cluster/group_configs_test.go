package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupConfigsAcrossNodes: a consumer group's KIP-848 config, altered
// through any broker, is validated against the group.consumer.* bounds,
// stored by the controller and applied by whichever node coordinates the
// group: its ConsumerGroupHeartbeat answers carry the group's heartbeat
// interval.
func TestGroupConfigsAcrossNodes(t *testing.T) {
	const group = "gcfg-app"
	c := StartCluster(t)
	c.createTopic("gcfg", 1, 3, nil)
	cl := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	alter := func(key, value string) (int16, string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cc.Name, cc.Value = key, kmsg.StringPtr(value)
		rr.Configs = append(rr.Configs, cc)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v", err)
		}
		r := resp.Resources[0]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		return r.ErrorCode, msg
	}
	if ec, msg := alter("consumer.heartbeat.interval.ms", "4000"); ec != kerr.InvalidConfig.Code {
		t.Fatalf("heartbeat below group.consumer.min.heartbeat.interval.ms: error %d %q, want INVALID_CONFIG", ec, msg)
	}
	if ec, msg := alter("consumer.heartbeat.interval.ms", "7000"); ec != 0 {
		t.Fatalf("in-bounds heartbeat interval: error %d %q", ec, msg)
	}

	// The coordinator applies the image a moment after the node that
	// answered the alteration: poll its heartbeat answers.
	deadline := time.Now().Add(45 * time.Second)
	for {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "gcfg-member", 30000
		req.SubscribedTopicNames, req.Topics = []string{"gcfg"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.ErrorCode == 0 && resp.HeartbeatIntervalMillis == 7000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heartbeat answered with the group's 7000ms interval: %v %+v", err, resp)
		}
		time.Sleep(200 * time.Millisecond) // poll interval, bounded by deadline
	}
}
