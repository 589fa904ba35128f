package group

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/metadata"
	"github.com/vltava/vltava/internal/record"
)

// fakeClock is a settable clock for commit timestamps and expiry.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func commit(t *testing.T, c *Coordinator, group string, offsets map[TopicPartition]int64) {
	t.Helper()
	req := CommitRequest{GroupID: group, Generation: -1}
	for tp, o := range offsets {
		req.Offsets = append(req.Offsets, CommitOffset{TopicPartition: tp, Offset: o, LeaderEpoch: 3, Metadata: strp("md"), CommitTimestamp: -1})
	}
	err, errs := c.CommitOffsets(context.Background(), req)
	if err != nil || errors.Join(errs...) != nil {
		t.Fatalf("commit: %v %v", err, errs)
	}
}

func fetchOne(t *testing.T, c *Coordinator, group string, tp TopicPartition) int64 {
	t.Helper()
	got, err := c.FetchOffsets(group, []TopicPartition{tp})
	if err != nil {
		t.Fatal(err)
	}
	return got[0].Offset
}

// Offsets and group metadata are replayed from the log by a coordinator
// that takes the partitions over; tombstones delete.
func TestStateReloadsFromLog(t *testing.T) {
	log := newMemLog()
	c := newTestCoordinator(t, testConfig(), log, nil)
	a, b := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	commit(t, c, "offsets-only", map[TopicPartition]int64{a: 10, b: 20})
	commit(t, c, "offsets-only", map[TopicPartition]int64{a: 11})
	if err, errs := c.DeleteOffsets("offsets-only", []TopicPartition{b}); err != nil || errs[0] != nil {
		t.Fatalf("delete offsets: %v %v", err, errs)
	}
	commit(t, c, "deleted", map[TopicPartition]int64{a: 1})
	if err := c.DeleteGroup("deleted"); err != nil {
		t.Fatal(err)
	}
	member, gen := joinAlone(t, c, "consumers")
	err, errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "consumers", Generation: gen, MemberID: member,
		Offsets: []CommitOffset{{TopicPartition: a, Offset: 5, LeaderEpoch: -1, CommitTimestamp: -1}}})
	if err != nil || errs[0] != nil {
		t.Fatalf("member commit: %v %v", err, errs)
	}
	c.Close()

	c2 := newTestCoordinator(t, testConfig(), log, nil)
	got, _ := c2.FetchOffsets("offsets-only", nil)
	if len(got) != 1 || got[0].TopicPartition != a || got[0].Offset != 11 || got[0].LeaderEpoch != 3 || got[0].Metadata != "md" {
		t.Fatalf("reloaded offsets-only: %+v, want only t-0 at 11", got)
	}
	if got, _ := c2.FetchOffsets("deleted", nil); len(got) != 0 {
		t.Fatalf("deleted group's offsets came back: %+v", got)
	}
	d, _ := c2.DescribeGroup("consumers")
	if d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != member || string(d.Members[0].Assignment) != "all" {
		t.Fatalf("reloaded consumers group: %+v", d)
	}
	if o := fetchOne(t, c2, "consumers", a); o != 5 {
		t.Fatalf("reloaded member commit %d, want 5", o)
	}
	wantErr(t, "heartbeat to the reloaded member", c2.Heartbeat("consumers", member, nil, gen), nil)
}

// A failed append is not acknowledged and not visible; a batch too large
// for the log is INVALID_COMMIT_OFFSET_SIZE.
func TestCommitVisibleOnlyAfterAppend(t *testing.T) {
	log := newMemLog()
	c := newTestCoordinator(t, testConfig(), log, nil)
	tp := TopicPartition{"t", 0}
	commit(t, c, "g", map[TopicPartition]int64{tp: 1})
	for _, tc := range []struct {
		appendErr error
		want      *kerr.Error
	}{
		{kerr.MessageTooLarge, kerr.InvalidCommitOffsetSize},
		{kerr.NotLeaderForPartition, kerr.NotCoordinator},
		{kerr.NotEnoughReplicas, kerr.CoordinatorNotAvailable},
	} {
		log.FailNext(tc.appendErr)
		_, errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "g", Generation: -1,
			Offsets: []CommitOffset{{TopicPartition: tp, Offset: 99, LeaderEpoch: -1, CommitTimestamp: -1}}})
		wantErr(t, tc.appendErr.Error(), errs[0], tc.want)
		if o := fetchOne(t, c, "g", tp); o != 1 {
			t.Fatalf("after a failed append the offset is %d, want 1", o)
		}
	}
}

// KIP-211: an empty group's offsets expire offsets.retention.minutes after
// it became empty, and the group goes with them; an explicit retention
// (OffsetCommit v2-v4) expires on its own clock.
func TestOffsetExpiry(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	log := newMemLog()
	cfg := testConfig()
	c := newTestCoordinator(t, cfg, log, clock.Now)
	tp := TopicPartition{"t", 0}

	member, gen := joinAlone(t, c, "consumers")
	c.CommitOffsets(context.Background(), CommitRequest{GroupID: "consumers", Generation: gen, MemberID: member,
		Offsets: []CommitOffset{{TopicPartition: tp, Offset: 7, LeaderEpoch: -1, CommitTimestamp: -1}}})
	_, errs := c.CommitOffsets(context.Background(), CommitRequest{GroupID: "explicit", Generation: -1, Retention: time.Minute, RetentionSet: true,
		Offsets: []CommitOffset{{TopicPartition: tp, Offset: 1, LeaderEpoch: -1, CommitTimestamp: -1}}})
	wantErr(t, "explicit-retention commit", errs[0], nil)

	clock.Advance(2 * cfg.OffsetsRetention)
	c.ExpireOffsets()
	if o := fetchOne(t, c, "consumers", tp); o != 7 {
		t.Fatalf("a group with a member lost its offset: %d", o)
	}
	if o := fetchOne(t, c, "explicit", tp); o != -1 {
		t.Fatalf("explicitly retained offset survived its expiry: %d", o)
	}

	c.LeaveGroup("consumers", []LeaveMember{{MemberID: member}})
	waitFor(t, func() bool { d, _ := c.DescribeGroup("consumers"); return d.State == "Empty" })
	clock.Advance(cfg.OffsetsRetention - time.Second)
	c.ExpireOffsets()
	if o := fetchOne(t, c, "consumers", tp); o != 7 {
		t.Fatalf("offset expired before the retention passed since the group became empty: %d", o)
	}
	clock.Advance(time.Second)
	c.ExpireOffsets()
	if o := fetchOne(t, c, "consumers", tp); o != -1 {
		t.Fatalf("offset still there after the retention: %d", o)
	}
	if d, _ := c.DescribeGroup("consumers"); d.State != "Dead" {
		t.Fatalf("expired empty group is %s, want gone (Dead)", d.State)
	}
	// The expiry is durable: a reload does not bring them back.
	c.Close()
	c2 := newTestCoordinator(t, cfg, log, clock.Now)
	if gs, _ := c2.ListGroups(nil, nil); len(gs) != 0 {
		t.Fatalf("groups after reload: %+v", gs)
	}
}

// OffsetDelete refuses topics the group consumes.
func TestDeleteOffsetsOfSubscribedTopic(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	r := joinReq("g", "")
	// A ConsumerMemberMetadata v0 subscribing to topic "t".
	r.Protocols = []Protocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 0}}}
	j := c.JoinGroup(context.Background(), r)
	c.SyncGroup(context.Background(), SyncRequest{GroupID: "g", MemberID: j.MemberID, Generation: j.Generation})
	err, errs := c.DeleteOffsets("g", []TopicPartition{{"t", 0}, {"u", 0}})
	if err != nil || !errors.Is(errs[0], kerr.GroupSubscribedToTopic) || errs[1] != nil {
		t.Fatalf("delete offsets: %v %v", err, errs)
	}
	wantErr(t, "unknown group", func() error { err, _ := c.DeleteOffsets("nope", nil); return err }(), kerr.GroupIDNotFound)
}

// ListGroups filters by state and type, case-insensitively.
func TestListGroupsFilters(t *testing.T) {
	c := newTestCoordinator(t, testConfig(), newMemLog(), nil)
	joinAlone(t, c, "stable")
	commit(t, c, "empty", map[TopicPartition]int64{{"t", 0}: 1})
	for _, tc := range []struct {
		states, types []string
		want          []string
	}{
		{nil, nil, []string{"empty", "stable"}},
		{[]string{"stable"}, nil, []string{"stable"}},
		{[]string{"Empty", "Dead"}, nil, []string{"empty"}},
		{nil, []string{"CLASSIC"}, []string{"empty", "stable"}},
		{nil, []string{"consumer"}, nil},
	} {
		gs, err := c.ListGroups(tc.states, tc.types)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, g := range gs {
			ids = append(ids, g.GroupID)
		}
		if len(ids) != len(tc.want) || (len(ids) > 0 && (ids[0] != tc.want[0] || ids[len(ids)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("ListGroups(%v, %v) = %v, want %v", tc.states, tc.types, ids, tc.want)
		}
	}
}

// offsetsImage is a metadata image whose __consumer_offsets partitions are
// all led by node 1 at the given leader epoch.
func offsetsImage(t *testing.T, partitions int32, epoch int32) *metadata.Image {
	t.Helper()
	id := metadata.Uuid{1, 2, 3}
	recs := []metadata.Record{&metadata.TopicRecord{Name: metadata.ConsumerOffsetsTopic, TopicID: id}}
	for p := int32(0); p < partitions; p++ {
		recs = append(recs, &metadata.PartitionRecord{TopicID: id, Partition: p, Replicas: []int32{1}, ISR: []int32{1},
			Leader: 1, LeaderEpoch: epoch})
	}
	img, err := metadata.EmptyImage().Apply(int64(len(recs)-1), recs)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// A partition that stayed led here across images but whose leader epoch
// moved (another broker led it in between, unseen) is loaded again, so
// what the other leader wrote is not lost.
func TestLeaderEpochChangeReloadsPartition(t *testing.T) {
	log := newMemLog()
	cfg := testConfig()
	c := NewCoordinator(Options{Config: cfg, Log: log})
	t.Cleanup(c.Close)
	c.ApplyImage(offsetsImage(t, cfg.NumPartitions, 0))
	waitFor(t, func() bool { _, err := c.ListGroups(nil, nil); return err == nil })
	tp := TopicPartition{"t", 0}
	commit(t, c, "g", map[TopicPartition]int64{tp: 1})

	// Meanwhile another leader committed to the same partition.
	other := newTestCoordinator(t, cfg, log, nil)
	commit(t, other, "g", map[TopicPartition]int64{tp: 7})
	other.Close()

	c.ApplyImage(offsetsImage(t, cfg.NumPartitions, 2))
	waitFor(t, func() bool {
		got, err := c.FetchOffsets("g", []TopicPartition{tp})
		return err == nil && got[0].Offset == 7
	})
}

// offsets.topic.compression.codec: commits are written compressed with it
// and load back.
func TestCommitsUseOffsetsTopicCompressionCodec(t *testing.T) {
	log := newMemLog()
	cfg := testConfig()
	cfg.CommitCodec = record.CodecGzip
	c := newTestCoordinator(t, cfg, log, nil)
	tp := TopicPartition{"t", 0}
	commit(t, c, "gz", map[TopicPartition]int64{tp: 42})
	c.Close()
	var batches int
	for _, b := range log.All() {
		batches++
		if h, err := record.ParseHeader(b); err != nil || h.Codec() != record.CodecGzip {
			t.Errorf("batch codec %v (err %v), want gzip", h.Codec(), err)
		}
	}
	if batches == 0 {
		t.Fatal("nothing appended")
	}
	c2 := newTestCoordinator(t, testConfig(), log, nil)
	if o := fetchOne(t, c2, "gz", tp); o != 42 {
		t.Fatalf("reloaded gzip commit %d, want 42", o)
	}
}
