package storage

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/vltava/vltava/internal/record"
	"github.com/vltava/vltava/internal/storage/vfs"
)

// Cleaned segments reach the log in three steps, as in Kafka's
// LogCleaner/UnifiedLog.replaceSegments, so that a crash at any point leaves
// a valid log:
//
//  1. the group is rewritten into "<base>.log.cleaned" (and .index.cleaned,
//     .timeindex.cleaned), which is synced;
//  2. the files are renamed to ".swap" (indexes first, the log last) and the
//     directory is synced: from here on the clean is committed;
//  3. under the log's append lock the old segments are renamed ".deleted"
//     (removed after file.delete.delay.ms), the ".swap" files lose their
//     suffix and the segment list is swapped in one atomic store.
//
// On Open, completeInterruptedCleaning finishes whatever a crash cut short:
// ".cleaned" files are deleted (step 1 never committed), and a
// "<base>.log.swap" replaces every segment whose base lies in its offset
// range, its indexes being rebuilt by the loader (step 2 committed).
const (
	cleanedFileSuffix = ".cleaned"
	swapFileSuffix    = ".swap"
)

// createCleanedSegment creates an empty segment whose files carry the
// ".cleaned" suffix; segment.append then writes and indexes it as usual.
func createCleanedSegment(fs vfs.FS, dir string, base int64, cfg *Config, now time.Time) (*segment, error) {
	removeCleanerFiles(dir, base)
	f, err := fs.OpenFile(segmentFileName(dir, base, logFileSuffix+cleanedFileSuffix), os.O_CREATE|os.O_RDWR|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	oi, err := openOffsetIndex(fs, segmentFileName(dir, base, indexFileSuffix+cleanedFileSuffix), base, cfg.SegmentIndexBytes, 0)
	if oi == nil {
		f.Close()
		return nil, err
	}
	ti, err := openTimeIndex(fs, segmentFileName(dir, base, timeIndexFileSuffix+cleanedFileSuffix), base, cfg.SegmentIndexBytes)
	if ti == nil {
		f.Close()
		oi.file.close()
		return nil, err
	}
	txn, _, err := openTxnIndex(fs, segmentFileName(dir, base, txnIndexFileSuffix+cleanedFileSuffix), math.MaxInt64)
	if err != nil {
		f.Close()
		oi.file.close()
		ti.file.close()
		return nil, err
	}
	s := &segment{
		fs:                    fs,
		dir:                   dir,
		baseOffset:            base,
		log:                   f,
		offsetIndex:           oi,
		timeIndex:             ti,
		txn:                   txn,
		created:               now,
		rollingBasedTimestamp: -1,
		nextOffset:            base,
	}
	s.maxTs.timestamp, s.maxTs.offset = -1, base
	return s, nil
}

// renameCleanerFiles moves a cleaned segment's files from one stage suffix
// to another ("" = the final names): indexes first, so a ".log" file at a
// stage implies its indexes are there too or were already moved.
func renameCleanerFiles(s *segment, from, to string) error {
	if err := s.offsetIndex.file.rename(segmentFileName(s.dir, s.baseOffset, indexFileSuffix+to)); err != nil {
		return err
	}
	if err := s.timeIndex.file.rename(segmentFileName(s.dir, s.baseOffset, timeIndexFileSuffix+to)); err != nil {
		return err
	}
	if err := s.txn.rename(segmentFileName(s.dir, s.baseOffset, txnIndexFileSuffix+to)); err != nil {
		return err
	}
	return s.fs.Rename(segmentFileName(s.dir, s.baseOffset, logFileSuffix+from), segmentFileName(s.dir, s.baseOffset, logFileSuffix+to))
}

// cleanGroup rewrites one group of segments through f into a single cleaned
// segment and swaps it in (Kafka's cleanSegments).
func (l *Log) cleanGroup(group []*segment, f *cleanFilter, cfg *Config, res *CleanResult, opts CleanerOptions) (err error) {
	base := group[0].baseOffset
	cleaned, err := createCleanedSegment(l.fs, l.dir, base, cfg, l.now())
	if err != nil {
		return fmt.Errorf("%w: creating cleaned segment %d: %v", kerr.KafkaStorageError, base, err)
	}
	leaveFiles := false
	defer func() {
		if err != nil {
			cleaned.closeNoFlush()
			if !leaveFiles {
				removeCleanerFiles(l.dir, base)
			}
		}
	}()
	var newest time.Time
	for _, s := range group {
		if fi, err := s.log.Stat(); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		err := forEachBatch(s, func(h *record.Header, batch []byte) (bool, error) {
			if isStopped(opts.stop) {
				return false, fmt.Errorf("%w: shutting down", errCleaningAborted)
			}
			res.BytesRead += int64(len(batch))
			res.RecordsRead += int64(h.NumRecords)
			opts.throttle.maybeThrottle(len(batch), opts.stop)
			out, kept, err := f.filterBatch(h, batch)
			if err != nil || out == nil {
				return err == nil, err
			}
			oh, err := parseStoredHeader(out)
			if err != nil {
				return false, err
			}
			if err := cleaned.append(out, &oh, cfg.IndexIntervalBytes); err != nil {
				return false, fmt.Errorf("%w: writing cleaned segment %d: %v", kerr.KafkaStorageError, base, err)
			}
			res.BytesWritten += int64(len(out))
			res.RecordsRetained += int64(kept)
			opts.throttle.maybeThrottle(len(out), opts.stop)
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	cleaned.onBecomeInactive()
	for _, e := range f.txns.kept {
		if err := cleaned.txn.append(e); err != nil {
			return fmt.Errorf("%w: writing the transaction index of cleaned segment %d: %v", kerr.KafkaStorageError, base, err)
		}
	}
	if err := cleaned.flush(); err != nil {
		return fmt.Errorf("%w: syncing cleaned segment %d: %v", kerr.KafkaStorageError, base, err)
	}
	// Like Kafka, the cleaned segment keeps the newest modification time of
	// what it replaces: time retention falls back to it for segments
	// without timestamps.
	if !newest.IsZero() {
		_ = os.Chtimes(segmentFileName(l.dir, base, logFileSuffix+cleanedFileSuffix), newest, newest)
	}
	if opts.crashAfter == stageCleaned {
		leaveFiles = true
		return errInjectedCrash
	}
	if err := renameCleanerFiles(cleaned, cleanedFileSuffix, swapFileSuffix); err != nil {
		return fmt.Errorf("%w: renaming cleaned segment %d: %v", kerr.KafkaStorageError, base, err)
	}
	if err := syncDir(l.dir); err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	if opts.crashAfter == stageSwap {
		leaveFiles = true
		return errInjectedCrash
	}
	if err := l.replaceSegments(cleaned, group); err != nil {
		if errors.Is(err, errCleaningAborted) {
			return err
		}
		// The swap is committed on disk; the next Open completes it.
		leaveFiles = true
		return err
	}
	if err := syncDir(l.dir); err != nil {
		l.logger.Warn("syncing log dir after swapping in cleaned segment", "dir", l.dir, "err", err)
	}
	return nil
}

// replaceSegments swaps cleaned (whose files end in ".swap") in for old,
// which must still be consecutive, non-active segments of the log.
func (l *Log) replaceSegments(cleaned *segment, old []*segment) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return fmt.Errorf("%w: log closed", errCleaningAborted)
	}
	segs := l.segmentList()
	at := -1
	for i, s := range segs {
		if s == old[0] {
			at = i
			break
		}
	}
	if at < 0 || at+len(old) >= len(segs) {
		return fmt.Errorf("%w: segments of %s changed during cleaning", errCleaningAborted, l.dir)
	}
	for k, s := range old {
		if segs[at+k] != s {
			return fmt.Errorf("%w: segments of %s changed during cleaning", errCleaningAborted, l.dir)
		}
	}
	for _, s := range old {
		if err := s.renameForDeletion(); err != nil {
			return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
		}
	}
	if err := renameCleanerFiles(cleaned, swapFileSuffix, ""); err != nil {
		return fmt.Errorf("%w: %v", kerr.KafkaStorageError, err)
	}
	next := make([]*segment, 0, len(segs)-len(old)+1)
	next = append(next, segs[:at]...)
	next = append(next, cleaned)
	next = append(next, segs[at+len(old):]...)
	l.setSegmentsLocked(next)
	for _, s := range old {
		l.scheduleDelete(s)
	}
	return nil
}

// completeInterruptedCleaning finishes or undoes a clean cut short by a
// crash (Kafka's LogLoader handling of .cleaned and .swap files); it runs
// before the loader lists the segments.
func completeInterruptedCleaning(dir string, logger *slog.Logger) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var swaps, logs []int64
	changed := false
	for _, de := range ents {
		name := de.Name()
		switch {
		case strings.HasSuffix(name, cleanedFileSuffix):
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			changed = true
		case strings.HasSuffix(name, swapFileSuffix):
			if base, ok := parseOffsetFileName(name, logFileSuffix+swapFileSuffix); ok {
				swaps = append(swaps, base)
				continue
			}
			// Index swap files are dropped; the loader rebuilds the
			// indexes of the swapped-in log.
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			changed = true
		default:
			if base, ok := parseOffsetFileName(name, logFileSuffix); ok {
				logs = append(logs, base)
			}
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		swapPath := segmentFileName(dir, base, logFileSuffix+swapFileSuffix)
		end, err := swapFileEnd(swapPath, base)
		if err != nil {
			return err
		}
		for _, b := range logs {
			if b < base || b >= end {
				continue
			}
			logger.Info("replacing segment by the cleaned segment of an interrupted clean", "dir", dir, "base_offset", b, "cleaned_base_offset", base)
			for _, suf := range segmentFileSuffixes {
				if err := os.Remove(segmentFileName(dir, b, suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
			}
		}
		if err := os.Rename(swapPath, segmentFileName(dir, base, logFileSuffix)); err != nil {
			return err
		}
		changed = true
	}
	if changed {
		return syncDir(dir)
	}
	return nil
}

// swapFileEnd returns the offset after the last whole batch of a .swap log
// file (at least base+1, so the segment it replaces at base always goes).
func swapFileEnd(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := base + 1
	var buf [record.BatchHeaderSize]byte
	for pos := int64(0); pos+record.BatchHeaderSize <= fi.Size(); {
		if _, err := f.ReadAt(buf[:], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		h, err := parseStoredHeader(buf[:])
		if err != nil || int64(h.TotalSize()) > fi.Size()-pos {
			break // the loader's recovery cuts such a tail
		}
		end = max(end, h.LastOffset()+1)
		pos += int64(h.TotalSize())
	}
	return end, nil
}
