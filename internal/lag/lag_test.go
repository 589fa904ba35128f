package lag

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/group"
	"github.com/vltava/vltava/internal/partition"
	"github.com/vltava/vltava/internal/record"
)

// fakeGroups is one memberless group with committed offsets.
type fakeGroups struct{ offsets []group.FetchedOffset }

func (f fakeGroups) ListGroups(_, _ []string) ([]group.GroupListing, error) {
	return []group.GroupListing{{GroupID: "g", State: "Empty", Type: "classic"}}, nil
}
func (f fakeGroups) FetchOffsets(string, []group.TopicPartition) ([]group.FetchedOffset, error) {
	return f.offsets, nil
}
func (fakeGroups) DescribeGroup(id string) (group.GroupDescription, error) {
	return group.GroupDescription{GroupID: id, State: "Empty"}, nil
}
func (fakeGroups) DescribeConsumerGroup(id string) (group.ConsumerGroupDescription, error) {
	return group.ConsumerGroupDescription{GroupID: id}, nil
}

// nothingHosted hosts no partition: every one is read through Remote.
type nothingHosted struct{}

func (nothingHosted) Get(string, int32) *partition.Partition { return nil }

// fakeRemote has partition 0 with records 0..9, record i stamped base+i s;
// partition 1's end cannot be read.
type fakeRemote struct {
	base  time.Time
	calls int
}

func (r *fakeRemote) EndOffsets(_ context.Context, tps map[string][]int32) map[string]map[int32]Ends {
	return map[string]map[int32]Ends{"t": {0: {High: 10, Stable: 7}}}
}

func (r *fakeRemote) Batches(_ context.Context, topic string, p int32, offset int64) ([]byte, bool) {
	r.calls++
	var recs []record.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, record.Record{OffsetDelta: int32(i), TimestampDelta: int64(i) * 1000, Value: []byte{'v'}})
	}
	b, err := record.BuildBatch(record.Header{FirstTimestamp: r.base.UnixMilli(), MaxTimestamp: r.base.UnixMilli() + 9000,
		LastOffsetDelta: 9, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
	return b, err == nil
}

// TestComputeReadsPartitionsHostedElsewhere: a group's partition that is
// not hosted here gets its lag from the leader's end offset and its time
// lag from the record at the committed offset, read once; a partition
// whose end cannot be read is left out rather than reported wrong.
func TestComputeReadsPartitionsHostedElsewhere(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	remote := &fakeRemote{base: base}
	c := &Computer{
		Groups: fakeGroups{offsets: []group.FetchedOffset{
			{TopicPartition: group.TopicPartition{Topic: "t", Partition: 0}, Offset: 4},
			{TopicPartition: group.TopicPartition{Topic: "t", Partition: 1}, Offset: 2},
		}},
		Partitions: nothingHosted{},
		Remote:     remote,
	}
	now := base.Add(60 * time.Second)
	for range 2 {
		groups := c.Compute(now)
		if len(groups) != 1 || len(groups[0].Partitions) != 1 {
			t.Fatalf("groups %+v, want g with partition 0 only", groups)
		}
		p := groups[0].Partitions[0]
		// Record 4 was written at base+4 s: 56 s before now.
		if p.Lag != 6 || p.EndOffset != 10 || math.Abs(p.LagSeconds-56) > 1e-9 || groups[0].TotalLag != 6 ||
			p.StableEndOffset != 7 || p.StableLag != 3 || groups[0].TotalStableLag != 3 {
			t.Fatalf("partition 0: %+v", p)
		}
	}
	if remote.calls != 1 {
		t.Errorf("the record at the committed offset was read %d times, want once (cached)", remote.calls)
	}
}

// TestStableLagIsNeverNegative: a group committed inside an open
// transaction (past the LSO) has no stable lag, and its lag against the
// high watermark is unaffected.
func TestStableLagIsNeverNegative(t *testing.T) {
	pl := PartitionLag{CurrentOffset: 8}
	pl.setEnds(10, 5)
	if pl.Lag != 2 || pl.StableLag != 0 || pl.StableEndOffset != 5 {
		t.Fatalf("%+v, want lag 2, stable lag 0", pl)
	}
	pl.setEnds(10, 10)
	if pl.StableLag != 2 {
		t.Fatalf("%+v, want stable lag 2 with no transaction open", pl)
	}
}
