package storage

import (
	"os"
	"testing"
)

func TestTieredLocalRetentionDeletesOnlyWhatTheRemoteTierHolds(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 5)
	defer l.Close()
	segs := l.segmentList()
	l.SetHighWatermark(l.LogEndOffset())

	cfg.RemoteStorageEnable = true
	cfg.LocalRetentionBytes = 0 // keep nothing locally that the remote tier holds
	cfg.RetentionBytes = -1
	l.UpdateConfig(cfg)

	// Nothing copied yet: nothing may go.
	if n, err := l.EnforceRetention(); err != nil || n != 0 {
		t.Fatalf("deleted %d (%v) before any copy", n, err)
	}
	cands := l.TierCandidates(-1, l.HighWatermark())
	if len(cands) != len(segs)-1 {
		t.Fatalf("%d candidates, want every rolled segment (%d)", len(cands), len(segs)-1)
	}
	for i, c := range cands {
		if c.BaseOffset != segs[i].baseOffset || c.NextOffset != segs[i+1].baseOffset {
			t.Fatalf("candidate %d = [%d, %d), want [%d, %d)", i, c.BaseOffset, c.NextOffset, segs[i].baseOffset, segs[i+1].baseOffset)
		}
		if _, err := os.Stat(c.LogPath); err != nil {
			t.Fatalf("candidate %d: %v", i, err)
		}
		if len(c.LeaderEpochs) != 1 || c.LeaderEpochs[0].StartOffset != c.BaseOffset {
			t.Fatalf("candidate %d epochs %+v", i, c.LeaderEpochs)
		}
	}
	// Candidates stop below upTo: only segments wholly under it.
	if got := l.TierCandidates(-1, segs[2].baseOffset); len(got) != 2 {
		t.Fatalf("%d candidates below segment 2, want 2", len(got))
	}

	// Two segments copied: exactly those two go, and the remote tier's start
	// stays the earliest offset.
	l.SetRemoteState(0, segs[2].baseOffset-1)
	n, err := l.EnforceRetention()
	if err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want the 2 copied segments", n, err)
	}
	if l.LogStartOffset() != segs[2].baseOffset || l.EarliestOffset() != 0 {
		t.Fatalf("local start %d earliest %d", l.LogStartOffset(), l.EarliestOffset())
	}
	if got := l.TierCandidates(l.RemoteCopiedUpTo(), l.HighWatermark()); len(got) == 0 || got[0].BaseOffset != segs[2].baseOffset {
		t.Fatalf("next candidates %+v", got)
	}

	// An untiered log ignores the remote state.
	cfg.RemoteStorageEnable = false
	cfg.RetentionBytes = 0
	l.UpdateConfig(cfg)
	if n, err := l.EnforceRetention(); err != nil || n == 0 {
		t.Fatalf("untiered retention deleted %d (%v)", n, err)
	}
}

func TestTieredDeleteRecordsInTheRemoteTier(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	l := fillSegments(t, cfg, clock, 5)
	segs := l.segmentList()
	l.SetHighWatermark(l.LogEndOffset())
	cfg.RemoteStorageEnable = true
	cfg.LocalRetentionBytes = 0
	cfg.RetentionBytes = -1
	l.UpdateConfig(cfg)
	l.SetRemoteState(0, segs[2].baseOffset-1)
	if n, err := l.EnforceRetention(); err != nil || n != 2 {
		t.Fatalf("deleted %d (%v), want the 2 copied segments", n, err)
	}
	local := l.LogStartOffset()

	// An offset only the remote tier holds moves the start over both tiers,
	// not the local one.
	cut := segs[1].baseOffset + 1
	if got, err := l.DeleteRecordsBefore(cut); err != nil || got != cut {
		t.Fatalf("DeleteRecordsBefore(%d) = %d, %v", cut, got, err)
	}
	if l.EarliestOffset() != cut || l.LogStartOffset() != local {
		t.Fatalf("earliest %d local start %d, want %d and %d", l.EarliestOffset(), l.LogStartOffset(), cut, local)
	}
	// Backwards is a no-op answering the current start; the remote tier
	// still reporting its older segments does not lower it.
	if got, _ := l.DeleteRecordsBefore(1); got != cut {
		t.Fatalf("moving backwards answered %d", got)
	}
	l.SetRemoteState(0, segs[2].baseOffset-1)
	if l.EarliestOffset() != cut {
		t.Fatalf("earliest %d after the remote state, want %d", l.EarliestOffset(), cut)
	}

	// The checkpoint (EarliestOffset) brings it back.
	dir := l.dir
	l.Close()
	l = openTestLog(t, dir, cfg, OpenOptions{CleanShutdown: true, LogStartOffset: cut, Now: clock.now})
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	l.SetRemoteState(0, segs[2].baseOffset-1)
	if l.EarliestOffset() != cut || l.LogStartOffset() != local {
		t.Fatalf("after reopening: earliest %d local start %d, want %d and %d", l.EarliestOffset(), l.LogStartOffset(), cut, local)
	}
	// Past the local start, both move.
	if got, err := l.DeleteRecordsBefore(local + 1); err != nil || got != local+1 || l.EarliestOffset() != local+1 || l.LogStartOffset() != local+1 {
		t.Fatalf("DeleteRecordsBefore(%d) = %d, %v; earliest %d local %d", local+1, got, err, l.EarliestOffset(), l.LogStartOffset())
	}
}

func TestTieredLogKeepsTheSnapshotsOfUncopiedSegments(t *testing.T) {
	clock := &fakeClock{ms: 0}
	cfg := testConfig()
	cfg.SegmentBytes = 1024
	cfg.RemoteStorageEnable = true
	cfg.LocalRetentionBytes = 0
	cfg.RetentionBytes = -1
	l := fillSegments(t, cfg, clock, 8)
	defer l.Close()
	l.SetHighWatermark(l.LogEndOffset())
	cands := l.TierCandidates(-1, l.HighWatermark())
	if len(cands) != 7 {
		t.Fatalf("%d candidates, want 7", len(cands))
	}
	for i, c := range cands {
		if c.ProducerSnapshotPath == "" {
			t.Fatalf("candidate %d [%d, %d) lost its producer snapshot before being copied", i, c.BaseOffset, c.NextOffset)
		}
	}
	// Once copied, the old ones are pruned to the newest few again.
	l.SetRemoteState(0, cands[5].NextOffset-1)
	for n := l.NumSegments(); l.NumSegments() == n; {
		mustAppend(t, l, simple(1, 100, 0), 0)
	}
	if got := l.TierCandidates(-1, l.HighWatermark()); got[0].ProducerSnapshotPath != "" {
		t.Fatalf("the snapshot of a copied segment at %d was kept", got[0].NextOffset)
	}
}
