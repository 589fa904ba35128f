package group

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
)

// seedRecords are one record of every kind the coordinator writes.
func seedRecords() []kv {
	inst, assignor := "inst", "uniform"
	md := memberMetadata{instanceID: &inst, clientID: "c", clientHost: "/127.0.0.1", topics: []string{"a", "b"},
		rebalanceTimeoutMs: 5000, serverAssignor: &assignor}
	classic := md
	classic.classic = &classicMetadata{sessionTimeoutMs: 6000, protocols: []Protocol{{Name: "range", Metadata: []byte{0, 1}}}}
	a := assignment{metadata.Uuid{1}: {0, 2}, metadata.Uuid{2}: {1}}
	m := &consumerMember{id: "m", epoch: 3, prevEpoch: 2, state: memberUnrevoked, assigned: a, revoking: assignment{metadata.Uuid{3}: {0}}}
	gm := kmsg.NewGroupMetadataValue()
	gm.Version, gm.ProtocolType, gm.Generation = 3, "consumer", 4
	vm := kmsg.NewGroupMetadataValueMember()
	vm.MemberID, vm.ClientID, vm.Subscription, vm.Assignment = "m", "c", []byte{0, 1}, []byte{}
	gm.Members = append(gm.Members, vm)
	return []kv{
		{key: offsetCommitKey("g", TopicPartition{"t", 1}), value: offsetCommitValue(CommittedOffset{Offset: 7, LeaderEpoch: 2, Metadata: "md", CommitTimestamp: 1, ExpireTimestamp: -1})},
		{key: offsetCommitKey("g", TopicPartition{"t", 1})},
		{key: groupMetadataKey("g"), value: gm.AppendTo(nil)},
		groupEpochRecord("g", 5),
		memberMetadataRecord("g", "m", md),
		memberMetadataRecord("g", "m", classic),
		targetEpochRecord("g", 5),
		targetMemberRecord("g", "m", a),
		currentAssignmentRecord("g", m),
		memberTombstones("g", "m")[0],
	}
}

// reencode writes a decoded consumer group record again.
func reencode(r *consumerRecord) kv {
	switch r.kind {
	case recConsumerGroupMetadata:
		return groupEpochRecord(r.group, r.epoch)
	case recTargetAssignmentMetadata:
		return targetEpochRecord(r.group, r.epoch)
	case recConsumerMemberMetadata:
		return memberMetadataRecord(r.group, r.member, r.meta)
	case recTargetAssignmentMember:
		return targetMemberRecord(r.group, r.member, r.partitions)
	default:
		return currentAssignmentRecord(r.group, &consumerMember{id: r.member, epoch: r.memberEpoch, prevEpoch: r.prevEpoch,
			state: r.state, assigned: r.partitions, revoking: r.revoking})
	}
}

// FuzzDecodeGroupRecord feeds arbitrary __consumer_offsets keys and values
// to the decoders a partition load runs: they never panic, refuse bad
// input only with CORRUPT_MESSAGE, and a consumer group record they
// accept decodes the same once written again. A whole batch of them
// replays without panicking either.
func FuzzDecodeGroupRecord(f *testing.F) {
	for _, r := range seedRecords() {
		f.Add(r.key, r.value, r.value == nil)
	}
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		r, ok, err := decodeGroupRecord(key, value)
		if err != nil {
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Fatalf("error %v is not CORRUPT_MESSAGE", err)
			}
			return
		}
		if ok && r.consumer != nil && !r.tombstone {
			again := reencode(r.consumer)
			r2, ok2, err := decodeGroupRecord(again.key, again.value)
			if err != nil || !ok2 {
				t.Fatalf("re-encoded record does not decode: %v", err)
			}
			if !reflect.DeepEqual(r.consumer, r2.consumer) {
				t.Fatalf("round trip:\n%+v\n%+v", r.consumer, r2.consumer)
			}
		}
		batch, err := buildBatch([]kv{{key: key, value: value}}, time.Unix(0, 0), record.CodecNone)
		if err != nil {
			return
		}
		_, _ = replayBatches(batch, func(groupRecord) {})
	})
}
