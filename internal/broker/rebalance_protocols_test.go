package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// group.coordinator.rebalance.protocols=classic: ConsumerGroupHeartbeat
// and ConsumerGroupDescribe are not advertised and are answered
// UNSUPPORTED_VERSION, as Kafka does without the consumer protocol.
func TestRebalanceProtocolsClassicOnly(t *testing.T) {
	for _, tc := range []struct {
		protocols string
		enabled   bool
	}{{"classic", false}, {"classic,consumer", true}} {
		tn := startNode(t, map[string]string{"group.coordinator.rebalance.protocols": tc.protocols})
		c := tn.dial()
		createTopic(c, "rp-topic", 1, nil)
		av := do[*kmsg.ApiVersionsResponse](c, 3, &kmsg.ApiVersionsRequest{ClientSoftwareName: "t", ClientSoftwareVersion: "1"})
		advertised := map[int16]bool{}
		for _, k := range av.ApiKeys {
			advertised[k.ApiKey] = true
		}
		if advertised[int16(kmsg.ConsumerGroupHeartbeat)] != tc.enabled || advertised[int16(kmsg.ConsumerGroupDescribe)] != tc.enabled {
			t.Errorf("%s: ConsumerGroupHeartbeat advertised %v, ConsumerGroupDescribe %v", tc.protocols,
				advertised[int16(kmsg.ConsumerGroupHeartbeat)], advertised[int16(kmsg.ConsumerGroupDescribe)])
		}
		if !advertised[int16(kmsg.JoinGroup)] {
			t.Errorf("%s: JoinGroup not advertised", tc.protocols)
		}
		if tc.enabled {
			continue
		}
		r := cgHeartbeat(c, 1, "rp", "m1", 0, []string{"rp-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
		if r.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("heartbeat: error %d, want UNSUPPORTED_VERSION", r.ErrorCode)
		}
		d := kmsg.NewPtrConsumerGroupDescribeRequest()
		d.Groups = []string{"rp"}
		if dr := do[*kmsg.ConsumerGroupDescribeResponse](c, 0, d); dr.Groups[0].ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("describe: error %d, want UNSUPPORTED_VERSION", dr.Groups[0].ErrorCode)
		}
	}
}
