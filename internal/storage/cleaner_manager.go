package storage

import (
	"errors"
	"path/filepath"
	"sync"
	"time"
)

// CleanerCheckpointFile is the per-log-dir file recording, per partition,
// the offset below which its log is compacted (Kafka's
// cleaner-offset-checkpoint, same text format as the other offset
// checkpoints).
const CleanerCheckpointFile = "cleaner-offset-checkpoint"

// defaultCleanerBackoff is log.cleaner.backoff.ms's default.
const defaultCleanerBackoff = 15 * time.Second

// logCleaner is the Manager's compaction scheduler (Kafka's LogCleaner with
// log.cleaner.threads threads plus LogCleanerManager): each pass picks the
// compacted log with the highest dirty ratio at or above its
// min.cleanable.dirty.ratio, or any whose dirty data is older than
// max.compaction.lag.ms or whose oldest kept tombstone's delete horizon has
// passed, among those no other pass is cleaning, compacts it and records the
// new checkpoint. Passes share log.cleaner.io.max.bytes.per.second, and
// each gets log.cleaner.dedupe.buffer.size / threads for its offset map, as
// in Kafka.
//
// Thread-safety: mu guards the maps; writeMu serializes checkpoint file
// writes (taken before mu, and no file I/O happens under mu); pickMu makes
// choosing a log and marking it in progress one step.
type logCleaner struct {
	m           *Manager
	threads     int
	dedupeBytes int64 // per pass
	loadFactor  float64
	backoff     time.Duration
	throttle    *ioThrottle

	pickMu  sync.Mutex
	writeMu sync.Mutex

	mu struct {
		sync.Mutex
		checkpoints map[*logDir]map[TopicPartition]int64
		// horizons holds the earliest delete horizon (ms) of a tombstone
		// each log kept at its last clean.
		horizons map[TopicPartition]int64
		// uncleanable lists logs whose cleaning failed; like Kafka they
		// are skipped until restart.
		uncleanable map[TopicPartition]bool
		// inProgress lists the logs a pass is cleaning now.
		inProgress map[TopicPartition]bool
		// passDone is closed and replaced when a pass ends.
		passDone chan struct{}
	}
}

// newLogCleaner reads every dir's cleaner checkpoint.
func newLogCleaner(m *Manager) (*logCleaner, error) {
	c := &logCleaner{m: m, threads: max(m.cfg.CleanerThreads, 1), dedupeBytes: m.cfg.CleanerDedupeBufferBytes,
		loadFactor: m.cfg.CleanerLoadFactor, backoff: m.cfg.CleanerBackoff, throttle: newIOThrottle(m.cfg.CleanerIOMaxBytesPerSecond)}
	if c.dedupeBytes <= 0 {
		c.dedupeBytes = defaultDedupeBufferBytes
	}
	c.dedupeBytes /= int64(c.threads)
	if c.backoff <= 0 {
		c.backoff = defaultCleanerBackoff
	}
	c.mu.checkpoints = make(map[*logDir]map[TopicPartition]int64, len(m.dirs))
	c.mu.horizons = make(map[TopicPartition]int64)
	c.mu.uncleanable = make(map[TopicPartition]bool)
	c.mu.inProgress = make(map[TopicPartition]bool)
	c.mu.passDone = make(chan struct{})
	for _, d := range m.dirs {
		if d.offline.Load() {
			c.mu.checkpoints[d] = map[TopicPartition]int64{}
			continue
		}
		cp, err := ReadOffsetCheckpoint(filepath.Join(d.path, CleanerCheckpointFile))
		if err != nil {
			return nil, err
		}
		c.mu.checkpoints[d] = cp
	}
	return c, nil
}

// run is the cleaner goroutine: clean while there is work, else back off
// for log.cleaner.backoff.ms.
func (c *logCleaner) run(stop <-chan struct{}) {
	t := time.NewTimer(c.backoff)
	defer t.Stop()
	for {
		cleaned, err := c.cleanFilthiestLog(time.Now(), stop)
		if err != nil {
			c.m.logger.Error("log cleaner", "err", err)
		}
		if cleaned && !isStopped(stop) {
			continue
		}
		t.Reset(c.backoff)
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// cleanerCandidate is a compacted log and how dirty it is.
type cleanerCandidate struct {
	tp         TopicPartition
	log        *Log
	dir        *logDir
	checkpoint int64
	ratio      float64
}

// pickFilthiest chooses the log to clean next (grabFilthiestCompactedLog).
func (c *logCleaner) pickFilthiest(nowMs int64) (cleanerCandidate, bool) {
	m := c.m
	m.mu.Lock()
	cands := make([]cleanerCandidate, 0, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		if l.cfg.Load().Compact {
			cands = append(cands, cleanerCandidate{tp: tp, log: l, dir: m.mu.dirOf[tp]})
		}
	}
	m.mu.Unlock()

	var best cleanerCandidate
	found := false
	for _, cand := range cands {
		c.mu.Lock()
		if c.mu.uncleanable[cand.tp] || c.mu.inProgress[cand.tp] {
			c.mu.Unlock()
			continue
		}
		cand.checkpoint = c.mu.checkpoints[cand.dir][cand.tp]
		horizon, hasHorizon := c.mu.horizons[cand.tp]
		c.mu.Unlock()
		cfg := cand.log.cfg.Load()
		r := cand.log.cleanableRange(nowMs, cand.checkpoint)
		cand.ratio = r.dirtyRatio()
		eligible := r.dirtyBytes > 0 && (r.needCompactionNow || cand.ratio >= cfg.MinCleanableDirtyRatio)
		if !eligible && hasHorizon && horizon <= nowMs {
			// Tombstones are due for removal even though nothing new is
			// dirty (KIP-534).
			eligible = true
		}
		if !eligible {
			continue
		}
		if r.needCompactionNow {
			cand.ratio = 2 // overdue logs go first
		}
		if !found || cand.ratio > best.ratio {
			best, found = cand, true
		}
	}
	return best, found
}

// cleanFilthiestLog cleans at most one log and reports whether it did.
func (c *logCleaner) cleanFilthiestLog(now time.Time, stop <-chan struct{}) (bool, error) {
	nowMs := now.UnixMilli()
	c.pickMu.Lock()
	cand, ok := c.pickFilthiest(nowMs)
	if ok {
		c.mu.Lock()
		c.mu.inProgress[cand.tp] = true
		c.mu.Unlock()
	}
	c.pickMu.Unlock()
	if !ok {
		return false, nil
	}
	defer func() {
		c.mu.Lock()
		delete(c.mu.inProgress, cand.tp)
		close(c.mu.passDone)
		c.mu.passDone = make(chan struct{})
		c.mu.Unlock()
	}()
	res, err := cand.log.Compact(now, cand.checkpoint, CleanerOptions{DedupeBufferBytes: c.dedupeBytes, LoadFactor: c.loadFactor, throttle: c.throttle, stop: stop})
	if errors.Is(err, errCleaningAborted) || errors.Is(err, errLogClosed) {
		c.m.logger.Info("log cleaning aborted", "partition", cand.tp.String(), "reason", err)
		return false, nil
	}
	if err != nil {
		c.mu.Lock()
		c.mu.uncleanable[cand.tp] = true
		c.mu.Unlock()
		return false, err
	}
	c.mu.Lock()
	if c.mu.checkpoints[cand.dir] == nil {
		c.mu.checkpoints[cand.dir] = make(map[TopicPartition]int64)
	}
	c.mu.checkpoints[cand.dir][cand.tp] = res.EndOffset
	if res.NextDeleteHorizonMs >= 0 && res.NextDeleteHorizonMs > nowMs {
		c.mu.horizons[cand.tp] = res.NextDeleteHorizonMs
	} else {
		// None kept, or only ones past their horizon that this pass
		// could not reach (beyond a full offset map); the checkpoint
		// moving on brings those back as dirty data.
		delete(c.mu.horizons, cand.tp)
	}
	c.mu.Unlock()
	return true, c.writeCheckpoint(cand.dir)
}

// writeCheckpoint writes d's cleaner-offset-checkpoint.
func (c *logCleaner) writeCheckpoint(d *logDir) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	c.mu.Lock()
	cp := make(map[TopicPartition]int64, len(c.mu.checkpoints[d]))
	for tp, off := range c.mu.checkpoints[d] {
		cp[tp] = off
	}
	c.mu.Unlock()
	return WriteOffsetCheckpoint(filepath.Join(d.path, CleanerCheckpointFile), cp)
}

// moveDir carries a moved log's cleaner checkpoint from its old log dir to
// its new one (Kafka's alterCheckpointDir), so the moved log is not
// compacted again from its start. The new dir's file is written first.
func (c *logCleaner) moveDir(tp TopicPartition, from, to *logDir) error {
	c.mu.Lock()
	off, had := c.mu.checkpoints[from][tp]
	if had {
		delete(c.mu.checkpoints[from], tp)
		if c.mu.checkpoints[to] == nil {
			c.mu.checkpoints[to] = map[TopicPartition]int64{}
		}
		c.mu.checkpoints[to][tp] = off
	}
	c.mu.Unlock()
	if !had {
		return nil
	}
	if err := c.writeCheckpoint(to); err != nil {
		return err
	}
	return c.writeCheckpoint(from)
}

// forget drops a deleted partition's cleaner state.
func (c *logCleaner) forget(tp TopicPartition, d *logDir) error {
	c.mu.Lock()
	_, had := c.mu.checkpoints[d][tp]
	delete(c.mu.checkpoints[d], tp)
	delete(c.mu.horizons, tp)
	delete(c.mu.uncleanable, tp)
	c.mu.Unlock()
	if !had {
		return nil
	}
	return c.writeCheckpoint(d)
}

// checkpoint returns tp's cleaner checkpoint (0 if none).
func (c *logCleaner) checkpoint(tp TopicPartition) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cps := range c.mu.checkpoints {
		if off, ok := cps[tp]; ok {
			return off
		}
	}
	return 0
}

// CleanNow runs the log cleaner until no compacted log is eligible for
// cleaning (at most 100 passes), as the background cleaner would over
// successive wake-ups. It is for tests and tools; it runs even when the
// background cleaner is disabled.
func (m *Manager) CleanNow() error {
	var errs []error
	for range 100 {
		cleaned, err := m.cleaner.cleanFilthiestLog(time.Now(), m.stop)
		if err != nil {
			errs = append(errs, err)
		}
		if cleaned {
			continue
		}
		// Nothing left for this call, but a background pass may be
		// cleaning a log right now: wait for it, then look again.
		if !m.cleaner.waitPasses(m.stop) {
			break
		}
	}
	return errors.Join(errs...)
}

// waitPasses waits until no pass is in progress; false if none was.
func (c *logCleaner) waitPasses(stop <-chan struct{}) bool {
	waited := false
	for {
		c.mu.Lock()
		busy, done := len(c.mu.inProgress) > 0, c.mu.passDone
		c.mu.Unlock()
		if !busy {
			return waited
		}
		waited = true
		select {
		case <-done:
		case <-stop:
			return false
		}
	}
}

// CleanerCheckpoint returns the offset below which tp's log is compacted,
// as recorded in cleaner-offset-checkpoint (0 if never cleaned).
func (m *Manager) CleanerCheckpoint(tp TopicPartition) int64 { return m.cleaner.checkpoint(tp) }
