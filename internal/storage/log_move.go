package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/vltava/vltava/internal/storage/vfs"
)

// moveCatchUpBytes is when copying the live log stops going round without
// the append lock: once a round copied less than this, the last bytes are
// copied with appends held back.
const moveCatchUpBytes = 1 << 20

// moveRounds bounds the rounds without the append lock, so a log appended
// to faster than it is copied still finishes (with a longer final round).
const moveRounds = 20

// movedLog is what moveTo hands over to the log opened from the copy.
type movedLog struct {
	logStartOffset, highWatermark, logEndOffset int64
}

// moveTo copies the whole log into the empty directory dst (the future
// log of AlterReplicaLogDirs) and closes the log once dst holds all of it:
// Kafka copies a replica to a "-future" log that catches up and then takes
// its place. The copy runs while the log keeps taking appends; only the
// last round, which copies what was appended since the one before (under
// moveCatchUpBytes, unless appends outpace the copy), holds the append
// lock, with the producer state and leader epochs taken at the same log end
// offset. Throughout, the flush lock is held, so no truncation, retention
// or compaction changes bytes already copied (segments only grow), and the
// clean lock keeps the cleaner out; flushes (flush.messages) wait.
//
// Every copied file is fsynced before moveTo returns. On error the log is
// still open and unchanged and dst may hold a partial copy.
func (l *Log) moveTo(fs vfs.FS, dst string, progress *MoveProgress, pace func(n int64)) (movedLog, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	// Everything on disk first: the indexes of rolled segments are then
	// complete and are copied as they are; the active segment's (and any
	// rolled during the copy) are rebuilt when the copy is opened.
	if err := l.flushLocked(); err != nil {
		return movedLog{}, err
	}
	c := &logCopy{fs: fs, dst: dst, files: map[int64]*copiedSegment{}, progress: progress}
	defer c.close()
	segs := l.segmentList()
	for _, s := range segs[:len(segs)-1] {
		for _, suf := range []string{indexFileSuffix, timeIndexFileSuffix} {
			if err := copyWholeFile(segmentFileName(l.dir, s.baseOffset, suf), segmentFileName(dst, s.baseOffset, suf)); err != nil {
				return movedLog{}, err
			}
		}
	}
	for range moveRounds {
		// Segments and their bytes are published before the log end
		// offset moves, so once the round has copied every segment as it
		// found it, the copy reaches at least the log end offset read
		// before it.
		leo := l.logEndOffset.Load()
		n, err := c.round(l.segmentList(), pace)
		if err != nil {
			return movedLog{}, err
		}
		progress.copiedOffset.Store(leo)
		if n < moveCatchUpBytes {
			break
		}
	}

	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return movedLog{}, errLogClosed
	}
	// Not paced: appends are waiting.
	if _, err := c.round(l.segmentList(), nil); err != nil {
		l.mu.Unlock()
		return movedLog{}, err
	}
	res := movedLog{logStartOffset: l.logStartOffset.Load(), highWatermark: l.highWatermark.Load(), logEndOffset: l.logEndOffset.Load()}
	err := os.WriteFile(segmentFileName(dst, res.logEndOffset, snapshotFileSuffix), l.mu.producers.encodeSnapshot(), 0o644)
	if err == nil {
		err = l.epochs.flush()
	}
	// Transaction indexes change with abort markers, so they are copied
	// here, under the append lock, from memory.
	var txnIndexes []int64
	for _, s := range l.segmentList() {
		if entries := s.txn.list(); err == nil && len(entries) > 0 {
			err = os.WriteFile(segmentFileName(dst, s.baseOffset, txnIndexFileSuffix), encodeTxnIndex(entries), 0o644)
			txnIndexes = append(txnIndexes, s.baseOffset)
		}
	}
	for _, name := range []string{LeaderEpochCheckpointFile, PartitionMetadataFile} {
		if err == nil {
			err = copyWholeFile(filepath.Join(l.dir, name), filepath.Join(dst, name))
		}
	}
	if err != nil {
		l.mu.Unlock()
		return movedLog{}, err
	}
	// From here the copy is the log: appends and reads of this one fail
	// (KAFKA_STORAGE_ERROR) until the caller has opened the copy.
	for _, s := range l.segmentList() {
		s.closeNoFlush()
	}
	l.mu.closed = true
	l.mu.Unlock()

	if err := c.sync(); err != nil {
		return res, err
	}
	for _, name := range []string{LeaderEpochCheckpointFile, PartitionMetadataFile, fmt.Sprintf("%020d%s", res.logEndOffset, snapshotFileSuffix)} {
		if err := syncFile(filepath.Join(dst, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, err
		}
	}
	for _, s := range segs[:len(segs)-1] {
		for _, suf := range []string{indexFileSuffix, timeIndexFileSuffix} {
			if err := syncFile(segmentFileName(dst, s.baseOffset, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return res, err
			}
		}
	}
	for _, base := range txnIndexes {
		if err := syncFile(segmentFileName(dst, base, txnIndexFileSuffix)); err != nil {
			return res, err
		}
	}
	return res, syncDir(dst)
}

// logCopy is the state of a log being copied: the copy of each segment's
// .log and how much of it is copied.
type logCopy struct {
	fs       vfs.FS
	dst      string
	files    map[int64]*copiedSegment
	buf      []byte
	progress *MoveProgress
}

// MoveProgress is how far a log move has come, for DescribeLogDirs's
// future replica: bytes copied, and the offset the copy has reached.
type MoveProgress struct {
	Dir          string // the destination log dir
	copiedBytes  atomic.Int64
	copiedOffset atomic.Int64
}

// CopiedBytes is the size of the copy so far.
func (p *MoveProgress) CopiedBytes() int64 { return p.copiedBytes.Load() }

// CopiedOffset is the offset below which the copy holds every batch.
func (p *MoveProgress) CopiedOffset() int64 { return p.copiedOffset.Load() }

type copiedSegment struct {
	f      vfs.File
	copied int64
}

// round copies what each segment holds beyond what was copied already and
// returns how many bytes that was; pace, if set, is called before each
// chunk (the throttle).
func (c *logCopy) round(segs []*segment, pace func(n int64)) (int64, error) {
	if c.buf == nil {
		c.buf = make([]byte, 1<<20)
	}
	var total int64
	for _, s := range segs {
		cs := c.files[s.baseOffset]
		if cs == nil {
			f, err := c.fs.OpenFile(segmentFileName(c.dst, s.baseOffset, logFileSuffix), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
			if err != nil {
				return total, err
			}
			cs = &copiedSegment{f: f}
			c.files[s.baseOffset] = cs
		}
		size := s.size.Load()
		for cs.copied < size {
			chunk := min(int64(len(c.buf)), size-cs.copied)
			if pace != nil {
				pace(chunk)
			}
			n, err := s.log.ReadAt(c.buf[:chunk], cs.copied)
			if n == 0 && err != nil {
				return total, err
			}
			if _, err := cs.f.WriteAt(c.buf[:n], cs.copied); err != nil {
				return total, err
			}
			cs.copied += int64(n)
			total += int64(n)
			c.progress.copiedBytes.Add(int64(n))
		}
	}
	return total, nil
}

func (c *logCopy) sync() error {
	for _, cs := range c.files {
		if err := cs.f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

func (c *logCopy) close() {
	for _, cs := range c.files {
		cs.f.Close()
	}
}

// copyWholeFile copies src to dst; a missing src copies nothing.
func copyWholeFile(src, dst string) error {
	in, err := os.Open(src)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
