package storage

import (
	"encoding/binary"
	"errors"
	"io"
)

// attrLogAppendTime marks a batch whose records all carry MaxTimestamp.
const attrLogAppendTime = 0x08

// OffsetForTimestamp serves ListOffsets by timestamp (KIP-79): the first
// offset at or after the log start offset whose record timestamp is >= ts,
// with that timestamp and the leader epoch of its batch. ok is false when no
// record qualifies.
//
// The segment is the first whose max timestamp is >= ts; inside it the time
// index gives a starting point and batches are scanned from there, as in
// Kafka's LogSegment.findOffsetByTimestamp. Inside an uncompressed batch the
// exact record is found; for compressed batches the answer is the batch's
// first offset (records are not decompressed here).
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, leaderEpoch int32, ok bool) {
	for attempt := 0; attempt < 3; attempt++ {
		offset, timestamp, leaderEpoch, ok, err := l.offsetForTimestampOnce(ts)
		if err == nil {
			return offset, timestamp, leaderEpoch, ok
		}
		l.logger.Debug("offset for timestamp lookup failed; retrying", "err", err)
	}
	return -1, -1, -1, false
}

func (l *Log) offsetForTimestampOnce(ts int64) (int64, int64, int32, bool, error) {
	lso := l.logStartOffset.Load()
	for _, s := range l.segmentList() {
		if maxTs, _ := s.maxTimestamp(); maxTs < ts {
			continue
		}
		_, tsOff := s.timeIndex.lookup(ts)
		_, pos := s.offsetIndex.lookup(max(tsOff, lso))
		size := s.size.Load()
		var found bool
		var off, recTs int64
		var epoch int32
		err := s.scanBatchesFrom(pos, size, func(h *batchHeader, batch func() ([]byte, error)) (bool, error) {
			if h.MaxTimestamp < ts || h.LastOffset() < lso {
				return true, nil
			}
			b, err := batch()
			if err != nil {
				return false, err
			}
			off, recTs, found = firstRecordAtOrAfter(b, h, ts, lso)
			epoch = h.PartitionLeaderEpoch
			return !found, nil
		})
		if err != nil {
			return 0, 0, 0, false, err
		}
		if found {
			return off, recTs, epoch, true, nil
		}
	}
	return -1, -1, -1, false, nil
}

// MaxTimestampOffset serves ListOffsets with MAX_TIMESTAMP (KIP-734): the
// offset of the first record with the largest timestamp, that timestamp and
// its batch's leader epoch; (-1, -1, -1) for an empty log.
func (l *Log) MaxTimestampOffset() (offset int64, timestamp int64, leaderEpoch int32) {
	var best *segment
	bestTs := int64(-1)
	for _, s := range l.segmentList() {
		if ts, _ := s.maxTimestamp(); ts > bestTs {
			best, bestTs = s, ts
		}
	}
	if best == nil {
		return -1, -1, -1
	}
	_, batchLast := best.maxTimestamp()
	pos, h, found, err := best.findBatch(batchLast, best.size.Load())
	if err != nil || !found {
		return -1, -1, -1
	}
	batch := make([]byte, h.TotalSize())
	if _, err := best.log.ReadAt(batch, pos); err != nil {
		return -1, -1, -1
	}
	off, ts, ok := firstRecordAtOrAfter(batch, &h, bestTs, h.BaseOffset)
	if !ok {
		return h.BaseOffset, bestTs, h.PartitionLeaderEpoch
	}
	return off, ts, h.PartitionLeaderEpoch
}

// scanBatchesFrom walks batches from pos below size, calling fn with each
// header and a loader for the whole batch, until fn returns false.
func (s *segment) scanBatchesFrom(pos, size int64, fn func(h *batchHeader, batch func() ([]byte, error)) (bool, error)) error {
	var hb [batchHeaderSize]byte
	for pos+batchHeaderSize <= size {
		h, err := s.readHeaderAt(pos, &hb)
		if err != nil {
			return err
		}
		at := pos
		more, err := fn(&h, func() ([]byte, error) {
			b := make([]byte, h.TotalSize())
			if _, err := s.log.ReadAt(b, at); err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return b, nil
		})
		if err != nil || !more {
			return err
		}
		pos += h.TotalSize()
	}
	return nil
}

// firstRecordAtOrAfter finds, inside one batch, the first record with
// timestamp >= ts and offset >= minOffset. Compressed batches are not
// decoded: the batch's first eligible offset and its max timestamp stand in.
func firstRecordAtOrAfter(batch []byte, h *batchHeader, ts, minOffset int64) (offset, timestamp int64, ok bool) {
	if h.MaxTimestamp < ts || h.LastOffset() < minOffset {
		return 0, 0, false
	}
	if h.compressed() {
		return max(h.BaseOffset, minOffset), h.MaxTimestamp, true
	}
	logAppend := h.Attributes&attrLogAppendTime != 0
	p := batch[batchHeaderSize:]
	for range h.NumRecords {
		length, n := binary.Varint(p)
		if n <= 0 || length < 0 || int64(len(p)-n) < length {
			break
		}
		rec := p[n : n+int(length)]
		p = p[n+int(length):]
		if len(rec) < 1 {
			break
		}
		tsDelta, n1 := binary.Varint(rec[1:])
		if n1 <= 0 {
			break
		}
		offDelta, n2 := binary.Varint(rec[1+n1:])
		if n2 <= 0 {
			break
		}
		recTs := h.FirstTimestamp + tsDelta
		if logAppend {
			recTs = h.MaxTimestamp
		}
		recOff := h.BaseOffset + offDelta
		if recTs >= ts && recOff >= minOffset {
			return recOff, recTs, true
		}
	}
	// Malformed records section (or a compacted-away tail): fall back to
	// the batch, which is known to reach ts.
	return max(h.BaseOffset, minOffset), h.MaxTimestamp, true
}
