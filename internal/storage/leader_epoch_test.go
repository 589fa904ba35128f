package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vltava/vltava/internal/testing/poll"
)

func TestLeaderEpochCacheEndOffsetFor(t *testing.T) {
	c, err := loadLeaderEpochCache(filepath.Join(t.TempDir(), LeaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	if ep, off := c.endOffsetFor(0, 50); ep != -1 || off != -1 {
		t.Fatalf("empty cache: (%d, %d)", ep, off)
	}
	for _, e := range []epochEntry{{1, 10}, {3, 20}, {5, 40}} {
		if err := c.assign(e.Epoch, e.StartOffset); err != nil {
			t.Fatal(err)
		}
	}
	const leo = 55
	tests := []struct {
		req     int32
		wantEp  int32
		wantOff int64
	}{
		{-1, -1, -1},
		{0, 0, 10}, // older than anything known
		{1, 1, 20},
		{2, 1, 20}, // unknown epoch between: largest epoch below it
		{3, 3, 40},
		{4, 3, 40},
		{5, 5, leo}, // latest: log end offset
		{6, -1, -1}, // newer than anything known
	}
	for _, tc := range tests {
		if ep, off := c.endOffsetFor(tc.req, leo); ep != tc.wantEp || off != tc.wantOff {
			t.Errorf("endOffsetFor(%d) = (%d, %d), want (%d, %d)", tc.req, ep, off, tc.wantEp, tc.wantOff)
		}
	}
}

func TestLeaderEpochCacheTruncationAndFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), LeaderEpochCheckpointFile)
	c, _ := loadLeaderEpochCache(path)
	for _, e := range []epochEntry{{0, 0}, {2, 10}, {4, 30}, {6, 50}} {
		c.assign(e.Epoch, e.StartOffset)
	}
	c.assign(4, 35) // same latest epoch later: no change
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	c.truncateFromEnd(30)
	c.truncateFromStart(12)
	want := []epochEntry{{2, 12}}
	if got := c.snapshot(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("entries %+v, want %+v", got, want)
	}
	// Truncations change memory only (KAFKA-15046): the file is written
	// by flush, which the log calls once its append lock is released.
	if data, _ := os.ReadFile(path); string(data) != string(before) {
		t.Fatalf("checkpoint written by truncation: %q, was %q", data, before)
	}
	if err := c.flush(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if string(data) != "0\n1\n2 12\n" {
		t.Fatalf("checkpoint file %q", data)
	}
	re, err := loadLeaderEpochCache(path)
	if err != nil || len(re.snapshot()) != 1 || re.snapshot()[0] != want[0] {
		t.Fatalf("reloaded %+v %v", re.snapshot(), err)
	}
	// A smaller epoch than the latest drops the newer entries (Kafka keeps
	// the cache monotonic).
	c.assign(7, 60)
	c.assign(5, 55)
	if got := c.snapshot(); got[len(got)-1] != (epochEntry{5, 55}) || len(got) != 2 {
		t.Fatalf("after non-monotonic assign: %+v", got)
	}
}

func TestLogAssignsEpochsOnAppend(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, testConfig(), OpenOptions{})
	for _, ep := range []int32{0, 0, 2, 2, 2, 1, 5} { // 1 is stale: ignored
		mustAppend(t, l, simple(2, 10, 1), ep)
	}
	want := []epochEntry{{0, 0}, {2, 4}, {5, 12}}
	got := l.epochs.snapshot()
	if len(got) != len(want) {
		t.Fatalf("epochs %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("epochs %+v, want %+v", got, want)
		}
	}
	if ep, off := l.EndOffsetForEpoch(2); ep != 2 || off != 12 {
		t.Fatalf("EndOffsetForEpoch(2) = %d, %d", ep, off)
	}
	// A crash before the checkpoint was written: recovery restores epochs
	// from the batches themselves.
	crash(l)
	os.Remove(filepath.Join(dir, LeaderEpochCheckpointFile))
	l = openTestLog(t, dir, testConfig(), OpenOptions{})
	defer l.Close()
	if l.LatestEpoch() != 5 {
		t.Fatalf("latest epoch after recovery %d", l.LatestEpoch())
	}
	if ep, off := l.EndOffsetForEpoch(0); ep != 0 || off != 4 {
		t.Fatalf("EndOffsetForEpoch(0) after recovery = %d, %d", ep, off)
	}
}

// TestEpochCheckpointWriteDoesNotBlockAppends stalls a leader-epoch
// checkpoint write (as a slow fsync would) while DeleteRecords writes the
// checkpoint: appends, including one that starts a new epoch, go on
// meanwhile, since the checkpoint is written after the append lock is
// released and without the cache's entries lock (KAFKA-15046).
func TestEpochCheckpointWriteDoesNotBlockAppends(t *testing.T) {
	l := openTestLog(t, t.TempDir(), testConfig(), OpenOptions{})
	defer l.Close()
	for i := range 4 {
		mustAppend(t, l, simple(1, 10, int64(i)), int32(i))
	}
	l.SetHighWatermark(l.LogEndOffset())
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}

	l.epochs.fileMu.Lock() // a checkpoint write in progress
	deleted := make(chan error, 1)
	go func() {
		_, err := l.DeleteRecordsBefore(2)
		deleted <- err
	}()
	poll.True(t, 10*time.Second, "DeleteRecords to move the log start", func() bool { return l.LogStartOffset() == 2 })

	appended := make(chan error, 1)
	go func() {
		_, err := l.Append(simple(1, 10, 9), 7)
		appended <- err
	}()
	select {
	case err := <-appended:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an append waited on the epoch checkpoint write")
	}
	select {
	case err := <-deleted:
		t.Fatalf("DeleteRecords returned (%v) before its checkpoint was written", err)
	default:
	}
	l.epochs.fileMu.Unlock()
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(l.Dir(), LeaderEpochCheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	// Written by DeleteRecords after the append: the moved start and, as
	// the file is written from a copy taken then, the new epoch too.
	if !strings.HasPrefix(string(data), "0\n") || !strings.Contains(string(data), "2 2\n") {
		t.Fatalf("checkpoint after DeleteRecords: %q", data)
	}
}
