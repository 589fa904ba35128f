package storage

import (
	"syscall"
)

// DirFailureHandler is told, once per log dir that goes offline, after the
// dir's logs are closed: the dir, the partitions it held (open or only on
// disk) and whether every log dir is now offline (Kafka then stops the
// broker).
type DirFailureHandler func(dir string, partitions []TopicPartition, allOffline bool)

// SetDirFailureHandler installs the handler of dir failures (the partition
// layer, which stops serving the partitions and has the controller move
// their leadership away).
//
// Dirs that could not be read at start are handed to it now.
func (m *Manager) SetDirFailureHandler(h DirFailureHandler) {
	m.onDirFailure.Store(&h)
	for _, d := range m.dirs {
		if d.offlineAtStart {
			m.failures <- d
		}
	}
}

// offlineAtStartLocked returns a dir that could not be read at start, if
// any. While there is one, a partition not found in the others may be in
// it, so it is not created anywhere else: a replica recreated empty in
// another dir could be elected leader while the metadata still counts it
// in the ISR, and lose what the old one held (Kafka likewise creates no
// existing log while a log dir is offline). It stays offline here, and the
// controller moves it away, until the broker restarts with the dir back.
func (m *Manager) offlineAtStartLocked() *logDir {
	for _, d := range m.dirs {
		if d.offlineAtStart {
			return d
		}
	}
	return nil
}

// reportUnplaceable tells the DirFailureHandler that tp, assigned here but
// not found on an online dir, counts as in the offline dir d.
func (m *Manager) reportUnplaceable(d *logDir, tp TopicPartition) {
	if h := m.onDirFailure.Load(); h != nil {
		(*h)(d.path, []TopicPartition{tp}, false)
	}
}

// DirInfo describes one log dir for DescribeLogDirs.
type DirInfo struct {
	Path                    string
	Offline                 bool
	TotalBytes, UsableBytes int64 // -1 when unknown
}

// Dirs describes the log dirs, in log.dirs order. An offline dir's space is
// unknown (-1, as Kafka answers for it), not what it was when it failed.
func (m *Manager) Dirs() []DirInfo {
	out := make([]DirInfo, 0, len(m.dirs))
	for _, d := range m.dirs {
		info := DirInfo{Path: d.path, TotalBytes: -1, UsableBytes: -1}
		if info.Offline = d.offline.Load(); !info.Offline {
			info.TotalBytes, info.UsableBytes = d.totalBytes.Load(), d.usableBytes.Load()
		}
		out = append(out, info)
	}
	return out
}

// refreshDirSpace measures each online dir's total and usable bytes, for
// placement and DescribeLogDirs, off any lock.
func (m *Manager) refreshDirSpace() {
	for _, d := range m.dirs {
		if d.offline.Load() {
			continue
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(d.path, &st); err != nil {
			d.totalBytes.Store(-1)
			d.usableBytes.Store(-1)
			continue
		}
		d.totalBytes.Store(int64(st.Blocks) * int64(st.Bsize))
		d.usableBytes.Store(int64(st.Bavail) * int64(st.Bsize))
	}
}

// reportDirFailure is the log dir failure channel (Kafka's
// LogDirFailureChannel): the first disk error met on any file of d, by any
// code path, marks d offline and queues it for handleDirFailures. It may
// run with a log's locks held (vfs.Reporting), so it only flips a flag and
// sends on a channel with room for every dir.
func (m *Manager) reportDirFailure(d *logDir, op, path string, err error) {
	if !d.offline.CompareAndSwap(false, true) {
		return
	}
	d.failure.Store(&dirFailure{op: op, path: path, err: err})
	m.failures <- d
}

// dirFailure is the first disk error of a dir, logged by the handler.
type dirFailure struct {
	op, path string
	err      error
}

// failDirOf takes the dir of tp offline after a disk error that did not go
// through the dir's file system (index files, checkpoints).
func (m *Manager) failDirOf(tp TopicPartition, op string, err error) {
	m.mu.Lock()
	d := m.mu.dirOf[tp]
	m.mu.Unlock()
	if d != nil {
		m.reportDirFailure(d, op, tp.String(), err)
	}
}

// handleDirFailures runs until Close: for each dir that went offline it
// takes the dir's partitions out of the manager (they stay offline until
// restart), closes their logs without flushing (Kafka closes the handles;
// nothing more can be written there) and tells the DirFailureHandler.
func (m *Manager) handleDirFailures() {
	for {
		select {
		case <-m.stop:
			return
		case d := <-m.failures:
			m.takeOffline(d)
		}
	}
}

func (m *Manager) takeOffline(d *logDir) {
	if f := d.failure.Load(); f != nil {
		m.logger.Error("log dir failed; taking it offline", "dir", d.path, "op", f.op, "file", f.path, "err", f.err)
	}
	m.mu.Lock()
	var logs []*Log
	var tps []TopicPartition
	for tp, owner := range m.mu.dirOf {
		if owner == d {
			logs = append(logs, m.mu.logs[tp])
			tps = append(tps, tp)
			delete(m.mu.logs, tp)
			delete(m.mu.dirOf, tp)
			m.mu.offline[tp] = d
		}
	}
	for tp, owner := range m.mu.existing {
		if owner == d {
			tps = append(tps, tp)
			delete(m.mu.existing, tp)
			m.mu.offline[tp] = d
		}
	}
	m.mu.Unlock()
	for _, l := range logs {
		l.closeHandlers()
	}
	all := true
	for _, od := range m.dirs {
		all = all && od.offline.Load()
	}
	m.logger.Error("log dir offline", "dir", d.path, "partitions", len(tps), "all_dirs_offline", all)
	if h := m.onDirFailure.Load(); h != nil {
		(*h)(d.path, tps, all)
	}
}
