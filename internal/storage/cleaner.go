package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
)

// This file is log compaction of one log (Kafka's Cleaner): find the
// cleanable range, build the key -> latest offset map over its dirty part,
// and rewrite the segments below the map's end keeping only each key's
// latest record. cleaner_swap.go writes and swaps the cleaned segments;
// cleaner_manager.go decides when a log is cleaned.
//
// Kafka semantics followed here:
//   - records keep their offsets; batches are rebuilt around the survivors
//     with their base offset, last offset delta, producer fields, leader
//     epoch, timestamps and codec unchanged (MemoryRecords.filterTo);
//   - a batch holding the last offset an active idempotent producer wrote
//     is kept even when all its records go, as an empty batch, so the
//     producer's sequence state survives a restart (BatchRetention.RETAIN_EMPTY);
//   - a tombstone (null value) that is its key's latest record is kept, and
//     the first clean that keeps it stamps its batch with a delete horizon
//     of now + delete.retention.ms (KIP-534: attribute bit 6, the horizon in
//     the base timestamp field); once the horizon has passed the tombstone
//     is dropped by the next clean;
//   - transactions as cleaner_txn.go describes: aborted data removed,
//     markers kept while their transaction has data, then for
//     delete.retention.ms;
//   - records without a key are dropped (they cannot be compacted);
//   - the active segment is never cleaned, nor anything at or above the high
//     watermark, nor segments younger than min.compaction.lag.ms.

// deleteHorizonFlag is the v2 batch attribute bit saying FirstTimestamp holds
// the KIP-534 delete horizon (record.Header.HasDeleteHorizon reads it).
const deleteHorizonFlag int16 = 0x40

// defaultDedupeBufferBytes is log.cleaner.dedupe.buffer.size's default.
const defaultDedupeBufferBytes = 128 << 20

// errCleaningAborted means the log changed under the cleaner (truncation,
// retention, deletion, shutdown); nothing was swapped in and the cleaned
// files were removed. The next pass starts over.
var errCleaningAborted = errors.New("log cleaning aborted")

// CleanerOptions tune one compaction pass.
type CleanerOptions struct {
	// DedupeBufferBytes bounds the key -> offset map
	// (log.cleaner.dedupe.buffer.size; 128 MiB when <= 0). When the dirty
	// section has more keys than fit, a pass cleans up to where the map
	// filled and the next pass continues from there.
	DedupeBufferBytes int64
	// LoadFactor is log.cleaner.io.buffer.load.factor: the fraction of the
	// map's slots used before it counts as full (0.9 when <= 0).
	LoadFactor float64

	// throttle limits the pass's reads and writes
	// (log.cleaner.io.max.bytes.per.second); nil for none.
	throttle *ioThrottle
	// stop, when closed, aborts the pass between batches (shutdown).
	stop <-chan struct{}
	// crashAfter, for tests, makes the pass return errInjectedCrash right
	// after the first group's files reach the given stage, leaving them
	// behind as a crash would.
	crashAfter cleanStage
}

// cleanStage names how far the cleaning of a segment group has come.
type cleanStage int

const (
	stageNone    cleanStage = iota
	stageCleaned            // .cleaned files written and synced
	stageSwap               // renamed to .swap
)

// errInjectedCrash is returned when CleanerOptions.crashAfter fires.
var errInjectedCrash = errors.New("injected crash during cleaning")

// CleanResult describes one compaction pass.
type CleanResult struct {
	FirstDirtyOffset int64 // where the dirty section started
	// EndOffset is the new cleaner checkpoint: every record below it has
	// been compacted against the map. Below FirstUncleanableOffset when the
	// dedupe buffer filled.
	EndOffset              int64
	FirstUncleanableOffset int64
	SegmentsCleaned        int
	GroupsSwapped          int
	BytesRead              int64
	BytesWritten           int64
	RecordsRead            int64
	RecordsRetained        int64
	// NextDeleteHorizonMs is the earliest delete horizon of a tombstone
	// still in the log after the pass, or -1: once it passes, the log is
	// worth cleaning again even if nothing new is dirty.
	NextDeleteHorizonMs int64
}

// cleanableRange is what LogCleanerManager.cleanableOffsets and
// calculateCleanableBytes compute for a log.
type cleanableRange struct {
	firstDirty, firstUncleanable int64
	cleanBytes, dirtyBytes       int64
	// needCompactionNow: the oldest dirty record is older than
	// max.compaction.lag.ms.
	needCompactionNow bool
}

// dirtyRatio is the share of the cleanable bytes that are dirty.
func (r cleanableRange) dirtyRatio() float64 {
	if r.cleanBytes+r.dirtyBytes == 0 {
		return 0
	}
	return float64(r.dirtyBytes) / float64(r.cleanBytes+r.dirtyBytes)
}

// cleanableRange computes the log's clean and dirty sections given the
// cleaner checkpoint: a checkpoint outside [log start, active segment] is
// reset to the log start (Kafka does the same after truncation or
// DeleteRecords). It takes no locks: segments, offsets and the active
// segment's base are read from their atomics.
func (l *Log) cleanableRange(nowMs, checkpoint int64) cleanableRange {
	cfg := l.cfg.Load()
	segs := l.segmentList()
	active := segs[len(segs)-1]
	lso := l.logStartOffset.Load()
	r := cleanableRange{firstDirty: checkpoint}
	if checkpoint < lso || checkpoint > active.baseOffset {
		r.firstDirty = lso
	}
	// Nothing at or above the last stable offset may be cleaned:
	// followers and consumers have not seen it, or its transaction is
	// undecided.
	r.firstUncleanable = min(active.baseOffset, l.LastStableOffset())
	nonActive := segs[:len(segs)-1]
	if cfg.MinCompactionLagMs > 0 {
		for i, s := range nonActive {
			if i+1 < len(segs) && segs[i+1].baseOffset <= r.firstDirty {
				continue
			}
			if s.largestTimestamp() > nowMs-cfg.MinCompactionLagMs {
				r.firstUncleanable = min(r.firstUncleanable, s.baseOffset)
				break
			}
		}
	}
	r.firstDirty = min(r.firstDirty, r.firstUncleanable)
	earliestDirtyTs := int64(math.MaxInt64)
	for i, s := range nonActive {
		end := segs[i+1].baseOffset
		switch {
		case end <= r.firstDirty:
			r.cleanBytes += s.size.Load()
		case s.baseOffset < r.firstUncleanable:
			r.dirtyBytes += s.size.Load()
		}
		// max.compaction.lag.ms looks at the first batch of every dirty
		// non-active segment (LogCleanerManager.maxCompactionDelay).
		if end > r.firstDirty && cfg.MaxCompactionLagMs < math.MaxInt64 && s.size.Load() > 0 {
			var buf [record.BatchHeaderSize]byte
			if h, err := s.readHeaderAt(0, &buf); err == nil && h.MaxTimestamp > 0 {
				earliestDirtyTs = min(earliestDirtyTs, h.MaxTimestamp)
			}
		}
	}
	if cfg.MaxCompactionLagMs < math.MaxInt64 && earliestDirtyTs < nowMs-cfg.MaxCompactionLagMs {
		r.needCompactionNow = true
	}
	return r
}

// Compact runs one compaction pass over the log (Kafka's Cleaner.clean),
// treating offsets below firstDirtyOffset (the cleaner checkpoint) as
// already clean. It cleans whatever is cleanable regardless of the dirty
// ratio; the Manager's cleaner decides when that is worthwhile. now is the
// time the delete horizons are measured against.
//
// The pass reads segments without the log's append lock; appends, reads and
// flushes proceed meanwhile. Each group of cleaned segments is swapped in
// under the lock only if the segments it replaces are still in the log;
// otherwise the pass stops with an error wrapping errCleaningAborted.
func (l *Log) Compact(now time.Time, firstDirtyOffset int64, opts CleanerOptions) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	nowMs := now.UnixMilli()
	cfg := l.cfg.Load()

	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return CleanResult{}, errLogClosed
	}
	// The offset of the last batch each producer wrote, so that batch is
	// never removed entirely (Kafka's lastRecordsOfActiveProducers).
	lastOfProducer := make(map[int64]int64, len(l.mu.producers.producers))
	for pid, e := range l.mu.producers.producers {
		if b, ok := e.lastBatch(); ok {
			lastOfProducer[pid] = b.lastOffset
		}
	}
	l.mu.Unlock()

	r := l.cleanableRange(nowMs, firstDirtyOffset)
	res := CleanResult{FirstDirtyOffset: r.firstDirty, EndOffset: r.firstDirty, FirstUncleanableOffset: r.firstUncleanable, NextDeleteHorizonMs: -1}
	all := l.segmentList()
	segs := all[:len(all)-1] // never the active segment

	bufBytes := opts.DedupeBufferBytes
	if bufBytes <= 0 {
		bufBytes = defaultDedupeBufferBytes
	}
	om := newOffsetMap(bufBytes, opts.LoadFactor)
	end, err := buildOffsetMap(segs, r.firstDirty, r.firstUncleanable, om, newTxnCleanState(l, r.firstDirty), opts.stop, opts.throttle)
	if err != nil {
		return res, err
	}
	res.EndOffset = end

	// Clean every segment from the log start that holds offsets below end.
	var toClean []*segment
	var ends []int64
	for i, s := range segs {
		if s.baseOffset >= end {
			break
		}
		toClean = append(toClean, s)
		ends = append(ends, all[i+1].baseOffset)
	}
	if len(toClean) == 0 {
		return res, nil
	}
	filter := &cleanFilter{
		nowMs:          nowMs,
		horizonMs:      nowMs + cfg.DeleteRetentionMs,
		endOffset:      end,
		offsets:        om,
		lastOfProducer: lastOfProducer,
		nextHorizon:    -1,
	}
	for _, group := range groupSegmentsBySize(toClean, ends, cfg.SegmentBytes, cfg.SegmentIndexBytes) {
		filter.txns = newTxnCleanState(l, group[0].baseOffset)
		if err := l.cleanGroup(group, filter, cfg, &res, opts); err != nil {
			return res, err
		}
		res.SegmentsCleaned += len(group)
		res.GroupsSwapped++
	}
	res.NextDeleteHorizonMs = filter.nextHorizon
	l.logger.Info("compacted log", "dir", l.dir, "first_dirty", res.FirstDirtyOffset, "end", res.EndOffset,
		"segments", res.SegmentsCleaned, "bytes_read", res.BytesRead, "bytes_written", res.BytesWritten,
		"records_read", res.RecordsRead, "records_retained", res.RecordsRetained)
	return res, nil
}

// buildOffsetMap records the latest offset of every key in [from, upper)
// (Kafka's buildOffsetMap). It stops at a batch boundary when the map
// cannot take the next batch's keys and returns the offset it reached: the
// end of the range the map is authoritative for.
func buildOffsetMap(segs []*segment, from, upper int64, om *offsetMap, txns *txnCleanState, stop <-chan struct{}, throttle *ioThrottle) (int64, error) {
	if from >= upper {
		return from, nil
	}
	for i, s := range segs {
		if s.baseOffset >= upper {
			break
		}
		if i+1 < len(segs) && segs[i+1].baseOffset <= from {
			continue
		}
		reached := int64(-1)
		err := forEachBatch(s, func(h *record.Header, batch []byte) (bool, error) {
			if h.LastOffset() < from {
				return true, nil
			}
			if h.BaseOffset >= upper {
				reached = upper
				return false, nil
			}
			if isStopped(stop) {
				return false, fmt.Errorf("%w: shutting down", errCleaningAborted)
			}
			throttle.maybeThrottle(len(batch), stop)
			if h.IsControl() {
				if h.ProducerID >= 0 {
					m, err := record.ParseMarker(batch)
					if err != nil {
						return false, err
					}
					txns.onMarker(h, m)
				}
				return true, nil
			}
			if txns.onData(h) {
				return true, nil // aborted: its keys stay out of the map
			}
			if !om.canTake(int(h.NumRecords)) {
				if om.size() == 0 {
					return false, fmt.Errorf("%w: log.cleaner.dedupe.buffer.size too small for a batch of %d records", kerr.KafkaStorageError, h.NumRecords)
				}
				reached = max(h.BaseOffset, from)
				return false, nil
			}
			_, recs, err := record.DecodeRecords(batch)
			if err != nil {
				return false, err
			}
			for _, rec := range recs {
				off := h.BaseOffset + int64(rec.OffsetDelta)
				if rec.Key != nil && off >= from && off < upper {
					om.put(rec.Key, off)
				}
			}
			return true, nil
		})
		if err != nil {
			return from, err
		}
		if reached >= 0 {
			return reached, nil
		}
	}
	return upper, nil
}

func isStopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// forEachBatch calls fn with every whole batch of a (non-active, hence
// immutable) segment, in order, CRC-checked, until fn returns false. batch
// is only valid during the call.
func forEachBatch(s *segment, fn func(h *record.Header, batch []byte) (bool, error)) error {
	size := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, size), 64<<10)
	buf := make([]byte, 0, 64<<10)
	for pos := int64(0); pos+record.BatchHeaderSize <= size; {
		buf = buf[:record.BatchHeaderSize]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		h, err := parseStoredHeader(buf)
		if err != nil {
			return fmt.Errorf("segment %d position %d: %w", s.baseOffset, pos, err)
		}
		if int64(h.TotalSize()) > size-pos {
			return fmt.Errorf("%w: segment %d position %d: batch overruns the segment", kerr.CorruptMessage, s.baseOffset, pos)
		}
		if cap(buf) < h.TotalSize() {
			nb := make([]byte, h.TotalSize())
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:h.TotalSize()]
		if _, err := io.ReadFull(r, buf[record.BatchHeaderSize:]); err != nil {
			return err
		}
		if err := verifyBatchCRC(buf); err != nil {
			return fmt.Errorf("segment %d position %d: %w", s.baseOffset, pos, err)
		}
		more, err := fn(&h, buf)
		if err != nil || !more {
			return err
		}
		pos += int64(h.TotalSize())
	}
	return nil
}

// cleanFilter decides, record by record, what survives a clean (Kafka's
// Cleaner.shouldRetainRecord and the batch retention rules).
type cleanFilter struct {
	nowMs          int64
	horizonMs      int64 // delete horizon given to batches first cleaned now
	endOffset      int64 // the offset map is authoritative below this
	offsets        *offsetMap
	lastOfProducer map[int64]int64
	nextHorizon    int64 // earliest horizon of a kept tombstone or marker, -1 if none
	txns           *txnCleanState
}

// filterBatch returns the batch to write in place of batch: batch itself
// when nothing changes, a rebuilt batch, or nil to drop it. retained counts
// the records kept.
func (f *cleanFilter) filterBatch(h *record.Header, batch []byte) (out []byte, retained int, err error) {
	if h.IsControl() {
		return f.filterMarker(h, batch)
	}
	if f.txns.onData(h) && h.BaseOffset < f.endOffset {
		// An aborted transaction's records go; the producer's last
		// batch stays, empty.
		if h.ProducerID >= 0 && f.lastOfProducer[h.ProducerID] == h.LastOffset() {
			out, err := record.BuildBatch(*h, nil, record.CodecNone)
			return out, 0, err
		}
		return nil, 0, nil
	}
	_, recs, err := record.DecodeRecords(batch)
	if err != nil {
		return nil, 0, err
	}
	hasHorizon := h.HasDeleteHorizon()
	keep := recs[:0:0]
	keptTombstone := false
	for _, rec := range recs {
		if f.retain(h, &rec, hasHorizon) {
			keep = append(keep, rec)
			keptTombstone = keptTombstone || rec.Value == nil
		}
	}
	if keptTombstone {
		horizon := f.horizonMs
		if hasHorizon {
			horizon = h.FirstTimestamp
		}
		if f.nextHorizon < 0 || horizon < f.nextHorizon {
			f.nextHorizon = horizon
		}
	}
	setHorizon := keptTombstone && !hasHorizon
	if len(keep) == len(recs) && !setHorizon {
		return batch, len(keep), nil
	}
	nh := *h
	if len(keep) == 0 {
		if h.ProducerID >= 0 && f.lastOfProducer[h.ProducerID] == h.LastOffset() {
			// An empty batch keeps the producer's last sequence and
			// offset on disk; it carries no records, hence no codec.
			out, err := record.BuildBatch(nh, nil, record.CodecNone)
			return out, 0, err
		}
		return nil, 0, nil
	}
	if setHorizon {
		// KIP-534: the base timestamp field now holds the horizon, so
		// each record's delta is re-based to keep its timestamp.
		for i := range keep {
			keep[i].TimestampDelta = h.FirstTimestamp + keep[i].TimestampDelta - f.horizonMs
		}
		nh.FirstTimestamp = f.horizonMs
		nh.Attributes |= deleteHorizonFlag
	}
	out, err = record.BuildBatch(nh, keep, h.Codec())
	return out, len(keep), err
}

// filterMarker keeps a transaction marker while its transaction has data
// in the cleaned range; without, it is stamped with a delete horizon, and
// dropped once that passed (cleaner_txn.go).
func (f *cleanFilter) filterMarker(h *record.Header, batch []byte) ([]byte, int, error) {
	if h.ProducerID < 0 {
		return batch, int(h.NumRecords), nil
	}
	m, err := record.ParseMarker(batch)
	if err != nil {
		return nil, 0, err
	}
	if !f.txns.onMarker(h, m) || h.BaseOffset >= f.endOffset {
		return batch, int(h.NumRecords), nil
	}
	if h.HasDeleteHorizon() {
		if f.nowMs >= h.FirstTimestamp {
			return nil, 0, nil
		}
		if f.nextHorizon < 0 || h.FirstTimestamp < f.nextHorizon {
			f.nextHorizon = h.FirstTimestamp
		}
		return batch, int(h.NumRecords), nil
	}
	_, recs, err := record.DecodeRecords(batch)
	if err != nil {
		return nil, 0, err
	}
	for i := range recs {
		recs[i].TimestampDelta = h.FirstTimestamp + recs[i].TimestampDelta - f.horizonMs
	}
	nh := *h
	nh.FirstTimestamp = f.horizonMs
	nh.Attributes |= deleteHorizonFlag
	if f.nextHorizon < 0 || f.horizonMs < f.nextHorizon {
		f.nextHorizon = f.horizonMs
	}
	out, err := record.BuildBatch(nh, recs, record.CodecNone)
	return out, len(recs), err
}

// retain is Kafka's shouldRetainRecord.
func (f *cleanFilter) retain(h *record.Header, rec *record.Record, hasHorizon bool) bool {
	off := h.BaseOffset + int64(rec.OffsetDelta)
	if off >= f.endOffset {
		return true // beyond what the map covers: not cleaned this pass
	}
	if rec.Key == nil {
		return false
	}
	if latest, ok := f.offsets.get(rec.Key); ok && off < latest {
		return false
	}
	if rec.Value != nil {
		return true
	}
	return !hasHorizon || f.nowMs < h.FirstTimestamp
}

// groupSegmentsBySize splits segments into runs that fit one segment once
// cleaned (Kafka's groupSegmentsBySize): at most segment.bytes of log, at
// most segment.index.bytes of either index, and offsets within 2^31 of the
// run's base. ends[i] bounds segs[i]'s offsets: the next segment's base.
func groupSegmentsBySize(segs []*segment, ends []int64, maxBytes int64, maxIndexBytes int32) [][]*segment {
	var groups [][]*segment
	for i := 0; i < len(segs); {
		first := segs[i]
		group := []*segment{first}
		logSize := first.size.Load()
		offIdx := int64(first.offsetIndex.len()) * offsetIndexEntrySize
		timeIdx := int64(first.timeIndex.len()) * timeIndexEntrySize
		for i++; i < len(segs); i++ {
			s := segs[i]
			if logSize+s.size.Load() > maxBytes ||
				offIdx+int64(s.offsetIndex.len())*offsetIndexEntrySize > int64(maxIndexBytes) ||
				timeIdx+int64(s.timeIndex.len())*timeIndexEntrySize > int64(maxIndexBytes) ||
				ends[i]-1-first.baseOffset > math.MaxInt32 {
				break
			}
			logSize += s.size.Load()
			offIdx += int64(s.offsetIndex.len()) * offsetIndexEntrySize
			timeIdx += int64(s.timeIndex.len()) * timeIndexEntrySize
			group = append(group, s)
		}
		groups = append(groups, group)
	}
	return groups
}

// removeCleanerFiles deletes the files of a cleaned segment that was not
// swapped in, at whichever stage they are.
func removeCleanerFiles(dir string, base int64) {
	for _, suf := range segmentFileSuffixes {
		for _, stage := range []string{cleanedFileSuffix, swapFileSuffix} {
			_ = os.Remove(segmentFileName(dir, base, suf+stage))
		}
	}
}
