package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/metrics"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// Log is one partition's log (Kafka's UnifiedLog + LocalLog): an ordered list
// of segments in the directory "<topic>-<partition>", the leader epoch cache,
// producer state and the offsets the partition layer needs.
//
// Thread-safety: safe for concurrent use. mu (the append lock) serializes
// every mutation — appends, rolls, truncation, segment deletion — so there is
// one appender at a time. Readers never take mu: the segment list is
// copy-on-write behind an atomic pointer, offsets are atomics, and segment
// bytes become visible only after they are fully written. flushMu serializes
// flushes against truncation and segment deletion; it is always taken before
// mu, and fsync runs without mu held.
type Log struct {
	fs        vfs.FS // segment files (.log and indexes) go through it (OpenOptions.FS)
	dir       string
	topic     string
	partition int32
	topicID   [16]byte
	logger    *slog.Logger
	now       func() time.Time
	epochs    *leaderEpochCache

	cfg            atomic.Pointer[Config]
	segments       atomic.Pointer[[]*segment] // sorted by base offset; last is active
	logStartOffset atomic.Int64
	// The remote tier (log_tiered.go): its log start offset and the last
	// offset copied to it, -1 while unknown or empty.
	remoteStart      atomic.Int64
	remoteCopiedUpTo atomic.Int64
	// deletedBefore is the log start over both tiers as DeleteRecords (or
	// the checkpoint) last set it, -1 for none: in a tiered log it may lie
	// in the remote tier, above remoteStart, until the remote segments
	// below it are deleted. Never above logStartOffset.
	deletedBefore atomic.Int64
	logEndOffset  atomic.Int64
	highWatermark atomic.Int64
	recoveryPoint atomic.Int64
	lastFlushMs   atomic.Int64
	// txnBounds is what LastStableOffset is computed from (log_txn.go);
	// replaced under mu.
	txnBounds atomic.Pointer[txnBounds]

	// onLogStartOffsetIncremented lets the Manager checkpoint promptly after
	// DeleteRecords; called without locks held.
	onLogStartOffsetIncremented func()

	flushMu sync.Mutex
	// rollFlushes counts the background flushes of rolled segments
	// (log_roll_flush.go).
	rollFlushes sync.WaitGroup

	// cleanMu serializes compactions of this log (cleaner.go); it is taken
	// before flushMu and mu.
	cleanMu sync.Mutex

	mu struct {
		sync.Mutex
		producers *producerStateManager
		closed    bool
		// replay is set while producer state is replayed from the log
		// (log_txn.go).
		replay *txnReplay
	}

	pendingDeletes struct {
		sync.Mutex
		timers map[*segment]*time.Timer
	}
}

// errLogClosed is returned by operations on a closed or deleted log.
var errLogClosed = fmt.Errorf("%w: log is closed", kerr.KafkaStorageError)

// AppendInfo describes the result of an Append.
type AppendInfo struct {
	BaseOffset, LastOffset int64
	LogAppendTime          int64 // -1 unless set by the caller
	LogStartOffset         int64
	Duplicate              bool // idempotent retry: nothing appended, offsets are the original batch's
}

// ReadResult is what Read returns.
type ReadResult struct {
	Data []byte // whole batches (Read)

	// File region (ReadRegion): Size bytes of File from Position, to be
	// sent as they are (zero-copy). It starts with a whole batch and may
	// end inside one, as Kafka's fetches may; clients drop a partial
	// trailing batch. File stays open for file.delete.delay.ms after its
	// segment is deleted, longer than any response takes to send.
	File     *os.File
	Position int64
	Size     int64
	// SegmentEnd bounds the offsets of a region's batches: the base
	// offset of the segment after the one it lies in, or the log end
	// offset (0 when nothing was read from a file). A read_committed
	// fetch lists the aborted transactions below it, as Kafka bounds them
	// by the next segment.
	SegmentEnd int64

	HighWatermark, LogStartOffset, LogEndOffset int64
}

func (l *Log) segmentList() []*segment { return *l.segments.Load() }

func (l *Log) activeSegment() *segment {
	s := l.segmentList()
	return s[len(s)-1]
}

// setSegmentsLocked publishes a new segment list; mu must be held.
func (l *Log) setSegmentsLocked(segs []*segment) { l.segments.Store(&segs) }

// Append assigns offsets starting at the log end offset, stamps the leader
// epoch, applies idempotent producer checks and writes the batch to the active
// segment (rolling first when needed). batch must be exactly one validated v2
// batch; its baseOffset and partitionLeaderEpoch fields are rewritten in
// place (they are outside the CRC). A failed write returns an error wrapping
// kerr.KafkaStorageError and the disk error, and leaves the log exactly as it
// was: same log end offset, no partial batch visible, next append works.
func (l *Log) Append(batch []byte, leaderEpoch int32) (AppendInfo, error) {
	info, flush, err := l.AppendUnflushed(batch, leaderEpoch)
	if err != nil || !flush {
		return info, err
	}
	return info, l.flushForPolicy()
}

// flushForPolicy is the flush.messages fsync that follows an append.
func (l *Log) flushForPolicy() error {
	if err := l.Flush(); err != nil {
		return fmt.Errorf("%w: flushing %s: %v", kerr.KafkaStorageError, l.dir, err)
	}
	return nil
}

// AppendUnflushed is Append without the flush.messages fsync: needsFlush
// says the policy calls for one, and the caller runs Flush once it holds no
// lock of its own (the partition's role lock must not wait on a disk).
func (l *Log) AppendUnflushed(batch []byte, leaderEpoch int32) (info AppendInfo, needsFlush bool, err error) {
	return l.AppendTxnUnflushed(batch, leaderEpoch, TxnAppend{})
}

// AppendTxnUnflushed is AppendUnflushed with the batch's transactional
// context: with a verification guard (KIP-890), a transactional batch that
// opens a transaction must carry the guard StartTransactionVerification
// handed out, else it is INVALID_TXN_STATE and nothing is appended. A
// control batch (a transaction marker the broker built) is checked against
// the producer's epoch and coordinator epoch.
func (l *Log) AppendTxnUnflushed(batch []byte, leaderEpoch int32, opts TxnAppend) (info AppendInfo, needsFlush bool, err error) {
	h, err := parseStoredHeader(batch)
	if err != nil {
		return AppendInfo{}, false, err
	}
	size := int64(h.TotalSize())
	if size != int64(len(batch)) {
		return AppendInfo{}, false, fmt.Errorf("%w: batch length field says %d bytes, buffer has %d", kerr.CorruptMessage, size, len(batch))
	}
	cfg := l.cfg.Load()
	if size > cfg.SegmentBytes {
		return AppendInfo{}, false, fmt.Errorf("%w: batch of %d bytes exceeds segment.bytes %d", kerr.RecordListTooLarge, size, cfg.SegmentBytes)
	}

	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return AppendInfo{}, false, errLogClosed
	}
	marker, err := markerOf(batch, &h)
	if err == nil && marker != nil {
		err = l.mu.producers.checkMarker(h.ProducerID, h.ProducerEpoch, marker.CoordinatorEpoch, opts.MarkerBumpsEpoch)
	}
	if err != nil {
		l.mu.Unlock()
		return AppendInfo{}, false, err
	}
	dup, isDup, err := l.mu.producers.check(&h, opts)
	if err != nil || isDup {
		l.mu.Unlock()
		if err != nil {
			return AppendInfo{}, false, err
		}
		return AppendInfo{BaseOffset: dup.firstOffset, LastOffset: dup.lastOffset, LogAppendTime: -1, LogStartOffset: l.logStartOffset.Load(), Duplicate: true}, false, nil
	}

	leo := l.logEndOffset.Load()
	base := leo
	if opts.KeepBaseOffset {
		if h.BaseOffset < leo {
			l.mu.Unlock()
			return AppendInfo{}, false, fmt.Errorf("%w: batch [%d, %d] starts below the log end offset %d of offset-preserving %s",
				kerr.OffsetOutOfRange, h.BaseOffset, h.BaseOffset+int64(h.LastOffsetDelta), leo, l.dir)
		}
		base = h.BaseOffset
	}
	last := base + int64(h.LastOffsetDelta)
	seg := l.activeSegment()
	if seg.shouldRoll(cfg, size, h.MaxTimestamp, last, l.now()) {
		if seg, err = l.rollLocked(base); err != nil {
			l.mu.Unlock()
			return AppendInfo{}, false, fmt.Errorf("%w: rolling segment: %v", kerr.KafkaStorageError, err)
		}
	}
	record.SetBaseOffset(batch, base)
	record.SetPartitionLeaderEpoch(batch, leaderEpoch)
	h.BaseOffset, h.PartitionLeaderEpoch = base, leaderEpoch
	if err := seg.append(batch, &h, cfg.IndexIntervalBytes); err != nil {
		l.mu.Unlock()
		return AppendInfo{}, false, fmt.Errorf("%w: appending to %s: %w", kerr.KafkaStorageError, l.dir, err)
	}
	txnErr := l.applyBatchLocked(seg, &h, batch)
	l.assertAppendOffset(leo, last+1)
	l.logEndOffset.Store(last + 1)
	if leaderEpoch >= 0 && leaderEpoch > l.epochs.latestEpoch() {
		if err := l.epochs.assign(leaderEpoch, base); err != nil {
			l.logger.Error("writing leader epoch checkpoint", "dir", l.dir, "err", err)
		}
	}
	unflushed := last + 1 - l.recoveryPoint.Load()
	l.assertOffsetsLocked("append")
	l.mu.Unlock()

	info = AppendInfo{BaseOffset: base, LastOffset: last, LogAppendTime: -1, LogStartOffset: l.logStartOffset.Load()}
	if txnErr != nil {
		// The batch is in the log but its index entry is not: the disk
		// error has taken the log dir offline (vfs.Reporting).
		return info, false, txnErr
	}
	return info, unflushed >= cfg.FlushMessages, nil
}

// rollLocked starts a new active segment at newBase (Kafka's roll): the old
// segment records its final time index entry and producer state is
// snapshotted at the new base. An empty active segment is replaced instead.
func (l *Log) rollLocked(newBase int64) (*segment, error) {
	cfg := l.cfg.Load()
	segs := l.segmentList()
	old := segs[len(segs)-1]
	var replaced *segment
	if old.size.Load() == 0 {
		replaced = old
		segs = segs[:len(segs)-1]
		if err := old.renameForDeletion(); err != nil {
			return nil, err
		}
	} else {
		old.onBecomeInactive()
	}
	seg, err := createSegment(l.fs, l.dir, newBase, cfg, l.now())
	if err != nil {
		return nil, err
	}
	next := make([]*segment, 0, len(segs)+1)
	next = append(append(next, segs...), seg)
	l.setSegmentsLocked(next)
	if replaced != nil {
		l.scheduleDelete(replaced)
	} else {
		l.scheduleRollFlush(newBase)
	}
	if err := l.mu.producers.takeSnapshot(newBase, false, l.snapshotPruneBound()); err != nil {
		l.logger.Warn("writing producer state snapshot", "dir", l.dir, "offset", newBase, "err", err)
	}
	l.logger.Debug("rolled segment", "dir", l.dir, "base_offset", newBase)
	return seg, nil
}

// Read returns whole batches starting with the one containing offset, at
// most maxBytes of them (at least one whole batch when minOneBatch), never
// including a batch that ends at or beyond maxOffset (the high watermark or
// log end offset). offset == LogEndOffset yields no data; offsets outside
// [LogStartOffset, LogEndOffset] fail with kerr.OffsetOutOfRange.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := l.readOnce(offset, maxBytes, maxOffset, minOneBatch)
		// A segment deleted by retention or truncation under our feet has
		// closed files; the retry sees the new segment list and offsets.
		if errors.Is(err, os.ErrClosed) && attempt < 3 {
			continue
		}
		if heavyInvariants && err == nil {
			l.assertData(res, offset, min(maxOffset, res.LogEndOffset))
		}
		return res, l.readError(err)
	}
}

// ReadRegion is Read without copying: it returns where the batches lie in a
// segment file rather than their bytes (see ReadResult), for fetches sent
// with sendfile. The region starts at the batch containing offset, holds at
// least that whole batch when minOneBatch, stops before the first batch at
// or past maxOffset and is at most maxBytes otherwise, so it may end inside
// a batch.
func (l *Log) ReadRegion(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	for attempt := 0; ; attempt++ {
		res, err := l.readRegionOnce(offset, maxBytes, maxOffset, minOneBatch)
		if errors.Is(err, os.ErrClosed) && attempt < 3 {
			continue
		}
		if heavyInvariants && err == nil {
			l.assertRegion(res, offset, min(maxOffset, res.LogEndOffset))
		}
		return res, l.readError(err)
	}
}

// readError is what a read's caller sees of a failure: Kafka errors (an
// offset out of range, a closed log) as they are, and a disk error as
// KAFKA_STORAGE_ERROR, as Kafka answers reads of a failing log dir. The
// file system's failure report (manager.go) takes the dir offline.
func (l *Log) readError(err error) error {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	return fmt.Errorf("%w: reading %s: %w", kerr.KafkaStorageError, l.dir, err)
}

func (l *Log) readRegionOnce(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	leo := l.logEndOffset.Load()
	segs := l.segmentList()
	res := ReadResult{HighWatermark: l.highWatermark.Load(), LogStartOffset: l.logStartOffset.Load(), LogEndOffset: leo}
	if offset < res.LogStartOffset || offset > leo {
		return res, fmt.Errorf("%w: offset %d not in [%d, %d] of %s", kerr.OffsetOutOfRange, offset, res.LogStartOffset, leo, l.dir)
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return res, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
	for i = max(i, 0); i < len(segs); i++ {
		f := vfs.OSFile(segs[i].log)
		if f == nil {
			// A test file system: no file to send from.
			return l.readOnce(offset, maxBytes, maxOffset, minOneBatch)
		}
		pos, size, found, err := segs[i].region(offset, maxBytes, maxOffset, minOneBatch)
		if err != nil {
			return res, err
		}
		if found {
			if size > 0 {
				res.File, res.Position, res.Size = f, pos, size
				res.SegmentEnd = leo
				if i+1 < len(segs) {
					res.SegmentEnd = segs[i+1].baseOffset
				}
			}
			return res, nil
		}
	}
	return res, nil
}

func (l *Log) readOnce(offset int64, maxBytes int, maxOffset int64, minOneBatch bool) (ReadResult, error) {
	leo := l.logEndOffset.Load()
	segs := l.segmentList()
	res := ReadResult{HighWatermark: l.highWatermark.Load(), LogStartOffset: l.logStartOffset.Load(), LogEndOffset: leo}
	if offset < res.LogStartOffset || offset > leo {
		return res, fmt.Errorf("%w: offset %d not in [%d, %d] of %s", kerr.OffsetOutOfRange, offset, res.LogStartOffset, leo, l.dir)
	}
	maxOffset = min(maxOffset, leo)
	if offset >= maxOffset {
		return res, nil
	}
	i := sort.Search(len(segs), func(i int) bool { return segs[i].baseOffset > offset }) - 1
	for i = max(i, 0); i < len(segs); i++ {
		r, err := segs[i].read(offset, maxBytes, maxOffset, minOneBatch)
		if err != nil {
			return res, err
		}
		if r.found {
			res.Data = r.data
			return res, nil
		}
	}
	return res, nil
}

// LogStartOffset is the first offset readable by consumers.
func (l *Log) LogStartOffset() int64 { return l.logStartOffset.Load() }

// LogEndOffset is the offset the next appended record will get.
func (l *Log) LogEndOffset() int64 { return l.logEndOffset.Load() }

// HighWatermark is the value last set by SetHighWatermark (or loaded at Open).
func (l *Log) HighWatermark() int64 { return l.highWatermark.Load() }

// SetHighWatermark stores a follower's high watermark, bounded by
// [LogStartOffset, LogEndOffset]: the bound is Kafka's own
// (UnifiedLog.updateHighWatermark), since a follower takes the leader's
// high watermark, which may be past its log end or, after the leader's log
// start moved, before its log start. It bounds retention and is
// checkpointed. The leader uses AdvanceHighWatermark.
func (l *Log) SetHighWatermark(off int64) {
	l.highWatermark.Store(max(min(off, l.logEndOffset.Load()), l.logStartOffset.Load()))
}

// AdvanceHighWatermark moves a leader's high watermark up to off and
// reports whether it moved; an off at or below the current one changes
// nothing (a leader's high watermark never moves back). off past the log
// end offset is a bug in the caller (the leader's own log end bounds the
// high watermark it computes) and panics rather than being clamped.
func (l *Log) AdvanceHighWatermark(off int64) bool {
	for {
		cur := l.highWatermark.Load()
		if off <= cur {
			return false
		}
		if leo := l.logEndOffset.Load(); off > leo {
			panic(fmt.Sprintf("storage: %s: high watermark %d past the log end offset %d", l.dir, off, leo))
		}
		if l.highWatermark.CompareAndSwap(cur, off) {
			return true
		}
	}
}

// RecoveryPoint is the offset below which the log is known to be on disk.
func (l *Log) RecoveryPoint() int64 { return l.recoveryPoint.Load() }

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// TopicID is the topic id recorded in partition.metadata (zero if unknown).
func (l *Log) TopicID() [16]byte { return l.topicID }

// Config returns the log's current configuration.
func (l *Log) Config() Config { return *l.cfg.Load() }

// UpdateConfig applies new topic configs; they take effect on the next
// append, roll or retention check.
func (l *Log) UpdateConfig(cfg Config) {
	c := cfg.normalized()
	l.mu.Lock()
	l.cfg.Store(&c)
	l.mu.producers.expirationMs = c.ProducerIDExpirationMs
	l.mu.Unlock()
}

// Size is the total size in bytes of all segments.
func (l *Log) Size() int64 {
	var n int64
	for _, s := range l.segmentList() {
		n += s.size.Load()
	}
	return n
}

// NumSegments is the number of segments (for metrics and tests).
func (l *Log) NumSegments() int { return len(l.segmentList()) }

// LatestEpoch is the newest leader epoch in the log, or -1.
func (l *Log) LatestEpoch() int32 { return l.epochs.latestEpoch() }

// EndOffsetForEpoch answers OffsetForLeaderEpoch with Kafka's semantics: the
// largest epoch <= epoch and the start offset of the next epoch (the log end
// offset for the latest epoch), or (-1, -1) if unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (leaderEpoch int32, endOffset int64) {
	return l.epochs.endOffsetFor(epoch, l.logEndOffset.Load())
}

// RemoveExpiredProducers drops idle producers per producer.id.expiration.ms
// and returns how many were removed.
func (l *Log) RemoveExpiredProducers() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.producers.removeExpired(l.now().UnixMilli())
}

// FlushIfDue flushes when flush.ms has passed since the last flush.
func (l *Log) FlushIfDue() error {
	cfg := l.cfg.Load()
	if l.now().UnixMilli()-l.lastFlushMs.Load() < cfg.FlushMs {
		return nil
	}
	if l.logEndOffset.Load() == l.recoveryPoint.Load() {
		l.lastFlushMs.Store(l.now().UnixMilli())
		return nil
	}
	return l.Flush()
}

// Flush fsyncs every segment holding data past the recovery point, writes
// and fsyncs their indexes, and advances the recovery point to the log end
// offset seen at the start.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	start := time.Now()
	defer func() { metrics.LogFlushed(time.Since(start)) }()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return errLogClosed
	}
	leo := l.logEndOffset.Load()
	segs := l.segmentList()
	l.mu.Unlock()
	rp := l.recoveryPoint.Load()
	for i, s := range segs {
		if i+1 < len(segs) && segs[i+1].baseOffset <= rp {
			continue
		}
		if err := s.flush(); err != nil {
			return err
		}
	}
	// Epochs first: the recovery point must not pass an epoch entry that is
	// only in memory (see leaderEpochCache).
	if err := l.epochs.flush(); err != nil {
		return err
	}
	if leo > rp {
		l.recoveryPoint.Store(leo)
	}
	l.lastFlushMs.Store(l.now().UnixMilli())
	return nil
}

// Close flushes everything, snapshots producer state at the log end offset
// and closes all files. It is the clean shutdown path.
func (l *Log) Close() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return nil
	}
	leo := l.logEndOffset.Load()
	var errs []error
	if err := l.mu.producers.takeSnapshot(leo, true, l.snapshotPruneBound()); err != nil {
		errs = append(errs, fmt.Errorf("producer snapshot: %w", err))
	}
	if err := l.epochs.flush(); err != nil {
		errs = append(errs, fmt.Errorf("leader epoch checkpoint: %w", err))
	}
	for _, s := range l.segmentList() {
		if err := s.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		l.recoveryPoint.Store(leo)
	}
	l.mu.closed = true
	l.runPendingDeletes()
	return errors.Join(errs...)
}

// Delete closes the log and removes its directory: it is first renamed to
// "<topic>-<partition>.<uuid hex>-delete", as Kafka does, so a crash midway
// leaves a directory the Manager removes at the next start.
func (l *Log) Delete() error {
	l.flushMu.Lock()
	l.mu.Lock()
	if !l.mu.closed {
		for _, s := range l.segmentList() {
			s.closeNoFlush()
		}
		l.mu.closed = true
	}
	l.runPendingDeletes()
	l.mu.Unlock()
	l.flushMu.Unlock()
	target, err := deleteDirName(l.dir, l.topic, l.partition)
	if err != nil {
		return err
	}
	if err := os.Rename(l.dir, target); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	return os.RemoveAll(target)
}

// scheduleDelete removes a segment (already renamed to .deleted) after
// file.delete.delay.ms, giving in-flight reads time to finish.
func (l *Log) scheduleDelete(s *segment) {
	delay := time.Duration(l.cfg.Load().FileDeleteDelayMs) * time.Millisecond
	if delay <= 0 {
		if err := s.removeFiles(); err != nil {
			l.logger.Warn("deleting segment files", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
		}
		return
	}
	l.pendingDeletes.Lock()
	defer l.pendingDeletes.Unlock()
	if l.pendingDeletes.timers == nil {
		l.pendingDeletes.timers = make(map[*segment]*time.Timer)
	}
	l.pendingDeletes.timers[s] = time.AfterFunc(delay, func() {
		l.pendingDeletes.Lock()
		_, ok := l.pendingDeletes.timers[s]
		delete(l.pendingDeletes.timers, s)
		l.pendingDeletes.Unlock()
		if ok {
			if err := s.removeFiles(); err != nil {
				l.logger.Warn("deleting segment files", "dir", l.dir, "base_offset", s.baseOffset, "err", err)
			}
		}
	})
}

// runPendingDeletes performs every scheduled segment deletion now.
func (l *Log) runPendingDeletes() {
	l.pendingDeletes.Lock()
	timers := l.pendingDeletes.timers
	l.pendingDeletes.timers = nil
	l.pendingDeletes.Unlock()
	for s, t := range timers {
		t.Stop()
		_ = s.removeFiles()
	}
}
