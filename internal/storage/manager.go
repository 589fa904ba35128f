package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ManagerConfig configures a Manager (Kafka's LogManager settings).
type ManagerConfig struct {
	Dirs                   []string      // log.dirs
	RetentionCheckInterval time.Duration // log.retention.check.interval.ms (300000)
	FlushCheckInterval     time.Duration // log.flush.scheduler.interval.ms (default here: 1s; Kafka's is MaxLong)
	CheckpointInterval     time.Duration // log.flush.offset.checkpoint.interval.ms (60000)
	Logger                 *slog.Logger
}

// Manager owns the logs in a set of log dirs (Kafka's LogManager): it reads
// and writes each dir's checkpoint files and clean-shutdown marker, creates
// and opens logs, and runs retention, flush and checkpoint in the background.
//
// Per log dir, on disk: the partition directories "<topic>-<partition>", the
// checkpoints recovery-point-offset-checkpoint, log-start-offset-checkpoint
// and replication-offset-checkpoint ("0\n<count>\n<topic> <partition>
// <offset>\n..."), and .vltava_cleanshutdown after a clean Close.
//
// Thread-safety: all methods are safe for concurrent use; mu guards the maps
// of logs. Log I/O (opening, recovery, deletion) happens under mu only in
// GetOrCreate, so two creations of the same partition cannot race.
type Manager struct {
	logger *slog.Logger
	cfg    ManagerConfig
	dirs   []*logDir

	checkpointMu sync.Mutex // serializes checkpoint file writes
	stop         chan struct{}
	wg           sync.WaitGroup
	startOnce    sync.Once

	mu struct {
		sync.Mutex
		logs     map[TopicPartition]*Log
		dirOf    map[TopicPartition]*logDir
		existing map[TopicPartition]*logDir // on disk, not yet opened
		closed   bool
	}
}

// logDir is one entry of log.dirs with what was read from it at start.
type logDir struct {
	path            string
	cleanShutdown   bool
	recoveryPoints  map[TopicPartition]int64
	logStartOffsets map[TopicPartition]int64
	highWatermarks  map[TopicPartition]int64
}

// OpenManager opens every log dir: reads its checkpoints, notes and removes
// the clean-shutdown marker, removes leftover "-delete" directories and
// finds the partition directories present.
func OpenManager(cfg ManagerConfig) (*Manager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("storage: no log dirs configured")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.RetentionCheckInterval <= 0 {
		cfg.RetentionCheckInterval = 5 * time.Minute
	}
	if cfg.FlushCheckInterval <= 0 {
		cfg.FlushCheckInterval = time.Second
	}
	if cfg.CheckpointInterval <= 0 {
		cfg.CheckpointInterval = time.Minute
	}
	m := &Manager{logger: cfg.Logger, cfg: cfg, stop: make(chan struct{})}
	m.mu.logs = make(map[TopicPartition]*Log)
	m.mu.dirOf = make(map[TopicPartition]*logDir)
	m.mu.existing = make(map[TopicPartition]*logDir)
	for _, path := range cfg.Dirs {
		d, err := m.openDir(path)
		if err != nil {
			return nil, fmt.Errorf("%w: log dir %s: %v", kerr.KafkaStorageError, path, err)
		}
		m.dirs = append(m.dirs, d)
	}
	return m, nil
}

func (m *Manager) openDir(path string) (*logDir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, err
	}
	d := &logDir{path: path}
	marker := filepath.Join(path, CleanShutdownFile)
	if _, err := os.Stat(marker); err == nil {
		d.cleanShutdown = true
		if err := os.Remove(marker); err != nil {
			return nil, err
		}
		if err := syncDir(path); err != nil {
			return nil, err
		}
	}
	var err error
	if d.recoveryPoints, err = ReadOffsetCheckpoint(filepath.Join(path, RecoveryPointCheckpointFile)); err != nil {
		return nil, err
	}
	if d.logStartOffsets, err = ReadOffsetCheckpoint(filepath.Join(path, LogStartOffsetCheckpointFile)); err != nil {
		return nil, err
	}
	if d.highWatermarks, err = ReadOffsetCheckpoint(filepath.Join(path, HighWatermarkCheckpointFile)); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	for _, de := range ents {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		if strings.HasSuffix(name, "-delete") {
			m.logger.Info("removing log dir left by an interrupted delete", "dir", filepath.Join(path, name))
			if err := os.RemoveAll(filepath.Join(path, name)); err != nil {
				return nil, err
			}
			continue
		}
		tp, ok := parsePartitionDirName(name)
		if !ok {
			continue
		}
		if other, dup := m.mu.existing[tp]; dup {
			return nil, fmt.Errorf("partition %s found in both %s and %s", tp, other.path, path)
		}
		m.mu.existing[tp] = d
	}
	return d, nil
}

// Existing lists the partition directories found on disk at open that have
// not been opened yet, sorted.
func (m *Manager) Existing() []TopicPartition {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]TopicPartition, 0, len(m.mu.existing))
	for tp := range m.mu.existing {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// ExistingTopicID returns the topic id in partition.metadata of a partition
// found on disk (or already opened); ok is false if none is recorded.
func (m *Manager) ExistingTopicID(tp TopicPartition) (id [16]byte, ok bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.mu.logs[tp]; l != nil {
		return l.TopicID(), l.TopicID() != [16]byte{}, nil
	}
	d := m.mu.existing[tp]
	if d == nil {
		return id, false, nil
	}
	return readPartitionMetadata(filepath.Join(d.path, tp.String()))
}

// GetOrCreate returns the open log of tp, opening (and recovering) it if it
// exists on disk or creating it in the log dir with the fewest partitions.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, fmt.Errorf("%w: log manager is closed", kerr.KafkaStorageError)
	}
	if l := m.mu.logs[tp]; l != nil {
		if topicID != [16]byte{} && l.TopicID() != [16]byte{} && l.TopicID() != topicID {
			return nil, fmt.Errorf("%w: %s has topic id %s, expected %s", kerr.InconsistentTopicID, tp, encodeTopicID(l.TopicID()), encodeTopicID(topicID))
		}
		return l, nil
	}
	d := m.mu.existing[tp]
	if d == nil {
		d = m.leastLoadedDirLocked()
	}
	l, err := Open(filepath.Join(d.path, tp.String()), cfg, OpenOptions{
		Topic:          tp.Topic,
		Partition:      tp.Partition,
		TopicID:        topicID,
		RecoveryPoint:  d.recoveryPoints[tp],
		LogStartOffset: d.logStartOffsets[tp],
		HighWatermark:  d.highWatermarks[tp],
		CleanShutdown:  d.cleanShutdown,
		Logger:         m.logger,
	})
	if err != nil {
		return nil, err
	}
	l.onLogStartOffsetIncremented = func() {
		if err := m.writeCheckpoints(d); err != nil {
			m.logger.Error("writing checkpoints after log start offset change", "dir", d.path, "err", err)
		}
	}
	delete(m.mu.existing, tp)
	m.mu.logs[tp] = l
	m.mu.dirOf[tp] = d
	return l, nil
}

func (m *Manager) leastLoadedDirLocked() *logDir {
	count := make(map[*logDir]int, len(m.dirs))
	for _, d := range m.mu.dirOf {
		count[d]++
	}
	for _, d := range m.mu.existing {
		count[d]++
	}
	best := m.dirs[0]
	for _, d := range m.dirs[1:] {
		if count[d] < count[best] {
			best = d
		}
	}
	return best
}

// Get returns the open log of tp, or nil.
func (m *Manager) Get(tp TopicPartition) *Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.logs[tp]
}

// Logs returns a copy of the open logs.
func (m *Manager) Logs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		out[tp] = l
	}
	return out
}

// DirOf returns the log dir holding tp ("" if unknown).
func (m *Manager) DirOf(tp TopicPartition) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.mu.dirOf[tp]; d != nil {
		return d.path
	}
	if d := m.mu.existing[tp]; d != nil {
		return d.path
	}
	return ""
}

// Delete removes tp's log from disk (opened or not) and from the checkpoints.
func (m *Manager) Delete(tp TopicPartition) error {
	m.mu.Lock()
	l := m.mu.logs[tp]
	d := m.mu.dirOf[tp]
	if l == nil {
		d = m.mu.existing[tp]
	}
	delete(m.mu.logs, tp)
	delete(m.mu.dirOf, tp)
	delete(m.mu.existing, tp)
	m.mu.Unlock()
	if d == nil {
		return nil
	}
	var err error
	if l != nil {
		err = l.Delete()
	} else {
		err = os.RemoveAll(filepath.Join(d.path, tp.String()))
	}
	if cerr := m.writeCheckpoints(d); err == nil {
		err = cerr
	}
	return err
}

// Start launches the background retention, flush and checkpoint loops; they
// stop at Close.
func (m *Manager) Start() {
	m.startOnce.Do(func() {
		m.every(m.cfg.RetentionCheckInterval, m.runRetention)
		m.every(m.cfg.FlushCheckInterval, m.runFlush)
		m.every(m.cfg.CheckpointInterval, func() {
			if err := m.CheckpointAll(); err != nil {
				m.logger.Error("writing checkpoints", "err", err)
			}
		})
	})
}

func (m *Manager) every(interval time.Duration, fn func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				fn()
			}
		}
	}()
}

func (m *Manager) runRetention() {
	for tp, l := range m.Logs() {
		if _, err := l.EnforceRetention(); err != nil && !errors.Is(err, errLogClosed) {
			m.logger.Error("enforcing retention", "partition", tp.String(), "err", err)
		}
		l.RemoveExpiredProducers()
	}
}

func (m *Manager) runFlush() {
	for tp, l := range m.Logs() {
		if err := l.FlushIfDue(); err != nil && !errors.Is(err, errLogClosed) {
			m.logger.Error("flushing log", "partition", tp.String(), "err", err)
		}
	}
}

// CheckpointAll writes the recovery point, log start offset and high
// watermark checkpoints of every log dir.
func (m *Manager) CheckpointAll() error {
	var errs []error
	for _, d := range m.dirs {
		if err := m.writeCheckpoints(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeCheckpoints writes d's three checkpoints. Partitions on disk that are
// not open keep the values read at start so their recovery is not widened.
func (m *Manager) writeCheckpoints(d *logDir) error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	rp, lso, hw := map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[TopicPartition]int64{}
	m.mu.Lock()
	for tp, owner := range m.mu.existing {
		if owner != d {
			continue
		}
		if v, ok := d.recoveryPoints[tp]; ok {
			rp[tp] = v
		}
		if v, ok := d.logStartOffsets[tp]; ok {
			lso[tp] = v
		}
		if v, ok := d.highWatermarks[tp]; ok {
			hw[tp] = v
		}
	}
	for tp, l := range m.mu.logs {
		if m.mu.dirOf[tp] != d {
			continue
		}
		rp[tp], lso[tp], hw[tp] = l.RecoveryPoint(), l.LogStartOffset(), l.HighWatermark()
	}
	m.mu.Unlock()
	if err := WriteOffsetCheckpoint(filepath.Join(d.path, RecoveryPointCheckpointFile), rp); err != nil {
		return err
	}
	if err := WriteOffsetCheckpoint(filepath.Join(d.path, LogStartOffsetCheckpointFile), lso); err != nil {
		return err
	}
	return WriteOffsetCheckpoint(filepath.Join(d.path, HighWatermarkCheckpointFile), hw)
}

// Close stops the background loops, closes every log cleanly, writes all
// checkpoints and, if all of that succeeded, each dir's clean-shutdown
// marker so the next start can skip recovery.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	logs := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, l := range m.mu.logs {
		logs[tp] = l
	}
	m.mu.Unlock()
	close(m.stop)
	m.wg.Wait()
	var errs []error
	for tp, l := range logs {
		if err := l.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing %s: %w", tp, err))
		}
	}
	if err := m.CheckpointAll(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, d := range m.dirs {
		if err := writeFileAtomically(filepath.Join(d.path, CleanShutdownFile), nil); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
