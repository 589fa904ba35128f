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
