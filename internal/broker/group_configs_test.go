package broker_test

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const resGroup = kmsg.ConfigResourceTypeGroupConfig

// alterGroup sets (value != nil) or deletes one group config with
// IncrementalAlterConfigs, returning the error code and message.
func alterGroup(c *conn, group, key string, value *string, validateOnly bool) (int16, string) {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = resGroup, group
	cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cc.Name, cc.Value = key, value
	if value == nil {
		cc.Op = kmsg.IncrementalAlterConfigOpDelete
	}
	rr.Configs = append(rr.Configs, cc)
	req.Resources = append(req.Resources, rr)
	res := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0]
	msg := ""
	if res.ErrorMessage != nil {
		msg = *res.ErrorMessage
	}
	return res.ErrorCode, msg
}

// TestGroupConfigs: KIP-848 group configs (resource type GROUP) are
// validated against the broker's group.consumer.* bounds with Kafka's
// errors, may name a group that does not exist yet, are described with
// GROUP_CONFIG / DEFAULT_CONFIG sources, and set the heartbeat interval the
// coordinator gives that group's members.
func TestGroupConfigs(t *testing.T) {
	tn := startNode(t, map[string]string{
		"group.consumer.heartbeat.interval.ms":     "3000",
		"group.consumer.min.heartbeat.interval.ms": "1000",
	})
	c := tn.dial()

	ec, cfgs := describe(t, c, 4, resGroup, "gc")
	if ec != 0 || len(cfgs) != 2 {
		t.Fatalf("describe before any override: error %d, configs %+v", ec, cfgs)
	}
	for key, want := range map[string]string{"consumer.heartbeat.interval.ms": "3000", "consumer.session.timeout.ms": "45000"} {
		got := cfgs[key]
		if got.Value == nil || *got.Value != want || got.Source != kmsg.ConfigSourceDefaultConfig || got.ConfigType != kmsg.ConfigTypeInt {
			t.Errorf("default %s: %+v, want %s from DEFAULT_CONFIG", key, got, want)
		}
	}

	for _, tt := range []struct {
		name, key, value string
		want             int16
		msg              string
	}{
		{"session below min", "consumer.session.timeout.ms", "44999", kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"session above max", "consumer.session.timeout.ms", "60001", kerr.InvalidConfig.Code, "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"},
		{"heartbeat below min", "consumer.heartbeat.interval.ms", "999", kerr.InvalidConfig.Code, "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms"},
		{"heartbeat above max", "consumer.heartbeat.interval.ms", "15001", kerr.InvalidConfig.Code, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"not a number", "consumer.heartbeat.interval.ms", "soon", kerr.InvalidConfig.Code, "consumer.heartbeat.interval.ms"},
		{"unknown key", "consumer.assignor", "uniform", kerr.InvalidConfig.Code, "Unknown group config name: consumer.assignor"},
		{"share-group key", "share.session.timeout.ms", "45000", kerr.InvalidConfig.Code, "share groups (KIP-932) are not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ec, msg := alterGroup(c, "gc", tt.key, &tt.value, false)
			if ec != tt.want || !strings.Contains(msg, tt.msg) {
				t.Fatalf("error %d %q, want %d containing %q", ec, msg, tt.want, tt.msg)
			}
		})
	}
	if ec, _ := alterGroup(c, "", "consumer.session.timeout.ms", kmsg.StringPtr("50000"), false); ec != kerr.InvalidRequest.Code {
		t.Errorf("empty group name: error %d, want INVALID_REQUEST", ec)
	}
	if ec, _ := alterGroup(c, "gc", "consumer.heartbeat.interval.ms", kmsg.StringPtr("2000"), true); ec != 0 {
		t.Fatalf("validate only: error %d", ec)
	}
	if _, cfgs := describe(t, c, 4, resGroup, "gc"); cfgs["consumer.heartbeat.interval.ms"].Source != kmsg.ConfigSourceDefaultConfig {
		t.Fatalf("validate_only stored the config: %+v", cfgs["consumer.heartbeat.interval.ms"])
	}

	// The group does not exist yet: Kafka allows configuring it.
	if ec, msg := alterGroup(c, "gc", "consumer.heartbeat.interval.ms", kmsg.StringPtr("2000"), false); ec != 0 {
		t.Fatalf("in-bounds heartbeat interval: error %d %s", ec, msg)
	}
	_, cfgs = describe(t, c, 4, resGroup, "gc")
	if got := cfgs["consumer.heartbeat.interval.ms"]; got.Value == nil || *got.Value != "2000" || got.Source != kmsg.ConfigSourceGroupConfig {
		t.Fatalf("after alter: %+v, want 2000 from GROUP_CONFIG", got)
	}

	createTopic(c, "gc-topic", 1, nil)
	waitCoordinator(t, c, "gc")
	waitAllLoaded(t, c)
	r := cgHeartbeat(c, 0, "gc", "", 0, []string{"gc-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{})
	if r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 2000 {
		t.Fatalf("join of a configured group: %+v, want heartbeat interval 2000", r)
	}
	if r := cgHeartbeat(c, 0, "other", "", 0, []string{"gc-topic"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}); r.ErrorCode != 0 || r.HeartbeatIntervalMillis != 3000 {
		t.Fatalf("join of another group: %+v, want the broker's 3000", r)
	}

	// Deleting the override returns the member to the broker's value on
	// its next heartbeat; the heartbeat interval must stay below the
	// session timeout.
	if ec, msg := alterGroup(c, "gc", "consumer.heartbeat.interval.ms", nil, false); ec != 0 {
		t.Fatalf("delete: error %d %s", ec, msg)
	}
	next := cgHeartbeat(c, 0, "gc", *r.MemberID, r.MemberEpoch, []string{"gc-topic"}, nil)
	if next.ErrorCode != 0 || next.HeartbeatIntervalMillis != 3000 {
		t.Fatalf("heartbeat after delete: %+v, want 3000", next)
	}
}

// TestAlterConfigsGroup: the legacy AlterConfigs replaces a group's whole
// set of configs, with the same bounds.
func TestAlterConfigsGroup(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	alter := func(kv map[string]string) int16 {
		req := kmsg.NewPtrAlterConfigsRequest()
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = resGroup, "legacy"
		for k, v := range kv {
			cc := kmsg.NewAlterConfigsRequestResourceConfig()
			cc.Name, cc.Value = k, kmsg.StringPtr(v)
			rr.Configs = append(rr.Configs, cc)
		}
		req.Resources = append(req.Resources, rr)
		return do[*kmsg.AlterConfigsResponse](c, 2, req).Resources[0].ErrorCode
	}
	if ec := alter(map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}); ec != 0 {
		t.Fatalf("set both: error %d", ec)
	}
	if ec := alter(map[string]string{"consumer.session.timeout.ms": "70000"}); ec != kerr.InvalidConfig.Code {
		t.Fatalf("session above max: error %d, want INVALID_CONFIG", ec)
	}
	if ec := alter(map[string]string{"consumer.session.timeout.ms": "55000"}); ec != 0 {
		t.Fatalf("replace: error %d", ec)
	}
	_, cfgs := describe(t, c, 4, resGroup, "legacy")
	if got := cfgs["consumer.session.timeout.ms"]; got.Value == nil || *got.Value != "55000" || got.Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("session: %+v, want 55000 from GROUP_CONFIG", got)
	}
	if got := cfgs["consumer.heartbeat.interval.ms"]; got.Value == nil || *got.Value != "5000" || got.Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("heartbeat not reset by the replacing AlterConfigs: %+v", got)
	}
}
