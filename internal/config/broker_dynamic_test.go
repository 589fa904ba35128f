package config

import (
	"math"
	"reflect"
	"testing"
)

// Run-time settings take the per-broker dynamic value over the cluster
// default over the static one over Kafka's default.
func TestRunTimeSettingsLayering(t *testing.T) {
	b := mustParseBroker(t, map[string]string{"max.connections": "100", "leader.replication.throttled.rate": "5000"})
	q := b.ConnectionQuotas(map[string]string{"max.connections.per.ip": "7"}, map[string]string{"max.connections.per.ip": "9", "max.connections.per.ip.overrides": "10.0.0.1:2"})
	want := ConnectionQuotas{Max: 100, PerIP: 7, CreationRate: math.MaxInt32, PerIPOverrides: map[string]int32{"10.0.0.1": 2}}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("ConnectionQuotas = %+v, want %+v", q, want)
	}
	leader, follower := b.ReplicationThrottledRates(nil, map[string]string{"follower.replication.throttled.rate": "300"})
	if leader != 5000 || follower != 300 {
		t.Errorf("rates = %d, %d; want 5000, 300", leader, follower)
	}
	leader, follower = b.ReplicationThrottledRates(map[string]string{"leader.replication.throttled.rate": "1"}, nil)
	if leader != 1 || follower != math.MaxInt64 {
		t.Errorf("rates = %d, %d; want 1, Long.MAX", leader, follower)
	}
}
