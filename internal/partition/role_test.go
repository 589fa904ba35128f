package partition

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/testing/poll"
)

// TestNoLeaderAppendLandsAfterBecomingFollower races appends against a
// leadership moving away: once the role change is applied, no append that
// checked "leader" before it may still write (Kafka's leaderIsrUpdateLock;
// the fetcher of the new follower owns the log end from then on).
func TestNoLeaderAppendLandsAfterBecomingFollower(t *testing.T) {
	f := newLeaderFixture(t, []int32{1})
	p := f.p()
	recs := make([]record.Record, 64)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: make([]byte, 512)}
	}
	for round := range 30 {
		one, two := int32(1), int32(2)
		f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &one})
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					now := time.Now().UnixMilli()
					b, err := record.BuildBatch(record.Header{LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := p.Append(b, 1, 9); err != nil {
						if !errors.Is(err, kerr.NotLeaderForPartition) {
							t.Error(err)
						}
						return
					}
				}
			}()
		}
		// Let the appenders get going, then move the leadership.
		start := p.LogEndOffset()
		poll.True(t, 10*time.Second, "the appenders to write", func() bool { return p.LogEndOffset() >= start+256 })
		f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
		leo := p.LogEndOffset()
		wg.Wait()
		if got := p.LogEndOffset(); got != leo {
			t.Fatalf("round %d: log end offset %d when the leadership moved, %d after: an append landed on a follower", round, leo, got)
		}
	}
}
