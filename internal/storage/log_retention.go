package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// This file holds everything that removes data from a log: retention,
// DeleteRecords and follower truncation.

// EnforceRetention deletes whole segments per Kafka's deleteOldSegments:
// with cleanup.policy=delete, segments whose largest timestamp is older than
// retention.ms and, oldest first, segments while the log exceeds
// retention.bytes; with any policy, segments wholly below the log start
// offset. A segment is only deleted if everything in it is below the high
// watermark, and the active segment only if it is non-empty — it is rolled
// first so the log always has an active segment.
func (l *Log) EnforceRetention() (deletedSegments int, err error) {
	cfg := l.cfg.Load()
	nowMs := l.now().UnixMilli()
	total := 0
	// A tiered log keeps local.retention.* locally, and only of what the
	// remote tier already holds (log_tiered.go); its total retention over
	// both tiers is internal/tiered's.
	retentionMs, retentionBytes := localRetention(cfg)
	tiered := func(next *segment) bool {
		return next != nil && l.tierGate(cfg, next.baseOffset)
	}
	if cfg.Delete && retentionMs >= 0 {
		n, err := l.deleteOldSegments("retention.ms", func(s *segment, next *segment, _ int64) bool {
			return nowMs-s.largestTimestamp() > retentionMs && (!cfg.RemoteStorageEnable || tiered(next))
		})
		total += n
		if err != nil {
			return total, err
		}
	}
	if cfg.Delete && retentionBytes >= 0 {
		diff := l.Size() - retentionBytes
		if diff > 0 {
			n, err := l.deleteOldSegments("retention.bytes", func(s *segment, next *segment, _ int64) bool {
				if cfg.RemoteStorageEnable && !tiered(next) {
					return false
				}
				if sz := s.size.Load(); diff-sz >= 0 {
					diff -= sz
					return true
				}
				return false
			})
			total += n
			if err != nil {
				return total, err
			}
		}
	}
	n, err := l.deleteOldSegments("log start offset", func(_ *segment, next *segment, lso int64) bool {
		return next != nil && next.baseOffset <= lso
	})
	return total + n, err
}

// deleteOldSegments deletes the longest prefix of segments satisfying
// shouldDelete (Kafka's deletableSegments), then moves the log start offset
// up to the new first segment.
func (l *Log) deleteOldSegments(reason string, shouldDelete func(s, next *segment, logStartOffset int64) bool) (int, error) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return 0, errLogClosed
	}
	segs := l.segmentList()
	hw := l.highWatermark.Load()
	lso := l.logStartOffset.Load()
	n := 0
	for i, s := range segs {
		var next *segment
		upper := l.logEndOffset.Load()
		if i+1 < len(segs) {
			next = segs[i+1]
			upper = next.baseOffset
		}
		lastAndEmpty := next == nil && s.size.Load() == 0
		if lastAndEmpty || hw < upper || !shouldDelete(s, next, lso) {
			break
		}
		n++
	}
	if n == 0 {
		l.mu.Unlock()
		return 0, nil
	}
	if n == len(segs) {
		// Everything is deletable: roll so an (empty) active segment remains.
		if _, err := l.rollLocked(l.logEndOffset.Load()); err != nil {
			l.mu.Unlock()
			return 0, err
		}
		segs = l.segmentList()
	}
	doomed := segs[:n]
	newStart := max(lso, segs[n].baseOffset)
	err := l.removeSegmentsLocked(doomed, segs[n:], newStart)
	producers := l.mu.producers
	l.mu.Unlock()
	err = errors.Join(err, l.epochs.flush(), producers.removeSnapshotsBelow(newStart))
	for _, s := range doomed {
		l.logger.Info("deleted segment", "dir", l.dir, "base_offset", s.baseOffset, "reason", reason)
	}
	l.notifyLogStartOffset(newStart > lso)
	return n, err
}

// removeSegmentsLocked publishes remaining as the segment list, schedules
// the doomed segments' files for deletion and applies the new log start
// offset to the epoch cache and producer state in memory. mu must be held;
// the caller writes the epoch checkpoint and removes the producer-state
// snapshots below the new start once it has released mu.
func (l *Log) removeSegmentsLocked(doomed, remaining []*segment, newStart int64) error {
	l.setSegmentsLocked(append([]*segment(nil), remaining...))
	if newStart > l.logStartOffset.Load() {
		l.logStartOffset.Store(newStart)
	}
	var firstErr error
	for _, s := range doomed {
		if err := s.renameForDeletion(); err != nil && firstErr == nil {
			firstErr = err
		}
		l.scheduleDelete(s)
	}
	// Both callers only remove data below the high watermark, so the new
	// start never passes it.
	l.assertOffsetsLocked("removing segments")
	// The epoch cache changes in memory; the caller writes its file once
	// mu is released (KAFKA-15046: no fsync under the append lock).
	l.epochs.truncateFromStart(l.logStartOffset.Load())
	// Producer state too; its snapshot files below the new start are
	// removed by the caller after mu (listing the dir is I/O).
	l.mu.producers.forgetBefore(l.logStartOffset.Load())
	return firstErr
}

func (l *Log) notifyLogStartOffset(changed bool) {
	if changed && l.onLogStartOffsetIncremented != nil {
		l.onLogStartOffsetIncremented()
	}
}

// DeleteRecordsBefore implements DeleteRecords: the log start offset moves
// to offset (which must not exceed the high watermark) and segments wholly
// below it are deleted. Moving backwards is a no-op. In a tiered log an
// offset below the local log start moves only the start over both tiers
// (EarliestOffset); the remote segments below it are the remote log
// manager's to delete. It returns the new start over both tiers.
func (l *Log) DeleteRecordsBefore(offset int64) (newLogStart int64, err error) {
	l.flushMu.Lock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		l.flushMu.Unlock()
		return 0, errLogClosed
	}
	hw := l.highWatermark.Load()
	if offset > hw {
		l.mu.Unlock()
		l.flushMu.Unlock()
		return l.logStartOffset.Load(), fmt.Errorf("%w: cannot delete records before %d, beyond the high watermark %d", kerr.OffsetOutOfRange, offset, hw)
	}
	lso := l.logStartOffset.Load()
	if offset <= lso {
		moved := l.cfg.Load().RemoteStorageEnable && offset > l.EarliestOffset()
		if moved {
			l.deletedBefore.Store(offset)
		}
		start := l.EarliestOffset()
		l.mu.Unlock()
		l.flushMu.Unlock()
		l.notifyLogStartOffset(moved)
		return start, nil
	}
	segs := l.segmentList()
	n := 0
	for n+1 < len(segs) && segs[n+1].baseOffset <= offset {
		n++
	}
	l.logStartOffset.Store(offset)
	l.deletedBefore.Store(offset)
	err = l.removeSegmentsLocked(segs[:n], segs[n:], offset)
	producers := l.mu.producers
	l.mu.Unlock()
	err = errors.Join(err, l.epochs.flush(), producers.removeSnapshotsBelow(offset))
	l.flushMu.Unlock()
	l.notifyLogStartOffset(true)
	return offset, err
}

// Truncate removes every batch at or after toOffset (a follower diverging
// from the leader, KIP-101). Kafka cuts at batch boundaries, so when toOffset
// falls inside a batch the whole batch goes. The leader epoch cache, producer
// state, recovery point and high watermark follow the new log end offset.
//
// The leader-epoch checkpoint is written after the append lock is released,
// still under flushMu, so no flush moves the recovery point past a
// truncation the file does not show yet.
func (l *Log) Truncate(toOffset int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.truncateUnderAppendLock(toOffset); err != nil {
		return err
	}
	return l.epochs.flush()
}

func (l *Log) truncateUnderAppendLock(toOffset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return errLogClosed
	}
	if toOffset < 0 {
		return fmt.Errorf("%w: cannot truncate to negative offset %d", kerr.OffsetOutOfRange, toOffset)
	}
	if toOffset >= l.logEndOffset.Load() {
		// No data to cut, but an epoch may start at the log end: this
		// replica led it and wrote nothing before another was elected.
		// Kept, it would be the last fetched epoch of every fetch, and
		// the leader would answer each with the same diverging epoch.
		l.epochs.truncateFromEnd(l.logEndOffset.Load())
		return nil
	}
	segs := l.segmentList()
	if toOffset < segs[0].baseOffset || toOffset < l.logStartOffset.Load() {
		return l.truncateFullyAndStartAtLocked(toOffset)
	}
	keep := len(segs)
	for keep > 1 && segs[keep-1].baseOffset >= toOffset {
		keep--
	}
	doomed := segs[keep:]
	remaining := append([]*segment(nil), segs[:keep]...)
	l.setSegmentsLocked(remaining)
	for _, s := range doomed {
		if err := s.renameForDeletion(); err != nil {
			return err
		}
		l.scheduleDelete(s)
	}
	active := remaining[len(remaining)-1]
	if _, err := active.truncateTo(toOffset); err != nil {
		return fmt.Errorf("%w: truncating %s: %v", kerr.KafkaStorageError, l.dir, err)
	}
	return l.afterTruncationLocked(active.nextOffset)
}

// afterTruncationLocked brings offsets, epochs and producer state in line
// with a log that now ends at leo.
func (l *Log) afterTruncationLocked(leo int64) error {
	l.logEndOffset.Store(leo)
	// Cutting a whole batch can end the log below a log start offset that
	// pointed inside it; Kafka then lowers the start (min(target, start)).
	if l.logStartOffset.Load() > leo {
		l.logStartOffset.Store(leo)
	}
	if l.recoveryPoint.Load() > leo {
		l.recoveryPoint.Store(leo)
	}
	// Truncation lowers the high watermark with the log end, as Kafka's
	// truncateTo: only a follower truncates, and its high watermark is
	// bounded by its own log.
	if l.highWatermark.Load() > leo {
		l.highWatermark.Store(leo)
	}
	l.assertOffsetsLocked("truncation")
	l.epochs.truncateFromEnd(leo)
	if err := l.mu.producers.deleteSnapshotsAbove(leo); err != nil {
		return err
	}
	return l.rebuildProducerStateLocked()
}

// truncateFullyAndStartAtLocked deletes every segment and starts an empty
// log at offset (Kafka's truncateFullyAndStartAt).
func (l *Log) truncateFullyAndStartAtLocked(offset int64) error {
	segs := l.segmentList()
	for _, s := range segs {
		if err := s.renameForDeletion(); err != nil {
			return err
		}
	}
	seg, err := createSegment(l.fs, l.dir, offset, l.cfg.Load(), l.now())
	if err != nil {
		return err
	}
	l.setSegmentsLocked([]*segment{seg})
	for _, s := range segs {
		l.scheduleDelete(s)
	}
	l.logStartOffset.Store(offset)
	l.logEndOffset.Store(offset)
	l.recoveryPoint.Store(offset)
	l.highWatermark.Store(offset)
	l.epochs.clear()
	if err := l.mu.producers.clearSnapshots(); err != nil {
		return err
	}
	l.mu.producers.setProducers(make(map[int64]*producerEntry))
	l.resetTxnBoundsLocked()
	return nil
}
