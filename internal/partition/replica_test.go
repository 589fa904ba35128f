package partition

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/config"
	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage"
	"github.com/vltava/vltava/internal/testing/poll"
)

// recordingController is a ControllerClient that records proposals and
// answers with err.
type recordingController struct {
	mu      sync.Mutex
	err     error
	changes chan ISRChange
}

func (c *recordingController) AlterPartition(_ context.Context, ch ISRChange) error {
	c.changes <- ch
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// leaderFixture is node 1 leading "t-0" with replicas [1 2 3], fed images
// directly, with a settable clock.
type leaderFixture struct {
	t       *testing.T
	m       *Manager
	ctl     *recordingController
	img     *metadata.Image
	topicID metadata.Uuid
	clock   time.Time
	clockMu sync.Mutex
}

func newLeaderFixture(t *testing.T, isr []int32) *leaderFixture {
	t.Helper()
	dir := t.TempDir()
	cfg, _, err := config.ParseBroker(map[string]string{"log.dirs": dir, "node.id": "1", "replica.lag.time.max.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.OpenManager(storage.ManagerConfig{Dirs: []string{dir}, Logger: testLogger(), CleanerDisabled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	f := &leaderFixture{t: t, ctl: &recordingController{changes: make(chan ISRChange, 16)}, topicID: metadata.NewUuid(), clock: time.UnixMilli(1_000_000)}
	f.m = NewManager(1, cfg, store, testLogger())
	f.m.setClock(f.now)
	f.m.SetControllerClient(f.ctl)
	f.img = metadata.EmptyImage()
	f.commit(&metadata.TopicRecord{Name: "t", TopicID: f.topicID},
		&metadata.PartitionRecord{TopicID: f.topicID, Partition: 0, Replicas: []int32{1, 2, 3}, ISR: isr, Leader: 1})
	return f
}

func (f *leaderFixture) now() time.Time {
	f.clockMu.Lock()
	defer f.clockMu.Unlock()
	return f.clock
}

func (f *leaderFixture) advance(d time.Duration) {
	f.clockMu.Lock()
	f.clock = f.clock.Add(d)
	f.clockMu.Unlock()
}

func (f *leaderFixture) commit(recs ...metadata.Record) {
	f.t.Helper()
	img, err := f.img.Apply(f.img.Offset()+1, recs)
	if err != nil {
		f.t.Fatal(err)
	}
	f.img = img
	if err := f.m.Apply(img); err != nil {
		f.t.Fatal(err)
	}
}

func (f *leaderFixture) p() *Partition { return f.m.Get("t", 0) }

func (f *leaderFixture) append(n int) {
	f.t.Helper()
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	now := time.Now().UnixMilli()
	b, err := record.BuildBatch(record.Header{LastOffsetDelta: int32(n - 1), FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, record.CodecNone)
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.p().Append(b, 1, 9); err != nil {
		f.t.Fatal(err)
	}
}

func (f *leaderFixture) fetch(replica int32, offset int64) {
	f.t.Helper()
	if err := f.p().UpdateFollowerFetch(replica, offset); err != nil {
		f.t.Fatalf("fetch by %d at %d: %v", replica, offset, err)
	}
}

func (f *leaderFixture) nextChange() ISRChange {
	f.t.Helper()
	select {
	case c := <-f.ctl.changes:
		return c
	case <-time.After(5 * time.Second):
		f.t.Fatal("no AlterPartition was sent")
		return ISRChange{}
	}
}

func (f *leaderFixture) noChange() {
	f.t.Helper()
	select {
	case c := <-f.ctl.changes:
		f.t.Fatalf("unexpected AlterPartition %+v", c)
	default:
	}
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestHighWatermarkIsTheSmallestLogEndOffsetInTheISR(t *testing.T) {
	type fetch struct {
		replica int32
		offset  int64
		wantHW  int64
	}
	tests := []struct {
		name    string
		isr     []int32
		fetches []fetch
	}{
		{
			name: "every ISR member bounds it; unknown followers hold it at 0",
			isr:  []int32{1, 2, 3},
			fetches: []fetch{
				{2, 5, 0}, {3, 7, 5}, {2, 10, 7}, {3, 10, 10},
			},
		},
		{
			name:    "a replica outside the ISR that is not caught up does not count",
			isr:     []int32{1, 2},
			fetches: []fetch{{2, 10, 10}},
		},
		{
			name:    "it never moves backwards",
			isr:     []int32{1, 2, 3},
			fetches: []fetch{{2, 8, 0}, {3, 8, 8}, {2, 4, 8}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLeaderFixture(t, tc.isr)
			f.append(10)
			if hw := f.p().HighWatermark(); hw != 0 && len(tc.isr) > 1 {
				t.Fatalf("high watermark %d before any follower fetched", hw)
			}
			for _, ft := range tc.fetches {
				f.fetch(ft.replica, ft.offset)
				if hw := f.p().HighWatermark(); hw != ft.wantHW {
					t.Fatalf("after replica %d fetched at %d: high watermark %d, want %d", ft.replica, ft.offset, hw, ft.wantHW)
				}
			}
		})
	}
}

func TestFetchFromANonReplicaOrOnAFollowerFails(t *testing.T) {
	f := newLeaderFixture(t, []int32{1, 2, 3})
	if err := f.p().UpdateFollowerFetch(9, 0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("fetch by non-replica: %v", err)
	}
	two := int32(2)
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
	if err := f.p().UpdateFollowerFetch(3, 0); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("follower fetch on a non-leader: %v", err)
	}
}

func TestISRShrinksAfterLagTimeAndExpandsWhenCaughtUp(t *testing.T) {
	shrinks0, expands0 := metrics.ISRChanges()
	f := newLeaderFixture(t, []int32{1, 2, 3})
	f.append(5)
	f.fetch(2, 5)
	f.fetch(3, 2)
	f.m.MaybeShrinkISRs()
	f.noChange() // within replica.lag.time.max.ms

	f.advance(1500 * time.Millisecond)
	f.fetch(2, 5) // 2 stays caught up; 3 has not fetched since
	f.m.MaybeShrinkISRs()
	c := f.nextChange()
	if !slices.Equal(c.NewISR, []int32{1, 2}) || c.LeaderEpoch != 0 || c.PartitionEpoch != 0 {
		t.Fatalf("shrink proposal %+v, want ISR [1 2] at epochs 0/0", c)
	}
	f.m.MaybeShrinkISRs()
	f.noChange() // pending: no second proposal

	if s, _ := metrics.ISRChanges(); s != shrinks0 {
		t.Fatal("a shrink counted while only proposed")
	}
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, ISR: c.NewISR})
	if hw := f.p().HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d once the lagging replica left the ISR, want 5", hw)
	}
	if s, e := metrics.ISRChanges(); s != shrinks0+1 || e != expands0 {
		t.Fatalf("after the shrink was applied: %d shrinks, %d expands counted, want 1 and 0", s-shrinks0, e-expands0)
	}
	// Catching up to the high watermark brings it back.
	f.fetch(3, 4)
	f.noChange()
	f.fetch(3, 5)
	c = f.nextChange()
	if !slices.Equal(c.NewISR, []int32{1, 2, 3}) || c.PartitionEpoch != 1 {
		t.Fatalf("expand proposal %+v, want ISR [1 2 3] at partition epoch 1", c)
	}
	if _, e := metrics.ISRChanges(); e != expands0 {
		t.Fatal("an expansion counted while only proposed")
	}
	defer func() {
		f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, ISR: c.NewISR})
		if s, e := metrics.ISRChanges(); s != shrinks0+1 || e != expands0+1 {
			t.Fatalf("after the expansion was applied: %d shrinks, %d expands counted, want 1 and 1", s-shrinks0, e-expands0)
		}
	}()
	// While the expansion is pending, the joining replica bounds the high
	// watermark (maximal ISR).
	f.append(3)
	f.fetch(2, 8)
	if hw := f.p().HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with an expansion pending, want 5 (replica 3 at 5)", hw)
	}
}

func TestRejectedISRChangeIsProposedAgain(t *testing.T) {
	f := newLeaderFixture(t, []int32{1, 2})
	f.ctl.mu.Lock()
	f.ctl.err = kerr.InvalidUpdateVersion
	f.ctl.mu.Unlock()
	f.append(1)
	f.fetch(2, 1)
	f.fetch(3, 1)
	if c := f.nextChange(); !slices.Equal(c.NewISR, []int32{1, 2, 3}) {
		t.Fatalf("proposal %+v", c)
	}
	poll.True(t, 5*time.Second, "the rejected proposal to be retried", func() bool {
		f.fetch(3, 1)
		select {
		case c := <-f.ctl.changes:
			if !slices.Equal(c.NewISR, []int32{1, 2, 3}) {
				t.Fatalf("second proposal %+v", c)
			}
			return true
		default:
			return false
		}
	})
}

func TestAwaitReplication(t *testing.T) {
	t.Run("woken when the ISR catches up", func(t *testing.T) {
		f := newLeaderFixture(t, []int32{1, 2})
		f.append(4)
		done := make(chan error, 1)
		go func() { done <- f.p().AwaitReplication(context.Background(), 4) }()
		select {
		case err := <-done:
			t.Fatalf("returned %v before the follower fetched", err)
		case <-time.After(20 * time.Millisecond):
		}
		f.fetch(2, 4)
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not woken by the high watermark")
		}
	})
	t.Run("times out", func(t *testing.T) {
		f := newLeaderFixture(t, []int32{1, 2})
		f.append(1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		if err := f.p().AwaitReplication(ctx, 1); !errors.Is(err, kerr.RequestTimedOut) {
			t.Fatalf("got %v, want REQUEST_TIMED_OUT", err)
		}
	})
	t.Run("leadership lost", func(t *testing.T) {
		f := newLeaderFixture(t, []int32{1, 2})
		f.append(1)
		done := make(chan error, 1)
		go func() { done <- f.p().AwaitReplication(context.Background(), 1) }()
		two := int32(2)
		f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
		select {
		case err := <-done:
			if !errors.Is(err, kerr.NotLeaderForPartition) {
				t.Fatalf("got %v, want NOT_LEADER_OR_FOLLOWER", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("not woken by the leadership change")
		}
	})
	t.Run("committed but the ISR shrank below min.insync.replicas", func(t *testing.T) {
		f := newLeaderFixture(t, []int32{1, 2})
		two := "2"
		f.commit(&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceTopic, ResourceName: "t", Name: "min.insync.replicas", Value: &two})
		f.append(1)
		f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, ISR: []int32{1}})
		if err := f.p().AwaitReplication(context.Background(), 1); !errors.Is(err, kerr.NotEnoughReplicasAfterAppend) {
			t.Fatalf("got %v, want NOT_ENOUGH_REPLICAS_AFTER_APPEND", err)
		}
	})
}

func TestBecomingLeaderRecordsTheEpochAtTheLogEnd(t *testing.T) {
	f := newLeaderFixture(t, []int32{1, 2, 3})
	f.append(3)
	two, one := int32(2), int32(1)
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &one})
	p := f.p()
	if p.LeaderEpoch() != 2 || p.Log().EpochStartOffset(2) != 3 {
		t.Fatalf("leader epoch %d starting at %d, want epoch 2 at the LEO 3", p.LeaderEpoch(), p.Log().EpochStartOffset(2))
	}
	// A follower that last fetched epoch 0 up to offset 5 diverged at 3.
	if e, end, diverged := p.DivergingEpoch(0, 5); !diverged || e != 0 || end != 3 {
		t.Fatalf("DivergingEpoch(0, 5) = (%d, %d, %v), want (0, 3, true)", e, end, diverged)
	}
	if _, _, diverged := p.DivergingEpoch(0, 3); diverged {
		t.Fatal("a follower at the end of epoch 0 is not diverged")
	}
	if _, _, diverged := p.DivergingEpoch(2, 3); diverged {
		t.Fatal("a follower in the current epoch is not diverged")
	}
}

// A coordinator loads its partition of an internal topic up to the high
// watermark; right after a leader change the new leader's high watermark
// lags its log end by the records the old leader acknowledged last (it
// learns the old leader's high watermark only from a fetch answer the
// killed leader never sent). InternalLog.Bounds waits until the in-sync
// replicas have the whole log, so the load replays those records too.
func TestInternalLogBoundsCoverTheLogEndAfterALeaderChange(t *testing.T) {
	f := newLeaderFixture(t, []int32{1, 2, 3})
	f.append(3)
	f.fetch(2, 3)
	f.fetch(3, 3)
	// 3..4 are above the high watermark when node 1 loses the leadership
	// and gets it back: its log ends at 5, its high watermark is 3, as a
	// new leader's whose predecessor acknowledged 3..4 without telling it.
	f.append(2)
	two, one := int32(2), int32(1)
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &two})
	f.commit(&metadata.PartitionChangeRecord{TopicID: f.topicID, Partition: 0, Leader: &one})
	p := f.p()
	if hw, leo := p.HighWatermark(), p.LogEndOffset(); hw != 3 || leo != 5 {
		t.Fatalf("new leader at high watermark %d, log end %d; want 3 and 5", hw, leo)
	}
	il := InternalLog{NodeID: 1, Partitions: f.m, Topic: "t", Timeout: 10 * time.Second}
	type bounds struct {
		start, end int64
		err        error
	}
	done := make(chan bounds, 1)
	go func() {
		s, e, err := il.Bounds(0)
		done <- bounds{s, e, err}
	}()
	select {
	case b := <-done:
		t.Fatalf("Bounds returned %+v before the in-sync replicas had the log end", b)
	case <-time.After(50 * time.Millisecond):
	}
	f.fetch(2, 5)
	f.fetch(3, 5)
	select {
	case b := <-done:
		if b.err != nil || b.start != 0 || b.end != 5 {
			t.Fatalf("Bounds = %+v, want [0, 5)", b)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Bounds not woken by the high watermark")
	}

	// Timed out: the error the load retries on.
	f.append(1)
	il.Timeout = 30 * time.Millisecond
	if _, _, err := il.Bounds(0); !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("Bounds with a lagging ISR: %v, want REQUEST_TIMED_OUT", err)
	}
}
