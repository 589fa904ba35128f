package group

import (
	"strings"
	"testing"

	"github.com/vltava/vltava/internal/config"
)

// The group settings are checked against each other at start, each error
// naming the key, as Kafka's GroupCoordinatorConfig requires.
func TestConfigFromBrokerChecks(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		key   string // "" when accepted
	}{
		{nil, ""},
		{map[string]string{"group.coordinator.rebalance.protocols": "classic"}, ""},
		{map[string]string{"group.coordinator.rebalance.protocols": "consumer"}, "group.coordinator.rebalance.protocols"},
		{map[string]string{"group.coordinator.rebalance.protocols": "classic,consumer,share"}, "group.coordinator.rebalance.protocols"},
		{map[string]string{"group.consumer.session.timeout.ms": "30000"}, "group.consumer.session.timeout.ms"},
		{map[string]string{"group.consumer.session.timeout.ms": "70000"}, "group.consumer.session.timeout.ms"},
		{map[string]string{"group.consumer.min.session.timeout.ms": "50000", "group.consumer.max.session.timeout.ms": "40000"}, "group.consumer.max.session.timeout.ms"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "1000"}, "group.consumer.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "16000"}, "group.consumer.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "3000",
			"group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "3000"}, "group.consumer.heartbeat.interval.ms"},
		{map[string]string{"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "3000",
			"group.consumer.min.heartbeat.interval.ms": "100", "group.consumer.heartbeat.interval.ms": "500"}, ""},
	} {
		props := map[string]string{"log.dirs": t.TempDir()}
		for k, v := range tc.props {
			props[k] = v
		}
		b, _, err := config.ParseBroker(props)
		if err != nil {
			t.Fatalf("%v: %v", tc.props, err)
		}
		cfg, err := ConfigFromBroker(b)
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.props, err)
		case tc.key != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.key)):
			t.Errorf("%v: error %v, want one naming %s", tc.props, err, tc.key)
		}
		if tc.key == "" && tc.props["group.coordinator.rebalance.protocols"] == "classic" && !cfg.ConsumerProtocolDisabled {
			t.Errorf("classic only: consumer protocol enabled")
		}
	}
	b, _, _ := config.ParseBroker(map[string]string{"log.dirs": t.TempDir(), "group.consumer.migration.policy": "upgrade"})
	if cfg, _ := ConfigFromBroker(b); cfg.MigrationPolicy != MigrationUpgrade || !cfg.MigrationPolicy.upgradeAllowed() || cfg.MigrationPolicy.downgradeAllowed() {
		t.Errorf("migration policy: %q", cfg.MigrationPolicy)
	}
}

// group.consumer.migration.policy takes any case, as Kafka's
// CaseInsensitiveValidString.
func TestMigrationPolicyIgnoresCase(t *testing.T) {
	b, _, err := config.ParseBroker(map[string]string{"log.dirs": t.TempDir(), "group.consumer.migration.policy": "UPGRADE"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ConfigFromBroker(b)
	if err != nil || cfg.MigrationPolicy != "upgrade" {
		t.Fatalf("policy %q, %v; want upgrade", cfg.MigrationPolicy, err)
	}
	if _, _, err := config.ParseBroker(map[string]string{"group.consumer.migration.policy": "sideways"}); err == nil {
		t.Fatal("an unknown policy is accepted")
	}
}
