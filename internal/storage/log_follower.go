package storage

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/vltava/vltava/internal/record"
)

// This file holds the replica side of the log: appending batches fetched
// from the leader as they are (Kafka's UnifiedLog.appendAsFollower), opening
// a new leader epoch when this replica becomes leader, and restarting the
// log at the leader's log start offset after OFFSET_OUT_OF_RANGE. Truncation
// itself is Log.Truncate (log_retention.go).

// ErrUnexpectedAppendOffset is returned by AppendAsFollower when a fetched
// batch overlaps the log end offset without starting at it (Kafka's
// UnexpectedAppendOffsetException): the follower's log and the leader's
// disagree about batch boundaries, which only truncation can repair.
var ErrUnexpectedAppendOffset = errors.New("fetched batch straddles the log end offset")

// AppendAsFollower appends record batches fetched from the partition leader,
// keeping their offsets and partition leader epochs (the leader assigned
// them). records may end with a partial batch, as a fetch response may; it
// is ignored, and the next fetch starts at the new log end offset. Batches
// wholly below the log end offset (a refetch) are skipped. Each batch's CRC
// is verified, as Kafka does for replica appends. The leader-epoch cache
// learns every epoch that starts in the appended batches and producer state
// is updated from their headers, so a follower that becomes leader dedupes
// idempotent retries exactly as the old leader did.
//
// It returns the first and last offsets appended (BaseOffset -1 when
// nothing was).
func (l *Log) AppendAsFollower(records []byte) (AppendInfo, error) {
	info, flush, err := l.AppendAsFollowerUnflushed(records)
	if err != nil || !flush {
		return info, err
	}
	return info, l.flushForPolicy()
}

// AppendAsFollowerUnflushed is AppendAsFollower without the flush.messages
// fsync, which needsFlush asks of the caller (see AppendUnflushed).
func (l *Log) AppendAsFollowerUnflushed(records []byte) (info AppendInfo, needsFlush bool, err error) {
	info = AppendInfo{BaseOffset: -1, LastOffset: -1, LogAppendTime: -1}
	cfg := l.cfg.Load()

	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return info, false, errLogClosed
	}
	var appendErr error
	it := record.NewBatches(records)
	for it.Next() {
		batch := it.Batch()
		h, err := parseStoredHeader(batch)
		if err != nil {
			appendErr = err
			break
		}
		if err := verifyBatchCRC(batch); err != nil {
			appendErr = err
			break
		}
		leo := l.logEndOffset.Load()
		last := h.LastOffset()
		if last < leo {
			continue
		}
		if h.BaseOffset < leo {
			appendErr = fmt.Errorf("%w: %w: batch [%d, %d] at log end offset %d of %s",
				kerr.UnknownServerError, ErrUnexpectedAppendOffset, h.BaseOffset, last, leo, l.dir)
			break
		}
		size := int64(len(batch))
		seg := l.activeSegment()
		if seg.shouldRoll(cfg, size, h.MaxTimestamp, last, l.now()) {
			if seg, err = l.rollLocked(h.BaseOffset); err != nil {
				appendErr = fmt.Errorf("%w: rolling segment: %v", kerr.KafkaStorageError, err)
				break
			}
		}
		if err := seg.append(batch, &h, cfg.IndexIntervalBytes); err != nil {
			appendErr = fmt.Errorf("%w: appending to %s: %w", kerr.KafkaStorageError, l.dir, err)
			break
		}
		txnErr := l.applyBatchLocked(seg, &h, batch)
		l.assertAppendOffset(l.logEndOffset.Load(), last+1)
		l.logEndOffset.Store(last + 1)
		if h.PartitionLeaderEpoch >= 0 && h.PartitionLeaderEpoch > l.epochs.latestEpoch() {
			if err := l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
				l.logger.Error("writing leader epoch checkpoint", "dir", l.dir, "err", err)
			}
		}
		if info.BaseOffset < 0 {
			info.BaseOffset = h.BaseOffset
		}
		info.LastOffset = last
		if txnErr != nil {
			appendErr = txnErr
			break
		}
	}
	if appendErr == nil {
		appendErr = it.Err()
	}
	unflushed := l.logEndOffset.Load() - l.recoveryPoint.Load()
	l.assertOffsetsLocked("append as follower")
	l.mu.Unlock()
	info.LogStartOffset = l.logStartOffset.Load()

	if appendErr != nil {
		return info, false, appendErr
	}
	return info, info.BaseOffset >= 0 && unflushed >= cfg.FlushMessages, nil
}

// AssignLeaderEpoch records that leader epoch epoch starts at the current
// log end offset, as Kafka's Partition.makeLeader does before accepting
// appends: OffsetForLeaderEpoch and diverging-epoch checks then see the new
// epoch even before its first batch. Older or equal epochs change nothing.
func (l *Log) AssignLeaderEpoch(epoch int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return errLogClosed
	}
	if epoch < 0 || epoch <= l.epochs.latestEpoch() {
		return nil
	}
	return l.epochs.assign(epoch, l.logEndOffset.Load())
}

// TruncateFullyAndStartAt empties the log and restarts it at offset (Kafka's
// truncateFullyAndStartAt): a follower whose fetch offset fell below the
// leader's log start offset can only start over from there.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("%w: cannot restart the log at negative offset %d", kerr.OffsetOutOfRange, offset)
	}
	l.flushMu.Lock()
	l.mu.Lock()
	err := errLogClosed
	if !l.mu.closed {
		err = l.truncateFullyAndStartAtLocked(offset)
	}
	l.mu.Unlock()
	restarted := err == nil
	if restarted {
		// Written once the append lock is released (KAFKA-15046).
		err = l.epochs.flush()
	}
	l.flushMu.Unlock()
	// The Manager checkpoints the new log start offset promptly; its
	// callback takes its own locks, so it runs after ours are released.
	l.notifyLogStartOffset(restarted)
	return err
}

// EpochStartOffset is the first offset of leader epoch epoch in this log, or
// -1 if the log has no entry for it. The leader uses it to refuse ISR
// membership to a follower that has not yet reached the current epoch
// (Kafka's "follower has caught up to the leader's epoch start").
func (l *Log) EpochStartOffset(epoch int32) int64 {
	for _, e := range l.epochs.snapshot() {
		if e.Epoch == epoch {
			return e.StartOffset
		}
	}
	return -1
}
