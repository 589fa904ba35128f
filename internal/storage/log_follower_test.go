package storage

import (
	"errors"
	"testing"

	"github.com/vltava/vltava/internal/record"
)

// leaderLog builds a leader's log from (epoch, records) steps and returns it.
func leaderLog(t *testing.T, steps []epochBatch) *Log {
	t.Helper()
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	for i, s := range steps {
		mustAppend(t, l, simple(s.records, 30, int64(1000+i)), s.epoch)
	}
	return l
}

type epochBatch struct {
	epoch   int32
	records int
}

// fetchAll reads the leader's log from offset to its end, as a replica fetch
// would (no high-watermark bound).
func fetchAll(t *testing.T, l *Log, from int64) []byte {
	t.Helper()
	res, err := l.Read(from, 1<<20, l.LogEndOffset(), true)
	if err != nil {
		t.Fatalf("leader Read(%d): %v", from, err)
	}
	return res.Data
}

func TestAppendAsFollowerKeepsOffsetsEpochsAndProducerState(t *testing.T) {
	leader := leaderLog(t, []epochBatch{{1, 3}, {1, 2}, {4, 5}})
	idem := testBatch{records: 2, producerID: 42, producerEpoch: 0, baseSeq: 0}.build()
	mustAppend(t, leader, idem, 4)

	follower := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	data := fetchAll(t, leader, 0)
	// A fetch response may end inside a batch: the tail is ignored.
	info, err := follower.AppendAsFollower(append(data, data[:20]...))
	if err != nil {
		t.Fatalf("AppendAsFollower: %v", err)
	}
	if info.BaseOffset != 0 || info.LastOffset != 11 || follower.LogEndOffset() != 12 {
		t.Fatalf("appended [%d,%d], LEO %d; want [0,11], LEO 12", info.BaseOffset, info.LastOffset, follower.LogEndOffset())
	}
	got := readAll(t, follower, 0)
	want := readAll(t, leader, 0)
	if len(got) != len(want) {
		t.Fatalf("follower has %d batches, leader %d", len(got), len(want))
	}
	for i := range got {
		if got[i].BaseOffset != want[i].BaseOffset || got[i].PartitionLeaderEpoch != want[i].PartitionLeaderEpoch {
			t.Fatalf("batch %d: follower (base %d, epoch %d), leader (base %d, epoch %d)", i,
				got[i].BaseOffset, got[i].PartitionLeaderEpoch, want[i].BaseOffset, want[i].PartitionLeaderEpoch)
		}
	}
	for _, e := range []int32{1, 4} {
		fe, fo := follower.EndOffsetForEpoch(e)
		le, lo := leader.EndOffsetForEpoch(e)
		if fe != le || fo != lo {
			t.Errorf("EndOffsetForEpoch(%d): follower (%d,%d), leader (%d,%d)", e, fe, fo, le, lo)
		}
	}
	// Refetching what is already there appends nothing.
	info, err = follower.AppendAsFollower(data)
	if err != nil || info.BaseOffset != -1 || follower.LogEndOffset() != 12 {
		t.Fatalf("refetch: info %+v err %v LEO %d", info, err, follower.LogEndOffset())
	}
	// The replicated producer state dedupes a retry on the follower once
	// it leads.
	dup := testBatch{records: 2, producerID: 42, producerEpoch: 0, baseSeq: 0}.build()
	res, err := follower.Append(dup, 5)
	if err != nil || !res.Duplicate || res.BaseOffset != 10 {
		t.Fatalf("retry on new leader: %+v, %v; want duplicate of offset 10", res, err)
	}
}

func TestAppendAsFollowerRejectsCorruptAndStraddlingBatches(t *testing.T) {
	follower := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	leader := leaderLog(t, []epochBatch{{0, 4}})
	good := fetchAll(t, leader, 0)

	bad := append([]byte(nil), good...)
	bad[len(bad)-1] ^= 0xff
	if _, err := follower.AppendAsFollower(bad); err == nil {
		t.Fatal("corrupt batch was appended")
	}
	if follower.LogEndOffset() != 0 {
		t.Fatalf("LEO %d after rejected append", follower.LogEndOffset())
	}

	// Follower has offsets [0,1]; the leader's batch covers [0,3].
	mine := simple(2, 30, 5)
	record.SetBaseOffset(mine, 0)
	if _, err := follower.AppendAsFollower(mine); err != nil {
		t.Fatal(err)
	}
	if _, err := follower.AppendAsFollower(good); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("straddling batch: err %v, want ErrUnexpectedAppendOffset", err)
	}
}

// TestDivergentFollowerTruncatesToCommonPoint is KIP-101/KIP-279: a follower
// that appended batches in an epoch the new leader never saw cuts its log
// at the end offset the leader gives for that epoch, then catches up.
func TestDivergentFollowerTruncatesToCommonPoint(t *testing.T) {
	tests := []struct {
		name           string
		common         []epochBatch // both logs
		followerTail   []epochBatch // only the follower (stale leader)
		leaderTail     []epochBatch // only the leader
		wantTruncateTo int64
	}{
		{
			name:           "unreplicated tail of an old epoch",
			common:         []epochBatch{{1, 5}},
			followerTail:   []epochBatch{{1, 3}},
			leaderTail:     []epochBatch{{2, 4}},
			wantTruncateTo: 5,
		},
		{
			name:           "follower wrote in an epoch the leader never had",
			common:         []epochBatch{{1, 2}, {2, 2}},
			followerTail:   []epochBatch{{3, 4}},
			leaderTail:     []epochBatch{{4, 1}},
			wantTruncateTo: 4,
		},
		{
			name:           "follower is a prefix: nothing to cut",
			common:         []epochBatch{{1, 3}},
			leaderTail:     []epochBatch{{1, 2}, {2, 2}},
			wantTruncateTo: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leader := leaderLog(t, append(append([]epochBatch(nil), tc.common...), tc.leaderTail...))
			follower := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
			n := 0
			for _, s := range tc.common {
				n += s.records
			}
			if _, err := follower.AppendAsFollower(fetchAll(t, leader, 0)[:batchesBytes(t, leader, n)]); err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.followerTail {
				mustAppend(t, follower, simple(s.records, 30, int64(5000+i)), s.epoch)
			}
			// The leader answers the follower's last epoch with where that
			// epoch (or the largest below it) ends in its own log.
			leaderEpoch, leaderEnd := leader.EndOffsetForEpoch(follower.LatestEpoch())
			localEpoch, localEnd := follower.EndOffsetForEpoch(leaderEpoch)
			to := min(leaderEnd, follower.LogEndOffset())
			if localEpoch == leaderEpoch {
				to = min(to, localEnd)
			}
			if to != tc.wantTruncateTo {
				t.Fatalf("truncation point %d, want %d", to, tc.wantTruncateTo)
			}
			if err := follower.Truncate(to); err != nil {
				t.Fatal(err)
			}
			if _, err := follower.AppendAsFollower(fetchAll(t, leader, follower.LogEndOffset())); err != nil {
				t.Fatal(err)
			}
			got, want := readAll(t, follower, 0), readAll(t, leader, 0)
			if len(got) != len(want) {
				t.Fatalf("after catching up follower has %d batches, leader %d", len(got), len(want))
			}
			for i := range got {
				if got[i].BaseOffset != want[i].BaseOffset || got[i].PartitionLeaderEpoch != want[i].PartitionLeaderEpoch || got[i].CRC != want[i].CRC {
					t.Fatalf("batch %d differs: follower %+v leader %+v", i, got[i], want[i])
				}
			}
			if follower.LatestEpoch() != leader.LatestEpoch() {
				t.Fatalf("latest epoch follower %d leader %d", follower.LatestEpoch(), leader.LatestEpoch())
			}
		})
	}
}

// batchesBytes is the size of the leader's first batches covering n records.
func batchesBytes(t *testing.T, l *Log, n int) int {
	t.Helper()
	size, count := 0, 0
	for _, h := range readAll(t, l, 0) {
		if count >= n {
			break
		}
		size += h.TotalSize()
		count += int(h.NumRecords)
	}
	return size
}

func TestAssignLeaderEpochAndTruncateFullyAndStartAt(t *testing.T) {
	l := leaderLog(t, []epochBatch{{1, 3}})
	if err := l.AssignLeaderEpoch(3); err != nil {
		t.Fatal(err)
	}
	if got := l.EpochStartOffset(3); got != 3 {
		t.Fatalf("epoch 3 starts at %d, want the LEO 3", got)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != 3 {
		t.Fatalf("EndOffsetForEpoch(1) = (%d,%d), want (1,3)", e, end)
	}
	if err := l.AssignLeaderEpoch(2); err != nil || l.LatestEpoch() != 3 {
		t.Fatalf("an older epoch changed the cache: latest %d err %v", l.LatestEpoch(), err)
	}
	if err := l.TruncateFullyAndStartAt(100); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 100 || l.LogEndOffset() != 100 || l.HighWatermark() != 100 || l.LatestEpoch() != -1 {
		t.Fatalf("after restart: start %d end %d hw %d epoch %d", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.LatestEpoch())
	}
	b := simple(2, 10, 1)
	record.SetBaseOffset(b, 100)
	record.SetPartitionLeaderEpoch(b, 7)
	if _, err := l.AppendAsFollower(b); err != nil || l.LogEndOffset() != 102 || l.EpochStartOffset(7) != 100 {
		t.Fatalf("append after restart: err %v LEO %d epoch 7 start %d", err, l.LogEndOffset(), l.EpochStartOffset(7))
	}
}

// TestTruncateAtLogEndDropsEmptyEpoch: a replica that led an epoch without
// writing (its start is the log end) and then follows again keeps that
// epoch out of its last fetched epoch once told to truncate at its log
// end, as Kafka's truncateTo does; otherwise every fetch would name it and
// the leader answer each with the same diverging epoch.
func TestTruncateAtLogEndDropsEmptyEpoch(t *testing.T) {
	l := leaderLog(t, []epochBatch{{1, 3}})
	if err := l.AssignLeaderEpoch(2); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 2 {
		t.Fatalf("latest epoch %d, want 2", l.LatestEpoch())
	}
	if err := l.Truncate(l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	if l.LatestEpoch() != 1 || l.LogEndOffset() != 3 {
		t.Fatalf("after truncating at the log end: latest epoch %d, LEO %d; want 1 and 3", l.LatestEpoch(), l.LogEndOffset())
	}
}
