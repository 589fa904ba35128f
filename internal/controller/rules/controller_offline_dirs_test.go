package rules

import (
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
)

// TestMoveOfflineReplicas: replicas in a broker's failed log dir lose
// leadership and ISR membership on that broker only; a sole ISR member
// stays in the ISR with no leader (KIP-841); partitions the broker holds
// no replica of, or that do not exist, get their errors.
func TestMoveOfflineReplicas(t *testing.T) {
	ctx := context.Background()
	c, _ := newTestController(t, 3, ControllerConfig{})
	led := assigned(t, c, "led", 0, 1, 2)
	followed := assigned(t, c, "followed", 1, 0, 2)
	other := assigned(t, c, "other", 1, 2)
	sole := assigned(t, c, "sole", 0)
	assigned(t, c, "untouched", 0, 1, 2)
	b0, _ := c.Image().Broker(0)

	refs := []ReplicaRef{{led.ID, 0}, {followed.ID, 0}, {other.ID, 0}, {sole.ID, 0}, {metadata.NewUuid(), 0}, {led.ID, 9}}
	verdicts, err := c.MoveOfflineReplicas(ctx, 0, b0.Epoch, refs)
	wantKafkaError(t, err, nil)
	for ref, want := range map[ReplicaRef]*kerr.Error{
		refs[0]: nil, refs[1]: nil, refs[2]: kerr.NotLeaderForPartition, refs[3]: nil,
		refs[4]: kerr.UnknownTopicID, refs[5]: kerr.UnknownTopicOrPartition,
	} {
		wantKafkaError(t, verdicts[ref], want)
	}
	img := c.Image()
	check := func(name string, leader int32, isr []int32) {
		t.Helper()
		p, _ := img.Partition(name, 0)
		if p.Leader != leader || !slices.Equal(p.ISR, isr) {
			t.Errorf("%s: leader %d ISR %v, want leader %d ISR %v", name, p.Leader, p.ISR, leader, isr)
		}
	}
	check("led", 1, []int32{1, 2})
	check("followed", 1, []int32{1, 2})
	check("other", 1, []int32{1, 2})
	check("sole", metadata.NoLeader, []int32{0})
	check("untouched", 0, []int32{0, 1, 2})
	if b, _ := img.Broker(0); b.Fenced || b.InControlledShutdown {
		t.Errorf("broker 0 after losing a log dir: %+v, want it registered and serving", b)
	}

	// Again (a broker repeats until its metadata shows the move): no change.
	off := img.Offset()
	if _, err := c.MoveOfflineReplicas(ctx, 0, b0.Epoch, refs[:2]); err != nil {
		t.Fatal(err)
	}
	if c.Image().Offset() != off {
		t.Errorf("a repeated report committed records (offset %d → %d)", off, c.Image().Offset())
	}
	_, err = c.MoveOfflineReplicas(ctx, 0, b0.Epoch+1, refs[:1])
	wantKafkaError(t, err, kerr.StaleBrokerEpoch)
}
