package storage

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// File name suffixes of a segment.
const (
	logFileSuffix       = ".log"
	indexFileSuffix     = ".index"
	timeIndexFileSuffix = ".timeindex"
	deletedFileSuffix   = ".deleted"
	snapshotFileSuffix  = ".snapshot"
)

// segmentFileSuffixes are the files of one segment, each removed, renamed
// and deleted with it.
var segmentFileSuffixes = []string{logFileSuffix, indexFileSuffix, timeIndexFileSuffix, txnIndexFileSuffix}

// segmentFileName is Kafka's naming: the base offset zero-padded to 20 digits.
func segmentFileName(dir string, baseOffset int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", baseOffset, suffix))
}

// parseOffsetFileName extracts the offset from "<20 digits><suffix>".
func parseOffsetFileName(name, suffix string) (int64, bool) {
	if len(name) != 20+len(suffix) || name[20:] != suffix {
		return 0, false
	}
	off, err := strconv.ParseInt(name[:20], 10, 64)
	return off, err == nil && off >= 0
}

// segmentFile is what a segment needs of its .log file: a vfs.File, opened
// through the log's vfs.FS (the OS, wrapped to report disk errors to the
// Manager; a fault-injecting one in tests).
type segmentFile = vfs.File

// segment is one log segment (Kafka's LogSegment): the batches from
// baseOffset up to the next segment's base offset, in <base>.log, with its
// offset and time indexes.
//
// On disk: <base>.log is a plain concatenation of v2 record batches as
// received (with broker-assigned base offset and leader epoch);
// <base>.txnindex (txn_index.go) lists the transactions aborted by markers
// in it.
//
// Thread-safety: the log's append lock serializes every mutation (append,
// truncate, recover, roll bookkeeping). Readers may call read, findBatch and
// the timestamp getters concurrently: size is published atomically after the
// bytes are written, so readers never see a partial batch, and the indexes and
// maxTs have their own locks.
type segment struct {
	fs           vfs.FS // the .log file's file system
	dir          string
	baseOffset   int64
	log          segmentFile
	offsetIndex  *offsetIndex
	timeIndex    *timeIndex
	txn          *txnIndex
	created      time.Time
	rollJitterMs int64

	size atomic.Int64 // bytes of whole batches in .log

	// Guarded by the log's append lock.
	tailDirty                bool // a failed write left bytes past size that could not be cut yet
	bytesSinceLastIndexEntry int64
	rollingBasedTimestamp    int64 // max timestamp of the first batch; -1 if empty
	nextOffset               int64 // offset after the last batch (baseOffset if empty)

	maxTs struct {
		sync.Mutex
		timestamp int64 // largest batch max timestamp; -1 if none
		offset    int64 // last offset of the batch that carried it
	}
}

// createSegment creates a fresh, empty segment, replacing any leftovers.
func createSegment(fs vfs.FS, dir string, baseOffset int64, cfg *Config, now time.Time) (*segment, error) {
	for _, suf := range segmentFileSuffixes {
		if err := fs.Remove(segmentFileName(dir, baseOffset, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	s, _, err := openSegment(fs, dir, baseOffset, cfg, now)
	return s, err
}

// openSegment opens the files of a segment. indexesOK is false when an index
// was missing or failed its sanity check; the caller must then rebuild them
// with recover.
func openSegment(fs vfs.FS, dir string, baseOffset int64, cfg *Config, now time.Time) (s *segment, indexesOK bool, err error) {
	logPath := segmentFileName(dir, baseOffset, logFileSuffix)
	indexesOK = true

	f, err := fs.OpenFile(logPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	s = &segment{
		fs:                    fs,
		dir:                   dir,
		baseOffset:            baseOffset,
		log:                   f,
		created:               now,
		rollJitterMs:          cfg.randomSegmentJitter(),
		rollingBasedTimestamp: -1,
		nextOffset:            baseOffset,
	}
	s.size.Store(fi.Size())
	s.maxTs.timestamp, s.maxTs.offset = -1, baseOffset

	oi, err := openOffsetIndex(fs, segmentFileName(dir, baseOffset, indexFileSuffix), baseOffset, cfg.SegmentIndexBytes, fi.Size())
	if oi == nil {
		f.Close()
		return nil, false, err
	}
	if err != nil {
		indexesOK = false
	}
	ti, err := openTimeIndex(fs, segmentFileName(dir, baseOffset, timeIndexFileSuffix), baseOffset, cfg.SegmentIndexBytes)
	if ti == nil {
		f.Close()
		oi.file.close()
		return nil, false, err
	}
	if err != nil {
		indexesOK = false
	}
	// A missing index file (never written, or lost) is rebuilt. A missing
	// transaction index is a segment without aborted transactions.
	indexesOK = indexesOK && oi.file.existed && ti.file.existed
	txn, txnOK, err := openTxnIndex(fs, segmentFileName(dir, baseOffset, txnIndexFileSuffix), math.MaxInt64)
	if err != nil {
		f.Close()
		oi.file.close()
		ti.file.close()
		return nil, false, err
	}
	indexesOK = indexesOK && txnOK
	s.offsetIndex, s.timeIndex, s.txn = oi, ti, txn
	return s, indexesOK, nil
}

// append writes one batch (already stamped with its offsets) with a single
// positional write, then indexes it like Kafka's LogSegment.append: an offset
// and time index entry every index.interval.bytes, checked before counting
// the new batch so a segment's first batch needs no entry.
//
// A failed write changes nothing a reader or the next append can see: size
// (and with it every read, the indexes and the log end offset) advances only
// after the whole batch is written, and whatever part of the batch reached
// the file is cut off again. If even that cut fails, the tail is marked
// dirty and cut before the next write, so a restart never finds a torn batch
// followed by a good one.
func (s *segment) append(batch []byte, h *record.Header, indexIntervalBytes int32) error {
	pos := s.size.Load()
	if s.tailDirty {
		if err := s.log.Truncate(pos); err != nil {
			return fmt.Errorf("cutting the tail left by a failed write: %w", err)
		}
		s.tailDirty = false
	}
	if _, err := s.log.WriteAt(batch, pos); err != nil {
		if terr := s.log.Truncate(pos); terr != nil {
			s.tailDirty = true
		}
		return err
	}
	last := h.LastOffset()
	if pos == 0 {
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	s.maxTs.Lock()
	if h.MaxTimestamp > s.maxTs.timestamp {
		s.maxTs.timestamp, s.maxTs.offset = h.MaxTimestamp, last
	}
	maxTs, maxTsOff := s.maxTs.timestamp, s.maxTs.offset
	s.maxTs.Unlock()
	if s.bytesSinceLastIndexEntry > int64(indexIntervalBytes) {
		s.offsetIndex.append(last, pos)
		s.timeIndex.maybeAppend(maxTs, maxTsOff)
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int64(len(batch))
	s.nextOffset = last + 1
	s.size.Store(pos + int64(len(batch)))
	return nil
}

// readHeaderAt reads and decodes the batch header at pos.
func (s *segment) readHeaderAt(pos int64, buf *[record.BatchHeaderSize]byte) (record.Header, error) {
	if _, err := s.log.ReadAt(buf[:], pos); err != nil {
		return record.Header{}, err
	}
	return parseStoredHeader(buf[:])
}

// findBatch returns the position and header of the first batch whose last
// offset is >= offset, looking below size only. found is false when every
// batch in the segment ends before offset.
func (s *segment) findBatch(offset int64, size int64) (pos int64, h record.Header, found bool, err error) {
	_, pos = s.offsetIndex.lookup(offset)
	var buf [record.BatchHeaderSize]byte
	for pos+record.BatchHeaderSize <= size {
		h, err = s.readHeaderAt(pos, &buf)
		if err != nil {
			return 0, h, false, err
		}
		if h.LastOffset() >= offset {
			return pos, h, true, nil
		}
		pos += int64(h.TotalSize())
	}
	return 0, record.Header{}, false, nil
}

// readResult is what one segment contributes to a fetch.
type segmentRead struct {
	data  []byte
	found bool // a batch with lastOffset >= the start offset exists here
}

// read returns whole batches starting at the one containing startOffset,
// stopping before the first batch that ends at or past maxOffset, within
// maxBytes unless minOneBatch lets the first batch exceed it.
func (s *segment) read(startOffset int64, maxBytes int, maxOffset int64, minOneBatch bool) (segmentRead, error) {
	size := s.size.Load()
	pos, h, found, err := s.findBatch(startOffset, size)
	if err != nil || !found {
		return segmentRead{}, err
	}
	if h.LastOffset() >= maxOffset {
		return segmentRead{found: true}, nil
	}
	want := min(int64(maxBytes), size-pos)
	if int64(h.TotalSize()) > want {
		if !minOneBatch {
			return segmentRead{found: true}, nil
		}
		want = int64(h.TotalSize())
	}
	buf := make([]byte, want)
	n, err := s.log.ReadAt(buf, pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return segmentRead{}, err
	}
	buf = buf[:n]
	end := 0
	for end+record.BatchHeaderSize <= len(buf) {
		bh, err := parseStoredHeader(buf[end:])
		if err != nil || end+bh.TotalSize() > len(buf) || bh.LastOffset() >= maxOffset {
			break
		}
		end += bh.TotalSize()
	}
	return segmentRead{data: buf[:end], found: true}, nil
}

// region is read's zero-copy form: the position and size of the bytes to
// send, found as read finds them but without reading the data. The end is
// the first batch at or past maxOffset (located through the offset index)
// or maxBytes, whichever comes first; the first batch is whole when
// minOneBatch.
func (s *segment) region(startOffset int64, maxBytes int, maxOffset int64, minOneBatch bool) (pos, size int64, found bool, err error) {
	end := s.size.Load()
	pos, h, found, err := s.findBatch(startOffset, end)
	if err != nil || !found {
		return 0, 0, found, err
	}
	if h.LastOffset() >= maxOffset {
		return 0, 0, true, nil
	}
	// Stop at the batch holding maxOffset (the high watermark) if it is
	// in this segment; the offset index bounds the scan to a few headers.
	if stop, _, ok, err := s.findBatch(maxOffset, end); err != nil {
		return 0, 0, true, err
	} else if ok {
		end = stop
	}
	size = min(int64(maxBytes), end-pos)
	if first := int64(h.TotalSize()); first > size {
		if !minOneBatch {
			return 0, 0, true, nil
		}
		size = first
	}
	return pos, size, true, nil
}

// recoveryResult summarizes a segment scan.
type recoveryResult struct {
	validBytes     int64
	truncatedBytes int64
	reason         error // why the tail was cut, if it was
}

// recover rescans the whole segment (Kafka's LogSegment.recover): it checks
// every batch (length, magic, CRC, offsets increasing and inside this
// segment), rebuilds both indexes, cuts the file after the last valid batch
// and calls onBatch for each valid batch in order.
func (s *segment) recover(indexIntervalBytes int32, onBatch func(h *record.Header)) (recoveryResult, error) {
	if err := s.offsetIndex.reset(); err != nil {
		return recoveryResult{}, err
	}
	if err := s.timeIndex.reset(); err != nil {
		return recoveryResult{}, err
	}
	fileSize := s.size.Load()
	if fi, err := s.log.Stat(); err == nil {
		fileSize = fi.Size()
	}
	s.bytesSinceLastIndexEntry = 0
	s.rollingBasedTimestamp = -1
	s.nextOffset = s.baseOffset
	s.maxTs.Lock()
	s.maxTs.timestamp, s.maxTs.offset = -1, s.baseOffset
	s.maxTs.Unlock()
	s.size.Store(0)

	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, fileSize), 64<<10)
	var pos int64
	var reason error
	batch := make([]byte, 0, 64<<10)
	prevLast := s.baseOffset - 1
	for pos < fileSize {
		if fileSize-pos < record.BatchHeaderSize {
			reason = fmt.Errorf("%d trailing bytes cannot hold a batch header", fileSize-pos)
			break
		}
		batch = batch[:record.BatchHeaderSize]
		if _, err := io.ReadFull(r, batch); err != nil {
			return recoveryResult{}, err
		}
		h, err := parseStoredHeader(batch)
		if err != nil {
			reason = err
			break
		}
		if int64(h.TotalSize()) > fileSize-pos {
			reason = fmt.Errorf("batch at position %d claims %d bytes, only %d remain", pos, int64(h.TotalSize()), fileSize-pos)
			break
		}
		if h.BaseOffset <= prevLast || h.LastOffset()-s.baseOffset > math.MaxInt32 {
			reason = fmt.Errorf("batch at position %d has offsets [%d, %d] out of order for segment %d after %d", pos, h.BaseOffset, h.LastOffset(), s.baseOffset, prevLast)
			break
		}
		if cap(batch) < h.TotalSize() {
			nb := make([]byte, h.TotalSize())
			copy(nb, batch)
			batch = nb
		}
		batch = batch[:h.TotalSize()]
		if _, err := io.ReadFull(r, batch[record.BatchHeaderSize:]); err != nil {
			return recoveryResult{}, err
		}
		if err := verifyBatchCRC(batch); err != nil {
			reason = fmt.Errorf("batch at position %d: %w", pos, err)
			break
		}
		s.indexRecoveredBatch(&h, pos, indexIntervalBytes)
		prevLast = h.LastOffset()
		pos += int64(h.TotalSize())
		s.size.Store(pos)
		if onBatch != nil {
			onBatch(&h)
		}
	}
	res := recoveryResult{validBytes: pos, truncatedBytes: fileSize - pos, reason: reason}
	if res.truncatedBytes > 0 {
		if err := s.log.Truncate(pos); err != nil {
			return res, err
		}
	}
	return res, nil
}

// indexRecoveredBatch applies append's bookkeeping to a batch already in the file.
func (s *segment) indexRecoveredBatch(h *record.Header, pos int64, indexIntervalBytes int32) {
	if pos == 0 {
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	s.maxTs.Lock()
	if h.MaxTimestamp > s.maxTs.timestamp {
		s.maxTs.timestamp, s.maxTs.offset = h.MaxTimestamp, h.LastOffset()
	}
	maxTs, maxTsOff := s.maxTs.timestamp, s.maxTs.offset
	s.maxTs.Unlock()
	if s.bytesSinceLastIndexEntry > int64(indexIntervalBytes) {
		s.offsetIndex.append(h.LastOffset(), pos)
		s.timeIndex.maybeAppend(maxTs, maxTsOff)
		s.bytesSinceLastIndexEntry = 0
	}
	s.bytesSinceLastIndexEntry += int64(h.TotalSize())
	s.nextOffset = h.LastOffset() + 1
}

// loadTail restores the in-memory state of a segment whose indexes are
// trusted: the max timestamp starts from the last time index entry and the
// batches after the last offset index entry are walked (headers only) to find
// the next offset. A malformed header stops the walk with an error so the
// caller can fall back to a full recover.
func (s *segment) loadTail() error {
	ts, tsOff := s.timeIndex.lastEntry()
	s.maxTs.Lock()
	s.maxTs.timestamp, s.maxTs.offset = ts, tsOff
	s.maxTs.Unlock()
	_, pos := s.offsetIndex.lastEntry()
	size := s.size.Load()
	s.nextOffset = s.baseOffset
	s.rollingBasedTimestamp = -1
	s.bytesSinceLastIndexEntry = 0
	var buf [record.BatchHeaderSize]byte
	if size > 0 {
		h, err := s.readHeaderAt(0, &buf)
		if err != nil {
			return err
		}
		s.rollingBasedTimestamp = h.MaxTimestamp
	}
	for pos < size {
		if size-pos < record.BatchHeaderSize {
			return fmt.Errorf("%w: %d trailing bytes", errCorruptIndex, size-pos)
		}
		h, err := s.readHeaderAt(pos, &buf)
		if err != nil {
			return err
		}
		if h.BaseOffset < s.baseOffset || int64(h.TotalSize()) > size-pos {
			return fmt.Errorf("%w: batch at position %d does not fit the segment", errCorruptIndex, pos)
		}
		s.maxTs.Lock()
		if h.MaxTimestamp > s.maxTs.timestamp {
			s.maxTs.timestamp, s.maxTs.offset = h.MaxTimestamp, h.LastOffset()
		}
		s.maxTs.Unlock()
		s.nextOffset = h.LastOffset() + 1
		s.bytesSinceLastIndexEntry += int64(h.TotalSize())
		pos += int64(h.TotalSize())
	}
	return nil
}

// truncateTo removes every batch that ends at or after offset (Kafka cuts at
// the start of the batch containing offset) and returns the bytes removed.
func (s *segment) truncateTo(offset int64) (int64, error) {
	size := s.size.Load()
	pos, _, found, err := s.findBatch(offset, size)
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, nil
	}
	if err := s.offsetIndex.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.timeIndex.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.txn.truncateTo(offset); err != nil {
		return 0, err
	}
	if err := s.log.Truncate(pos); err != nil {
		return 0, err
	}
	s.size.Store(pos)
	// The offset index may now end past pos (an entry keyed by a batch's
	// last offset before offset can still point at a removed batch only if
	// offsets were not increasing, which recover rules out), so loadTail's
	// walk from the last entry is safe.
	if err := s.loadTail(); err != nil {
		return 0, err
	}
	return size - pos, nil
}

// largestTimestamp is what time retention compares: the largest record
// timestamp, or the file's modification time when the segment has no
// timestamps (Kafka's LogSegment.largestTimestamp).
func (s *segment) largestTimestamp() int64 {
	s.maxTs.Lock()
	ts := s.maxTs.timestamp
	s.maxTs.Unlock()
	if ts >= 0 {
		return ts
	}
	if fi, err := s.log.Stat(); err == nil {
		return fi.ModTime().UnixMilli()
	}
	return -1
}

func (s *segment) maxTimestamp() (timestamp, offset int64) {
	s.maxTs.Lock()
	defer s.maxTs.Unlock()
	return s.maxTs.timestamp, s.maxTs.offset
}

// shouldRoll is Kafka's LogSegment.shouldRoll: the batch would overflow
// segment.bytes, segment.ms (less jitter) has passed since the first batch's
// timestamp (or the segment's creation), an index is full, or the batch's
// offsets cannot be stored relative to this base.
func (s *segment) shouldRoll(cfg *Config, batchSize int64, batchMaxTs, lastOffset int64, now time.Time) bool {
	size := s.size.Load()
	if size > cfg.SegmentBytes-batchSize {
		return true
	}
	if size > 0 {
		waited := now.Sub(s.created).Milliseconds()
		if s.rollingBasedTimestamp >= 0 {
			waited = batchMaxTs - s.rollingBasedTimestamp
		}
		// Compacted logs roll by max.compaction.lag.ms too, so records
		// leave the active segment (which is never cleaned) in time
		// (Kafka's LogConfig.maxSegmentMs).
		segmentMs := cfg.SegmentMs
		if cfg.Compact && cfg.MaxCompactionLagMs > 0 && cfg.MaxCompactionLagMs < segmentMs {
			segmentMs = cfg.MaxCompactionLagMs
		}
		if waited > segmentMs-s.rollJitterMs {
			return true
		}
	}
	return s.offsetIndex.isFull() || s.timeIndex.isFull() || lastOffset-s.baseOffset > math.MaxInt32 || lastOffset < s.baseOffset
}

// onBecomeInactive records the segment's max timestamp as a final time index
// entry, as Kafka does at roll, so it survives a restart.
func (s *segment) onBecomeInactive() {
	ts, off := s.maxTimestamp()
	if ts >= 0 {
		s.timeIndex.maybeAppend(ts, off)
	}
}

// flush fsyncs the log and writes and fsyncs both indexes.
func (s *segment) flush() error {
	if err := s.log.Sync(); err != nil {
		return err
	}
	if err := s.offsetIndex.flush(true); err != nil {
		return err
	}
	if err := s.txn.flush(); err != nil {
		return err
	}
	return s.timeIndex.flush(true)
}

// close writes pending index entries and closes every file.
func (s *segment) close() error {
	err := s.flush()
	if e := s.offsetIndex.file.close(); err == nil {
		err = e
	}
	if e := s.timeIndex.file.close(); err == nil {
		err = e
	}
	if e := s.log.Close(); err == nil {
		err = e
	}
	return err
}

// closeNoFlush closes the files without writing anything (used when the
// segment is being deleted).
func (s *segment) closeNoFlush() {
	s.offsetIndex.file.close()
	s.timeIndex.file.close()
	s.log.Close()
}

// renameForDeletion appends ".deleted" to all files, as Kafka does before
// the delayed physical delete; open handles keep working for readers.
func (s *segment) renameForDeletion() error {
	if err := s.fs.Rename(segmentFileName(s.dir, s.baseOffset, logFileSuffix), segmentFileName(s.dir, s.baseOffset, logFileSuffix+deletedFileSuffix)); err != nil {
		return err
	}
	if err := s.offsetIndex.file.rename(segmentFileName(s.dir, s.baseOffset, indexFileSuffix+deletedFileSuffix)); err != nil {
		return err
	}
	if err := s.txn.rename(segmentFileName(s.dir, s.baseOffset, txnIndexFileSuffix+deletedFileSuffix)); err != nil {
		return err
	}
	return s.timeIndex.file.rename(segmentFileName(s.dir, s.baseOffset, timeIndexFileSuffix+deletedFileSuffix))
}

// removeFiles closes and deletes the segment's files; renameForDeletion must
// have run first.
func (s *segment) removeFiles() error {
	s.closeNoFlush()
	var err error
	// Only the .deleted names: a new segment may already reuse the base name.
	for _, suf := range segmentFileSuffixes {
		if e := s.fs.Remove(segmentFileName(s.dir, s.baseOffset, suf+deletedFileSuffix)); e != nil && !errors.Is(e, os.ErrNotExist) && err == nil {
			err = e
		}
	}
	return err
}

// scanHeaders walks the batch headers from position from to the end of the
// segment with one buffered sequential read, calling fn for each with the
// batch's position.
func (s *segment) scanHeaders(from int64, fn func(h *record.Header, pos int64) error) error {
	size := s.size.Load()
	if from >= size {
		return nil
	}
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, from, size-from), 64<<10)
	var buf [record.BatchHeaderSize]byte
	for pos := from; pos+record.BatchHeaderSize <= size; {
		if _, err := io.ReadFull(r, buf[:]); err != nil {
			return err
		}
		h, err := parseStoredHeader(buf[:])
		if err != nil {
			return err
		}
		if err := fn(&h, pos); err != nil {
			return err
		}
		if _, err := r.Discard(h.TotalSize() - record.BatchHeaderSize); err != nil {
			return err
		}
		pos += int64(h.TotalSize())
	}
	return nil
}
