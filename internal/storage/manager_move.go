package storage

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
)

// futureDirSuffix ends the name of a log being copied to another log dir
// ("<topic>-<partition>.<random hex>-future", Kafka's future log). One left
// by a crash is removed at start: the move is not resumed, the replica
// stays where it was.
const futureDirSuffix = "-future"

// dirByPath returns the log dir at path (compared cleaned and absolute), or
// nil.
func (m *Manager) dirByPath(path string) *logDir {
	want, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	for _, d := range m.dirs {
		if p, err := filepath.Abs(d.path); err == nil && p == want {
			return d
		}
	}
	return nil
}

// checkMoveTarget is AlterReplicaLogDirs's validation of a destination:
// LOG_DIR_NOT_FOUND for a path that is not one of log.dirs, and
// KAFKA_STORAGE_ERROR while any log dir is offline (Kafka creates no future
// log then, so one partition never has copies in several dirs).
func (m *Manager) checkMoveTarget(dest string) (*logDir, error) {
	d := m.dirByPath(dest)
	if d == nil {
		return nil, fmt.Errorf("%w: %s is not one of log.dirs", kerr.LogDirNotFound, dest)
	}
	for _, od := range m.dirs {
		if od.offline.Load() {
			return nil, fmt.Errorf("%w: log dir %s is offline", kerr.KafkaStorageError, od.path)
		}
	}
	return d, nil
}

// PreferDir records dest as the log dir to create tp in should it be
// assigned to this broker later (AlterReplicaLogDirs for a replica not
// hosted yet, as Kafka's preferred log dir).
func (m *Manager) PreferDir(tp TopicPartition, dest string) error {
	d, err := m.checkMoveTarget(dest)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.mu.preferred[tp] = d
	m.mu.Unlock()
	return nil
}

// MoveLog moves tp's open log to the log dir dest (AlterReplicaLogDirs)
// and returns the log that replaces it; the old one is closed and its
// directory deleted. The log is copied while it keeps serving (Log.moveTo:
// appends are held back only for the last bytes), to
// "<dest>/<topic>-<partition>.<hex>-future", which is then renamed to its
// final name and opened. A log already in dest is returned as it is. While
// the move runs, Delete and GetOrCreate of tp wait for it (the log stays in
// the Manager, so Get and GetOrCreate of the open log do not). If the copy
// fails the log stays where it was, open; if opening the copy fails, the
// old directory (which the copy never touched) is opened again.
func (m *Manager) MoveLog(tp TopicPartition, dest string) (*Log, error) {
	run, err := m.BeginMove(tp, dest)
	if err != nil {
		return nil, err
	}
	return run()
}

// BeginMove is the first step of MoveLog: it validates the move and
// registers it (Moving reports it from then on, as Kafka's future log
// exists once AlterReplicaLogDirs answers), and returns the rest of the
// move, which the caller must run (in the background).
func (m *Manager) BeginMove(tp TopicPartition, dest string) (run func() (*Log, error), err error) {
	d, err := m.checkMoveTarget(dest)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l, src := m.mu.logs[tp], m.mu.dirOf[tp]
	switch {
	case m.mu.closed:
		return nil, errManagerClosed
	case l == nil:
		return nil, fmt.Errorf("%w: %s is not open here", kerr.ReplicaNotAvailable, tp)
	case src == d:
		return func() (*Log, error) { return l, nil }, nil
	case m.mu.opening[tp] != nil:
		return nil, fmt.Errorf("%w: %s is already being moved, opened or deleted", kerr.ReplicaNotAvailable, tp)
	}
	p := &pendingChange{dir: d, done: make(chan struct{})}
	m.mu.opening[tp] = p
	progress := &MoveProgress{Dir: d.path}
	m.mu.moves[tp] = progress
	return func() (*Log, error) { return m.runMove(tp, l, src, d, p, progress) }, nil
}

// runMove is the rest of MoveLog, once BeginMove has registered it.
func (m *Manager) runMove(tp TopicPartition, l *Log, src, d *logDir, p *pendingChange, progress *MoveProgress) (*Log, error) {
	nl, retired, err := m.moveLog(tp, l, src, d, progress)

	m.mu.Lock()
	delete(m.mu.moves, tp)
	if err == nil {
		m.mu.logs[tp] = nl
		m.mu.dirOf[tp] = d
	}
	delete(m.mu.opening, tp)
	p.log, p.err = nl, err
	close(p.done)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// Delete drops pending segment deletions and finds the directory gone
	// (or, if it could not be set aside, tries again to remove it); the
	// retired directory is removed here.
	if derr := l.Delete(); derr != nil {
		m.logger.Warn("closing a moved log", "partition", tp.String(), "dir", l.Dir(), "err", derr)
	}
	if retired != "" {
		if derr := os.RemoveAll(retired); derr != nil {
			m.logger.Warn("removing the old directory of a moved log", "partition", tp.String(), "dir", retired, "err", derr)
		}
	}
	for _, cd := range []*logDir{src, d} {
		if cerr := m.writeCheckpoints(cd); cerr != nil {
			m.logger.Error("writing checkpoints after a log move", "dir", cd.path, "err", cerr)
		}
	}
	if cerr := m.cleaner.moveDir(tp, src, d); cerr != nil {
		m.logger.Warn("moving the cleaner offset of a moved log", "partition", tp.String(), "err", cerr)
	}
	m.logger.Info("moved log to another log dir", "partition", tp.String(), "from", src.path, "to", d.path)
	return nl, nil
}

// moveLog copies l from src into d and opens the copy; retired is the old
// directory, renamed to be deleted ("" if it could not be).
func (m *Manager) moveLog(tp TopicPartition, l *Log, src, d *logDir, progress *MoveProgress) (nl *Log, retired string, err error) {
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, "", err
	}
	future := filepath.Join(d.path, fmt.Sprintf("%s.%s%s", tp, hex.EncodeToString(id[:]), futureDirSuffix))
	if err := os.MkdirAll(future, 0o755); err != nil {
		return nil, "", fmt.Errorf("%w: creating %s: %v", kerr.KafkaStorageError, future, err)
	}
	cfg := l.Config()
	rp := l.RecoveryPoint()
	// num.replica.alter.log.dirs.threads moves copy at once; the others
	// wait here, their logs serving meanwhile.
	select {
	case m.moveSlots <- struct{}{}:
	case <-m.stop:
		return nil, "", errManagerClosed
	}
	moved, err := l.moveTo(d.fs, future, progress, func(n int64) { m.moveThrottle.wait(n, m.stop) })
	<-m.moveSlots
	if err == nil {
		final := filepath.Join(d.path, tp.String())
		if err = os.Rename(future, final); err == nil {
			future = final
			if err = syncDir(d.path); err == nil {
				// The old directory is set aside before the copy is opened,
				// so a crash from here on finds the partition in one log
				// dir only (a "-delete" directory is removed at start). If
				// that fails the copy, complete and synced, still takes
				// over: the old directory is left for the operator.
				var rerr error
				if retired, rerr = retireDir(l.Dir(), tp); rerr != nil {
					m.logger.Error("setting aside the old directory of a moved log", "partition", tp.String(), "dir", l.Dir(), "err", rerr)
				}
				if nl, err = Open(final, cfg, OpenOptions{
					Topic: tp.Topic, Partition: tp.Partition, TopicID: l.TopicID(),
					RecoveryPoint: moved.logEndOffset, LogStartOffset: moved.logStartOffset, HighWatermark: moved.highWatermark,
					CleanShutdown: true, Logger: m.logger, FS: d.fs,
				}); err == nil {
					m.watchLogStart(nl, d)
					return nl, retired, nil
				}
				if retired != "" {
					// Back to its name, or the copy is kept: one of the
					// two must hold the partition.
					rerr := os.Rename(retired, l.Dir())
					if rerr == nil {
						rerr = syncDir(src.path)
					}
					if rerr != nil {
						return nil, "", fmt.Errorf("%w: moving %s to %s: %v; restoring %s: %v", kerr.KafkaStorageError, tp, d.path, err, l.Dir(), rerr)
					}
				}
			}
		}
	}
	if rerr := os.RemoveAll(future); rerr != nil {
		m.logger.Error("removing a failed log copy", "dir", future, "err", rerr)
	}
	// A log closed because its dir went offline (takeOffline) stays
	// closed: it is not reopened in the failed dir.
	if !l.isClosed() || src.offline.Load() {
		return nil, "", fmt.Errorf("%w: moving %s to %s: %v", kerr.KafkaStorageError, tp, d.path, err)
	}
	// The copy was complete but could not be made the log: the old
	// directory is intact (the move only read it), so it serves again.
	old, oerr := Open(l.Dir(), cfg, OpenOptions{
		Topic: tp.Topic, Partition: tp.Partition, TopicID: l.TopicID(),
		RecoveryPoint: rp, LogStartOffset: moved.logStartOffset, HighWatermark: moved.highWatermark,
		Logger: m.logger, FS: src.fs,
	})
	if oerr != nil {
		return nil, "", fmt.Errorf("%w: moving %s to %s: %v; reopening it in %s: %v", kerr.KafkaStorageError, tp, d.path, err, src.path, oerr)
	}
	m.mu.Lock()
	m.mu.logs[tp] = old
	m.mu.Unlock()
	m.watchLogStart(old, src)
	return nil, "", fmt.Errorf("%w: moving %s to %s: %v (it stays in %s)", kerr.KafkaStorageError, tp, d.path, err, src.path)
}

// retireDir renames the directory of a closed log to a "-delete" name and
// syncs its parent, returning the new name (also with an error from the
// sync).
func retireDir(dir string, tp TopicPartition) (string, error) {
	target, err := deleteDirName(dir, tp.Topic, tp.Partition)
	if err != nil {
		return "", err
	}
	if err := os.Rename(dir, target); err != nil {
		return "", err
	}
	return target, syncDir(filepath.Dir(dir))
}

// CheckMoveTarget validates dest as AlterReplicaLogDirs does (see
// checkMoveTarget) and returns it as configured in log.dirs.
func (m *Manager) CheckMoveTarget(dest string) (string, error) {
	d, err := m.checkMoveTarget(dest)
	if err != nil {
		return "", err
	}
	return d.path, nil
}

// Moving returns the progress of tp's move to another log dir, or nil.
func (m *Manager) Moving(tp TopicPartition) *MoveProgress {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.moves[tp]
}

// SetMoveBytesPerSecond changes the throttle of replica moves
// (replica.alter.log.dirs.io.max.bytes.per.second, a dynamic broker config).
func (m *Manager) SetMoveBytesPerSecond(rate int64) { m.moveThrottle.setRate(rate) }
