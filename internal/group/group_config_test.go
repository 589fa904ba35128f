package group

import (
	"testing"
	"time"

	"github.com/vltava/vltava/internal/metadata"
)

// TestGroupConfigOverridesTimeouts: a group's consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms (GROUP ConfigRecords in the metadata
// image) replace the broker's values for that group only, and existing
// members pick them up on their next heartbeat, as Kafka's
// GroupConfigManager is consulted on every heartbeat.
func TestGroupConfigOverridesTimeouts(t *testing.T) {
	c := newConsumerTestCoordinator(t, newMemLog(), time.Hour)
	m1 := join(t, c, "g", "m1", "a")
	other := join(t, c, "h", "o1", "b")
	if res := m1.heartbeat(); res.Err != nil || res.HeartbeatInterval != 50*time.Millisecond {
		t.Fatalf("before the group config: %+v, want the broker's 50ms", res)
	}

	img, err := metadata.EmptyImage().Apply(1, []metadata.Record{
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceGroup, ResourceName: "g", Name: "consumer.session.timeout.ms", Value: metadata.StringPtr("200")},
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceGroup, ResourceName: "g", Name: "consumer.heartbeat.interval.ms", Value: metadata.StringPtr("20")},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.setGroupTimeouts(groupTimeoutsOfImage(img))

	if res := m1.heartbeat(); res.Err != nil || res.HeartbeatInterval != 20*time.Millisecond {
		t.Fatalf("existing member's next heartbeat: %+v, want the group's 20ms", res)
	}
	if res := other.heartbeat(); res.Err != nil || res.HeartbeatInterval != 50*time.Millisecond {
		t.Fatalf("member of another group: %+v, want the broker's 50ms", res)
	}

	// m2 never heartbeats again: the group's 200ms session fences it,
	// where the broker's hour would not.
	join(t, c, "g", "m2", "a")
	deadline := time.Now().Add(5 * time.Second)
	for len(describe(t, c, "g").Members) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("m2 was not fenced after the group's session timeout")
		}
		m1.mustHeartbeat()
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(describe(t, c, "h").Members); n != 1 {
		t.Fatalf("group h has %d members, want its one (broker session of an hour)", n)
	}

	// Deleting the config returns the group to the broker's values.
	c.setGroupTimeouts(groupTimeoutsOfImage(metadata.EmptyImage()))
	if res := m1.heartbeat(); res.Err != nil || res.HeartbeatInterval != 50*time.Millisecond {
		t.Fatalf("after the group config is deleted: %+v, want 50ms", res)
	}
}
