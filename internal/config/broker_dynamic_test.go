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

// listener.name.<listener>.max.connections is a listener's own limit, in
// any layer and with the listener part of the key in any case; the
// prefixed key of a higher layer wins, and a listener without one has no
// entry. Keys naming no listener are ignored.
func TestPerListenerMaxConnections(t *testing.T) {
	b := mustParseBroker(t, map[string]string{
		"listeners":                               "PLAINTEXT://localhost:9092,OTHER://localhost:9094,THIRD://localhost:9095,CONTROLLER://localhost:9093",
		"listener.security.protocol.map":          "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT,THIRD:PLAINTEXT,CONTROLLER:PLAINTEXT",
		"controller.listener.names":               "CONTROLLER",
		"max.connections":                         "100",
		"listener.name.plaintext.max.connections": "5",
		"listener.name.OTHER.max.connections":     "6",
		"listener.name.nosuch.max.connections":    "7",
	})
	if q := b.ConnectionQuotas(nil, nil); !reflect.DeepEqual(q.PerListener, map[string]int32{"PLAINTEXT": 5, "OTHER": 6}) || q.Max != 100 {
		t.Errorf("static: PerListener = %v, Max = %d", q.PerListener, q.Max)
	}
	q := b.ConnectionQuotas(
		map[string]string{"listener.name.plaintext.max.connections": "4", "max.connections": "50"},
		map[string]string{"listener.name.plaintext.max.connections": "3", "listener.name.third.max.connections": "2"})
	want := map[string]int32{"PLAINTEXT": 4, "OTHER": 6, "THIRD": 2}
	if !reflect.DeepEqual(q.PerListener, want) || q.Max != 50 {
		t.Errorf("layered: PerListener = %v, Max = %d; want %v, 50", q.PerListener, q.Max, want)
	}
	if q := mustParseBroker(t, nil).ConnectionQuotas(map[string]string{"max.connections": "3"}, nil); q.PerListener != nil {
		t.Errorf("no per-listener key: PerListener = %v, want nil", q.PerListener)
	}
}
