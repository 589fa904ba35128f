package mirror

import (
	"strings"
	"testing"
)

func TestPolicies(t *testing.T) {
	d, _ := NewPolicy(DefaultPolicyClass, ".", "A")
	if got := d.FormatRemoteTopic("A", "orders"); got != "A.orders" {
		t.Fatalf("remote name %q", got)
	}
	if d.TopicSource("A.orders") != "A" || d.UpstreamTopic("A.orders") != "orders" || d.TopicSource("orders") != "" {
		t.Fatal("default policy parsing")
	}
	for _, c := range []struct {
		topic, target string
		cycle         bool
	}{
		{"orders", "B", false},
		{"B.orders", "B", true},
		{"A.B.orders", "B", true},
		{"C.orders", "B", false},
	} {
		if IsCycle(d, c.topic, c.target) != c.cycle {
			t.Errorf("IsCycle(%s, %s) != %v", c.topic, c.target, c.cycle)
		}
	}
	if d.OffsetSyncsTopic("B") != "mm2-offset-syncs.B.internal" || d.CheckpointsTopic("A") != "A.checkpoints.internal" {
		t.Fatal("internal topic names")
	}
	dash, _ := NewPolicy("DefaultReplicationPolicy", "_", "A")
	if dash.FormatRemoteTopic("A", "t") != "A_t" {
		t.Fatal("separator")
	}
	id, _ := NewPolicy(IdentityPolicyClass, ".", "A")
	if id.FormatRemoteTopic("A", "orders") != "orders" || id.FormatRemoteTopic("A", "heartbeats") != "A.heartbeats" {
		t.Fatal("identity naming")
	}
	if _, err := NewPolicy("com.example.Custom", ".", "A"); err == nil {
		t.Fatal("an unknown policy class was accepted")
	}
}

func TestFormatsRoundTrip(t *testing.T) {
	s := OffsetSync{Topic: "orders", Partition: 3, Upstream: 100, Downstream: 42}
	// Kafka's bytes: int16 length, "orders", int32 3 / int64 100, int64 42.
	if k := s.Key(); len(k) != 2+6+4 || k[1] != 6 {
		t.Fatalf("key bytes %x", k)
	}
	if got, err := DecodeOffsetSync(s.Key(), s.Value()); err != nil || got != s {
		t.Fatalf("offset sync %v %v", got, err)
	}
	c := Checkpoint{Group: "g", Topic: "A.orders", Partition: 1, Upstream: 10, Downstream: 7, Metadata: "m"}
	if got, err := DecodeCheckpoint(c.Key(), c.Value()); err != nil || got != c {
		t.Fatalf("checkpoint %v %v", got, err)
	}
	h := Heartbeat{Source: "A", Target: "B", TimestampMs: 1234}
	if got, err := DecodeHeartbeat(h.Key(), h.Value()); err != nil || got != h {
		t.Fatalf("heartbeat %v %v", got, err)
	}
	for _, bad := range [][]byte{nil, {0}, {0, 9, 'a'}} {
		if _, err := DecodeOffsetSync(bad, bad); err == nil {
			t.Errorf("short record %x decoded", bad)
		}
		if _, err := DecodeCheckpoint(bad, bad); err == nil {
			t.Errorf("short checkpoint %x decoded", bad)
		}
	}
}

func TestTranslateIsConservative(t *testing.T) {
	s := NewSyncStore()
	if _, ok := s.Translate("t", 0, 5); ok {
		t.Fatal("translated without a sync")
	}
	s.Add(OffsetSync{Topic: "t", Upstream: 10, Downstream: 0})
	s.Add(OffsetSync{Topic: "t", Upstream: 110, Downstream: 100})
	for _, c := range []struct {
		up, down int64
		ok       bool
	}{
		{5, 0, false}, // before the first sync: unknown
		{10, 0, true}, // exactly a sync
		{50, 1, true}, // past a sync: its downstream + 1, never ahead
		{110, 100, true},
		{500, 101, true},
	} {
		got, ok := s.Translate("t", 0, c.up)
		if ok != c.ok || (ok && got != c.down) {
			t.Errorf("Translate(%d) = %d %v, want %d %v", c.up, got, ok, c.down, c.ok)
		}
	}
	// Many syncs: old ones are thinned, but an old offset still translates
	// to an earlier sync rather than not at all (KAFKA-14666).
	for i := int64(2); i < 1000; i++ {
		s.Add(OffsetSync{Topic: "t", Upstream: 10 + 100*i, Downstream: 100 * i})
	}
	if got, ok := s.Translate("t", 0, 300); !ok || got > 300 {
		t.Fatalf("old offset translated to %d %v", got, ok)
	}
	// A recreated partition starts over.
	s.Add(OffsetSync{Topic: "t", Upstream: 0, Downstream: 5000})
	if got, _ := s.Translate("t", 0, 0); got != 5000 {
		t.Fatalf("after reset %d", got)
	}
}

func TestCheckpointsNeverMoveBackwards(t *testing.T) {
	c := &Checkpointer{last: map[string]map[partitionKey]Checkpoint{}}
	if !c.advance(Checkpoint{Group: "g", Topic: "A.t", Upstream: 100, Downstream: 90}) {
		t.Fatal("first checkpoint not emitted")
	}
	if c.advance(Checkpoint{Group: "g", Topic: "A.t", Upstream: 100, Downstream: 90}) {
		t.Fatal("repeated checkpoint emitted")
	}
	if c.advance(Checkpoint{Group: "g", Topic: "A.t", Upstream: 120, Downstream: 80}) {
		t.Fatal("a checkpoint moved backwards for a group that moved forwards")
	}
	if !c.advance(Checkpoint{Group: "g", Topic: "A.t", Upstream: 20, Downstream: 10}) {
		t.Fatal("a group rewound on the source was not followed (KAFKA-12468)")
	}
}

func base() map[string]string {
	return map[string]string{
		"clusters": "A, B", "A.bootstrap.servers": "127.0.0.1:1", "B.bootstrap.servers": "127.0.0.1:2",
		"A->B.enabled": "true",
	}
}

func TestParseDefaultsAndOverrides(t *testing.T) {
	p := base()
	p["A->B.topics"] = "orders.*, payments"
	p["replication.factor"] = "1"
	p["A->B.offset.lag.max"] = "10"
	p["B.security.protocol"] = "PLAINTEXT"
	cfg, err := Parse(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Flows) != 1 || len(cfg.HeartbeatOnly) != 1 || cfg.HeartbeatOnly[0].Name() != "B->A" {
		t.Fatalf("flows %v heartbeat-only %v", cfg.Flows, cfg.HeartbeatOnly)
	}
	f := cfg.Flows[0]
	if f.ReplicationFactor != 1 || f.OffsetLagMax != 10 || f.EmitCheckpointsInterval.Seconds() != 60 || f.SyncGroupOffsets || !f.SyncTopicConfigs {
		t.Fatalf("settings %+v", f)
	}
	for topic, want := range map[string]bool{"orders": true, "orders-eu": true, "payments": true, "payments2": false, "__consumer_offsets": false, "x.internal": false, "B.orders": false} {
		if f.Mirrored(topic) != want {
			t.Errorf("Mirrored(%s) != %v", topic, want)
		}
	}
	for g, want := range map[string]bool{"app": true, "console-consumer-1": false, "connect-sink": false} {
		if f.GroupMirrored(g) != want {
			t.Errorf("GroupMirrored(%s) != %v", g, want)
		}
	}
}

func TestParseRefusals(t *testing.T) {
	for key, c := range map[string]struct{ value, want string }{
		"A->B.topics":                         {"orders[", "invalid regex"},
		"groups.exclude":                      {"(x", "invalid regex"},
		"A.consumer.fetch.min.bytes":          {"1", "unsupported client configuration"},
		"made.up.key":                         {"1", "unsupported configuration"},
		"A->C.enabled":                        {"true", "unknown cluster pair"},
		"replication.policy.class":            {"x.Custom", "replication.policy.class"},
		"offset-syncs.topic.location":         {"middle", "not source or target"},
		"emit.offset-syncs.enabled":           {"false", "only true"},
		"tasks.max":                           {"4", "only 1"},
		"A->B.tasks.max":                      {"2", "only 1"},
		"config.storage.replication.factor":   {"1", "unsupported configuration"},
		"status.storage.replication.factor":   {"1", "unsupported configuration"},
		"dedicated.mode.enable.internal.rest": {"true", "only false"},
	} {
		p := base()
		p[key] = c.value
		_, err := Parse(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: err %v, want %q", key, c.value, err, c.want)
		}
	}
	p := base()
	p["A->B.vltava.preserve.offsets"] = "true"
	p["exactly.once.source.support"] = "enabled"
	if _, err := Parse(p); err == nil || !strings.Contains(err.Error(), "vltava.preserve.offsets") {
		t.Errorf("preserve.offsets with exactly-once: %v", err)
	}
	p["A->B.vltava.preserve.offsets"] = "yes"
	delete(p, "exactly.once.source.support")
	if _, err := Parse(p); err == nil || !strings.Contains(err.Error(), "vltava.preserve.offsets") {
		t.Errorf("vltava.preserve.offsets=yes: %v", err)
	}
	p = base()
	delete(p, "B.bootstrap.servers")
	if _, err := Parse(p); err == nil || !strings.Contains(err.Error(), "B.bootstrap.servers") {
		t.Errorf("missing bootstrap: %v", err)
	}
}
