package storage

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/vltava/vltava/internal/record"
)

// Timestamp lookups for ListOffsets. Both walk batch headers only and
// decode (decompressing if needed) just the candidate batches whose header
// proves they hold the answer, so the cost is one segment index lookup, a
// short header scan and normally a single batch decode.

// OffsetForTimestamp serves ListOffsets by timestamp (KIP-79): the first
// record at or after the log start offset whose timestamp is >= ts, with that
// timestamp and the leader epoch of its batch (-1 if the batch has none). ok
// is false when no record qualifies.
//
// As in Kafka's LogSegment.findOffsetByTimestamp, the first segment whose
// max timestamp reaches ts is searched from the position its time index
// gives for ts; the first batch whose MaxTimestamp is >= ts is decoded and
// its records compared one by one, so the exact record is found inside
// compressed batches too. Every record of a LogAppendTime batch carries the
// batch's MaxTimestamp. Batches below the log start offset are skipped, and
// if the log start offset cuts a candidate batch the search moves on to
// later batches and segments.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, leaderEpoch int32, ok bool) {
	for attempt := 0; ; attempt++ {
		res, found, err := l.offsetForTimestampOnce(ts)
		// A segment deleted by retention or truncation has closed files; a
		// retry sees the new segment list.
		if errors.Is(err, os.ErrClosed) && attempt < 3 {
			continue
		}
		if err != nil {
			l.logger.Warn("offset for timestamp lookup failed", "timestamp", ts, "err", err)
			return -1, -1, -1, false
		}
		if !found {
			return -1, -1, -1, false
		}
		return res.offset, res.timestamp, res.leaderEpoch, true
	}
}

// recordMatch is one record found by a timestamp lookup.
type recordMatch struct {
	offset, timestamp int64
	leaderEpoch       int32
}

func (l *Log) offsetForTimestampOnce(ts int64) (recordMatch, bool, error) {
	lso := l.logStartOffset.Load()
	for _, s := range l.segmentList() {
		if maxTs, _ := s.maxTimestamp(); maxTs < ts {
			continue
		}
		// The time index maps the largest indexed timestamp <= ts to the
		// batch that first reached it; every record before that batch is
		// older than ts, so the scan may start there.
		_, tsOff := s.timeIndex.lookup(ts)
		_, pos := s.offsetIndex.lookup(max(tsOff, lso))
		var match recordMatch
		var found bool
		err := s.scanBatchesFrom(pos, s.size.Load(), func(h *record.Header, load func() ([]byte, error)) (bool, error) {
			if h.MaxTimestamp < ts || h.LastOffset() < lso {
				return true, nil
			}
			batch, err := load()
			if err != nil {
				return false, err
			}
			match, found = l.findRecordInBatch(batch, h, func(off, recTs int64) bool {
				return recTs >= ts && off >= lso
			})
			return !found, nil
		})
		if err != nil {
			return recordMatch{}, false, err
		}
		if found {
			return match, true, nil
		}
	}
	return recordMatch{}, false, nil
}

// MaxTimestampOffset serves ListOffsets with MAX_TIMESTAMP (KIP-734): the
// offset of the first record carrying the largest timestamp in the log, that
// timestamp and its batch's leader epoch (-1 if none); (-1, -1, -1) when no
// record has a timestamp.
//
// Like Kafka's UnifiedLog.fetchOffsetByTimestamp, the segment with the
// largest max timestamp (the first, on ties) is searched for the first batch
// whose MaxTimestamp equals it, starting at the offset index entry for the
// batch the segment remembers; that one batch is decoded to find the record
// (for LogAppendTime batches, whose records all carry MaxTimestamp, this is
// the batch's first record).
func (l *Log) MaxTimestampOffset() (offset int64, timestamp int64, leaderEpoch int32) {
	for attempt := 0; ; attempt++ {
		res, found, err := l.maxTimestampOffsetOnce()
		if errors.Is(err, os.ErrClosed) && attempt < 3 {
			continue
		}
		if err != nil {
			l.logger.Warn("max timestamp lookup failed", "err", err)
			return -1, -1, -1
		}
		if !found {
			return -1, -1, -1
		}
		return res.offset, res.timestamp, res.leaderEpoch
	}
}

func (l *Log) maxTimestampOffsetOnce() (recordMatch, bool, error) {
	var best *segment
	bestTs := int64(-1)
	for _, s := range l.segmentList() {
		if ts, _ := s.maxTimestamp(); ts > bestTs {
			best, bestTs = s, ts
		}
	}
	if best == nil {
		return recordMatch{}, false, nil
	}
	_, batchLast := best.maxTimestamp()
	_, pos := best.offsetIndex.lookup(batchLast)
	var match recordMatch
	var found bool
	err := best.scanBatchesFrom(pos, best.size.Load(), func(h *record.Header, load func() ([]byte, error)) (bool, error) {
		if h.MaxTimestamp != bestTs {
			return true, nil
		}
		batch, err := load()
		if err != nil {
			return false, err
		}
		match, found = l.findRecordInBatch(batch, h, func(_, recTs int64) bool { return recTs == bestTs })
		return !found, nil
	})
	return match, found, err
}

// findRecordInBatch decodes one batch and returns its first record for
// which want(offset, timestamp) holds. Timestamps are FirstTimestamp plus the
// record's delta, or MaxTimestamp for every record of a LogAppendTime batch.
//
// A batch that fails to decode (it passed its CRC on the way in, so this
// means a codec or framing bug rather than disk corruption) is answered with
// its base offset and MaxTimestamp, which can only be at or before the exact
// record: a consumer that seeks there reads a few extra records rather than
// skipping any.
func (l *Log) findRecordInBatch(batch []byte, h *record.Header, want func(offset, timestamp int64) bool) (recordMatch, bool) {
	epoch := max(h.PartitionLeaderEpoch, -1)
	_, recs, err := record.DecodeRecords(batch)
	if err != nil {
		l.logger.Warn("cannot decode batch for timestamp lookup; answering with its base offset",
			"base_offset", h.BaseOffset, "err", err)
		if !want(h.BaseOffset, h.MaxTimestamp) {
			return recordMatch{}, false
		}
		return recordMatch{offset: h.BaseOffset, timestamp: h.MaxTimestamp, leaderEpoch: epoch}, true
	}
	logAppendTime := h.TimestampType() == record.LogAppendTime
	for i := range recs {
		ts := h.FirstTimestamp + recs[i].TimestampDelta
		if logAppendTime {
			ts = h.MaxTimestamp
		}
		off := h.BaseOffset + int64(recs[i].OffsetDelta)
		if want(off, ts) {
			return recordMatch{offset: off, timestamp: ts, leaderEpoch: epoch}, true
		}
	}
	return recordMatch{}, false
}

// scanBatchesFrom walks batches from pos below size, calling fn with each
// header and a loader for the whole batch, until fn returns false. Only the
// headers are read unless fn calls the loader.
func (s *segment) scanBatchesFrom(pos, size int64, fn func(h *record.Header, load func() ([]byte, error)) (bool, error)) error {
	var hb [record.BatchHeaderSize]byte
	for pos+record.BatchHeaderSize <= size {
		h, err := s.readHeaderAt(pos, &hb)
		if err != nil {
			return err
		}
		at, total := pos, int64(h.TotalSize())
		if at+total > size {
			return fmt.Errorf("batch at position %d runs past the segment end %d", at, size)
		}
		more, err := fn(&h, func() ([]byte, error) {
			b := make([]byte, total)
			if _, err := s.log.ReadAt(b, at); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return b, nil
		})
		if err != nil || !more {
			return err
		}
		pos += total
	}
	return nil
}

// EpochForOffset is the leader epoch of the batch containing offset, from
// the leader epoch cache: the epoch whose start offset is the largest one at
// or below offset (Kafka's LeaderEpochFileCache.epochForOffset), which is
// what ListOffsets reports for the earliest offset. It is -1 when the cache
// knows no epoch that early or offset lies outside [LogStartOffset,
// LogEndOffset].
func (l *Log) EpochForOffset(offset int64) int32 {
	if offset < l.logStartOffset.Load() || offset > l.logEndOffset.Load() {
		return -1
	}
	return l.epochs.epochForOffset(offset)
}
