package storage

import "errors"

// scheduleRollFlush fsyncs the segments below newBase (the one just rolled
// and any older one past the recovery point) in the background and then
// advances the recovery point to newBase, as Kafka's UnifiedLog.roll
// schedules flushUptoOffsetExclusive: a rolled segment is on disk soon
// without the append that rolled it, or any later one, waiting for an
// fsync. Called with mu held; the flush itself takes flushMu (never mu
// across I/O), so it is ordered with truncation, deletion and Close.
func (l *Log) scheduleRollFlush(newBase int64) {
	l.rollFlushes.Add(1)
	go func() {
		defer l.rollFlushes.Done()
		if err := l.flushUpTo(newBase); err != nil && !errors.Is(err, errLogClosed) {
			// The file system has reported the disk error to the Manager,
			// which takes the log dir offline (vfs.Reporting).
			l.logger.Error("flushing rolled segment", "dir", l.dir, "offset", newBase, "err", err)
		}
	}()
}

// flushUpTo fsyncs every segment holding data in [recovery point, end) and
// moves the recovery point to end, capped by the log end offset seen at the
// start (a truncation may have cut the log below end since the roll).
func (l *Log) flushUpTo(end int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return errLogClosed
	}
	end = min(end, l.logEndOffset.Load())
	segs := l.segmentList()
	l.mu.Unlock()
	rp := l.recoveryPoint.Load()
	if end <= rp {
		return nil
	}
	for i, s := range segs {
		if s.baseOffset >= end {
			break
		}
		if i+1 < len(segs) && segs[i+1].baseOffset <= rp {
			continue
		}
		if err := s.flush(); err != nil {
			return err
		}
	}
	// Epochs first, as in flushLocked: the recovery point must not pass an
	// epoch entry that is only in memory.
	if err := l.epochs.flush(); err != nil {
		return err
	}
	if end > l.recoveryPoint.Load() {
		l.recoveryPoint.Store(end)
	}
	return nil
}

// WaitRollFlushes waits for the background flushes of rolled segments
// started so far (tests, and Close through the Manager).
func (l *Log) WaitRollFlushes() { l.rollFlushes.Wait() }
