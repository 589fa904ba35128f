package storage

import (
	"math"
	"os"
)

// This file is the log's side of tiered storage (KIP-405): which rolled
// segments may be copied to the remote tier, what has been copied (so local
// retention deletes only what the remote tier holds), and the log start
// offset of the remote tier. The copying itself is internal/tiered's.
//
// In a tiered log, LogStartOffset is the local log start offset (Kafka's
// localLogStartOffset); EarliestOffset is the log start offset of both
// tiers together (Kafka's logStartOffset).

// TierSegment is one rolled segment the remote tier may take: its offsets
// [BaseOffset, NextOffset), its files and the leader epochs it spans.
type TierSegment struct {
	BaseOffset, NextOffset int64
	MaxTimestamp           int64
	Size                   int64
	LogPath                string
	OffsetIndexPath        string // "" if the segment has none yet
	TimeIndexPath          string // "" if the segment has none yet
	TxnIndexPath           string // "" if the segment has none
	ProducerSnapshotPath   string // "" if none was taken at NextOffset
	// LeaderEpochs are the epochs of the segment, each with the offset it
	// starts at within the segment (the first is the epoch in effect at
	// BaseOffset), ascending.
	LeaderEpochs []EpochStart
}

// EpochStart says leader epoch Epoch starts at StartOffset.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// TierCandidates returns the rolled segments after the one ending at
// copiedUpTo (the last offset already in the remote tier, -1 for none)
// whose every offset is below upTo (the high watermark or the last stable
// offset, whichever is lower), oldest first. The active segment is never a
// candidate.
func (l *Log) TierCandidates(copiedUpTo, upTo int64) []TierSegment {
	segs := l.segmentList()
	epochs := l.epochs.snapshot()
	var out []TierSegment
	for i := 0; i+1 < len(segs); i++ {
		s, next := segs[i], segs[i+1].baseOffset
		// A segment straddling copiedUpTo (segments roll independently on
		// each replica, so a new leader's may) is copied whole: the remote
		// tier may hold an offset twice, never miss one.
		if next-1 <= copiedUpTo {
			continue
		}
		if next > upTo || s.size.Load() == 0 {
			break
		}
		ts := TierSegment{
			BaseOffset:   s.baseOffset,
			NextOffset:   next,
			MaxTimestamp: s.largestTimestamp(),
			Size:         s.size.Load(),
			LogPath:      segmentFileName(l.dir, s.baseOffset, logFileSuffix),
		}
		// Index files are made lazily: a small segment may have none.
		if p := segmentFileName(l.dir, s.baseOffset, indexFileSuffix); fileExists(p) {
			ts.OffsetIndexPath = p
		}
		if p := segmentFileName(l.dir, s.baseOffset, timeIndexFileSuffix); fileExists(p) {
			ts.TimeIndexPath = p
		}
		if p := segmentFileName(l.dir, s.baseOffset, txnIndexFileSuffix); fileExists(p) {
			ts.TxnIndexPath = p
		}
		if p := segmentFileName(l.dir, next, snapshotFileSuffix); fileExists(p) {
			ts.ProducerSnapshotPath = p
		}
		for j, e := range epochs {
			if e.StartOffset >= next {
				break
			}
			if j+1 < len(epochs) && epochs[j+1].StartOffset <= s.baseOffset {
				continue // a later epoch is already in effect at the base
			}
			ts.LeaderEpochs = append(ts.LeaderEpochs, EpochStart{Epoch: e.Epoch, StartOffset: max(e.StartOffset, s.baseOffset)})
		}
		out = append(out, ts)
	}
	return out
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// SetRemoteState records what the remote tier holds: its log start offset
// (-1 when it holds nothing) and the last offset copied (-1 for none). Local
// retention of a tiered log deletes only segments wholly at or below
// copiedUpTo.
func (l *Log) SetRemoteState(remoteStart, copiedUpTo int64) {
	l.remoteStart.Store(remoteStart)
	l.remoteCopiedUpTo.Store(copiedUpTo)
}

// RemoteCopiedUpTo is the last offset the remote tier holds, -1 for none.
func (l *Log) RemoteCopiedUpTo() int64 { return l.remoteCopiedUpTo.Load() }

// EarliestOffset is the log start offset over both tiers: the remote tier's
// start when it holds data from before the local log start (and the log is
// tiered: one whose tiering was turned off serves only what it has), but
// never below an offset DeleteRecords moved the start to.
func (l *Log) EarliestOffset() int64 {
	start := l.logStartOffset.Load()
	if rs := l.remoteStart.Load(); rs >= 0 && rs < start && l.cfg.Load().RemoteStorageEnable {
		start = rs
	}
	return max(start, l.deletedBefore.Load())
}

// tierGate reports whether a segment ending at upper (exclusive) may be
// deleted by local retention: always for an untiered log, and for a tiered
// one only once the remote tier holds it.
func (l *Log) tierGate(cfg *Config, upper int64) bool {
	return !cfg.RemoteStorageEnable || upper-1 <= l.remoteCopiedUpTo.Load()
}

// localRetention returns the time and size limits local retention applies:
// retention.ms and retention.bytes, or for a tiered log local.retention.ms
// and local.retention.bytes (-2 meaning the total's).
func localRetention(cfg *Config) (ms, bytes int64) {
	ms, bytes = cfg.RetentionMs, cfg.RetentionBytes
	if !cfg.RemoteStorageEnable {
		return ms, bytes
	}
	if cfg.LocalRetentionMs != -2 {
		ms = cfg.LocalRetentionMs
	}
	if cfg.LocalRetentionBytes != -2 {
		bytes = cfg.LocalRetentionBytes
	}
	return ms, bytes
}

// DecodeTxnIndex reads a .txnindex file's bytes (as the remote tier keeps
// them) of a segment ending before segmentEnd.
func DecodeTxnIndex(data []byte, segmentEnd int64) ([]AbortedTxn, error) {
	return decodeTxnIndex(data, segmentEnd)
}

// snapshotPruneBound is the highest offset whose producer snapshot may be
// pruned: any in an untiered log; in a tiered one only the snapshots of
// segments the remote tier holds, as each segment is copied with the
// snapshot at its end.
func (l *Log) snapshotPruneBound() int64 {
	if !l.cfg.Load().RemoteStorageEnable {
		return math.MaxInt64
	}
	return l.remoteCopiedUpTo.Load() + 1
}
