package broker_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	resTopic  = kmsg.ConfigResourceTypeTopic
	resBroker = kmsg.ConfigResourceTypeBroker
)

// describe returns one resource's configs by name.
func describe(t *testing.T, c *conn, v int16, typ kmsg.ConfigResourceType, name string, names ...string) (int16, map[string]kmsg.DescribeConfigsResponseResourceConfig) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	if names != nil {
		rr.ConfigNames = names
	}
	req.Resources = append(req.Resources, rr)
	res := do[*kmsg.DescribeConfigsResponse](c, v, req).Resources[0]
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, cc := range res.Configs {
		out[cc.Name] = cc
	}
	return res.ErrorCode, out
}

func TestDescribeConfigs(t *testing.T) {
	tn := startNode(t, map[string]string{"log.retention.ms": "86400000"})
	c := tn.dial()
	createTopic(c, "dc", 1, map[string]string{"cleanup.policy": "compact"})

	ec, cfgs := describe(t, c, 4, resTopic, "dc")
	if ec != 0 {
		t.Fatalf("error %d", ec)
	}
	for _, tt := range []struct {
		name, value string
		source      kmsg.ConfigSource
	}{
		{"cleanup.policy", "compact", kmsg.ConfigSourceDynamicTopicConfig},
		{"retention.ms", "86400000", kmsg.ConfigSourceStaticBrokerConfig},
		{"segment.bytes", "1073741824", kmsg.ConfigSourceDefaultConfig},
	} {
		got, ok := cfgs[tt.name]
		if !ok || got.Value == nil || *got.Value != tt.value || got.Source != tt.source {
			t.Errorf("%s: %+v, want %s from source %v", tt.name, got, tt.value, tt.source)
			continue
		}
		if got.Documentation == nil || *got.Documentation == "" {
			t.Errorf("%s: no documentation", tt.name)
		}
	}
	if syn := cfgs["retention.ms"].ConfigSynonyms; len(syn) == 0 || syn[0].Name != "log.retention.ms" {
		t.Errorf("retention.ms synonyms %+v, want log.retention.ms first", syn)
	}

	if _, only := describe(t, c, 4, resTopic, "dc", "retention.ms"); len(only) != 1 {
		t.Errorf("config names filter returned %d configs", len(only))
	}
	if _, v0 := describe(t, c, 0, resTopic, "dc", "cleanup.policy"); v0["cleanup.policy"].Source != -1 {
		t.Errorf("v0 source %d, want -1", v0["cleanup.policy"].Source)
	}

	for _, tt := range []struct {
		name     string
		typ      kmsg.ConfigResourceType
		resource string
		want     int16
	}{
		{"this broker", resBroker, "1", 0},
		{"cluster-wide broker defaults", resBroker, "", 0},
		{"another broker", resBroker, "2", kerr.InvalidRequest.Code},
		{"unknown topic", resTopic, "nope", kerr.UnknownTopicOrPartition.Code},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ec, cfgs := describe(t, c, 4, tt.typ, tt.resource)
			if ec != tt.want {
				t.Fatalf("error %d, want %d", ec, tt.want)
			}
			if ec == 0 && len(cfgs) == 0 {
				t.Error("no configs")
			}
		})
	}
}

func alterTopic(c *conn, topic string, kv map[string]string) int16 {
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = resTopic, topic
	for k, v := range kv {
		cc := kmsg.NewAlterConfigsRequestResourceConfig()
		cc.Name, cc.Value = k, kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, cc)
	}
	req.Resources = append(req.Resources, rr)
	return do[*kmsg.AlterConfigsResponse](c, 2, req).Resources[0].ErrorCode
}

func TestAlterConfigsReplacesTheSet(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "ac", 1, map[string]string{"retention.ms": "1000"})
	if ec := alterTopic(c, "ac", map[string]string{"segment.ms": "600000"}); ec != 0 {
		t.Fatalf("alter: %d", ec)
	}
	_, cfgs := describe(t, c, 4, resTopic, "ac")
	if s := cfgs["retention.ms"].Source; s == kmsg.ConfigSourceDynamicTopicConfig {
		t.Error("retention.ms override survived a set that did not name it")
	}
	if v := cfgs["segment.ms"].Value; v == nil || *v != "600000" {
		t.Errorf("segment.ms %v", v)
	}
	if ec := alterTopic(c, "ac", map[string]string{"retention.ms": "forever"}); ec != kerr.InvalidConfig.Code {
		t.Errorf("invalid value: error %d", ec)
	}
	if ec := alterTopic(c, "nope", map[string]string{"retention.ms": "1"}); ec != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("unknown topic: error %d", ec)
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "iac", 1, map[string]string{"retention.ms": "1000"})
	type op struct {
		name  string
		op    kmsg.IncrementalAlterConfigOp
		value *string
	}
	tests := []struct {
		name  string
		ops   []op
		want  int16
		check string // config to check afterwards
		value string // its expected value ("" = not overridden)
	}{
		{"SET", []op{{"retention.ms", 0, kmsg.StringPtr("2000")}}, 0, "retention.ms", "2000"},
		{"DELETE", []op{{"retention.ms", 1, nil}}, 0, "retention.ms", ""},
		{"APPEND to the default", []op{{"cleanup.policy", 2, kmsg.StringPtr("compact")}}, 0, "cleanup.policy", "delete,compact"},
		{"APPEND present value is a no-op", []op{{"cleanup.policy", 2, kmsg.StringPtr("compact")}}, 0, "cleanup.policy", "delete,compact"},
		{"SUBTRACT", []op{{"cleanup.policy", 3, kmsg.StringPtr("delete")}}, 0, "cleanup.policy", "compact"},
		{"APPEND to a non-list", []op{{"retention.ms", 2, kmsg.StringPtr("5")}}, kerr.InvalidConfig.Code, "cleanup.policy", "compact"},
		{"duplicate key", []op{{"retention.ms", 0, kmsg.StringPtr("5")}, {"retention.ms", 1, nil}}, kerr.InvalidRequest.Code, "retention.ms", ""},
		{"invalid value", []op{{"retention.ms", 0, kmsg.StringPtr("x")}}, kerr.InvalidConfig.Code, "retention.ms", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = resTopic, "iac"
			for _, o := range tt.ops {
				cc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
				cc.Name, cc.Op, cc.Value = o.name, o.op, o.value
				rr.Configs = append(rr.Configs, cc)
			}
			req.Resources = append(req.Resources, rr)
			if ec := do[*kmsg.IncrementalAlterConfigsResponse](c, 1, req).Resources[0].ErrorCode; ec != tt.want {
				t.Fatalf("error %d, want %d", ec, tt.want)
			}
			_, cfgs := describe(t, c, 4, resTopic, "iac", tt.check)
			got := cfgs[tt.check]
			overridden := got.Source == kmsg.ConfigSourceDynamicTopicConfig
			switch {
			case tt.value == "" && overridden:
				t.Errorf("%s overridden with %v", tt.check, *got.Value)
			case tt.value != "" && (!overridden || *got.Value != tt.value):
				t.Errorf("%s = %v (source %v), want override %s", tt.check, got.Value, got.Source, tt.value)
			}
		})
	}
}

// TestAlterConfigsRepeatedKeyLastWins: the legacy AlterConfigs puts each
// entry in turn, so a key given twice takes its last value (Kafka's
// ConfigurationControlManager.legacyAlterConfigs).
func TestAlterConfigsRepeatedKeyLastWins(t *testing.T) {
	tn := startNode(t, nil)
	c := tn.dial()
	createTopic(c, "acdup", 1, nil)
	req := kmsg.NewPtrAlterConfigsRequest()
	rr := kmsg.NewAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = resTopic, "acdup"
	for _, v := range []string{"1000", "2000"} {
		cc := kmsg.NewAlterConfigsRequestResourceConfig()
		cc.Name, cc.Value = "retention.ms", kmsg.StringPtr(v)
		rr.Configs = append(rr.Configs, cc)
	}
	req.Resources = append(req.Resources, rr)
	for _, v := range []int16{0, 2} {
		if ec := do[*kmsg.AlterConfigsResponse](c, v, req).Resources[0].ErrorCode; ec != 0 {
			t.Fatalf("v%d: error %d", v, ec)
		}
	}
	_, cfgs := describe(t, c, 4, resTopic, "acdup", "retention.ms")
	if v := cfgs["retention.ms"].Value; v == nil || *v != "2000" {
		t.Errorf("retention.ms %v, want the last value 2000", v)
	}
}
