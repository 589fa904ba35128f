package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestValidateGroupConfigs follows GroupConfig.validate: names, values,
// the broker's group.consumer.* bounds (heartbeat checked before session)
// and the session outlasting the heartbeat interval, with the complete set
// of overrides judged over the broker's values.
func TestValidateGroupConfigs(t *testing.T) {
	b, _, err := ParseBroker(map[string]string{
		"group.consumer.min.session.timeout.ms":    "1000",
		"group.consumer.session.timeout.ms":        "10000",
		"group.consumer.max.heartbeat.interval.ms": "20000",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		overrides map[string]string
		want      string // "" = valid
	}{
		{"none", nil, ""},
		{"in bounds", map[string]string{"consumer.session.timeout.ms": "30000", "consumer.heartbeat.interval.ms": "6000"}, ""},
		{"session at its min", map[string]string{"consumer.session.timeout.ms": "1000", "consumer.heartbeat.interval.ms": "5000"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"heartbeat not below the broker's session", map[string]string{"consumer.heartbeat.interval.ms": "10000"}, "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"},
		{"heartbeat checked first", map[string]string{"consumer.session.timeout.ms": "999", "consumer.heartbeat.interval.ms": "20001"}, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{"session below min", map[string]string{"consumer.session.timeout.ms": "999"}, "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"},
		{"zero", map[string]string{"consumer.heartbeat.interval.ms": "0"}, "consumer.heartbeat.interval.ms"},
		{"unknown", map[string]string{"consumer.max.size": "3"}, "Unknown group config name: consumer.max.size"},
		{"share key", map[string]string{"share.record.lock.duration.ms": "30000"}, "share groups (KIP-932) are not supported"},
	} {
		err := ValidateGroupConfigs(b, tt.overrides)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (!errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want INVALID_CONFIG with %q", tt.name, err, tt.want)
		}
	}
	entries := DescribeGroup(b, map[string]string{"consumer.heartbeat.interval.ms": "6000"})
	if len(entries) != 2 || entries[0].Name != "consumer.heartbeat.interval.ms" || entries[0].Value != "6000" || entries[0].Source != SourceGroupConfig ||
		entries[1].Value != "10000" || entries[1].Source != SourceDefaultConfig {
		t.Errorf("DescribeGroup: %+v", entries)
	}
}
